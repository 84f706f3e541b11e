"""Decoding node priorities into topological orders (paper 000, section 4.2, eq. 8).

Given priorities ``y``, the next node is drawn from the softmax of ``y`` over the
ready set ``S(sigma_{1:t-1}, G)``. ``greedy_order`` takes the most likely node at
every step (ties to the lower index); ``sample_orders`` draws whole orders, all
samples in parallel (numba ``prange``) from uniforms drawn up front with a seeded
``numpy.random.Generator``. Beam search with state collapsing is the set DP of
``dagopt.schedule.dp`` ranked by log-probability (``state_dp(priorities=y)``).
"""

import numpy as np
from numba import njit, prange

from dagopt.graph import Graph


@njit(cache=True, inline="always")
def _sources(in_degree, missing, ready):
    """Reset ``missing`` to the in-degrees and list the sources in ``ready``; their count."""
    size = 0
    for v in range(in_degree.size):
        missing[v] = in_degree[v]
        if missing[v] == 0:
            ready[size] = v
            size += 1
    return size


@njit(cache=True, inline="always")
def _run(ready, size, pick, succ_ptr, succ_idx, missing):
    """Remove ``ready[pick]`` (swap with the last), append the successors it makes ready;
    returns the node and the new ready-list size."""
    v = ready[pick]
    size -= 1
    ready[pick] = ready[size]
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        w = succ_idx[k]
        missing[w] -= 1
        if missing[w] == 0:
            ready[size] = w
            size += 1
    return v, size


@njit(cache=True)
def _greedy(succ_ptr, succ_idx, in_degree, priorities):
    n = in_degree.size
    missing = np.empty(n, dtype=np.int64)
    ready = np.empty(n, dtype=np.int64)
    size = _sources(in_degree, missing, ready)
    order = np.empty(n, dtype=np.int64)
    for t in range(n):
        pick = 0
        for i in range(1, size):
            a, b = ready[i], ready[pick]
            if priorities[a] > priorities[b] or (priorities[a] == priorities[b] and a < b):
                pick = i
        order[t], size = _run(ready, size, pick, succ_ptr, succ_idx, missing)
    return order


@njit(cache=True, parallel=True)
def _sample(succ_ptr, succ_idx, in_degree, priorities, uniforms):
    count, n = uniforms.shape
    orders = np.empty((count, n), dtype=np.int64)
    log_probs = np.zeros(count)
    for s in prange(count):
        missing = np.empty(n, dtype=np.int64)
        ready = np.empty(n, dtype=np.int64)
        weights = np.empty(n)
        size = _sources(in_degree, missing, ready)
        for t in range(n):
            top = priorities[ready[0]]
            for i in range(1, size):
                top = max(top, priorities[ready[i]])
            total = 0.0
            for i in range(size):
                total += np.exp(priorities[ready[i]] - top)
                weights[i] = total
            target = uniforms[s, t] * total
            pick = size - 1
            for i in range(size):
                if weights[i] > target:
                    pick = i
                    break
            log_probs[s] += priorities[ready[pick]] - top - np.log(total)
            orders[s, t], size = _run(ready, size, pick, succ_ptr, succ_idx, missing)
    return orders, log_probs


def greedy_order(graph: Graph, priorities: np.ndarray) -> np.ndarray:
    """The order that runs, at each step, the ready node of highest priority."""
    y = np.ascontiguousarray(priorities, dtype=np.float64)
    return _greedy(graph.succ_ptr, graph.succ_idx, graph.in_degree.astype(np.int64), y)


def sample_orders(
    graph: Graph, priorities: np.ndarray, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` orders drawn from eq. (8) and their log-probabilities."""
    y = np.ascontiguousarray(priorities, dtype=np.float64)
    uniforms = rng.random((int(count), graph.num_nodes))
    return _sample(graph.succ_ptr, graph.succ_idx, graph.in_degree.astype(np.int64), y, uniforms)
