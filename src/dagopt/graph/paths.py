"""Level-by-level walks over a graph's CSR arrays: neighbour rows and longest paths."""

import numpy as np


def csr_rows(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The CSR rows of ``nodes``, concatenated (neighbours of a whole frontier at once)."""
    starts = ptr[nodes]
    counts = ptr[nodes + 1] - starts
    shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return idx[shift + np.arange(shift.size)]


def longest_paths(
    ptr: np.ndarray, idx: np.ndarray, degree: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Longest paths into each node from the nodes of zero ``degree``, walking CSR ``ptr/idx``.

    Returns the hop count and the total ``weight`` of the nodes before it on its
    heaviest path (``weight`` defaults to zeros). Kahn generations, one numpy step per
    level: a node joins the frontier, its values final, once all of its in-neighbours
    have been processed.
    """
    n = degree.size
    if weight is None:
        weight = np.zeros(n)
    hops = np.zeros(n, dtype=np.int64)
    dist = np.zeros(n)
    missing = degree.astype(np.int64)
    frontier, level = np.flatnonzero(degree == 0), 0
    while frontier.size:
        hops[frontier] = level
        reached = csr_rows(ptr, idx, frontier)
        reach = np.repeat(dist[frontier] + weight[frontier], ptr[frontier + 1] - ptr[frontier])
        np.maximum.at(dist, reached, reach)
        np.subtract.at(missing, reached, 1)
        frontier = np.unique(reached[missing[reached] == 0])
        level += 1
    return hops, dist
