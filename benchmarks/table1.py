"""Paper 000, Table 1 on held-out layered graphs: % gap from approximate DP and run time.

Example (the numbers in docs/results.md):

    python benchmarks/table1.py --sizes 500 1000 2000 --graphs 5 \
        --beam-widths 100000 10000 10000 --dfs-dp-limit 60

Add ``--methods ... topoformer-greedy topoformer-sample topoformer-beam`` for the neural
rows (the shipped model, or ``--checkpoint``). Runs already in ``--out`` are reused when
the options that make a run (beam widths, ``--dfs-dp-limit``, ``--checkpoint``) are the
ones recorded beside them in ``OUT.options.json``; other options are refused (use
another ``--out`` or ``--fresh``).

Graphs are generated from the held-out test seeds (``dagopt.bench.datasets``), the
reference is ``approx-dp`` at the beam width given for that size. Every run is added
to ``--out`` (CSV, rewritten atomically) as soon as it finishes; rerunning the same
command resumes, skipping the runs already there (``--fresh`` starts over). Prints a
markdown table beside the paper's column. ``--jobs N`` runs N at a time on local
processes, ``--ray ADDRESS`` on a Ray cluster (``docs/scaling.md``), one core per run.
"""

from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from dagopt.bench.datasets import layered_test_set
from dagopt.bench.ordering import (
    PAPER_TABLE1,
    Run,
    markdown_table,
    read_runs_csv,
    run_methods,
    runs_csv,
    summarize,
)
from dagopt.bench.parallel import add_executor_arguments, executor_from_arguments
from dagopt.bench.script import (
    claim_results,
    positive_float,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic

DEFAULT_METHODS = ["approx-dp", "dfs-dp", "random", "dfs", "bfs", "lpmf", "inductor"]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--graphs", type=positive_int, default=3, help="held-out graphs per size")
    parser.add_argument(
        "--beam-widths",
        type=positive_int,
        nargs="+",
        default=[100_000, 10_000, 1_000],
        help="approx-dp beam width K for each size (one value, or one per size)",
    )
    parser.add_argument(
        "--dfs-dp-limit", type=positive_float, default=60.0, help="dfs-dp cap, seconds"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=DEFAULT_METHODS,
        help="ordering methods; add topoformer-greedy / -sample / -beam for the neural rows",
    )
    parser.add_argument("--checkpoint", help="model file for the topoformer-* methods")
    parser.add_argument("--out", default="bench-out/table1.csv", help="CSV of every run")
    parser.add_argument("--fresh", action="store_true", help="ignore runs already in --out")
    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    executor = executor_from_arguments(args)
    if len(args.beam_widths) not in (1, len(args.sizes)):
        parser.error("--beam-widths needs one value or one per size")
    widths = dict(zip(args.sizes, args.beam_widths * len(args.sizes), strict=False))
    if "approx-dp" not in args.methods:
        parser.error("the reference method approx-dp must be among --methods")

    def options(method: str, size: int) -> dict:
        if method == "approx-dp":
            return {"beam_width": widths[size]}
        if method == "dfs-dp":
            return {"time_limit": args.dfs_dp_limit}
        if method.startswith("topoformer-") and args.checkpoint:
            return {"checkpoint": args.checkpoint}
        return {}

    out = Path(args.out)
    result_options = {
        "beam_widths": {str(size): width for size, width in widths.items()},
        "dfs_dp_limit": args.dfs_dp_limit,
        "checkpoint": args.checkpoint,
    }
    resumed = claim_results(out, result_options, fresh=args.fresh)
    done = read_runs_csv(out.read_text()) if resumed else []
    done = [r for r in done if r.size in widths and r.method in args.methods]
    console = Console(stderr=True)
    total = len(args.sizes) * args.graphs * len(args.methods)
    with Progress(console=console) as progress:
        task = progress.add_task("table 1", total=total, completed=len(done))
        finished = list(done)

        def record(run: Run, graph: Graph, order: np.ndarray) -> None:
            finished.append(run)
            write_text_atomic(out, runs_csv(finished))
            progress.update(task, advance=1, description=f"{run.graph} {run.method}")
            console.log(
                f"{run.graph} {run.method}: peak {run.peak_memory:.6g}, {run.seconds:.3g} s"
            )

        cases = (
            (size, g.name, g) for size in args.sizes for g in layered_test_set(size, args.graphs)
        )
        runs = run_methods(
            cases, args.methods, options, done=done, on_run=record, executor=executor
        )
    widths_note = ", ".join(f"K={widths[s]} at {s}" for s in args.sizes)
    print(f"approx-dp reference: {widths_note}; dfs-dp capped at {args.dfs_dp_limit:g} s")
    print(f"{args.graphs} held-out graphs per size; every run in {args.out}\n")
    print(markdown_table(summarize(runs), PAPER_TABLE1, args.methods))
    return 0


if __name__ == "__main__":
    run_script(main)
