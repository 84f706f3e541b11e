"""Transitive reduction of a DAG (paper 000, section 3.1) by block-wise descendant bitsets.

Edge ``u -> v`` is redundant (implied by a longer path) iff ``v`` descends from another
successor of ``u``. ``redundant_edges`` computes the descendant sets as bitsets over one
block of target nodes at a time, visiting the nodes in reverse topological order, so it
holds ``n`` rows of one block's words, never the whole ``n x n`` closure: ``O(m n / 64)``
word operations and ``O(n * block + m)`` memory. numba, compiled on first use (cached).
"""

import numpy as np
from numba import njit

#: Bytes of descendant bits one block holds (bounds the memory of ``redundant_edges``).
BLOCK_BYTES = 1 << 28


@njit(cache=True)
def _mark_redundant(succ_ptr, succ_idx, reverse_topo, block_words, redundant):
    n = succ_ptr.size - 1
    total_words = (n + 63) // 64
    via = np.zeros(block_words, dtype=np.uint64)
    one = np.uint64(1)
    for first_word in range(0, total_words, block_words):
        words = min(block_words, total_words - first_word)
        lo, hi = 64 * first_word, 64 * (first_word + words)
        desc = np.zeros((n, words), dtype=np.uint64)
        reaches = np.zeros(n, dtype=np.bool_)  # desc[u] is not empty in this block
        for u in reverse_topo:
            any_bit = False
            via[:words] = 0
            for e in range(succ_ptr[u], succ_ptr[u + 1]):
                w = succ_idx[e]
                if reaches[w]:
                    any_bit = True
                    for j in range(words):
                        via[j] |= desc[w, j]
            # test each successor, then add its own bit (no parallel edges: a sibling's
            # bit never marks another edge)
            for e in range(succ_ptr[u], succ_ptr[u + 1]):
                v = succ_idx[e]
                if lo <= v < hi:
                    t = v - lo
                    if any_bit and (via[t >> 6] >> np.uint64(t & 63)) & one:
                        redundant[e] = True
                    via[t >> 6] |= one << np.uint64(t & 63)
                    any_bit = True
            if any_bit:
                reaches[u] = True
                desc[u, :] = via[:words]


def redundant_edges(succ_ptr: np.ndarray, succ_idx: np.ndarray, topo: np.ndarray) -> np.ndarray:
    """Boolean per CSR successor edge ``e`` (``u -> succ_idx[e]``): is it redundant?
    ``topo`` is a topological order of the nodes."""
    n = succ_ptr.size - 1
    redundant = np.zeros(succ_idx.size, dtype=np.bool_)
    if succ_idx.size:
        block_words = max(1, min((n + 63) // 64, BLOCK_BYTES // (8 * n)))
        reverse = np.ascontiguousarray(topo[::-1], dtype=np.int64)
        _mark_redundant(
            np.asarray(succ_ptr, np.int64), np.asarray(succ_idx, np.int64), reverse,
            block_words, redundant,
        )  # fmt: skip
    return redundant
