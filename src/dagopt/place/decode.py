"""Decoding BRKGA chromosomes into placements and schedules (paper 003, appendix A.2).

A chromosome holds ``d + 1`` random keys in ``[0, 1]`` per op, stored as an array of
shape ``(n, d + 1)``: ``d`` device affinities, then one scheduling priority. An op goes
to the device of largest affinity (the first on ties), and the schedule is a
topological sort that always runs the ready op of highest priority next (ties by the
smaller node index). Part (3) of the paper's chromosome, per-tensor transfer
priorities, is not needed: the cost model moves each input when its consumer is about
to run (``dagopt.objectives.placement``).
"""

import numpy as np
from numba import njit

from dagopt.errors import InputError
from dagopt.graph import Graph


@njit(cache=True, inline="always")
def _before(priority, a, b):
    """Whether node ``a`` is taken before ``b``: higher priority, then smaller index."""
    return priority[a] > priority[b] or (priority[a] == priority[b] and a < b)


@njit(cache=True)
def _push(heap, size, v, priority):
    """Insert ``v`` into the max-heap ``heap[:size]``; return the new size."""
    j = size
    heap[j] = v
    while j > 0:
        parent = (j - 1) // 2
        if not _before(priority, heap[j], heap[parent]):
            break
        heap[j], heap[parent] = heap[parent], heap[j]
        j = parent
    return size + 1


@njit(cache=True)
def _pop(heap, size, priority):
    """Remove and return the top of the max-heap ``heap[:size]`` (size shrinks by one)."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    j = 0
    while True:
        best = j
        for child in (2 * j + 1, 2 * j + 2):
            if child < size and _before(priority, heap[child], heap[best]):
                best = child
        if best == j:
            return top
        heap[j], heap[best] = heap[best], heap[j]
        j = best


@njit(cache=True)
def _priority_sort(succ_ptr, succ_idx, indegree, priority, order):
    """Kahn's algorithm taking the ready op of highest priority first; fills ``order``."""
    n = indegree.size
    remaining = indegree.copy()
    heap = np.empty(n, np.int64)
    size = 0
    for v in range(n):
        if remaining[v] == 0:
            size = _push(heap, size, v, priority)
    for i in range(n):
        v = _pop(heap, size, priority)
        size -= 1
        order[i] = v
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[e]
            remaining[w] -= 1
            if remaining[w] == 0:
                size = _push(heap, size, w, priority)


@njit(cache=True)
def _decode_rows(succ_ptr, succ_idx, indegree, keys, device_of, orders):
    rows, n, genes = keys.shape
    d = genes - 1
    for b in range(rows):
        for v in range(n):
            best = 0
            for k in range(1, d):
                if keys[b, v, k] > keys[b, v, best]:
                    best = k
            device_of[b, v] = best
        _priority_sort(succ_ptr, succ_idx, indegree, keys[b, :, d], orders[b])


def decode(graph: Graph, chromosomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Placements and orders ``(B, n)`` of chromosomes ``(B, n, d + 1)`` (A.2)."""
    keys = np.asarray(chromosomes, dtype=np.float64)
    if keys.ndim != 3 or keys.shape[1] != graph.num_nodes or keys.shape[2] < 2:
        raise InputError(
            f"chromosomes have shape {keys.shape}, expected (batch, {graph.num_nodes}, devices + 1)"
        )
    rows = keys.shape[0]
    device_of = np.empty((rows, graph.num_nodes), dtype=np.int64)
    orders = np.empty((rows, graph.num_nodes), dtype=np.int64)
    indegree = np.diff(graph.pred_ptr).astype(np.int64)
    _decode_rows(graph.succ_ptr, graph.succ_idx, indegree, keys, device_of, orders)
    return device_of, orders


def order_keys(order: np.ndarray) -> np.ndarray:
    """Priority keys under which ``decode`` schedules the topological ``order`` itself.

    The ``i``-th of ``n`` ops gets ``1 - (i + 1/2) / n``, so every op outranks the ops
    after it and, being ready when its turn comes, is the one taken. The keys lie in
    ``(0, 1)`` as BRKGA's do; REGAL's imitation warm start fits its priority
    distributions to them (``dagopt.train.placement``).
    """
    order = np.asarray(order, dtype=np.int64)
    n = order.size
    keys = np.empty(n)
    keys[order] = 1.0 - (np.arange(n) + 0.5) / n
    return keys
