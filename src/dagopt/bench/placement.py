"""Placement benchmark: paper 003, Table 1 (% gap from the best known solution).

For every test graph the best known solution is the best cost any method reached on
it (003 section 3.3). A method's figure is the geometric mean over the graphs of
``cost / best``, reported as a % gap: ``100 (geomean - 1)``. A memory-infeasible
result has no gap; the table counts such runs instead.
"""

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
from dagopt.objectives.devices import Devices
from dagopt.objectives.placement_bounds import meets_bound
from dagopt.place import place

# Paper 003, Table 1: % gap from the best known solution (TF runtime, TF peak memory,
# synthetic runtime test sets); dagopt's method names.
PAPER_TABLE1: dict[str, tuple[float, float, float]] = {
    "cp-sat": (1.00, 8.06, 0.00),
    "gp-dfs": (66.98, 14.77, 93.66),
    "local-search": (22.63, 7.24, 24.60),
    "brkga": (20.19, 7.98, 24.63),
    "brkga-tuned": (16.40, 7.11, 20.76),
    "idrs": (28.60, 12.39, 39.72),
    "regal": (11.04, 4.44, 18.57),
}


@dataclass(frozen=True)
class PlacementRun:
    """One method on one graph for one objective."""

    objective: str
    graph: str
    nodes: int
    method: str
    infeasible: int
    value: float
    seconds: float
    evaluations: int
    proved_optimal: bool | None


@dataclass(frozen=True)
class PlacementSummary:
    objective: str
    method: str
    graphs: int
    infeasible: int
    geomean_gap_percent: float
    mean_seconds: float


def _place(graph: Graph, method: str, *, seed: int, **options: Any):
    """``place``, with the devices and objective among the options (a picklable job)."""
    return place(graph, method, seed=seed, **options)


def run_placement_methods(
    graphs: Iterable[Graph],
    methods: Sequence[str],
    objective: str,
    options: Callable[[str, Graph], dict[str, Any] | None],
    *,
    devices: Devices | None = None,
    seed: int = 0,
    done: Iterable[PlacementRun] = (),
    on_run: Callable[[PlacementRun], None] | None = None,
    executor: Executor | None = None,
) -> list[PlacementRun]:
    """Run every method on every graph; runs already in ``done`` are kept, not repeated.

    ``options(method, graph)`` gives the method's options, or ``None`` to skip it on that
    graph (e.g. the exact solver on large graphs). The runs go through ``executor``
    (``dagopt.bench.parallel.run_jobs``: in this process by default).
    """
    runs = list(done)
    finished = {(r.objective, r.graph, r.method) for r in runs}
    jobs = []
    for graph in graphs:
        for method in methods:
            given = options(method, graph)
            if (objective, graph.name, method) in finished or given is None:
                continue
            finished.add((objective, graph.name, method))
            settings = {"devices": devices, "objective": objective, **given}
            jobs.append(Job(_place, graph, method, seed, settings))

    def record(index: int, result) -> PlacementRun:
        job = jobs[index]
        run = PlacementRun(
            objective=objective,
            graph=job.graph.name,
            nodes=job.graph.num_nodes,
            method=job.method,
            infeasible=result.cost[0],
            value=result.cost[1],
            seconds=result.seconds,
            evaluations=result.evaluations,
            proved_optimal=result.proved_optimal,
        )
        if on_run is not None:
            on_run(run)
        return run

    return runs + run_jobs(jobs, record, executor)


def best_known(runs: Iterable[PlacementRun]) -> dict[tuple[str, str], float]:
    """The smallest feasible value per ``(objective, graph)`` over every method."""
    best: dict[tuple[str, str], float] = {}
    for r in runs:
        if not r.infeasible:
            key = (r.objective, r.graph)
            best[key] = min(best.get(key, np.inf), r.value)
    return best


def geomean(ratios) -> float:
    """The geometric mean of positive ``ratios`` (nan if there are none)."""
    if len(ratios) == 0:
        return float("nan")
    return float(np.exp(np.mean(np.log(ratios))))


def geomean_gap_percent(ratios) -> float:
    """``100 (geomean(ratios) - 1)``: a % gap from ``cost / best`` ratios (nan if none)."""
    return 100.0 * (geomean(ratios) - 1.0)


def summarize_placement(runs: list[PlacementRun]) -> list[PlacementSummary]:
    """Geometric-mean % gap from the best known solution, per objective and method."""
    best = best_known(runs)
    groups: dict[tuple[str, str], list[PlacementRun]] = {}
    for r in runs:
        groups.setdefault((r.objective, r.method), []).append(r)
    summaries = []
    for (objective, method), group in groups.items():
        ratios = [r.value / best[(objective, r.graph)] for r in group if not r.infeasible]
        summaries.append(
            PlacementSummary(
                objective=objective,
                method=method,
                graphs=len(group),
                infeasible=sum(r.infeasible for r in group),
                geomean_gap_percent=geomean_gap_percent(ratios),
                mean_seconds=float(np.mean([r.seconds for r in group])),
            )
        )
    return summaries


def gap_reduction(summaries: list[PlacementSummary], objective: str) -> float:
    """How many times smaller REGAL's gap is than BRKGA 5k's (003 section 3.3: ~1.8x)."""
    gap = {s.method: s.geomean_gap_percent for s in summaries if s.objective == objective}
    return gap["brkga"] / gap["regal"] if gap.get("regal") else float("inf")


def _paired_values(runs: list[PlacementRun], objective: str) -> tuple[list[str], np.ndarray]:
    """Graphs on which ``brkga`` and ``regal`` are both feasible, and their values.

    Returns the sorted graph names and a ``(2, graphs)`` array (row 0 ``brkga``, row 1
    ``regal``); raises ``ValueError`` if no graph qualifies.
    """
    value: dict[str, dict[str, float]] = {"brkga": {}, "regal": {}}
    for r in runs:
        if r.objective == objective and r.method in value and not r.infeasible:
            value[r.method][r.graph] = r.value
    graphs = sorted(value["brkga"].keys() & value["regal"].keys())
    if not graphs:
        raise ValueError(f"no graph with feasible brkga and regal runs for {objective}")
    return graphs, np.array([[value[m][g] for g in graphs] for m in ("brkga", "regal")])


def gap_reduction_interval(
    runs: list[PlacementRun],
    objective: str,
    *,
    level: float = 0.9,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``gap_reduction`` over the test graphs.

    Graphs are resampled with replacement (their best known values fixed); only graphs
    on which both ``brkga`` and ``regal`` are feasible take part. A resample in which
    REGAL's gap is 0 counts as an infinite reduction.
    """
    graphs, values = _paired_values(runs, objective)
    best = best_known(runs)
    logs = np.log(values / np.array([best[(objective, g)] for g in graphs]))
    picks = np.random.default_rng(seed).integers(0, len(graphs), size=(resamples, len(graphs)))
    gaps = np.expm1(logs[:, picks].mean(axis=2))
    tail = 100.0 * (1.0 - level) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        reduction = np.where(gaps[1] > 0, gaps[0] / gaps[1], np.inf)
        # Interpolating between two infinite reductions gives nan; the percentile is inf.
        bounds = np.percentile(reduction, [tail, 100.0 - tail])
    low, high = np.nan_to_num(bounds, nan=np.inf, posinf=np.inf)
    return float(low), float(high)


@dataclass(frozen=True)
class HeadToHead:
    """REGAL against BRKGA 5k graph by graph: ``ratio`` is the geometric mean of REGAL's
    cost over BRKGA's; ``wins`` / ``ties`` / ``losses`` count graphs where REGAL's cost is
    lower / equal / higher."""

    graphs: int
    ratio: float
    wins: int
    ties: int
    losses: int


def head_to_head(runs: list[PlacementRun], objective: str) -> HeadToHead:
    """REGAL's cost against BRKGA 5k's on the graphs where both are feasible.

    Unlike the gap from the best known, this needs no third method and shows how
    often the two tie (both reach the same cost).
    """
    graphs, values = _paired_values(runs, objective)
    brkga, regal = values
    return HeadToHead(
        graphs=len(graphs),
        ratio=geomean(regal / brkga),
        wins=int(np.sum(regal < brkga)),
        ties=int(np.sum(regal == brkga)),
        losses=int(np.sum(regal > brkga)),
    )


@dataclass(frozen=True)
class Optimality:
    """How many of an objective's ``graphs`` (those with a feasible best known) have a
    best known that is provably optimal: equal to the lower bound (``by_bound``) or
    proved by ``cp-sat`` (``by_cp_sat``, counting only graphs the bound leaves open)."""

    graphs: int
    by_bound: int
    by_cp_sat: int

    @property
    def proved(self) -> int:
        return self.by_bound + self.by_cp_sat


def open_graphs(
    runs: list[PlacementRun], objective: str, bounds: dict[str, float]
) -> tuple[Optimality, set[str]]:
    """Which graphs' best known is provably optimal, and the names of the others.

    ``bounds`` maps a graph name to its ``placement_lower_bound`` for ``objective``
    (``meets_bound`` decides). On the graphs left open a better solution may exist, so
    only they can separate the search methods.
    """
    best = {g: v for (o, g), v in best_known(runs).items() if o == objective}
    cp_sat = {
        r.graph
        for r in runs
        if r.objective == objective and r.method == "cp-sat" and r.proved_optimal
    }
    by_bound = {g for g, v in best.items() if meets_bound(v, bounds[g])}
    by_cp_sat = (cp_sat & best.keys()) - by_bound
    optimality = Optimality(len(best), len(by_bound), len(by_cp_sat))
    return optimality, set(best) - by_bound - by_cp_sat


def placement_table(summaries: list[PlacementSummary], methods: Sequence[str]) -> str:
    """Markdown: per method and objective our gap, infeasible runs and time, beside 003's."""
    objectives = list(dict.fromkeys(s.objective for s in summaries))
    cell = {(s.objective, s.method): s for s in summaries}
    header = ["method"]
    for objective in objectives:
        header += [f"{objective}: gap %", "graphs (infeasible)", "time s"]
    header += ["paper: TF runtime / TF peak / synthetic runtime"]
    lines = [markdown_row(header), markdown_rule("l" * len(header))]
    for method in methods:
        row = [method]
        for objective in objectives:
            s = cell.get((objective, method))
            row += (
                [
                    f"{s.geomean_gap_percent:.2f}",
                    f"{s.graphs} ({s.infeasible})",
                    format_seconds(s.mean_seconds),
                ]
                if s
                else ["-", "-", "-"]
            )
        paper = PAPER_TABLE1.get(method)
        row.append(" / ".join(f"{v:.2f}" for v in paper) if paper else "-")
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def runs_csv(runs: list[PlacementRun]) -> str:
    return rows_to_csv(runs, PlacementRun)


def read_runs_csv(text: str) -> list[PlacementRun]:
    return rows_from_csv(text, PlacementRun)
