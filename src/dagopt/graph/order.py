"""Validation of execution orders against a graph."""

import numpy as np

from dagopt.errors import OrderError
from dagopt.graph.core import Graph


def validate_order(graph: Graph, order) -> np.ndarray:
    """Return ``order`` as int64 node indices, or raise ``OrderError`` saying what is wrong."""
    n = graph.num_nodes
    try:
        array = np.asarray(order)
    except ValueError:  # ragged nested lists
        raise OrderError("order must be a flat list of node indices") from None
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise OrderError("order must be a flat list of node indices")
    array = array.astype(np.int64, copy=False)
    unknown = np.flatnonzero((array < 0) | (array >= n))
    if unknown.size:
        raise OrderError(f"order contains unknown node index {int(array[unknown[0]])}")
    counts = np.bincount(array, minlength=n)
    repeated = np.flatnonzero(counts > 1)
    if repeated.size:
        raise OrderError(f"order repeats node {graph.names[int(repeated[0])]!r}")
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        raise OrderError(
            f"order misses {missing.size} of {n} nodes, e.g. {graph.names[int(missing[0])]!r}"
        )
    position = np.empty(n, dtype=np.int64)
    position[array] = np.arange(n)
    src, dst = graph.edges
    late = np.flatnonzero(position[src] > position[dst])
    if late.size:
        s, t = int(src[late[0]]), int(dst[late[0]])
        raise OrderError(f"order runs {graph.names[t]!r} before its predecessor {graph.names[s]!r}")
    return array


def ready_masks(graph: Graph, order: np.ndarray) -> np.ndarray:
    """The ready set of every step of ``order``, for eq. (8) in differentiable code:
    ``(n, n)`` with ``[t, j]`` true iff node ``j`` is ready at step ``t``. Node ``j`` is
    ready from one step after its last predecessor ran until it runs itself."""
    n = graph.num_nodes
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    src, dst = graph.edges
    ready_from = np.zeros(n, dtype=np.int64)
    np.maximum.at(ready_from, dst, position[src] + 1)
    steps = np.arange(n)[:, None]
    return (ready_from[None, :] <= steps) & (steps <= position[None, :])
