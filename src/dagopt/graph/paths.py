"""Level-by-level walks over a graph's CSR arrays: neighbour rows and longest paths."""

import itertools

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


#: Bytes of descendant bits ``redundant_edges`` gathers per level (bounds its memory).
GATHER_BYTES = 1 << 27


def redundant_edges(
    succ_ptr: np.ndarray, succ_idx: np.ndarray, pred_ptr: np.ndarray, pred_idx: np.ndarray
) -> np.ndarray:
    """Boolean per CSR successor edge ``u -> succ_idx[e]``: is it implied by a longer
    path (not in the transitive reduction)? Edge ``u -> v`` is redundant iff ``v``
    descends from another successor of ``u``.

    The descendant sets are bitsets over one block of target nodes at a time, filled
    level by level from the sinks (a node's longest path to a sink is longer than any
    of its successors', so a level reads only finished rows): ``n`` rows of the block's
    words, never the whole ``n x n`` closure, and at most about ``GATHER_BYTES``
    gathered per step. Time ``O(m n / 64)`` word operations, memory
    ``O(n * block + m)``.
    """
    n = succ_ptr.size - 1
    out_degree = np.diff(succ_ptr)
    redundant = np.zeros(succ_idx.size, dtype=bool)
    if succ_idx.size == 0:
        return redundant
    level = longest_paths(pred_ptr, pred_idx, out_degree)[0]
    by_level = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[by_level], np.arange(1, level.max() + 2))
    widest = max(int(out_degree[by_level[a:b]].sum()) for a, b in itertools.pairwise(bounds))
    words = max(1, min((n + 63) // 64, GATHER_BYTES // (8 * widest)))
    one = np.uint64(1)
    for first in range(0, n, 64 * words):
        desc = np.zeros((n, words), dtype=np.uint64)
        for a, b in itertools.pairwise(bounds):
            nodes = by_level[a:b]
            counts = out_degree[nodes]
            edges = np.repeat(succ_ptr[nodes] - np.cumsum(counts) + counts, counts)
            edges += np.arange(edges.size)
            via = np.bitwise_or.reduceat(desc[succ_idx[edges]], np.cumsum(counts) - counts)
            target = succ_idx[edges] - first
            inside = (target >= 0) & (target < 64 * words)
            row = np.repeat(np.arange(nodes.size), counts)[inside]
            word, bit = target[inside] >> 6, (target[inside] & 63).astype(np.uint64)
            redundant[edges[inside]] = ((via[row, word] >> bit) & one) == one
            np.bitwise_or.at(via, (row, word), np.left_shift(one, bit))
            desc[nodes] = via
    return redundant
