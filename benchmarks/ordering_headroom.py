"""How far from optimal each ordering method is: the % gap of its peak to a proved bound.

Example (the numbers in docs/results.md):

    python benchmarks/ordering_headroom.py --sizes 500 1000 2000 --graphs 5 \
        --zoo gpt2/small/training bert-base/small/training

For held-out layered graphs (test seeds, or validation seeds with ``--split
validation``; ``dagopt.bench.datasets``) and zoo training graphs (``model/size/mode``,
graph outputs kept as PyTorch does), the best proved lower bound on the optimal peak
(paper 000, eq. 1-3, 15) and the peaks of ``inductor``, ``approx-dp`` at
``--beam-width`` and ``anytime`` at ``--time-limit`` seconds, each as a % gap to the
bound. The bound is the optimum itself when ``exact-dp`` finishes within
``--exact-states`` states per step and ``--exact-time`` seconds, else the strongest of
``must_live_bound`` (``dagopt.objectives.bounds``), ``cut_bound``
(``dagopt.objectives.cut_bound``, given ``--cut-time`` seconds) and ``branch_bound``
(``dagopt.objectives.branch_bound``: the cut bound raised by branch and bound until it
meets the best peak found or ``--branch-time`` seconds pass), each also in its own
column, to show where it is tight ("proved optimal": the branch bound met the best peak
found, which is then the optimum). The runs go to ``--out`` (CSV) as they finish and a
rerun with the same limits resumes (others are refused; ``--fresh`` reruns all).
``--reference`` (the reference CSV of ``benchmarks/anytime.py``; its ``approx-dp`` runs
at ``--reference-width``) adds each layered graph's gaps to its reference peak, the
bound's first: the least gap any order can reach.
"""

import time
from pathlib import Path

import numpy as np
from rich.console import Console

from dagopt.bench.datasets import layered_test_set, layered_validation_set
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.ordering import Run, read_runs_csv, run_methods, runs_csv
from dagopt.bench.realgraphs import solve_outputs_kept, zoo_key_graph
from dagopt.bench.script import (
    add_ordering_graph_arguments,
    claim_results,
    positive_float,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.errors import SolverError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.objectives import branch_bound, cut_bound, must_live_bound
from dagopt.schedule import Schedule, solve

BOUND = "lower bound"
EXACT, MUST_LIVE, CUT, BRANCH = "exact DP", "must-live", "cut", "branch"


def proved_bound(
    graph: Graph, *, keep_outputs: bool, states: int, seconds: float
) -> tuple[float, str]:
    """The best proved lower bound and how it was proved: the ``exact-dp`` optimum when
    it finishes in ``states`` states per step and ``seconds``, else ``must_live_bound``."""
    try:
        exact = solve(
            graph, "exact-dp", keep_outputs=keep_outputs, max_states=states, time_limit=seconds
        )
    except SolverError:
        return must_live_bound(graph, keep_outputs=keep_outputs), MUST_LIVE
    return exact.peak_memory, EXACT


def gap(peak: float, bound: float) -> float:
    return 100.0 * (peak / bound - 1.0) if bound > 0 else 0.0


def runs_by_graph(runs: list[Run]) -> dict[str, dict[str, Run]]:
    by_graph: dict[str, dict[str, Run]] = {}
    for run in runs:
        by_graph.setdefault(run.graph, {})[run.method] = run
    return by_graph


def best_bound(by_label: dict[str, Run]) -> tuple[float, str]:
    """A graph's best proved bound and how: the exact optimum where ``exact-dp``
    finished, else the strongest of the must-live, cut and branch bounds."""
    if by_label[BOUND].proved_optimal:
        return by_label[BOUND].peak_memory, EXACT
    bounds = [(by_label[label].peak_memory, label) for label in (MUST_LIVE, CUT, BRANCH)]
    return max(bounds, key=lambda bound: bound[0])


def headroom_table(runs: list[Run], labels: list[str]) -> str:
    """Markdown: per graph its bound, the best order found and each method's % gap to
    the bound; a mean row per size of layered graphs."""
    header = ["graph", "nodes", "must-live bound", "cut bound", "branch bound", "lower bound"]
    header.append("best found (% gap)")
    header += [f"{label}: % gap" for label in labels]
    lines = [markdown_row(header), markdown_rule("lrrrrrl" + "r" * len(labels))]
    means: dict[int, list[list[float]]] = {}
    for key, by_label in runs_by_graph(runs).items():
        bound, how = best_bound(by_label)
        gaps = [gap(by_label[label].peak_memory, bound) for label in labels]
        best = int(np.argmin(gaps))
        row = [key, f"{by_label[BOUND].size:,}"]
        row += [f"{by_label[label].peak_memory:.6g}" for label in (MUST_LIVE, CUT, BRANCH)]
        row.append(f"{bound:.6g} ({how})")
        proved = ", proved optimal" if by_label[BRANCH].proved_optimal else ""
        row.append(f"{labels[best]} ({gaps[best]:.2f}{proved})")
        lines.append(markdown_row(row + [f"{g:.2f}" for g in gaps]))
        if key.startswith("layered"):
            means.setdefault(by_label[BOUND].size, []).append(gaps)
    for size, rows in sorted(means.items()):
        mean = np.mean(rows, axis=0)
        best = int(np.argmin(mean))
        row = [
            f"mean, {len(rows)} layered",
            f"{size:,}",
            "",
            "",
            "",
            "",
            f"{labels[best]} ({mean[best]:.2f})",
        ]
        lines.append(markdown_row(row + [f"{g:.2f}" for g in mean]))
    return "\n".join(lines) + "\n"


def reference_table(runs: list[Run], references: list[Run], labels: list[str]) -> str:
    """Markdown: per layered graph with a run in ``references`` (one per graph: the
    ``approx-dp`` reference that ``benchmarks/anytime.py`` caches), the % gap of the
    lower bound and of each method to the reference peak, and a mean row per size. The
    bound's gap is the least any order can reach."""
    reference = {run.graph: run for run in references}
    header = ["graph", "nodes", "reference", "lower bound: % vs reference"]
    header += [f"{label}: % vs reference" for label in labels]
    lines = [markdown_row(header), markdown_rule("lrl" + "r" * (len(labels) + 1))]
    means: dict[int, list[list[float]]] = {}
    for key, by_label in runs_by_graph(runs).items():
        if key not in reference:
            continue
        peak = reference[key].peak_memory
        bound, _ = best_bound(by_label)
        gaps = [gap(bound, peak)] + [gap(by_label[label].peak_memory, peak) for label in labels]
        size = by_label[BOUND].size
        lines.append(
            markdown_row([key, f"{size:,}", reference[key].method, *map("{:.2f}".format, gaps)])
        )
        means.setdefault(size, []).append(gaps)
    for size, rows in sorted(means.items()):
        mean = np.mean(rows, axis=0)
        lines.append(
            markdown_row(
                [f"mean, {len(rows)} layered", f"{size:,}", "", *map("{:.2f}".format, mean)]
            )
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="*", default=[500, 1000, 2000])
    parser.add_argument("--graphs", type=positive_int, default=5, help="held-out graphs per size")
    add_ordering_graph_arguments(parser)
    parser.add_argument(
        "--time-limit", type=positive_float, default=10.0, help="anytime's, seconds"
    )
    parser.add_argument("--beam-width", type=positive_int, default=1000, help="approx-dp's K")
    parser.add_argument("--exact-states", type=positive_int, default=1_000_000)
    parser.add_argument("--exact-time", type=positive_float, default=10.0)
    parser.add_argument(
        "--cut-time", type=positive_float, default=600.0, help="cut_bound's, seconds"
    )
    parser.add_argument(
        "--branch-time", type=positive_float, default=60.0, help="branch_bound's, seconds"
    )
    parser.add_argument("--out", default="bench-out/ordering-headroom.csv")
    parser.add_argument("--fresh", action="store_true", help="rerun everything")
    parser.add_argument(
        "--reference",
        help="CSV of reference runs (benchmarks/anytime.py --reference-out): also print "
        "each layered graph's gaps to its reference peak",
    )
    parser.add_argument(
        "--reference-width",
        type=positive_int,
        default=10000,
        help="the reference runs' approx-dp K",
    )
    args = parser.parse_args(argv)

    labels = ["inductor", f"approx-dp K={args.beam_width}", f"anytime {args.time_limit:g} s"]
    options = {
        labels[0]: ("inductor", {}),
        labels[1]: ("approx-dp", {"beam_width": args.beam_width}),
        labels[2]: ("anytime", {"time_limit": args.time_limit}),
    }
    out = Path(args.out)
    result_options = {
        key: getattr(args, key)
        for key in (
            "split", "time_limit", "beam_width", "exact_states", "exact_time", "cut_time",
            "branch_time",
        )
    }  # fmt: skip
    resumed = claim_results(out, result_options, fresh=args.fresh)
    done = read_runs_csv(out.read_text()) if resumed else []
    console = Console(stderr=True)

    def solver(keep_outputs: bool, key_of: dict[int, str]):
        def bound(graph: Graph, label: str) -> tuple[float, bool | None]:
            """A bound label's bound and whether it is the optimum."""
            if label == MUST_LIVE:
                return must_live_bound(graph, keep_outputs=keep_outputs), None
            if label == CUT:
                found = cut_bound(graph, keep_outputs=keep_outputs, time_limit=args.cut_time)
                return found.bound, None
            if label == BRANCH:  # after the methods: the best peak they found is its upper
                key = key_of[id(graph)]
                upper = min(r.peak_memory for r in done if r.graph == key and r.method in labels)
                found = branch_bound(
                    graph, upper=upper, keep_outputs=keep_outputs, time_limit=args.branch_time
                )
                return found.bound, found.optimal
            value, how = proved_bound(
                graph, keep_outputs=keep_outputs, states=args.exact_states, seconds=args.exact_time
            )
            return value, how == EXACT

        def run(graph: Graph, label: str, *, seed: int) -> Schedule:
            if label in (MUST_LIVE, CUT, BRANCH, BOUND):
                began = time.perf_counter()
                value, optimal = bound(graph, label)
                seconds = time.perf_counter() - began
                return Schedule(np.arange(0), value, label, seconds, proved_optimal=optimal)
            method, extra = options[label]
            if keep_outputs:
                return solve_outputs_kept(graph, method, seed=seed, **extra)
            return solve(graph, method, seed=seed, **extra)

        return run

    def on_run(run: Run, graph: Graph, order: np.ndarray) -> None:
        done.append(run)
        write_text_atomic(out, runs_csv(done))
        console.log(f"{run.graph} {run.method}: {run.peak_memory:.6g}, {run.seconds:.3g} s")

    graph_set = layered_test_set if args.split == "test" else layered_validation_set
    layered = [(size, g.name, g) for size in args.sizes for g in graph_set(size, args.graphs)]
    run_methods(
        layered, [MUST_LIVE, CUT, BOUND, *labels, BRANCH], lambda *_: {}, done=list(done),
        on_run=on_run, solver=solver(False, {id(g): key for _, key, g in layered}),
    )  # fmt: skip
    zoo = []
    for key in args.zoo:
        graph = zoo_key_graph(key, args.zoo_cache)
        zoo.append((graph.num_nodes, key, graph))
    run_methods(
        zoo, [MUST_LIVE, CUT, BOUND, *labels, BRANCH], lambda *_: {}, done=list(done),
        on_run=on_run, solver=solver(True, {id(g): key for _, key, g in zoo}),
    )  # fmt: skip
    keys = {key for _, key, _ in layered + zoo}
    runs = [r for r in done if r.graph in keys]
    print(f"% gap of each method's peak to the best proved lower bound (CSV: {out})\n")
    print(headroom_table(runs, labels))
    if args.reference:
        method = f"approx-dp K={args.reference_width}"
        references = [
            run for run in read_runs_csv(Path(args.reference).read_text()) if run.method == method
        ]
        print(f"% gap to the {method} runs of {args.reference}\n")
        print(reference_table(runs, references, labels))
    return 0


if __name__ == "__main__":
    run_script(main)
