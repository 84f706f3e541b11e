"""Baseline placers of paper 003, section 3.2: one device, GP + DFS, local search.

- ``single-device``: every op on the fastest device (the first of equals), in
  a memory-aware order from ``dagopt.schedule``; the reference point of no placement.
- ``gp-dfs``: 003's "Graph Partitioning + Depth First Search (GP+DFS) heuristic
  similar to the current approach in XLA that separates device assignments and
  scheduling into two passes". Pass one partitions the ops with networkx's
  Kernighan-Lin bisection, cutting as few tensor bytes as it can, recursively for more
  than two devices; pass two orders them depth-first.
- ``local-search``: 003's "Local Search heuristic that starts with a random solution
  and greedily improves", in BRKGA's chromosome space (``dagopt.place.decode``), with
  the 5,000 cost-model evaluations that 003 gives algorithms (2)-(6).
"""

import math
import time

import networkx as nx
import numpy as np

from dagopt.configs import check_option
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.place.base import PlacementProblem, PlacerResult, best_index, register_placer
from dagopt.place.brkga import SearchOutcome, outcome_result
from dagopt.place.decode import decode
from dagopt.schedule import solve


def _scored(
    problem: PlacementProblem, device_of: np.ndarray, order: np.ndarray, **info
) -> PlacerResult:
    """A ``PlacerResult`` for one solution, scored by one cost-model evaluation."""
    infeasible, value = problem.evaluate(device_of[None], order[None])
    cost = (int(infeasible[0]), float(value[0]))
    return PlacerResult(device_of=device_of, order=order, info={"cost": cost, **info})


@register_placer(
    "single-device",
    "every op on the fastest device, ordered by order_method (default inductor)",
    ("order_method",),
)
def single_device(
    problem: PlacementProblem, *, seed=None, time_limit=None, order_method="inductor"
) -> PlacerResult:
    """All ops on one device (003 section 3.2's setting without placement).

    The device is the fastest by ``PlacementProblem.speeds`` (the first of equals, so
    device 0 on homogeneous devices); the order is ``dagopt.schedule``'s
    ``order_method``, by default ``inductor``, which minimises single-device peak
    memory. One evaluation.
    """
    schedule = solve(problem.graph, order_method, seed=seed, time_limit=time_limit)
    device = int(np.argmax(problem.speeds))
    device_of = np.full(problem.graph.num_nodes, device, dtype=np.int64)
    return _scored(problem, device_of, schedule.order, device=device)


def cut_bytes(graph: Graph, device_of: np.ndarray) -> float:
    """Bytes of the edges whose ends lie on different devices (an edge weighs its source's mem)."""
    src, dst = graph.edges
    return float(graph.mem[src][device_of[src] != device_of[dst]].sum())


def partition(graph: Graph, speeds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Device of each op from recursive Kernighan-Lin bisection (networkx).

    The undirected graph weighs each edge by the bytes of the tensor it carries (its
    source's ``mem``). The devices ``[lo, hi)`` split into ``[lo, mid)`` and
    ``[mid, hi)`` with ``mid = (lo + hi) // 2``; their ops split in proportion to the
    total device speed of each half, so any device count works (3 devices: one third of
    the ops, then two thirds bisected evenly). Each bisection starts from a random split
    of those sizes, drawn from ``rng``; Kernighan-Lin swaps pairs, so it keeps them.
    """
    undirected = nx.Graph()
    undirected.add_nodes_from(range(graph.num_nodes))
    src, dst = graph.edges
    weighted = zip(src.tolist(), dst.tolist(), graph.mem[src].tolist(), strict=True)
    undirected.add_weighted_edges_from(weighted)
    device_of = np.zeros(graph.num_nodes, dtype=np.int64)

    def bisect(nodes: list[int], lo: int, hi: int) -> None:
        if hi - lo == 1:
            device_of[nodes] = lo
            return
        mid = (lo + hi) // 2
        size = round(len(nodes) * speeds[lo:mid].sum() / speeds[lo:hi].sum())
        shuffled = rng.permutation(nodes).tolist()
        first, second = shuffled[:size], shuffled[size:]
        if first and second:
            parts = nx.community.kernighan_lin_bisection(
                undirected.subgraph(nodes), (set(first), set(second))
            )
            first, second = parts if len(parts[0]) == size else parts[::-1]
        bisect(sorted(first), lo, mid)
        bisect(sorted(second), mid, hi)

    bisect(list(range(graph.num_nodes)), 0, len(speeds))
    return device_of


@register_placer(
    "gp-dfs",
    "Kernighan-Lin graph partition (min cut bytes), then a DFS order (003 'GP + DFS')",
    ("order_method",),
)
def gp_dfs(
    problem: PlacementProblem, *, seed=None, time_limit=None, order_method="dfs"
) -> PlacerResult:
    """003 section 3.2's GP + DFS: partition first, then order, in two separate passes.

    ``partition`` (seeded by ``seed``) assigns the ops; the order is ``dagopt.schedule``'s
    ``dfs`` (``order_method``), which ignores the placement. One evaluation; ``info``
    holds the ``cut_bytes`` of the partition.
    """
    graph = problem.graph
    device_of = partition(graph, problem.speeds, np.random.default_rng(seed))
    order = solve(graph, order_method, seed=seed, time_limit=time_limit).order
    return _scored(problem, device_of, order, cut_bytes=cut_bytes(graph, device_of))


def perturb(keys: np.ndarray, count: int, moves: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` chromosomes ``(count, n, d + 1)``, each ``keys`` with ``moves`` ops changed.

    Each changed op either moves to another device (its affinity for a random other
    device is swapped with its largest one) or gets a new uniform priority key, with
    equal chances (only the latter when ``d = 1``).
    """
    n, genes = keys.shape
    d = genes - 1
    batch = np.repeat(keys[None], count, axis=0)
    rows = np.repeat(np.arange(count), moves)
    ops = np.argsort(rng.random((count, n)), axis=1)[:, :moves].ravel()
    relocate = rng.random(rows.size) < (0.5 if d > 1 else 0.0)
    rows_p, ops_p = rows[~relocate], ops[~relocate]
    batch[rows_p, ops_p, d] = rng.random(ops_p.size)
    rows_d, ops_d = rows[relocate], ops[relocate]
    if ops_d.size:
        current = np.argmax(keys[ops_d, :d], axis=1)
        target = (current + rng.integers(1, d, size=ops_d.size)) % d
        swapped = batch[rows_d, ops_d, target]
        batch[rows_d, ops_d, target] = batch[rows_d, ops_d, current]
        batch[rows_d, ops_d, current] = swapped
    return batch


@register_placer(
    "local-search",
    "greedy best-neighbour descent on random keys, 5,000 evaluations (003 'Local Search')",
    ("evaluations", "neighbours", "patience"),
)
def local_search(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    evaluations: int = 5000,
    neighbours: int = 50,
    patience: int = 5,
) -> PlacerResult:
    """003 section 3.2's local search: a random start, then greedy improvement.

    The start is a uniform random chromosome (``dagopt.place.decode``). Each step
    evaluates ``neighbours`` (default 50) neighbours of the current chromosome in one
    batch and moves to the best if its lexicographic cost is strictly smaller. A
    neighbour changes ``1 + stale // patience`` random ops, where ``stale`` counts the
    steps since the last improvement, so the moves grow while the search is stuck and
    shrink back to one op after an improvement. It stops after ``evaluations`` (default
    5,000, the budget of 003) or ``time_limit`` seconds, whichever comes first.
    """
    for name, value in (
        ("evaluations", evaluations),
        ("neighbours", neighbours),
        ("patience", patience),
    ):
        if check_option(name, value, int) < 1:
            raise InputError(f"{name} must be >= 1, got {value}")
    graph = problem.graph
    n = graph.num_nodes
    rng = np.random.default_rng(seed)
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    keys = rng.random((n, problem.num_devices + 1))
    device_of, orders = decode(graph, keys[None])
    infeasible, value = problem.evaluate(device_of, orders)
    best = start = (int(infeasible[0]), float(value[0]))
    solution = device_of[0], orders[0]
    used, steps, stale, trace = 1, 1, 0, [(1, *best)]
    while used < evaluations and time.perf_counter() < deadline:
        count = min(neighbours, evaluations - used)
        batch = perturb(keys, count, min(n, 1 + stale // patience), rng)
        device_of, orders = decode(graph, batch)
        infeasible, value = problem.evaluate(device_of, orders)
        used += count
        steps += 1
        i = best_index(infeasible, value)
        if (candidate := (int(infeasible[i]), float(value[i]))) < best:
            keys, best, solution, stale = batch[i], candidate, (device_of[i], orders[i]), 0
            trace.append((used, *best))
        else:
            stale += 1
    outcome = SearchOutcome(*solution, best, used, steps, trace)
    return outcome_result(outcome, start_cost=start, cost=best)


__all__ = ["cut_bytes", "partition", "perturb"]
