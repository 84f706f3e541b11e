"""Paper 003, Table 1 on held-out placement graphs: % gap from the best known solution.

Example (the numbers in docs/results.md):

    python benchmarks/regal_table1.py --graphs 100 --cp-time-limit 10

Every method runs on the same held-out graphs (``dagopt.bench.datasets``, seeds never
used in training or tuning) for both objectives, two 16 GiB devices and free
transfers (003 section 3.1). The search methods get 5,000 cost-model evaluations
(section 3.2); ``cp-sat`` runs to ``--cp-time-limit`` on the graphs of at most
``--cp-max-ops`` ops (its model grows as ops x (ops + edges)), warm-started from BRKGA's
answer, and joins the best known
solution there, as the paper's CP does; its row averages over those graphs only. Each
run is added to ``--out`` (CSV, rewritten atomically) as it finishes; rerunning with the
same run options resumes (others are refused; ``--fresh`` starts over). Prints the
geometric-mean % gap per method beside the paper's figures, the run time per graph and
how many times smaller REGAL's gap is than BRKGA 5k's, with a 90% bootstrap interval
over the graphs (one BRKGA result moves by a few % with its seed, so a few graphs
cannot settle the ratio), and REGAL against BRKGA 5k graph by graph. Last, per
objective, on how many graphs the best known is provably optimal (it meets
``placement_lower_bound`` or ``cp-sat`` proved it), and BRKGA 5k's and REGAL's gaps on
the rest, where a better solution may exist.

``--topologies K`` tests instead on noisy copies of ``K`` base topologies with held-out
noise (the layout of 003's TensorFlow datasets, ``docs/placement.md``, "Recurring
topologies"); pair it with ``--checkpoint-dir`` pointing at policies trained with the
same ``topologies``, and a separate ``--out``.

``--jobs N`` runs N at a time on local processes, ``--ray ADDRESS`` on a Ray cluster
(``docs/scaling.md``), one core per run.
"""

from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from dagopt.bench.datasets import placement_test_set
from dagopt.bench.parallel import add_executor_arguments, executor_from_arguments
from dagopt.bench.placement import (
    PlacementRun,
    gap_reduction,
    gap_reduction_interval,
    head_to_head,
    open_graphs,
    placement_table,
    read_runs_csv,
    run_placement_methods,
    runs_csv,
    summarize_placement,
)
from dagopt.bench.script import (
    claim_results,
    positive_float,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.generate.placement import generate_placement
from dagopt.io.atomic import write_text_atomic
from dagopt.objectives.costmodel import OBJECTIVES
from dagopt.objectives.devices import Devices
from dagopt.objectives.placement_bounds import placement_lower_bound
from dagopt.place import place

METHODS = [
    "cp-sat",
    "gp-dfs",
    "local-search",
    "brkga",
    "brkga-tuned",
    "brkga-prior",
    "idrs",
    "regal",
    "single-device",
]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--graphs", type=positive_int, default=20, help="held-out graphs per objective"
    )
    parser.add_argument("--objectives", nargs="+", default=OBJECTIVES, choices=OBJECTIVES)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument(
        "--cp-time-limit", type=positive_float, default=20.0, help="cp-sat, seconds"
    )
    parser.add_argument(
        "--cp-max-ops", type=int, default=60, help="run cp-sat on graphs of at most this many ops"
    )
    parser.add_argument("--checkpoint-dir", help="directory of the regal-<objective> runs")
    parser.add_argument(
        "--topologies",
        type=int,
        default=0,
        help="test on noisy copies of this many base topologies (0: every graph new)",
    )
    parser.add_argument("--noise-sigma", type=float, default=0.2, help="with --topologies")
    parser.add_argument("--out", default="bench-out/regal_table1.csv", help="CSV of every run")
    parser.add_argument("--fresh", action="store_true", help="ignore runs already in --out")
    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    executor = executor_from_arguments(args)

    def options(objective: str):
        def for_method(method: str, graph) -> dict | None:
            if method == "cp-sat":
                if graph.num_nodes > args.cp_max_ops:
                    return None
                return {"time_limit": args.cp_time_limit, "warm_start": "brkga"}
            if method in ("regal", "idrs") and args.checkpoint_dir:
                return {"checkpoint": Path(args.checkpoint_dir) / f"regal-{objective}" / "model.pt"}
            return {}

        return for_method

    out = Path(args.out)
    result_options = {
        key: getattr(args, key)
        for key in ("cp_time_limit", "cp_max_ops", "checkpoint_dir", "topologies", "noise_sigma")
    }
    resumed = claim_results(out, result_options, fresh=args.fresh)
    done = read_runs_csv(out.read_text()) if resumed else []
    done = [r for r in done if r.method in args.methods and r.objective in args.objectives]
    graphs = placement_test_set(
        args.graphs, topologies=args.topologies, noise_sigma=args.noise_sigma
    )
    names = {g.name for g in graphs}
    done = [r for r in done if r.graph in names]
    console = Console(stderr=True)
    total = len(args.objectives) * sum(
        options(args.objectives[0])(m, g) is not None for g in graphs for m in args.methods
    )
    runs = list(done)
    warm_up = generate_placement(20, seed=0)  # imports and compiles outside the timings
    for method in args.methods:
        place(warm_up, method, seed=0, **(options(args.objectives[0])(method, warm_up) or {}))
    with Progress(console=console) as progress:
        task = progress.add_task("003 table 1", total=total, completed=len(done))

        def record(run: PlacementRun) -> None:
            runs.append(run)
            write_text_atomic(out, runs_csv(runs))
            progress.update(task, advance=1, description=f"{run.graph} {run.method}")

        for objective in args.objectives:
            run_placement_methods(
                graphs,
                args.methods,
                objective,
                options(objective),
                done=done,
                on_run=record,
                executor=executor,
            )
    summaries = summarize_placement(runs)
    sizes = sorted(g.num_nodes for g in graphs)
    print(
        f"{len(graphs)} held-out placement graphs ({sizes[0]} to {sizes[-1]} ops"
        + (f", noisy copies of {args.topologies} topologies" if args.topologies else "")
        + "), 2 x 16 GiB "
        f"devices, free transfers; cp-sat capped at {args.cp_time_limit:g} s on graphs of <= "
        f"{args.cp_max_ops} ops; every run in "
        f"{args.out}\n"
    )
    print(placement_table(summaries, args.methods))
    if {"brkga", "regal"} <= set(args.methods):
        for objective in args.objectives:
            low, high = gap_reduction_interval(runs, objective)
            print(
                f"{objective}: BRKGA 5k's gap / REGAL's = "
                f"{gap_reduction(summaries, objective):.2f} (above 1: REGAL's gap is smaller; "
                f"90% bootstrap interval over the graphs {low:.2f}-{high:.2f}; paper: about 1.8)"
            )
            pair = head_to_head(runs, objective)
            print(
                f"{objective}: on the {pair.graphs} graphs both solve, REGAL's cost is "
                f"{pair.ratio:.4f}x BRKGA 5k's (geometric mean); REGAL lower on {pair.wins}, "
                f"equal on {pair.ties}, higher on {pair.losses}"
            )
            bounds = {g.name: placement_lower_bound(g, Devices(), objective) for g in graphs}
            proved, left_open = open_graphs(runs, objective, bounds)
            gap = {
                s.method: s.geomean_gap_percent
                for s in summarize_placement([r for r in runs if r.graph in left_open])
                if s.objective == objective
            }
            print(
                f"{objective}: the best known is provably optimal on {proved.proved} of "
                f"{proved.graphs} graphs (meets the lower bound on {proved.by_bound}, "
                f"cp-sat proved {proved.by_cp_sat} more); on the other {len(left_open)}, "
                f"BRKGA 5k's gap is {gap.get('brkga', float('nan')):.2f}% and REGAL's "
                f"{gap.get('regal', float('nan')):.2f}%"
            )
    return 0


if __name__ == "__main__":
    run_script(main)
