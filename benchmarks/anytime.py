"""The anytime ordering method against Inductor and approximate DP, side by side.

Example (the numbers in docs/results.md):

    python benchmarks/anytime.py --sizes 500 1000 2000 --graphs 5 --limits 1 3 10 \
        --zoo gpt2/small/training llama-small/small/training

Held-out layered graphs (test seeds, ``dagopt.bench.datasets``; the method was tuned on
validation seeds only): mean % gap of the peak memory of ``inductor``, ``approx-dp``
at ``--beam-width`` (K = 1000) and ``anytime`` at each of ``--limits`` seconds from
``approx-dp`` at ``--reference-width`` (K = 10000), with mean run times. The reference
runs are slow and are kept in ``--reference-out`` (CSV) across runs; every other run
goes to ``--out`` as soon as it finishes and a rerun resumes (``--fresh`` reruns all
but the reference, so the compared methods run side by side in one process).

Tuning (docs/ordering.md) uses ``--split validation`` (validation seeds, its own CSVs),
``--option KEY=VALUE`` (anytime options, e.g. ``largest=128``, ``threads=2``, named in
the rows), ``--seed`` and ``--cpu-clock`` (time limits in CPU seconds of the one search
thread, so that the load of a shared machine does not decide); ``--reference-only``
computes the cached reference ahead of a run.

``--zoo`` adds real training graphs from the model zoo (``model/size/mode``, exported
once and cached, ``docs/zoo.md``), with the graph outputs kept alive as PyTorch does:
the % change of each method's peak from the traced order and from ``inductor``.
"""

import argparse
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from dagopt.bench.datasets import layered_test_set, layered_validation_set
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.ordering import Run, Summary, read_runs_csv, run_methods, runs_csv, summarize
from dagopt.bench.realgraphs import TRACED, change_percent, zoo_key_graph
from dagopt.bench.script import (
    add_ordering_graph_arguments,
    non_negative_int,
    positive_float,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.bench.timing import format_seconds
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.objectives import peak_memory
from dagopt.schedule import Schedule, solve


@dataclass(frozen=True)
class Entry:
    """A row of the tables: a solver and its options."""

    label: str
    method: str
    options: dict[str, Any]


def entries(
    beam_width: int, limits: Iterable[float], options: dict[str, Any], seed: int = 0
) -> list[Entry]:
    rows = [Entry("inductor", "inductor", {})]
    if beam_width:
        rows.append(Entry(f"approx-dp K={beam_width}", "approx-dp", {"beam_width": beam_width}))
    named = {**options, **({"seed": seed} if seed else {})}
    suffix = "".join(f" {key}={value}" for key, value in named.items())
    rows += [
        Entry(f"anytime {limit:g} s{suffix}", "anytime", {"time_limit": limit, **options})
        for limit in limits
    ]
    return rows


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with an int, float or string value."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value


def solver(by_label: dict[str, Entry], keep_outputs: bool):
    """A ``run_methods`` solver that runs a row by its label."""

    def run(graph: Graph, label: str, *, seed: int) -> Schedule:
        if label == TRACED:
            order = np.arange(graph.num_nodes)
            peak = peak_memory(graph, order, keep_outputs=keep_outputs)
            return Schedule(order=order, peak_memory=peak, method=TRACED, seconds=0.0)
        entry = by_label[label]
        return solve(graph, entry.method, seed=seed, keep_outputs=keep_outputs, **entry.options)

    return run


def read(path: Path, fresh: bool = False) -> list[Run]:
    return [] if fresh or not path.exists() else read_runs_csv(path.read_text())


def gap_table(summaries: list[Summary], labels: list[str]) -> str:
    """Markdown: one row per label; per size the mean % gap and the mean run time."""
    sizes = sorted({s.size for s in summaries})
    cell = {(s.size, s.method): s for s in summaries}
    header = ["method"]
    for size in sizes:
        header += [f"{size}: gap %", f"{size}: time s"]
    lines = [markdown_row(header), markdown_rule("l" + "r" * (len(header) - 1))]
    for label in labels:
        row = [label]
        for size in sizes:
            s = cell[(size, label)]
            row += [f"{s.mean_gap_percent:.2f}", format_seconds(s.mean_seconds)]
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def zoo_table(runs: list[Run], labels: list[str]) -> str:
    """Markdown: per zoo graph, each row's % change from the traced order and from
    inductor, and its run time."""
    header = ["graph", "nodes", "traced MB"]
    header += [f"{label}: % vs traced / % vs inductor / s" for label in labels]
    lines = [markdown_row(header), markdown_rule("lrr" + "r" * len(labels))]
    by_graph: dict[str, dict[str, Run]] = {}
    for run in runs:
        by_graph.setdefault(run.graph, {})[run.method] = run
    for key, by_label in by_graph.items():
        traced, inductor = by_label[TRACED].peak_memory, by_label["inductor"].peak_memory
        row = [key, f"{by_label[TRACED].size:,}", f"{traced / 1e6:.2f}"]
        for label in labels:
            r = by_label[label]
            row.append(
                f"{change_percent(r.peak_memory, traced):.2f} / "
                f"{change_percent(r.peak_memory, inductor):.2f} / {format_seconds(r.seconds)}"
            )
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument(
        "--graphs",
        type=non_negative_int,
        default=5,
        help="held-out layered graphs per size (0: the --zoo graphs only)",
    )
    parser.add_argument("--limits", type=positive_float, nargs="+", default=[1.0, 3.0, 10.0])
    parser.add_argument(
        "--beam-width",
        type=non_negative_int,
        default=1000,
        help="approx-dp row's K (0: no approx-dp row, e.g. for seed sweeps of anytime)",
    )
    parser.add_argument("--reference-width", type=positive_int, default=10_000, help="reference K")
    add_ordering_graph_arguments(parser)
    parser.add_argument(
        "--option",
        type=parse_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an anytime option for its rows (repeatable; named in the rows' labels)",
    )
    parser.add_argument("--out", help="CSV of the runs (default bench-out/anytime[-SPLIT].csv)")
    parser.add_argument(
        "--reference-out",
        help="CSV of the reference runs, kept across runs and --fresh "
        "(default bench-out/anytime[-SPLIT]-reference.csv)",
    )
    parser.add_argument("--fresh", action="store_true", help="rerun all but the reference")
    parser.add_argument(
        "--reference-only", action="store_true", help="only compute the cached reference runs"
    )
    parser.add_argument("--seed", type=int, default=0, help="the solvers' seed")
    parser.add_argument(
        "--cpu-clock",
        action="store_true",
        help="for tuning on a loaded machine: time limits count this thread's CPU time "
        "(time.thread_time), not the wall clock; one search thread only",
    )
    args = parser.parse_args(argv)
    if not args.graphs and not args.zoo:
        parser.error("--graphs 0 without --zoo: nothing to run")
    if args.cpu_clock:
        if dict(args.option).get("threads", 1) != 1:
            parser.error("--cpu-clock measures one thread's CPU time: no threads option")
        time.perf_counter = time.thread_time  # every deadline in dagopt reads perf_counter
    stem = "bench-out/anytime" + ("" if args.split == "test" else f"-{args.split}")
    args.out = args.out or f"{stem}.csv"
    args.reference_out = args.reference_out or f"{stem}-reference.csv"

    rows = entries(args.beam_width, args.limits, dict(args.option), args.seed)
    reference = Entry(
        f"approx-dp K={args.reference_width}", "approx-dp", {"beam_width": args.reference_width}
    )
    by_label = {e.label: e for e in [*rows, reference]}
    labels = [e.label for e in rows]
    out, reference_out = Path(args.out), Path(args.reference_out)
    console = Console(stderr=True)
    runs = read(out, args.fresh)
    references = read(reference_out)

    def record(into: list[Run], path: Path):
        def on_run(run: Run, graph: Graph, order: np.ndarray) -> None:
            into.append(run)
            write_text_atomic(path, runs_csv(into))
            peak, seconds = run.peak_memory, run.seconds
            console.log(f"{run.graph} {run.method}: peak {peak:.6g}, {seconds:.3g} s")

        return on_run

    graph_set = layered_test_set if args.split == "test" else layered_validation_set
    graphs = [(size, g.name, g) for size in args.sizes for g in graph_set(size, args.graphs)]
    done_refs = list(references)
    run_methods(
        graphs,
        [reference.label],
        lambda *_: {},
        done=references,
        on_run=record(done_refs, reference_out),
        seed=args.seed,
        solver=solver(by_label, keep_outputs=False),
    )
    if args.reference_only:
        return 0
    layered = [r for r in runs if r.graph in {key for _, key, _ in graphs}]
    done_runs = list(runs)
    layered = run_methods(
        graphs,
        labels,
        lambda *_: {},
        done=layered,
        on_run=record(done_runs, out),
        seed=args.seed,
        solver=solver(by_label, keep_outputs=False),
    )
    keys = {key for _, key, _ in graphs}
    measured = layered + [r for r in done_refs if r.graph in keys]
    if graphs:
        print(
            f"{args.graphs} {args.split} layered graphs per size; reference {reference.label} "
            f"(cached in {reference_out}); every other run in {out}\n"
        )
        print(gap_table(summarize(measured, reference.label), [*labels, reference.label]))

    if args.zoo:

        def zoo_graphs():
            for key in args.zoo:
                graph = zoo_key_graph(key, args.zoo_cache)
                yield graph.num_nodes, key, graph

        zoo_runs = [r for r in done_runs if r.graph in set(args.zoo)]
        zoo_runs = run_methods(
            zoo_graphs(),
            [TRACED, *labels],
            lambda *_: {},
            done=zoo_runs,
            on_run=record(done_runs, out),
            seed=args.seed,
            solver=solver(by_label, keep_outputs=True),
        )
        print("Zoo graphs, graph outputs kept (% change of the peak; run time):\n")
        print(zoo_table(zoo_runs, labels))
    return 0


if __name__ == "__main__":
    run_script(main)
