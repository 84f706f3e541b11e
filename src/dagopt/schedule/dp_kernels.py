"""numba kernels shared by the dynamic-programming solvers (paper 000, appendix C.3).

A search state is the *set* of executed nodes, stored as a packed uint64 bitset
(node ``v`` is bit ``v & 63`` of word ``v >> 6``), with its ready set, its live
memory ``I_t`` and the least peak ``max M`` of any partial order reaching it.
Live memory depends on the set alone, so two partial orders with the same set
differ only in their peak and the lower one dominates (state collapsing).
States are identified by a Zobrist hash (XOR of per-node random keys, updated in
O(1) per push); hash matches are confirmed on the full bitsets, so the search
stays exact.
"""

import numpy as np
from numba import njit, prange

from dagopt.graph import Graph, num_words
from dagopt.graph.bitset import singleton_bits, word_bits

_DEBRUIJN_CONSTANT = 0x03F79D71B4CB0A89
_DEBRUIJN = np.uint64(_DEBRUIJN_CONSTANT)
_DEBRUIJN_TABLE = np.zeros(64, dtype=np.int64)
_DEBRUIJN_TABLE[[((_DEBRUIJN_CONSTANT << i) % 2**64) >> 58 for i in range(64)]] = np.arange(64)


class DPGraph:
    """Bitset views of a ``Graph`` for the DP kernels: successor and predecessor masks,
    Zobrist keys and the memory freed by a sink right after it runs."""

    def __init__(self, graph: Graph, *, keep_outputs: bool) -> None:
        n = graph.num_nodes
        self.num_nodes = n
        self.words = num_words(n)
        src, dst = graph.edges
        self.succ_mask = np.zeros((n, self.words), dtype=np.uint64)
        self.pred_mask = np.zeros((n, self.words), dtype=np.uint64)
        # one bit per edge, set in place: ``single[dst]`` would be an (edges, words) array
        np.bitwise_or.at(self.succ_mask, (src, dst >> 6), word_bits(dst))
        np.bitwise_or.at(self.pred_mask, (dst, src >> 6), word_bits(src))
        self.single = singleton_bits(n)
        self.pred_ptr = graph.pred_ptr
        self.pred_idx = graph.pred_idx
        self.succ_ptr = graph.succ_ptr
        self.succ_idx = graph.succ_idx
        self.mem = graph.mem
        self.run_mem = graph.mem + graph.param_mem
        sinks = graph.out_degree == 0
        self.self_free = np.where(sinks & (not keep_outputs), graph.mem, 0.0)
        keys = np.random.default_rng(0x5EED).integers(1, 2**63, size=n, dtype=np.int64)
        self.zobrist = keys.astype(np.uint64)

    def initial_ready(self) -> np.ndarray:
        ready = np.zeros(self.words, dtype=np.uint64)
        for v in np.flatnonzero(self.pred_mask.any(axis=1) == 0):
            ready |= self.single[v]
        return ready


@njit(cache=True, inline="always")
def lowest_bit(word):
    """Index of the lowest set bit of a non-zero uint64 (de Bruijn multiplication)."""
    isolated = word & (~word + np.uint64(1))
    return _DEBRUIJN_TABLE[(isolated * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True, inline="always")
def popcount(word):
    word = word - ((word >> np.uint64(1)) & np.uint64(0x5555555555555555))
    word = (word & np.uint64(0x3333333333333333)) + (
        (word >> np.uint64(2)) & np.uint64(0x3333333333333333)
    )
    word = (word + (word >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (word * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, inline="always")
def within(mask, executed):
    """Whether every node of bitset ``mask`` is in bitset ``executed``."""
    for w in range(executed.size):  # noqa: SIM110  (a loop numba compiles to an early exit)
        if mask[w] & ~executed[w]:
            return False
    return True


@njit(cache=True, inline="always")
def freed_after(executed, v, pred_ptr, pred_idx, succ_mask, mem, self_free):
    """Memory released right after ``v`` runs, given ``executed`` already includes ``v``:
    each predecessor whose successors have now all run, plus ``v`` itself if a sink."""
    freed = self_free[v]
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[k]
        if within(succ_mask[u], executed):
            freed += mem[u]
    return freed


@njit(cache=True, inline="always")
def child_memory(executed, v, peak, live, pred_ptr, pred_idx, succ_mask, mem, run_mem, self_free):
    """The set DP's score of a child: ``(peak, live)`` once ready node ``v`` runs from a
    state of ``executed`` nodes, ``peak`` and ``live`` memory (``executed`` is given back
    as it was)."""
    bit = np.uint64(1) << np.uint64(v & 63)
    executed[v >> 6] |= bit
    freed = freed_after(executed, v, pred_ptr, pred_idx, succ_mask, mem, self_free)
    executed[v >> 6] &= ~bit
    return max(peak, live + run_mem[v]), live + mem[v] - freed


@njit(cache=True, inline="always")
def run_node(executed, ready, v, pred_mask, succ_ptr, succ_idx):
    """Move ready node ``v`` into bitset ``executed`` and add the successors it makes
    ready to bitset ``ready``."""
    bit = np.uint64(1) << np.uint64(v & 63)
    executed[v >> 6] |= bit
    ready[v >> 6] &= ~bit
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        x = succ_idx[k]
        if within(pred_mask[x], executed):
            ready[x >> 6] |= np.uint64(1) << np.uint64(x & 63)


@njit(cache=True, parallel=True)
def count_children(ready, count):
    """Number of ready nodes of each of the first ``count`` states."""
    out = np.zeros(count + 1, dtype=np.int64)
    for s in prange(count):
        total = 0
        for w in range(ready.shape[1]):
            total += popcount(ready[s, w])
        out[s + 1] = total
    return out


@njit(cache=True, parallel=True)
def expand(
    sets, ready, live, peak, hashes, offsets,
    pred_ptr, pred_idx, succ_mask, mem, run_mem, self_free, zobrist,
):  # fmt: skip
    """Every (state, ready node) child: parent index, node, hash, peak and live memory.

    ``offsets`` (from ``count_children``) says where each parent's children go.
    """
    count = offsets.size - 1
    total = offsets[count]
    words = sets.shape[1]
    c_parent = np.empty(total, dtype=np.int32)
    c_node = np.empty(total, dtype=np.int32)
    c_hash = np.empty(total, dtype=np.uint64)
    c_peak = np.empty(total, dtype=np.float64)
    c_live = np.empty(total, dtype=np.float64)
    for s in prange(count):
        executed = sets[s].copy()
        slot = offsets[s]
        for w in range(words):
            bits = ready[s, w]
            while bits:
                v = w * 64 + lowest_bit(bits)
                bits &= bits - np.uint64(1)
                c_parent[slot] = s
                c_node[slot] = v
                c_hash[slot] = hashes[s] ^ zobrist[v]
                c_peak[slot], c_live[slot] = child_memory(
                    executed, v, peak[s], live[s],
                    pred_ptr, pred_idx, succ_mask, mem, run_mem, self_free,
                )  # fmt: skip
                slot += 1
    return c_parent, c_node, c_hash, c_peak, c_live


@njit(cache=True)
def _same_child(sets, p1, v1, p2, v2):
    """Do (parent p1 + node v1) and (parent p2 + node v2) hold the same node set?"""
    if v1 == v2:
        for w in range(sets.shape[1]):  # noqa: SIM110  (numba: no generator all())
            if sets[p1, w] != sets[p2, w]:
                return False
        return True
    # Same set iff p1 = X + v2 and p2 = X + v1: p1 must hold v2 and p2 must hold v1.
    w1, b1 = v1 >> 6, np.uint64(1) << np.uint64(v1 & 63)
    w2, b2 = v2 >> 6, np.uint64(1) << np.uint64(v2 & 63)
    if not (sets[p1, w2] & b2) or not (sets[p2, w1] & b1):
        return False
    for w in range(sets.shape[1]):
        a = sets[p1, w]
        b = sets[p2, w]
        if w == w1:
            a |= b1
        if w == w2:
            b |= b2
        if a != b:
            return False
    return True


@njit(cache=True, parallel=True)
def collapse(sets, c_parent, c_node, c_hash, c_peak, c_live, parts):
    """State collapsing: indices of the children to keep, one per distinct node set,
    the one of least peak (then least live memory).

    ``parts`` threads each own the children whose hash falls in their residue class
    and deduplicate them with a private open-addressing table. The kept indices are
    returned in increasing order, so the beam that selects among them (and the answer)
    does not depend on the number of threads.
    """
    total = c_hash.size
    kept = np.empty(total, dtype=np.int64)
    kept_count = np.zeros(parts, dtype=np.int64)
    share = np.zeros(parts + 1, dtype=np.int64)
    for c in range(total):
        share[c_hash[c] % np.uint64(parts) + 1] += 1
    for p in range(parts):
        share[p + 1] += share[p]
    for p in prange(parts):
        kept_count[p] = _collapse_part(
            sets, c_parent, c_node, c_hash, c_peak, c_live, p, parts,
            kept[share[p] : share[p + 1]],
        )  # fmt: skip
    chosen = np.zeros(total, dtype=np.bool_)
    for p in range(parts):
        for i in range(share[p], share[p] + kept_count[p]):
            chosen[kept[i]] = True
    return np.flatnonzero(chosen)


@njit(cache=True)
def _collapse_part(sets, c_parent, c_node, c_hash, c_peak, c_live, part, parts, best):
    """Deduplicate the children with ``hash % parts == part`` into ``best``; returns the
    number kept. Table rows hold ``(hash, 1 + slot in best)``, 0 meaning empty."""
    capacity = 16
    while capacity < 2 * best.size:
        capacity *= 2
    mask = np.uint64(capacity - 1)
    table = np.zeros((capacity, 2), dtype=np.uint64)
    unique = 0
    for c in range(c_hash.size):
        key = c_hash[c]
        if key % np.uint64(parts) != part:
            continue
        slot = (key // np.uint64(parts)) & mask
        while True:
            k = table[slot, 1]
            if k == 0:
                table[slot, 0] = key
                table[slot, 1] = unique + 1
                best[unique] = c
                unique += 1
                break
            if table[slot, 0] == key:
                b = best[k - 1]
                if _same_child(sets, c_parent[b], c_node[b], c_parent[c], c_node[c]):
                    if c_peak[c] < c_peak[b] or (c_peak[c] == c_peak[b] and c_live[c] < c_live[b]):
                        best[k - 1] = c
                    break
            slot = (slot + np.uint64(1)) & mask
    return unique


@njit(cache=True)
def greedy_tail(
    executed, ready, live, peak, priorities,
    pred_ptr, pred_idx, succ_ptr, succ_idx, succ_mask, pred_mask, mem, run_mem, self_free,
):  # fmt: skip
    """The rest of the set DP at beam width 1 from one state (``executed``, ``ready``:
    bitsets, both updated in place), in one kernel: each step keeps the child least by
    ``(peak, live)`` (as ``expand`` scores children), or with ``priorities`` the ready
    node of highest priority (eq. 8's greedy step); ties to the lower node index.
    Returns the remaining nodes in order and whether a step had more than one ready
    node (then the DP was cut to its beam: not exact)."""
    words = executed.size
    n = mem.size
    done = 0
    for w in range(words):
        done += popcount(executed[w])
    out = np.empty(n - done, dtype=np.int64)
    branched = False
    for t in range(n - done):
        best, best_peak, best_live, best_key = -1, np.inf, np.inf, -np.inf
        for w in range(words):
            bits = ready[w]
            while bits:
                v = w * 64 + lowest_bit(bits)
                bits &= bits - np.uint64(1)
                branched = branched or best >= 0
                if priorities.size:
                    if priorities[v] > best_key:
                        best, best_key = v, priorities[v]
                    continue
                child_peak, child_live = child_memory(
                    executed, v, peak, live, pred_ptr, pred_idx, succ_mask, mem, run_mem, self_free
                )
                if child_peak < best_peak or (child_peak == best_peak and child_live < best_live):
                    best, best_peak, best_live = v, child_peak, child_live
        if priorities.size:
            best_peak, best_live = child_memory(
                executed, best, peak, live, pred_ptr, pred_idx, succ_mask, mem, run_mem, self_free
            )
        peak, live = best_peak, best_live
        run_node(executed, ready, best, pred_mask, succ_ptr, succ_idx)
        out[t] = best
    return out, branched


@njit(cache=True, parallel=True)
def materialize(sets, ready, chosen, c_parent, c_node, c_hash, pred_mask, succ_ptr, succ_idx):
    """Bitsets and ready sets of the chosen children."""
    count = chosen.size
    words = sets.shape[1]
    new_sets = np.empty((count, words), dtype=np.uint64)
    new_ready = np.empty((count, words), dtype=np.uint64)
    new_hash = np.empty(count, dtype=np.uint64)
    for i in prange(count):
        c = chosen[i]
        p = c_parent[c]
        v = c_node[c]
        for w in range(words):
            new_sets[i, w] = sets[p, w]
            new_ready[i, w] = ready[p, w]
        run_node(new_sets[i], new_ready[i], v, pred_mask, succ_ptr, succ_idx)
        new_hash[i] = c_hash[c]
    return new_sets, new_ready, new_hash
