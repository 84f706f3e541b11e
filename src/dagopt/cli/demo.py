"""``dagopt demo``: one small layered graph, several ordering methods, one comparison table."""

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from dagopt.bench.timing import format_seconds
from dagopt.cli.output import console, err_console, fmt_mem, fmt_proved
from dagopt.cli.schedule import bound_and_proof
from dagopt.errors import DagoptError
from dagopt.generate import generate_layered
from dagopt.graph import Graph
from dagopt.objectives import must_live_bound
from dagopt.registry import MAX_SEED
from dagopt.schedule import Schedule, solve

DEMO_METHODS = ("bfs", "dfs", "random", "lpmf", "inductor", "approx-dp", "dfs-dp", "exact-dp")
#: exact-dp runs only on graphs up to this size, so the demo stays within seconds.
EXACT_DP_MAX_NODES = 100
#: Time limit handed to every method of the demo, in seconds.
DEMO_TIME_LIMIT = 10.0
#: Shown while the methods' numba kernels load: compiled on the first run (about 20 s on
#: two cores, silent otherwise), read from numba's cache after.
WARM_UP_STATUS = "loading the solvers' compiled kernels (the first run compiles them, ~20 s)..."


def demo(
    nodes: Annotated[int, typer.Option("--nodes", "-n", min=1, help="Nodes of the graph.")] = 60,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the graph and of random methods.")
    ] = 0,
) -> None:
    """Generate a layered graph and compare the peak memory of several ordering methods."""
    graph = generate_layered(nodes, seed=seed, name=f"layered-{nodes}-s{seed}")
    console.print(
        f"graph {graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges, "
        f"lower bound {fmt_mem(must_live_bound(graph))}",
        markup=False,
    )
    results, notes = _run_methods(graph, seed)
    if results:
        console.print(_results_table(graph, results))
    for note in notes:
        console.print(note, markup=False, style="yellow")


def _run_methods(graph: Graph, seed: int) -> tuple[list[Schedule], list[str]]:
    """Run every demo method that applies; notes say which were skipped and why."""
    warm_up = generate_layered(8, seed=0)
    with err_console.status(WARM_UP_STATUS):  # the numba kernels load outside the timings
        for method in DEMO_METHODS:
            solve(warm_up, method, seed=seed)
    results: list[Schedule] = []
    notes: list[str] = []
    for method in DEMO_METHODS:
        if method == "exact-dp" and graph.num_nodes > EXACT_DP_MAX_NODES:
            notes.append(
                f"skipped {method}: {graph.num_nodes} nodes > {EXACT_DP_MAX_NODES} "
                f"(use --nodes {EXACT_DP_MAX_NODES} or fewer)"
            )
            continue
        with err_console.status(f"running {method}..."):
            try:
                results.append(solve(graph, method, seed=seed, time_limit=DEMO_TIME_LIMIT))
            except DagoptError as exc:
                notes.append(f"{method} failed: {exc}")
    return results, notes


def _results_table(graph: Graph, results: list[Schedule]) -> Table:
    """Peak, % gap from the best peak found, run time and optimality proof of each method
    (its own, or its peak meeting the lower bound: ``bound_and_proof``)."""
    best = min(r.peak_memory for r in results)
    table = Table(title="peak memory by method")
    table.add_column("method", no_wrap=True)
    for header in ("peak", "% gap from best", "seconds", "proved optimal"):
        table.add_column(header, justify="right")
    for r in results:
        gap = 100.0 * (r.peak_memory - best) / best if best > 0 else 0.0
        table.add_row(
            Text(r.method),
            fmt_mem(r.peak_memory),
            f"{gap:.2f}",
            format_seconds(r.seconds),
            fmt_proved(bound_and_proof(graph, r, keep_outputs=False)[1]),
            style="bold green" if r.peak_memory == best else None,
        )
    return table
