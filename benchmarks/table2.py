"""Paper 000, Table 2 on the model zoo: peak memory of ordering methods on real graphs.

Example (every zoo graph with the neural rows, the measured runs and the Figure 3 plot):

    python benchmarks/table2.py --neural --measure --plot bench-out/table2.png

For every zoo graph (``--models`` x ``--sizes`` x ``--modes``, from the zoo cache) the
peak with the graph outputs kept (``keep_outputs=True``, as PyTorch returns them) of the
traced order (``np.arange(n)``, what eager PyTorch runs; for training graphs only with
``--no-core-aten``), ``inductor``, ``lpmf`` and
``approx-dp`` and ``anchored-dp`` (beam width ``--beam-width``), plus ``anytime`` with
``--anytime SECONDS`` (its time limit) and ``topoformer-greedy / -sample / -beam`` with
``--neural`` (the shipped model, or ``--checkpoint``). Prints the mean % change vs
the traced order and vs approx-dp and the mean run time per node-count bucket (``--buckets``
edges, like the paper's size groups), a per-graph table, and whether the best dagopt
method (any but traced, inductor and lpmf) is at most inductor's peak on each graph.

Every run is added to ``--out`` (CSV, rewritten atomically) as soon as it finishes, and
each solver's order to ``--orders`` (order files); rerunning resumes, skipping the runs
already there. The options that change a result (``--beam-width``, ``--anytime``,
``--checkpoint``) are recorded beside ``--out`` and a rerun under other ones stops with
an error (``--fresh`` starts over, or give another ``--out``). ``--measure`` rebuilds the
``--measure-models`` at the small size in ``--measure-modes``, runs the traced and the
best dagopt order as real fx modules and prints their measured peaks beside the
predicted ones. ``--plot`` saves mean % change against mean run time per method (log
time axis), like the paper's Figure 3.
``--jobs N`` / ``--ray ADDRESS`` run the solver runs on local processes or a Ray
cluster, one core per run (``docs/scaling.md``). ``--split-outputs`` and
``--no-core-aten`` take the zoo graphs exported with those options: with both, a
training graph's traced order is an eager PyTorch step, measured peaks as predicted
(``docs/real_models.md``, "Training in a dagopt order").
"""

import argparse
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from dagopt.bench.ordering import read_runs_csv, runs_csv
from dagopt.bench.parallel import add_executor_arguments, executor_from_arguments
from dagopt.bench.realgraphs import (
    DAGOPT_METHODS,
    DEFAULT_EDGES,
    PEER,
    TRACED,
    bucket_table,
    graph_results,
    graph_table,
    measure_orders,
    measurement_table,
    plot_methods,
    run_graph_methods,
    summarize_buckets,
    zoo_key,
    zoo_key_graph,
)
from dagopt.bench.script import (
    claim_results,
    positive_float,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.errors import DagoptError, InputError
from dagopt.io.atomic import write_text_atomic
from dagopt.io.orders import read_order, write_order
from dagopt.schedule import solve
from dagopt.schedule.neural import load_model
from dagopt.zoo import SIZES, build_zoo_module, get_model, model_names
from dagopt.zoo.export import MODES

CLASSIC_METHODS = [TRACED, "inductor", "lpmf", "approx-dp", "anchored-dp"]
NEURAL_METHODS = ["topoformer-greedy", "topoformer-sample", "topoformer-beam"]
MEASURE_MODELS = ["resnet-50", "llama-small", "whisper-tiny-encoder"]
#: The zoo's default export options, which results recorded before they existed used.
DEFAULT_VARIANT = {"split_outputs": False, "core_aten": True}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument("--models", nargs="+", default=model_names(), help="zoo models")
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=SIZES)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument(
        "--beam-width",
        type=positive_int,
        default=1000,
        help="approx-dp beam width K (default 1000, about 4 s per 2,300-node training graph "
        "on 2 cores; the paper's K=100000 takes about 100x longer)",
    )
    parser.add_argument(
        "--anytime",
        type=positive_float,
        metavar="SECONDS",
        help="add the anytime method with this time limit (seconds)",
    )
    parser.add_argument("--neural", action="store_true", help="add the topoformer-* methods")
    parser.add_argument("--checkpoint", help="model file for the topoformer-* methods")
    parser.add_argument(
        "--buckets",
        type=positive_int,
        nargs="*",
        default=list(DEFAULT_EDGES),
        help="node-count bucket edges (default 500 1500: < 500, 500-1499, >= 1500; "
        "none: one bucket)",
    )
    parser.add_argument("--out", default="bench-out/table2.csv", help="CSV of every run")
    parser.add_argument("--orders", help="order files (default: beside --out, '-orders')")
    parser.add_argument("--fresh", action="store_true", help="ignore runs already in --out")
    parser.add_argument("--cache-dir", help="zoo cache directory (default: the zoo's)")
    parser.add_argument(
        "--split-outputs", action="store_true", help="graphs exported with split_outputs"
    )
    parser.add_argument(
        "--core-aten",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="training graphs in core ATen (--no-core-aten: the operators autograd runs)",
    )
    parser.add_argument("--measure", action="store_true", help="measure real reordered runs")
    parser.add_argument("--measure-models", nargs="+", default=MEASURE_MODELS)
    parser.add_argument(
        "--measure-modes",
        nargs="+",
        default=["training"],
        choices=MODES,
        help="modes of the measured small graphs (default training, where orders differ)",
    )
    parser.add_argument("--plot", help="PNG of mean %% change vs mean run time per method")
    add_executor_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(stderr=True, log_path=False)
    try:
        return benchmark(args, console)
    except DagoptError as exc:
        console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 2


def benchmark(args: argparse.Namespace, console: Console) -> int:
    for name in (*args.models, *(args.measure_models if args.measure else ())):
        get_model(name)  # unknown names: one-line InputError
    methods = (
        CLASSIC_METHODS
        + (["anytime"] if args.anytime else [])
        + (NEURAL_METHODS if args.neural else [])
    )
    keys = [
        zoo_key(name, size, mode)
        for name in args.models
        for size in args.sizes
        for mode in args.modes
    ]
    measured = []
    if args.measure:
        measured = [
            zoo_key(name, "small", mode)
            for name in args.measure_models
            for mode in args.measure_modes
        ]
        missing = [key for key in measured if key not in keys]
        if missing:
            raise InputError(
                f"measured graph {missing[0]} is not benchmarked: add its model, size and "
                "mode to --models / --sizes / --modes"
            )

    def options(method: str) -> dict:
        if method in ("approx-dp", "anchored-dp"):
            return {"beam_width": args.beam_width}
        if method == "anytime":
            return {"time_limit": args.anytime}
        if method in NEURAL_METHODS and args.checkpoint:
            return {"checkpoint": args.checkpoint}
        return {}

    if args.neural:  # load the model before timing, and fail early if it is missing
        load_model(args.checkpoint)
    out = Path(args.out)
    orders_dir = Path(args.orders) if args.orders else out.with_name(out.stem + "-orders")
    variant = {"split_outputs": args.split_outputs, "core_aten": args.core_aten}
    result_options = {
        "beam_width": args.beam_width,
        "anytime": args.anytime,
        "checkpoint": args.checkpoint,
        # recorded when not the default, so the results of earlier runs stay resumable
        **{k: v for k, v in variant.items() if v != DEFAULT_VARIANT[k]},
    }
    resumed = claim_results(out, result_options, fresh=args.fresh)
    done = read_runs_csv(out.read_text()) if resumed else []
    done = [r for r in done if r.graph in keys and r.method in methods]
    finished = {(r.graph, r.method) for r in done}
    runs = list(done)
    with Progress(console=console) as progress:
        task = progress.add_task(
            "table 2", total=len(keys) * len(methods) + len(measured), completed=len(done)
        )

        def record(run, graph, order) -> None:
            runs.append(run)
            write_text_atomic(out, runs_csv(runs))
            if run.method != TRACED:
                write_order(
                    orders_dir / run.graph / f"{run.method}.json",
                    graph,
                    order,
                    method=run.method,
                    peak_memory=run.peak_memory,
                    keep_outputs=True,
                    seconds=run.seconds,
                    proved_optimal=run.proved_optimal,
                )
            progress.update(task, advance=1, description=f"{run.graph} {run.method}")
            console.log(
                f"{run.graph} ({run.size} nodes) {run.method}: "
                f"peak {run.peak_memory:,.0f} B, {run.seconds:.3g} s"
            )

        def graphs():
            for key in keys:
                if all((key, m) in finished for m in methods):
                    continue
                progress.update(task, description=f"{key} export")
                yield key, zoo_key_graph(key, args.cache_dir, **variant)

        all_runs = run_graph_methods(
            graphs(),
            methods,
            options,
            done=done,
            on_run=record,
            executor=executor_from_arguments(args),
        )
        rank = {key: i for i, key in enumerate(keys)}
        results = graph_results(sorted(all_runs, key=lambda r: rank[r.graph]))
        measurements = []
        for key in measured:
            progress.update(task, description=f"{key} measure")
            best = next(r for r in results if r.graph == key).best_dagopt
            built = build_zoo_module(*key.split("/"), **variant)
            torch_graph, inputs = built.torch_graph, built.inputs
            path = orders_dir / key / f"{best.method}.json"
            try:
                order = read_order(path, torch_graph.graph).order
            except InputError:  # no order file, or one for another export: solve again
                order = solve(
                    torch_graph.graph,
                    best.method,
                    seed=0,
                    keep_outputs=True,
                    **options(best.method),
                ).order
            measurements.append(
                measure_orders(torch_graph, inputs, order, key=key, method=best.method)
            )
            progress.update(task, advance=1)

    print(
        f"{len(results)} zoo graphs, peaks with graph outputs kept; approx-dp K={args.beam_width};"
        f" every run in {out}\n"
    )
    print("Mean over the graphs of each size bucket (% change of the peak; time per graph):\n")
    print(bucket_table(summarize_buckets(results, args.buckets)))
    print("Per graph (% change of the peak vs the traced order / run time s):\n")
    print(graph_table(results, methods))
    matched = sum(r.matches_peer for r in results)
    ours = ", ".join(m for m in DAGOPT_METHODS if m in methods)
    print(f"best dagopt method ({ours}) <= {PEER} on {matched}/{len(results)} graphs\n")
    if measurements:
        print("Measured (measure_peak) vs predicted (peak_memory, outputs kept) peaks:\n")
        print(measurement_table(measurements))
    if args.plot:
        plot_methods(summarize_buckets(results, ()), args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    run_script(main)
