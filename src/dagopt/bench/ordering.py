"""Peak-memory ordering benchmark: paper 000, Table 1 (% gap from approximate DP, run time)."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.parallel import Job, run_jobs
from dagopt.bench.timing import format_seconds
from dagopt.executor import Executor
from dagopt.graph import Graph
from dagopt.io.csvrows import rows_from_csv, rows_to_csv
from dagopt.schedule import Schedule, solve

# Paper 000, Table 1: (% gap from approx. DP, run time [s]) on 300 test graphs (V100 / Xeon).
PAPER_TABLE1: dict[int, dict[str, tuple[float, float]]] = {
    500: {
        "approx-dp": (0.0, 264.88),
        "dfs-dp": (5.76, 3600),
        "random": (6.86, 1.38),
        "dfs": (12.9, 2.45),
        "bfs": (20.94, 2.43),
        "topoformer-greedy": (4.32, 0.6),
        "topoformer-sample": (3.49, 0.72),
        "topoformer-beam": (3.21, 2.68),
    },
    1000: {
        "approx-dp": (0.0, 1561.17),
        "dfs-dp": (3.84, 3600),
        "random": (2.62, 7.13),
        "dfs": (7.1, 10.91),
        "bfs": (11.31, 10.87),
        "topoformer-greedy": (0.48, 1.19),
        "topoformer-sample": (0.03, 1.41),
        "topoformer-beam": (0.08, 5.92),
    },
    2000: {
        "approx-dp": (0.0, 8828.86),
        "dfs-dp": (2.40, 3600),
        "random": (0.31, 36.87),
        "dfs": (3.57, 51.32),
        "bfs": (6.42, 51.52),
        "topoformer-greedy": (-1.47, 2.44),
        "topoformer-sample": (-1.68, 2.87),
        "topoformer-beam": (-1.66, 14.74),
    },
}


@dataclass(frozen=True)
class Run:
    """One method on one graph."""

    size: int
    graph: str
    method: str
    peak_memory: float
    seconds: float
    proved_optimal: bool | None


@dataclass(frozen=True)
class Summary:
    """Mean over the graphs of one size: % gap from the reference method and run time."""

    size: int
    method: str
    graphs: int
    mean_gap_percent: float
    mean_seconds: float


def run_methods(
    cases: Iterable[tuple[int, str, Graph]],
    methods: Sequence[str],
    options: Callable[[str, int], dict[str, Any]],
    *,
    seed: int = 0,
    done: Iterable[Run] = (),
    on_run: Callable[[Run, Graph, np.ndarray], None] | None = None,
    solver: Callable[..., Schedule] = solve,
    executor: Executor | None = None,
) -> list[Run]:
    """Run every method on every ``(size, key, graph)`` case; ``options(method, size)``
    gives the solver options (``time_limit`` included) and ``solver(graph, method,
    seed=..., **options)`` runs one. Runs already in ``done`` (same key and method) are
    kept, not repeated, so an interrupted benchmark resumes. ``on_run(run, graph,
    order)`` is called after each new run. The runs go through ``executor``
    (``dagopt.bench.parallel.run_jobs``: in this process by default)."""
    runs = list(done)
    finished = {(r.graph, r.method) for r in runs}
    jobs, cases_of = [], []
    for size, key, graph in cases:
        for method in methods:
            if (key, method) not in finished:
                finished.add((key, method))
                jobs.append(Job(solver, graph, method, seed, options(method, size)))
                cases_of.append((size, key))

    def record(index: int, schedule: Schedule) -> Run:
        (size, key), job = cases_of[index], jobs[index]
        run = Run(
            size=size,
            graph=key,
            method=job.method,
            peak_memory=schedule.peak_memory,
            seconds=schedule.seconds,
            proved_optimal=schedule.proved_optimal,
        )
        if on_run is not None:
            on_run(run, job.graph, schedule.order)
        return run

    return runs + run_jobs(jobs, record, executor)


def summarize(runs: list[Run], reference: str = "approx-dp") -> list[Summary]:
    """Mean % gap of each method from ``reference`` on the same graph, and mean run time."""
    ref = {(r.size, r.graph): r.peak_memory for r in runs if r.method == reference}
    groups: dict[tuple[int, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.size, r.method), []).append(r)
    summaries = []
    for (size, method), group in groups.items():
        gaps = [100.0 * (r.peak_memory / ref[(r.size, r.graph)] - 1.0) for r in group]
        summaries.append(
            Summary(
                size=size,
                method=method,
                graphs=len(group),
                mean_gap_percent=sum(gaps) / len(gaps),
                mean_seconds=sum(r.seconds for r in group) / len(group),
            )
        )
    return summaries


def markdown_table(
    summaries: list[Summary],
    paper: dict[int, dict[str, tuple[float, float]]],
    methods: list[str] | None = None,
) -> str:
    """Markdown table: one row per method (in ``methods`` order, default: as they come),
    per size our gap / time beside the paper's."""
    sizes = sorted({s.size for s in summaries})
    methods = methods or list(dict.fromkeys(s.method for s in summaries))
    cell = {(s.size, s.method): s for s in summaries}
    header = ["method"]
    for size in sizes:
        header += [f"{size}: gap %", f"{size}: time s", f"{size}: paper gap % / time s"]
    lines = [markdown_row(header), markdown_rule("l" * len(header))]
    for method in methods:
        row = [method]
        for size in sizes:
            ours = cell.get((size, method))
            theirs = paper.get(size, {}).get(method)
            row += [
                f"{ours.mean_gap_percent:.2f}" if ours else "-",
                format_seconds(ours.mean_seconds) if ours else "-",
                f"{theirs[0]:.2f} / {format_seconds(theirs[1])}" if theirs else "-",
            ]
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def runs_csv(runs: list[Run]) -> str:
    """All runs as CSV text (one row per method and graph)."""
    return rows_to_csv(runs, Run)


def read_runs_csv(text: str) -> list[Run]:
    """Runs written by ``runs_csv``."""
    return rows_from_csv(text, Run)
