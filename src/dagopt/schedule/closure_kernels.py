"""Closure moves for ``anytime``: move a node together with the part of its ancestor
(or descendant) cone that stands in the way (numba kernels).

A single node move (``anytime_kernels.node_moves``) can take node ``c`` no earlier
than its last predecessor. A *pull* takes ``c`` to step ``p`` with every ancestor of
``c`` run in steps ``[p, i)`` (``i`` the step of ``c``), keeping their relative order:
the new steps ``[p, i]`` run those ancestors, then ``c``, then the other nodes of the
stretch in their order. A *push* is its mirror: node ``v`` at step ``i`` goes to step
``q`` after every descendant of ``v`` run in ``(i, q]``: the stretch runs the other
nodes first, then ``v``, then those descendants. Both keep the order topological and
change the memory profile (paper 000, eq. 1-3) only over the stretch, which is scored
by replaying it from the live memory entering it (``stretch_profile``) in
O(stretch + its in-edges). This moves a branch as a whole: a consumer of a tensor
that is live at the peak runs before the peak with the few nodes it needs, or a
producer runs after it with its few consumers. As with node moves, moves over disjoint
stretches apply together (``anytime_kernels.disjoint_moves``), and a sweep then applies
the moves it passed over that still improve on the new order (``closure_sweep``). On a
training graph the weight gradients, all read by the output at the end, each want to
be pushed past the same peak: the stretches overlap, and a sweep applied one of them.
"""

import numpy as np
from numba import njit

from dagopt.schedule.anytime_kernels import better, disjoint_moves, now, refresh


@njit(cache=True, nogil=True)
def stretch_profile(seq, a, b, last, after, pred_ptr, pred_idx, mem, run, alive, count, out):
    """Fill ``out[: b - a + 1]`` with ``M_t`` of steps ``a..b`` run as ``seq`` (the same
    nodes as the current steps ``a..b``, in a new topological order). An output whose
    last consumer is in the stretch (``a <= last <= b``) is freed at the new step of
    its last consumer there; ``count`` is a zeroed array of ``n`` ints, left zeroed."""
    length = b - a + 1
    for t in range(length):
        x = seq[t]
        for k in range(pred_ptr[x], pred_ptr[x + 1]):
            u = pred_idx[k]
            if a <= last[u] <= b:
                count[u] += 1
    live = after[a - 1] if a > 0 else 0.0
    for t in range(length):
        x = seq[t]
        out[t] = live + run[x]
        live += alive[x]
        for k in range(pred_ptr[x], pred_ptr[x + 1]):
            u = pred_idx[k]
            if a <= last[u] <= b:
                count[u] -= 1
                if count[u] == 0:
                    live -= mem[u]


@njit(cache=True, nogil=True)
def _score(seq, a, b, last, after, prefix_max, suffix_max, excess_sum, pred_ptr, pred_idx,
           mem, run, alive, tau, count, profile):  # fmt: skip
    """``(peak, excess)`` of the whole order with steps ``a..b`` run as ``seq``."""
    n = suffix_max.size
    stretch_profile(seq, a, b, last, after, pred_ptr, pred_idx, mem, run, alive, count, profile)
    peak = prefix_max[a - 1] if a > 0 else -np.inf
    if b + 1 < n:
        peak = max(peak, suffix_max[b + 1])
    excess = excess_sum[n] - (excess_sum[b + 1] - excess_sum[a])
    for t in range(b - a + 1):
        peak = max(peak, profile[t])
        excess += max(0.0, profile[t] - tau)
    return peak, excess


@njit(cache=True, nogil=True)
def _mark_cone(order, pos, i, lo, hi, ptr, idx, stamp, mark, stack):
    """Mark (``mark[x] = stamp``) the nodes of steps ``[lo, hi]`` reachable from
    ``order[i]`` along ``ptr``/``idx`` (predecessors: its ancestors; successors: its
    descendants) through nodes of those steps."""
    top = 0
    stack[top] = order[i]
    top += 1
    while top:
        top -= 1
        x = stack[top]
        for k in range(ptr[x], ptr[x + 1]):
            y = idx[k]
            if lo <= pos[y] <= hi and mark[y] != stamp:
                mark[y] = stamp
                stack[top] = y
                top += 1


@njit(cache=True, nogil=True)
def _mark_branch(
    order, pos, i, lo, hi, pull, pred_ptr, pred_idx, succ_ptr, succ_idx, stamp, mark, stack
):
    """Mark ``order[i]`` and the nodes that move with it: of steps ``[lo, hi]``, its
    ancestors for a pull, its descendants for a push (``_mark_cone``)."""
    mark[order[i]] = stamp
    if pull:
        _mark_cone(order, pos, i, lo, hi, pred_ptr, pred_idx, stamp, mark, stack)
    else:
        _mark_cone(order, pos, i, lo, hi, succ_ptr, succ_idx, stamp, mark, stack)


@njit(cache=True, nogil=True)
def _arrange(order, a, b, first, stamp, mark, seq):
    """``seq[: b - a + 1]``: the nodes of steps ``a..b``, marked ones first (``first``)
    or last, each group in its current order."""
    got = 0
    for want in (first, not first):
        for t in range(a, b + 1):
            if (mark[order[t]] == stamp) == want:
                seq[got] = order[t]
                got += 1


@njit(cache=True, inline="always")
def _far_end(order, i, d, pull, stamp, mark):
    """The far end of the stretch of a move of the node at step ``i`` by up to ``d``
    steps, clipped to the order's ends: the step nearest ``i +- d`` whose node stays
    (is not marked), since a moved node at the far end gives a shorter move's order;
    ``i`` when there is none."""
    if pull:
        far = max(0, i - d)
        while far < i and mark[order[far]] == stamp:
            far += 1
    else:
        far = min(order.size - 1, i + d)
        while far > i and mark[order[far]] == stamp:
            far -= 1
    return far


@njit(cache=True, nogil=True)
def peak_steps(during, hot, hot_next):
    """``hot_next[t]``: the first step from ``t`` on with ``M_t >= hot`` (``n`` if none)."""
    n = during.size
    nxt = n
    for t in range(n - 1, -1, -1):
        if during[t] >= hot:
            nxt = t
        hot_next[t] = nxt


@njit(cache=True, nogil=True)
def best_closure_move(
    i, order, pos, last, after, prefix_max, suffix_max, excess_sum, pred_ptr, pred_idx,
    succ_ptr, succ_idx, mem, run, alive, tau, hot_next, distances, stamp, mark, count, stack,
    seq, profile,
):  # fmt: skip
    """The best pull or push (module docstring) of the node at step ``i`` by ``(peak,
    excess over tau)``, over stretches of up to ``distances`` steps (increasing; each
    clipped to the order's ends, its far end moved in past the nodes that move with it,
    which would give a shorter move's order) that hold a step of ``hot_next``
    (``peak_steps``): returns ``(t, peak, excess, work)``, the target step (``t < i``
    a pull, ``t > i`` a push, -1 when none improves on the current order), the score
    the order would then have, and the steps the scoring visited. Marks nodes with
    ``stamp`` and ``stamp + 1``, which no entry of ``mark`` may hold yet."""
    n = order.size
    current_peak = prefix_max[n - 1]
    best_peak, best_excess, best_t = current_peak, excess_sum[n], -1
    reach = distances[-1]
    work = 0
    for pull in (True, False):
        lo, hi = (max(0, i - reach), i) if pull else (i, min(n - 1, i + reach))
        if hot_next[lo] > hi:
            continue
        cone = stamp if pull else stamp + 1
        _mark_branch(
            order, pos, i, lo, hi, pull, pred_ptr, pred_idx, succ_ptr, succ_idx, cone, mark,
            stack,
        )  # fmt: skip
        reached = i  # the far end of the last stretch scored
        for d in distances:
            far = _far_end(order, i, d, pull, cone, mark)
            if far == reached:
                continue
            reached = far
            a, b = (far, i) if pull else (i, far)
            if hot_next[a] > b:
                continue
            work += b - a + 1
            _arrange(order, a, b, pull, cone, mark, seq)
            peak, excess = _score(
                seq, a, b, last, after, prefix_max, suffix_max, excess_sum, pred_ptr,
                pred_idx, mem, run, alive, tau, count, profile,
            )  # fmt: skip
            if better(peak, excess, best_peak, best_excess, current_peak):
                best_peak, best_excess, best_t = peak, excess, far
    return best_t, best_peak, best_excess, work


@njit(cache=True, nogil=True)
def closure_moves(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, pred_ptr, pred_idx,
    succ_ptr, succ_idx, mem, run, alive, tau, hot, distances, start, deadline, mark, count,
    stack, seq, profile, hot_next, target, move_peak, move_excess,
):  # fmt: skip
    """Every node's best pull or push (``best_closure_move``) over stretches holding a
    step at or above ``hot``: the node at step ``i`` is best pulled to step ``target[i]
    < i`` or pushed to ``target[i] > i``, giving the order the score ``(move_peak[i],
    move_excess[i])``; ``target[i] = -1`` when none improves on the current order.
    Nodes are visited from step ``start`` on until ``deadline`` (``perf_counter``
    seconds) has passed (the others get -1). Returns the steps the scoring visited.
    ``mark`` (ints, any values), ``count`` (zeroed ints) and the other buffers hold
    ``n`` entries."""
    n = order.size
    mark[:] = 0
    target[:] = -1
    move_peak[:] = prefix_max[n - 1]
    move_excess[:] = excess_sum[n]
    peak_steps(during, hot, hot_next)
    work = 0
    for offset in range(n):
        if offset % 64 == 63 and now() > deadline:
            break
        i = (start + offset) % n
        target[i], move_peak[i], move_excess[i], visited = best_closure_move(
            i, order, pos, last, after, prefix_max, suffix_max, excess_sum, pred_ptr,
            pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, hot_next, distances,
            2 * offset + 2, mark, count, stack, seq, profile,
        )  # fmt: skip
        work += visited
    return work


@njit(cache=True, nogil=True)
def _refresh_at(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    succ_ptr, succ_idx, mem, run, kept, ratio, hot_ratio, scratch, peak_next,
):  # fmt: skip
    """``anytime_kernels.refresh`` and the steps at or above ``hot_ratio * peak``
    (``peak_steps``); returns ``tau``."""
    tau = refresh(
        order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next,
        hot_prev, succ_ptr, succ_idx, mem, run, kept, ratio, scratch,
    )  # fmt: skip
    peak_steps(during, hot_ratio * prefix_max[-1], peak_next)
    return tau


@njit(cache=True, nogil=True)
def closure_sweep(
    order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next, hot_prev,
    pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, alive, kept, ratio, hot_ratio,
    distances, start, limit, deadline, scratch, mark, count, stack, seq, profile, peak_next,
    target, move_peak, move_excess, taken, chosen, passed,
):  # fmt: skip
    """One sweep of closure moves with ``tau = ratio * peak`` over stretches holding a
    step at or above ``hot_ratio * peak``: every node's best move is scored
    (``closure_moves``) and all of them over disjoint stretches are applied, best first
    (``anytime_kernels.disjoint_moves``); then the improving moves passed over (their
    stretches overlap a better one's), best first, each scored again on the order as it
    now is (``best_closure_move``) and applied where it still improves, for as long as
    their scoring and the profiles it needs visit no more steps and edges than the
    sweep's scoring did; at most ``limit`` moves in all. Returns the number applied. The
    profile arrays (``anytime_kernels.refresh``) must describe ``order`` on entry, and
    are left describing it."""
    n = order.size
    tau = ratio * prefix_max[n - 1]
    budget = closure_moves(
        order, pos, last, during, after, prefix_max, suffix_max, excess_sum, pred_ptr,
        pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, hot_ratio * prefix_max[n - 1],
        distances, start, deadline, mark, count, stack, seq, profile, peak_next, target,
        move_peak, move_excess,
    )  # fmt: skip
    picked, skipped = disjoint_moves(
        target, move_peak, move_excess, prefix_max[n - 1], start, limit, taken, chosen, passed
    )
    if picked == 0:
        return 0
    for c in range(skipped):
        passed[c] = order[passed[c]]  # steps to nodes: the moves below shift steps
    for c in range(picked):
        i = chosen[c]
        apply_closure_move(
            order, pos, i, target[i], pred_ptr, pred_idx, succ_ptr, succ_idx, mark, stack, seq
        )
    done = picked
    tau = _refresh_at(
        order, pos, last, during, after, prefix_max, suffix_max, excess_sum, hot_next,
        hot_prev, succ_ptr, succ_idx, mem, run, kept, ratio, hot_ratio, scratch, peak_next,
    )  # fmt: skip
    budget -= n + succ_idx.size
    for c in range(skipped):
        if done == limit or budget <= 0 or now() > deadline:
            break
        i = pos[passed[c]]
        # stamps above every one closure_moves used
        t, _, _, visited = best_closure_move(
            i, order, pos, last, after, prefix_max, suffix_max, excess_sum, pred_ptr,
            pred_idx, succ_ptr, succ_idx, mem, run, alive, tau, peak_next, distances,
            2 * (n + c) + 2, mark, count, stack, seq, profile,
        )  # fmt: skip
        budget -= visited
        if t >= 0:
            apply_closure_move(
                order, pos, i, t, pred_ptr, pred_idx, succ_ptr, succ_idx, mark, stack, seq
            )
            done += 1
            tau = _refresh_at(
                order, pos, last, during, after, prefix_max, suffix_max, excess_sum,
                hot_next, hot_prev, succ_ptr, succ_idx, mem, run, kept, ratio, hot_ratio,
                scratch, peak_next,
            )  # fmt: skip
            budget -= n + succ_idx.size
    return done


@njit(cache=True, nogil=True)
def apply_closure_move(order, pos, i, t, pred_ptr, pred_idx, succ_ptr, succ_idx, mark, stack, seq):
    """Pull the node at step ``i`` to step ``t < i`` or push it to ``t > i`` (module
    docstring). ``pos`` must hold the steps of the nodes of the stretch (other
    stretches may have been rearranged since: their nodes stay outside this one);
    ``mark`` is left 0 over the stretch."""
    a, b, pull = min(i, t), max(i, t), t < i
    for s in range(a, b + 1):
        mark[order[s]] = 0
    _mark_branch(order, pos, i, a, b, pull, pred_ptr, pred_idx, succ_ptr, succ_idx, 1, mark, stack)
    _arrange(order, a, b, pull, 1, mark, seq)
    for s in range(a, b + 1):
        mark[seq[s - a]] = 0
        order[s] = seq[s - a]
