"""Shared test helpers: hypothesis strategies for random DAGs and reference implementations."""

import heapq

import numpy as np
from hypothesis import strategies as st

from dagopt import Graph


@st.composite
def dags(draw, min_nodes: int = 1, max_nodes: int = 8, integer_sizes: bool = True) -> Graph:
    """Random labelled DAGs: a random permutation defines the topological ranks, every
    forward pair is an edge with a drawn probability, sizes are drawn per node."""
    n = draw(st.integers(min_nodes, max_nodes))
    density = draw(st.floats(0.0, 0.8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rank = rng.permutation(n)
    src, dst = [], []
    for i in range(n):
        for j in range(n):
            if rank[i] < rank[j] and rng.random() < density:
                src.append(i)
                dst.append(j)
    if integer_sizes:
        mem = rng.integers(0, 10, n)
        param = rng.integers(0, 4, n) * (rng.random(n) < 0.5)
    else:
        mem = rng.gamma(1.5, 2.0, n)
        param = rng.gamma(1.0, 1.0, n) * (rng.random(n) < 0.5)
    return Graph(n, src, dst, mem=mem, param_mem=param)


def sparse_dag(n: int, density: float, seed: int) -> Graph:
    """A random DAG whose node order is topological (edges ``i -> j`` only for ``i < j``)."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    src = [i for i, _ in pairs]
    dst = [j for _, j in pairs]
    return Graph(n, src, dst, mem=rng.gamma(2.0, 1.0, n))


def reference_peak(graph: Graph, order, keep_outputs: bool = False) -> float:
    """Straightforward eq. (1)-(3), (15): simulate step by step with Python sets."""
    executed: set[int] = set()
    live: set[int] = set()
    peak = 0.0
    for v in order:
        v = int(v)
        current = sum(graph.mem[u] for u in live)
        peak = max(peak, current + graph.mem[v] + graph.param_mem[v])
        executed.add(v)
        live.add(v)
        for u in list(live):
            succ = set(graph.successors(u).tolist())
            if succ and succ <= executed:
                live.discard(u)
            if not succ and not keep_outputs:
                live.discard(u)
    return peak


def all_topological_orders(graph: Graph):
    """Every topological order, by recursion over the ready set."""
    missing = graph.in_degree.astype(int).copy()
    order: list[int] = []

    def extend():
        if len(order) == graph.num_nodes:
            yield list(order)
            return
        for v in np.flatnonzero(missing == 0).tolist():
            if v in order:
                continue
            order.append(v)
            missing[graph.successors(v)] -= 1
            yield from extend()
            missing[graph.successors(v)] += 1
            order.pop()

    yield from extend()


def priority_topological(graph: Graph, priority: np.ndarray) -> np.ndarray:
    """Kahn's algorithm taking the ready node of smallest priority first."""
    missing = graph.in_degree.astype(int).copy()
    ready = [(priority[v], v) for v in np.flatnonzero(missing == 0).tolist()]
    heapq.heapify(ready)
    order = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for w in graph.successors(v).tolist():
            missing[w] -= 1
            if missing[w] == 0:
                heapq.heappush(ready, (priority[w], w))
    return np.array(order)
