"""numba kernels of the anytime local search (``dagopt.schedule.anytime``).

An order's memory profile (paper 000, eq. 2-3, 15) at step ``t`` depends only on the
*set* of nodes run before ``t`` and on the node run at ``t``. Moving a node from step
``i`` to step ``j`` changes those sets only for the steps between ``i`` and ``j``, so a
move changes the profile only there: the kernels evaluate every target step of a node
in one sweep over that stretch, and re-solve a window of consecutive steps by the set
DP of appendix C.3 restricted to the window's nodes.

Arrays describing the current order: ``pos[v]`` (step of node ``v``), ``last[v]`` (the
step after which ``v``'s output is freed: its last consumer's step, its own step for a
sink, ``n`` for a sink kept alive), ``during[t]`` (``M_t``) and ``after[t]`` (``I_t``).
``alive[v]`` is ``mem(v)`` when ``v``'s output outlives its own step (it has consumers,
or it is a kept sink) and 0 otherwise.
"""

import time

import numpy as np
from numba import njit, objmode

from dagopt.schedule.dp_kernels import _same_child, lowest_bit, popcount

#: Relative tolerance below which two peaks (or excesses) count as equal, so that float
#: rounding never passes for an improvement.
RELATIVE_TOLERANCE = 1e-12


@njit(cache=True)
def now():
    """``time.perf_counter()`` from inside a kernel, so it can stop at a deadline."""
    with objmode(t="float64"):
        t = time.perf_counter()
    return t


@njit(cache=True, nogil=True)
def profile(order, pos, last, during, after, succ_ptr, succ_idx, mem, run, kept, freed):
    """Fill ``pos``, ``last``, ``during`` and ``after`` for ``order`` (eq. 2-3, 15)."""
    n = order.size
    for t in range(n):
        pos[order[t]] = t
    freed[:] = 0.0
    for v in range(n):
        if succ_ptr[v] == succ_ptr[v + 1]:
            last[v] = n if kept[v] else pos[v]
        else:
            latest = -1
            for k in range(succ_ptr[v], succ_ptr[v + 1]):
                latest = max(latest, pos[succ_idx[k]])
            last[v] = latest
        if last[v] < n:
            freed[last[v]] += mem[v]
    live = 0.0
    for t in range(n):
        v = order[t]
        during[t] = live + run[v]
        live += mem[v] - freed[t]
        after[t] = live


@njit(cache=True, nogil=True)
def summarize(during, tau, prefix_max, suffix_max, excess_sum, hot_next, hot_prev):
    """Prefix and suffix maxima of ``during``, prefix sums of the excess
    ``max(0, M_t - tau)`` (``excess_sum[t]`` sums steps ``< t``), and for every step the
    next (``hot_next``) and previous (``hot_prev``) step whose ``M_t`` exceeds ``tau``
    (``n`` and ``-1`` when there is none)."""
    n = during.size
    best = -np.inf
    for t in range(n):
        best = max(best, during[t])
        prefix_max[t] = best
    best = -np.inf
    for t in range(n - 1, -1, -1):
        best = max(best, during[t])
        suffix_max[t] = best
    excess_sum[0] = 0.0
    for t in range(n):
        excess_sum[t + 1] = excess_sum[t] + max(0.0, during[t] - tau)
    nxt = n
    for t in range(n - 1, -1, -1):
        if during[t] > tau:
            nxt = t
        hot_next[t] = nxt
    prev = -1
    for t in range(n):
        if during[t] > tau:
            prev = t
        hot_prev[t] = prev


@njit(cache=True, inline="always")
def better(peak, excess, best_peak, best_excess, scale):
    """Is ``(peak, excess)`` lexicographically below ``(best_peak, best_excess)`` by more
    than the rounding tolerance (relative to ``scale``)?"""
    tolerance = RELATIVE_TOLERANCE * scale
    if peak < best_peak - tolerance:
        return True
    return peak <= best_peak + tolerance and excess < best_excess - tolerance


@njit(cache=True, nogil=True)
def best_move(
    i, order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, scratch,
):  # fmt: skip
    """The best move of the node at step ``i`` by ``(peak, excess over tau)``: returns
    ``(j, peak, excess, work)``, the target step (-1 when none of its moves improves on
    the current order), the score the order would then have, and the steps and edges
    the scoring visited.

    Node ``v = order[i]`` may go to any step ``j`` between its last predecessor and its
    first successor. Only moves whose stretch ``[min(i, j), max(i, j)]`` holds a step
    above ``tau`` can lower the score, and only those are scored. For a later ``j``
    the steps ``t`` in ``[i, j)`` run ``order[t + 1]`` without ``v`` executed:
    ``M'_t = M_{t+1} - alive(v) + sum(mem(u))`` over the predecessors ``u`` of ``v``
    freed by step ``t`` (``last[u] <= t``), which ``v`` no longer lets go. For an
    earlier ``j`` the steps ``t`` in ``(j, i]`` run ``order[t - 1]`` with ``v``
    executed: ``M'_t = M_{t-1} + alive(v) - sum(mem(u))`` over the predecessors whose
    other consumers all ran before step ``t - 1``. ``scratch`` is a zeroed array of
    ``n`` floats, left zeroed.
    """
    n = order.size
    current_peak = prefix_max[n - 1]
    current_excess = excess_sum[n]
    best_peak, best_excess, best_j = current_peak, current_excess, -1
    v = order[i]
    work = pred_ptr[v + 1] - pred_ptr[v] + succ_ptr[v + 1] - succ_ptr[v]
    lo = 0
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        lo = max(lo, pos[pred_idx[k]] + 1)
    hi = n - 1
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        hi = min(hi, pos[succ_idx[k]] - 1)
    before = prefix_max[i - 1] if i > 0 else -np.inf
    beyond = suffix_max[i + 1] if i + 1 < n else -np.inf
    if i < hi and hot_next[i] <= hi:
        work += hi - i
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            if last[u] <= hi:
                scratch[last[u]] += mem[u]
        regained = 0.0
        stretch_max, stretch_excess = -np.inf, 0.0
        for j in range(i + 1, hi + 1):
            regained += scratch[j - 1]
            m = during[j] - alive[v] + regained
            stretch_max = max(stretch_max, m)
            stretch_excess += max(0.0, m - tau)
            if j < hot_next[i]:
                continue
            m_j = after[j] - alive[v] + regained + scratch[j] + run[v]
            peak = max(before, stretch_max, m_j)
            if j + 1 < n:
                peak = max(peak, suffix_max[j + 1])
            excess = current_excess - (excess_sum[j + 1] - excess_sum[i])
            excess += stretch_excess + max(0.0, m_j - tau)
            if better(peak, excess, best_peak, best_excess, current_peak):
                best_peak, best_excess, best_j = peak, excess, j
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            if last[u] <= hi:
                scratch[last[u]] = 0.0
    if i > lo and hot_prev[i] >= lo:
        work += i - lo
        released = 0.0  # predecessors freed once v runs, for the step t being scored
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            work += succ_ptr[u + 1] - succ_ptr[u]
            other = -1
            for q in range(succ_ptr[u], succ_ptr[u + 1]):
                w = succ_idx[q]
                if w != v:
                    other = max(other, pos[w])
            if other <= i - 2:
                released += mem[u]
                if other >= 0:
                    scratch[other] += mem[u]
        stretch_max, stretch_excess = -np.inf, 0.0
        for j in range(i - 1, lo - 1, -1):
            m = during[j] + alive[v] - released
            stretch_max = max(stretch_max, m)
            stretch_excess += max(0.0, m - tau)
            if j - 1 >= 0:
                released -= scratch[j - 1]
            if j > hot_prev[i]:
                continue
            m_j = (after[j - 1] if j > 0 else 0.0) + run[v]
            peak = max(beyond, stretch_max, m_j)
            if j > 0:
                peak = max(peak, prefix_max[j - 1])
            excess = current_excess - (excess_sum[i + 1] - excess_sum[j])
            excess += stretch_excess + max(0.0, m_j - tau)
            if better(peak, excess, best_peak, best_excess, current_peak):
                best_peak, best_excess, best_j = peak, excess, j
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            for q in range(succ_ptr[u], succ_ptr[u + 1]):
                w = succ_idx[q]
                scratch[pos[w]] = 0.0
    return best_j, best_peak, best_excess, work


@njit(cache=True, nogil=True)
def node_moves(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, scratch,
    target, move_peak, move_excess,
):  # fmt: skip
    """Every node's best move (``best_move``): the node at step ``i`` goes best to step
    ``target[i]``, giving the order the score ``(move_peak[i], move_excess[i])``;
    ``target[i] = -1`` when none of its moves improves on the current order. Returns
    the steps and edges the scoring visited."""
    work = 0
    for i in range(order.size):
        target[i], move_peak[i], move_excess[i], visited = best_move(
            i, order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next,
            hot_prev, pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, scratch,
        )  # fmt: skip
        work += visited
    return work


@njit(cache=True, nogil=True)
def disjoint_moves(target, move_peak, move_excess, scale, start, limit, taken, chosen, passed):
    """Pick improving moves (``node_moves``) whose stretches ``[min(i, j), max(i, j)]``
    are pairwise disjoint, best score first, at most ``limit``; writes their steps to
    ``chosen`` and the steps of the improving moves passed over (a stretch overlapping
    a better one's) to ``passed``, best first, and returns both counts. Scores are
    ordered as ``better`` orders them: peaks within the rounding tolerance (relative to
    ``scale``) count as equal, and equal scores are taken from step ``start`` on (a
    rotating order). ``taken`` is a zeroed boolean array of ``n`` entries, left zeroed.

    Such moves can all be applied at once: a step's ``M_t`` depends only on the set of
    nodes run before it and the node run at it, and a move permutes its own stretch
    only, so the steps of one stretch see the same sets whatever the other moves do.
    The combined profile is each move's stretch over the current profile: its peak is
    at most the largest of the moves' peaks and, at the same ``tau``, its excess falls
    by the sum of theirs, so the score falls at least as much as by the best move alone.
    """
    n = target.size
    steps = np.empty(n, dtype=np.int64)
    count = 0
    for offset in range(n):
        i = (start + offset) % n
        if target[i] >= 0:
            steps[count] = i
            count += 1
    steps = steps[:count]
    by_peak = steps[np.argsort(move_peak[steps], kind="mergesort")]
    level = np.empty(n)  # each step's peak, snapped to the lowest within the tolerance
    tolerance = RELATIVE_TOLERANCE * scale
    representative = -np.inf
    for i in by_peak:
        if move_peak[i] > representative + tolerance:
            representative = move_peak[i]
        level[i] = representative
    steps = steps[np.argsort(move_excess[steps], kind="mergesort")]
    steps = steps[np.argsort(level[steps], kind="mergesort")]
    picked, skipped = 0, 0
    for i in steps:
        lo, hi = min(i, target[i]), max(i, target[i])
        if picked < limit and not taken[lo : hi + 1].any():
            taken[lo : hi + 1] = True
            chosen[picked] = i
            picked += 1
        else:
            passed[skipped] = i
            skipped += 1
    for c in range(picked):
        i = chosen[c]
        taken[min(i, target[i]) : max(i, target[i]) + 1] = False
    return picked, skipped


@njit(cache=True, nogil=True)
def move_node(order, i, j):
    """Move the node at step ``i`` to step ``j``, shifting the steps between by one."""
    v = order[i]
    if j > i:
        order[i:j] = order[i + 1 : j + 1].copy()
    else:
        order[j + 1 : i + 1] = order[j:i].copy()
    order[j] = v


@njit(cache=True, inline="always")
def _bit(index):
    return np.uint64(1) << np.uint64(index & 63)


@njit(cache=True, nogil=True)
def _select(key, live, count, width):
    """Indices of the ``width`` of the first ``count`` children least by ``(key, live)``,
    in O(count) expected time (``np.partition``)."""
    kth = np.partition(key[:count], width - 1)[width - 1]
    keep = np.empty(width, dtype=np.int64)
    got = 0
    for c in range(count):
        if key[c] < kth:
            keep[got] = c
            got += 1
    tied = np.flatnonzero(key[:count] == kth)
    fill = width - got
    if tied.size > fill:
        cut = np.partition(live[tied], fill - 1)[fill - 1]
        for c in tied:
            if live[c] < cut:
                keep[got] = c
                got += 1
        for c in tied:
            if got < width and live[c] == cut:
                keep[got] = c
                got += 1
    else:
        keep[got:] = tied
    return keep


@njit(cache=True, nogil=True)
def window_dp(
    order, a, b, last, after, pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, self_free,
    zobrist, floor, tau, beam, deadline, noise, seed, anchored, loc, out,
):  # fmt: skip
    """Re-solve steps ``[a, b)`` by the set DP of appendix C.3 on their nodes, anchored
    on their current order (unless not ``anchored``: a kick of the iterated search).

    The nodes run before ``a`` and from ``b`` on stay, so the live memory entering the
    window is ``after[a - 1]``, and an output is freed inside the window only if all its
    consumers are window nodes or ran before ``a`` (``last < b``). A state is a set of
    window nodes (a bitset) with its live memory, its peak and its excess over ``tau``
    so far; children with the same set (same Zobrist hash, confirmed on the bitsets)
    collapse to the least ``(max(peak, floor), excess)``, where ``floor`` is the peak
    outside the window, below which the window's peak does not matter. Each step keeps
    the ``beam`` children least by ``(max(peak, floor), live)`` (``live`` times ``1 +
    noise * U(0, 1)``, drawn from ``seed``, when ``noise`` is not 0) and, always, the state
    holding the current order's first nodes (as ``anchored-dp`` does), so the result's
    ``max(peak, floor)`` is never above the current order's. Once ``deadline``
    (``perf_counter`` seconds) passes the DP stops and returns ``(inf, inf, False)``,
    writing nothing: finishing with the anchor state alone would give back the current
    order, and on a window of thousands of steps would take seconds past the deadline.

    Writes the window order to ``out[:b - a]``; returns ``(peak, excess, exact)``:
    ``exact`` when no step was cut to the beam (then no window order has a lower
    ``max(peak, floor)``).
    ``loc`` is an array of ``n`` entries ``-1``, left so.
    """
    k = b - a
    words = (k + 63) // 64
    nodes = order[a:b].copy()
    for li in range(k):
        loc[nodes[li]] = li
    pred_mask = np.zeros((k, words), dtype=np.uint64)
    pred_lo = np.full(k, words, dtype=np.int64)
    pred_hi = np.full(k, -1, dtype=np.int64)
    succ_start = np.zeros(k + 1, dtype=np.int64)
    entries = 0
    for li in range(k):
        v = nodes[li]
        entries += pred_ptr[v + 1] - pred_ptr[v]
        for q in range(pred_ptr[v], pred_ptr[v + 1]):
            p = loc[pred_idx[q]]
            if p >= 0:
                pred_mask[li, p >> 6] |= _bit(p)
                pred_lo[li] = min(pred_lo[li], p >> 6)
                pred_hi[li] = max(pred_hi[li], p >> 6)
                succ_start[p + 1] += 1
    succ_start = np.cumsum(succ_start)
    local_succ = np.empty(succ_start[k], dtype=np.int64)
    fill = succ_start[:k].copy()
    free_ptr = np.zeros(k + 1, dtype=np.int64)
    free_need = np.zeros((entries, words), dtype=np.uint64)
    free_lo = np.empty(entries, dtype=np.int64)
    free_hi = np.empty(entries, dtype=np.int64)
    free_mem = np.empty(entries)
    c = 0
    for li in range(k):
        v = nodes[li]
        for q in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[q]
            if loc[u] >= 0:
                local_succ[fill[loc[u]]] = li
                fill[loc[u]] += 1
            if last[u] < b:  # every consumer of u runs by the window's end
                lo, hi = words, -1
                for r in range(succ_ptr[u], succ_ptr[u + 1]):
                    x = loc[succ_idx[r]]
                    if x >= 0:
                        free_need[c, x >> 6] |= _bit(x)
                        lo, hi = min(lo, x >> 6), max(hi, x >> 6)
                free_lo[c], free_hi[c], free_mem[c] = lo, hi, mem[u]
                c += 1
        free_ptr[li + 1] = c
    for li in range(k):
        loc[nodes[li]] = -1
    keys = zobrist[nodes]

    width = beam
    masks = np.zeros((width, words), dtype=np.uint64)
    ready = np.zeros((width, words), dtype=np.uint64)
    for li in range(k):
        if pred_hi[li] < 0:
            ready[0, li >> 6] |= _bit(li)
    live = np.zeros(width)
    peak = np.full(width, -np.inf)
    excess = np.zeros(width)
    hashes = np.zeros(width, dtype=np.uint64)
    live[0] = after[a - 1] if a > 0 else 0.0
    next_masks, next_ready = np.zeros_like(masks), np.zeros_like(ready)
    next_live, next_peak = np.zeros(width), np.zeros(width)
    next_excess, next_hashes = np.zeros(width), np.zeros(width, dtype=np.uint64)
    parents = np.empty((k, width), dtype=np.int32)
    chosen = np.empty((k, width), dtype=np.int32)
    capacity = 0
    c_parent = np.empty(0, dtype=np.int64)
    c_node, c_slot = c_parent.copy(), c_parent.copy()
    c_hash = np.empty(0, dtype=np.uint64)
    c_live, c_peak, c_excess, c_key = np.empty(0), np.empty(0), np.empty(0), np.empty(0)
    c_rank = np.empty(0)
    if noise:
        np.random.seed(seed)  # noqa: NPY002  (numba supports only the legacy API)
    table = np.full(16, -1, dtype=np.int64)
    count, anchor, exact = 1, 0, True
    for t in range(k):
        total = 0
        for s in range(count):
            for w in range(words):
                total += popcount(ready[s, w])
        if total > capacity:
            capacity = 2 * total
            c_parent = np.empty(capacity, dtype=np.int64)
            c_node, c_slot = c_parent.copy(), c_parent.copy()
            c_hash = np.empty(capacity, dtype=np.uint64)
            c_live, c_peak = np.empty(capacity), np.empty(capacity)
            c_excess, c_key = np.empty(capacity), np.empty(capacity)
            c_rank = np.empty(capacity)
            size = 16
            while size < 2 * capacity:
                size *= 2
            table = np.full(size, -1, dtype=np.int64)
        slots = np.uint64(table.size - 1)
        shift = np.uint64(64 - int(np.log2(table.size)))
        children, anchor_child = 0, -1
        for s in range(count):
            for w in range(words):
                bits = ready[s, w]
                while bits:
                    li = w * 64 + lowest_bit(bits)
                    bits &= bits - np.uint64(1)
                    v = nodes[li]
                    h = hashes[s] ^ keys[li]
                    m = live[s] + run[v]
                    freed = self_free[v]
                    for e in range(free_ptr[li], free_ptr[li + 1]):
                        done = True
                        for x in range(free_lo[e], free_hi[e] + 1):
                            word = masks[s, x] | (_bit(li) if x == w else np.uint64(0))
                            if free_need[e, x] & ~word:
                                done = False
                                break
                        if done:
                            freed += free_mem[e]
                    new_peak = max(peak[s], m)
                    new_excess = excess[s] + max(0.0, m - tau)
                    slot = (h * np.uint64(0x9E3779B97F4A7C15)) >> shift
                    while True:
                        o = table[slot]
                        if o < 0:
                            table[slot] = children
                            c_slot[children] = slot
                            o = children
                            children += 1
                            break
                        if c_hash[o] == h and _same_child(masks, c_parent[o], c_node[o], s, li):
                            new_key, old_key = max(new_peak, floor), max(c_peak[o], floor)
                            if not (
                                new_key < old_key
                                or (new_key == old_key and new_excess < c_excess[o])
                            ):
                                o = -1 - o  # keep the child there, but remember its entry
                            break
                        slot = (slot + np.uint64(1)) & slots
                    if o >= 0:
                        c_parent[o], c_node[o], c_hash[o] = s, li, h
                        c_live[o] = live[s] + mem[v] - freed
                        c_peak[o], c_excess[o] = new_peak, new_excess
                    if s == anchor and li == t:
                        anchor_child = o if o >= 0 else -1 - o
        table[c_slot[:children]] = -1
        if now() > deadline:  # no result: the caller keeps its order
            return np.inf, np.inf, False
        if children > width:
            exact = False
            for c in range(children):
                c_key[c] = max(c_peak[c], floor)
                c_rank[c] = c_live[c]
                if noise:
                    c_rank[c] *= 1.0 + noise * np.random.random()  # noqa: NPY002
            keep = _select(c_key, c_rank, children, width)
            found = False
            for c in keep:
                found = found or c == anchor_child
            if anchored and not found:
                keep[width - 1] = anchor_child
        else:
            keep = np.arange(children)
        count = keep.size
        for i in range(count):
            c = keep[i]
            p, li = c_parent[c], c_node[c]
            if c == anchor_child:
                anchor = i
            next_masks[i] = masks[p]
            next_masks[i, li >> 6] |= _bit(li)
            next_ready[i] = ready[p]
            next_ready[i, li >> 6] &= ~_bit(li)
            for r in range(succ_start[li], succ_start[li + 1]):
                x = local_succ[r]
                runnable = True
                for y in range(pred_lo[x], pred_hi[x] + 1):
                    if pred_mask[x, y] & ~next_masks[i, y]:
                        runnable = False
                        break
                if runnable:
                    next_ready[i, x >> 6] |= _bit(x)
            next_hashes[i], next_live[i] = c_hash[c], c_live[c]
            next_peak[i], next_excess[i] = c_peak[c], c_excess[c]
            parents[t, i], chosen[t, i] = p, li
        masks, next_masks = next_masks, masks
        ready, next_ready = next_ready, ready
        live, next_live = next_live, live
        peak, next_peak = next_peak, peak
        excess, next_excess = next_excess, excess
        hashes, next_hashes = next_hashes, hashes
    s = 0
    for t in range(k - 1, -1, -1):
        out[t] = nodes[chosen[t, s]]
        s = parents[t, s]
    return peak[0], excess[0], exact


@njit(cache=True, nogil=True)
def refresh(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    succ_ptr, succ_idx, mem, run, kept, ratio, scratch,
):  # fmt: skip
    """``profile`` and ``summarize`` the order at ``tau = ratio * peak``; returns
    ``tau``. ``scratch`` (``n`` floats) is left zeroed."""
    profile(order, pos, last, during, after, succ_ptr, succ_idx, mem, run, kept, scratch)
    scratch[:] = 0.0
    tau = ratio * during.max()
    summarize(during, tau, prefix_max, suffix_max, excess_sum, hot_next, hot_prev)
    return tau


@njit(cache=True, nogil=True)
def descend(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, kept, ratio, start, moves, deadline,
    scratch, target, move_peak, move_excess, taken, chosen, passed,
):  # fmt: skip
    """Apply node moves with ``tau = ratio * peak``, sweep by sweep: each sweep scores
    every node's moves (``node_moves``) and applies all of them whose stretches are
    disjoint, best first (``disjoint_moves``); then the improving moves it passed over
    (their stretches overlap a better one's), best first, each scored again on the
    order as it now is (``best_move``) and applied where it still improves, for as long
    as their scoring and the profiles it needs visit no more steps and edges than the
    sweep's scoring did. Stops after ``moves`` moves or more, at a local optimum, or
    once ``deadline`` (``perf_counter`` seconds) has passed; returns the number
    applied. The profile arrays (``refresh``) must describe ``order`` on entry, and are
    left describing it."""
    n = order.size
    done, sweeps = 0, 0
    tau = ratio * prefix_max[n - 1]
    while done < moves and now() <= deadline:
        budget = node_moves(
            order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next,
            hot_prev, pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, scratch,
            target, move_peak, move_excess,
        )  # fmt: skip
        picked, skipped = disjoint_moves(
            target, move_peak, move_excess, prefix_max[-1], (start + sweeps) % n, n, taken,
            chosen, passed,
        )  # fmt: skip
        if picked == 0:
            return done
        for c in range(skipped):
            passed[c] = order[passed[c]]  # steps to nodes: the moves below shift steps
        for c in range(picked):
            move_node(order, chosen[c], target[chosen[c]])
        done += picked
        sweeps += 1
        tau = refresh(
            order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next,
            hot_prev, succ_ptr, succ_idx, mem, run, kept, ratio, scratch,
        )  # fmt: skip
        for c in range(skipped):
            if budget <= 0 or (c % 16 == 15 and now() > deadline):
                break
            i = pos[passed[c]]
            j, _, _, visited = best_move(
                i, order, pos, last, during, after, prefix_max, suffix_max, excess_sum,
                hot_next, hot_prev, pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive,
                tau, scratch,
            )  # fmt: skip
            budget -= visited
            if j >= 0:
                move_node(order, i, j)
                done += 1
                tau = refresh(
                    order, pos, last, during, after, prefix_max, suffix_max, excess_sum,
                    hot_next, hot_prev, succ_ptr, succ_idx, mem, run, kept, ratio, scratch,
                )  # fmt: skip
                budget -= n + succ_idx.size
    return done
