"""Classical sequencing baselines of paper 000, section 5: BFS, DFS and best-of-100 random.

The paper traverses a pygraphviz layout; dagopt uses the layout-free equivalents:
``bfs`` is Kahn's algorithm with a FIFO queue of ready nodes, ``dfs`` the same with
a LIFO stack, so the successors a node just made ready run next (depth first).
Ties follow node index, i.e. the file's node order.
"""

import time
from collections.abc import Callable

import numpy as np
from numba import njit

from dagopt.errors import SolverError
from dagopt.graph import Graph
from dagopt.objectives import peak_memory
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.priority import sample_orders


@register("bfs", "breadth-first sequencing: Kahn's algorithm, FIFO ready queue")
def solve_bfs(graph: Graph, **_: object) -> SolverResult:
    return SolverResult(order=graph.topological_order.copy())


@register("dfs", "depth-first sequencing: Kahn's algorithm, LIFO ready stack")
def solve_dfs(graph: Graph, **_: object) -> SolverResult:
    return SolverResult(order=_lifo_topological(graph.succ_ptr, graph.succ_idx, graph.in_degree))


@njit(cache=True)
def _lifo_topological(succ_ptr, succ_idx, in_degree):
    n = in_degree.size
    missing = in_degree.copy()
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for v in range(n - 1, -1, -1):
        if missing[v] == 0:
            stack[top] = v
            top += 1
    order = np.empty(n, dtype=np.int64)
    for t in range(n):
        top -= 1
        v = stack[top]
        order[t] = v
        for k in range(succ_ptr[v + 1] - 1, succ_ptr[v] - 1, -1):
            w = succ_idx[k]
            missing[w] -= 1
            if missing[w] == 0:
                stack[top] = w
                top += 1
    return order


#: The most orders ``random`` and ``topoformer-sample`` draw (a guard against a mistyped
#: count: at 100 orders a millisecond on a small graph, the cap is hours of work).
MAX_SAMPLES = 10_000_000
#: Orders drawn at once: their ``(chunk, n)`` uniforms stay small.
SAMPLE_CHUNK = 256


def check_samples(samples: int) -> int:
    """``samples`` as an int; ``SolverError`` outside ``1..MAX_SAMPLES``."""
    samples = int(samples)
    if not 1 <= samples <= MAX_SAMPLES:
        raise SolverError(f"samples must lie in 1..{MAX_SAMPLES:,}, got {samples:,}")
    return samples


def least_peak(graph: Graph, orders, *, keep_outputs: bool) -> tuple[np.ndarray, float]:
    """The order of ``orders`` with the least peak (the first of equals), and its peak."""
    peaks = [peak_memory(graph, order, keep_outputs=keep_outputs) for order in orders]
    i = int(np.argmin(peaks))
    return orders[i], peaks[i]


def best_sampled(
    graph: Graph,
    draw: Callable[[int], np.ndarray],
    samples: int,
    time_limit: float | None,
    *,
    keep_outputs: bool,
    chunk: int = SAMPLE_CHUNK,
) -> SolverResult:
    """The least-peak order of ``samples`` orders, ``draw(k)`` giving the next ``k`` as
    rows, ``chunk`` at a time (drawn from one random stream, so the same orders as one
    draw of all). ``time_limit`` stops the drawing after the first chunk that ends past
    it; ``info`` holds the orders drawn and whether the limit stopped it."""
    samples = check_samples(samples)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    best, best_peak, drawn = None, np.inf, 0
    while drawn < samples and (deadline is None or drawn == 0 or time.perf_counter() < deadline):
        orders = draw(min(chunk, samples - drawn))
        drawn += len(orders)
        order, peak = least_peak(graph, orders, keep_outputs=keep_outputs)
        if peak < best_peak:
            best, best_peak = order, peak
    return SolverResult(
        order=best, info={"samples": drawn, "stopped_by_time_limit": drawn < samples}
    )


def sampler(graph: Graph, priorities: np.ndarray, seed: int | None) -> Callable[[int], np.ndarray]:
    """``draw(k)`` for ``best_sampled``: ``k`` orders from eq. (8) of paper 000 with
    ``priorities``, from one generator seeded with ``seed``."""
    rng = np.random.default_rng(seed)
    return lambda count: sample_orders(graph, priorities, count, rng)[0]


@register("random", "best of N uniformly random topological orders (default 100)", ("samples",))
def solve_random(
    graph: Graph,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    samples: int = 100,
    **_: object,
) -> SolverResult:
    """The least-peak of ``samples`` uniform random topological orders (``best_sampled``)."""
    # Uniform choice among the ready nodes is eq. (8) of paper 000 with equal priorities.
    equal = np.zeros(graph.num_nodes)
    draw = sampler(graph, equal, seed)
    return best_sampled(graph, draw, samples, time_limit, keep_outputs=keep_outputs)
