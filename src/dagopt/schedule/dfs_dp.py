"""Depth-first dynamic programming (paper 000, appendix C.3, "Depth-First DP").

Topological orders are built depth first, the next node drawn at random among
the ready ones, with backtracking. A branch is cut when (1) its node set was
already reached with a peak at most as low (memo keyed by the set's Zobrist
hash: dynamic programming over sets) or (2) its peak so far already reaches the
best complete order's (peak memory only grows along a sequence). The first
descent returns a complete order in O(|E| + sum_d |R_d|), ``R_d`` the ready nodes at
depth ``d`` (each depth copies its candidates); the search returns the best
order found when ``time_limit`` (default 3600 s, as in the paper) runs out, and
reports ``proved_optimal`` when it exhausts the tree or meets the lower bound.

The numba kernel runs in bounded chunks and keeps its whole state in arrays, so
the Python driver can check the clock between chunks (each sized to take about
``CHUNK_SECONDS`` at the rate measured so far).
"""

import time

import numpy as np
from numba import njit

from dagopt.graph import Graph
from dagopt.objectives import must_live_bound
from dagopt.progress import report
from dagopt.resources import check_fits
from dagopt.schedule.base import SolverResult, register

MAX_MEMO_BITS = 22
#: The candidate lists of the current path start in ``FIRST_CANDIDATES * (n + 1)``
#: entries and double when they outgrow them (a list per depth as an ``(n + 1, n)``
#: matrix took 2.75 GB at 18,545 nodes).
FIRST_CANDIDATES = 8
#: Iterations of the first chunk of the kernel, then sized to take ``CHUNK_SECONDS``
#: at the rate of the iterations done so far (an iteration costs more on larger graphs,
#: so a fixed chunk can run seconds past a limit).
FIRST_CHUNK_STEPS = 1_000
CHUNK_SECONDS = 0.05


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)  # noqa: NPY002  (numba supports only the legacy API)


@njit(cache=True)
def _shuffle(values, count):
    for i in range(count - 1, 0, -1):
        j = np.random.randint(0, i + 1)  # noqa: NPY002
        values[i], values[j] = values[j], values[i]


@njit(cache=True)
def _memo_improves(keys, values, key, peak, fill):
    """Record ``peak`` for set ``key``; False if the set was reached before at a peak <= it.

    ``fill[0]`` counts used slots; past 70 % load new keys are no longer stored.
    """
    mask = np.uint64(keys.size - 1)
    slot = key & mask
    while keys[slot] != 0:
        if keys[slot] == key:
            if values[slot] <= peak:
                return False
            values[slot] = peak
            return True
        slot = (slot + np.uint64(1)) & mask
    if fill[0] * 10 < keys.size * 7:
        keys[slot] = key
        values[slot] = peak
        fill[0] += 1
    return True


@njit(cache=True)
def _search(
    state, fill, cand, cand_start, cand_count, cand_pos, order, live, peak, hashes,
    missing, pending, memo_keys, memo_values, best_order, best,
    succ_ptr, succ_idx, pred_ptr, pred_idx, mem, run_mem, self_free, zobrist, bound, steps,
):  # fmt: skip
    """Advance the depth-first search by at most ``steps`` node choices.

    ``state = [depth, finished, iterations, needs room]``; ``best[0]`` is the incumbent
    peak. The candidates of depth ``d`` are ``cand[cand_start[d]:][:cand_count[d]]``, one
    list after another along the current path; a choice whose list would not fit in
    ``cand`` stops the chunk before changing anything, with ``needs room`` set.
    Returns nothing; all progress lives in the arrays.
    """
    n = mem.size
    d = state[0]
    for _ in range(steps):
        state[2] += 1
        if d == n:
            if peak[n] < best[0]:
                best[0] = peak[n]
                best_order[:] = order
                if best[0] <= bound:
                    state[1] = 1
                    break
            d -= 1
            _undo(order[d], missing, pending, succ_ptr, succ_idx, pred_ptr, pred_idx)
            continue
        if cand_pos[d] == cand_count[d]:
            if d == 0:
                state[1] = 1
                break
            d -= 1
            _undo(order[d], missing, pending, succ_ptr, succ_idx, pred_ptr, pred_idx)
            continue
        here = cand_start[d]
        v = cand[here + cand_pos[d]]
        below = here + cand_count[d]  # where the list of depth d + 1 goes
        if below + cand_count[d] - 1 + succ_ptr[v + 1] - succ_ptr[v] > cand.size:
            state[2] -= 1
            state[3] = 1
            break
        cand_pos[d] += 1
        new_peak = max(peak[d], live[d] + run_mem[v])
        if new_peak >= best[0]:
            continue
        key = hashes[d] ^ zobrist[v]
        if not _memo_improves(memo_keys, memo_values, key, new_peak, fill):
            continue
        freed = self_free[v]
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            pending[u] -= 1
            if pending[u] == 0:
                freed += mem[u]
        count = 0
        for i in range(here, below):
            if cand[i] != v:
                cand[below + count] = cand[i]
                count += 1
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k]
            missing[w] -= 1
            if missing[w] == 0:
                cand[below + count] = w
                count += 1
        _shuffle(cand[below:], count)
        order[d] = v
        live[d + 1] = live[d] + mem[v] - freed
        peak[d + 1] = new_peak
        hashes[d + 1] = key
        cand_start[d + 1] = below
        cand_count[d + 1] = count
        cand_pos[d + 1] = 0
        d += 1
    state[0] = d


@njit(cache=True)
def _undo(v, missing, pending, succ_ptr, succ_idx, pred_ptr, pred_idx):
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        pending[pred_idx[k]] += 1
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        missing[succ_idx[k]] += 1


def _grown(cand: np.ndarray) -> np.ndarray:
    """``cand`` copied into an array twice its size (checked to fit in memory)."""
    check_fits(
        2.0 * cand.size * 8, "dfs-dp's candidate lists (doubled)", "use approx-dp or inductor"
    )
    grown = np.zeros(2 * cand.size, dtype=np.int64)
    grown[: cand.size] = cand
    return grown


def depth_first_dp(
    graph: Graph, *, seed: int, time_limit: float, keep_outputs: bool
) -> tuple[np.ndarray, bool, dict]:
    """Run the search until it finishes or ``time_limit`` seconds pass."""
    n = graph.num_nodes
    if n == 0:
        return np.zeros(0, dtype=np.int64), True, {}
    memo_size = 2 ** min(MAX_MEMO_BITS, 14 + int(np.ceil(np.log2(n + 1))))
    check_fits(
        memo_size * 16.0 + FIRST_CANDIDATES * (n + 1) * 8.0,
        f"dfs-dp on {n:,} nodes (its memo and candidate lists)",
        "use approx-dp or inductor",
    )
    _seed(seed)
    missing = graph.in_degree.astype(np.int64)
    pending = graph.out_degree.astype(np.int64)
    cand = np.zeros(FIRST_CANDIDATES * (n + 1), dtype=np.int64)
    sources = np.flatnonzero(missing == 0)
    cand[: sources.size] = sources
    _shuffle(cand, sources.size)
    cand_count = np.zeros(n + 1, dtype=np.int64)
    cand_count[0] = sources.size
    zobrist = np.random.default_rng(0x5EED).integers(1, 2**63, size=n, dtype=np.int64)
    sinks = graph.out_degree == 0
    arrays = dict(
        state=np.zeros(4, dtype=np.int64),
        fill=np.zeros(1, dtype=np.int64),
        cand=cand,
        cand_start=np.zeros(n + 1, dtype=np.int64),
        cand_count=cand_count,
        cand_pos=np.zeros(n + 1, dtype=np.int64),
        order=np.zeros(n, dtype=np.int64),
        live=np.zeros(n + 1),
        peak=np.zeros(n + 1),
        hashes=np.zeros(n + 1, dtype=np.uint64),
        missing=missing,
        pending=pending,
        memo_keys=np.zeros(memo_size, dtype=np.uint64),
        memo_values=np.zeros(memo_size),
        best_order=np.zeros(n, dtype=np.int64),
        best=np.array([np.inf]),
        succ_ptr=graph.succ_ptr,
        succ_idx=graph.succ_idx,
        pred_ptr=graph.pred_ptr,
        pred_idx=graph.pred_idx,
        mem=graph.mem,
        run_mem=graph.mem + graph.param_mem,
        self_free=np.where(sinks & (not keep_outputs), graph.mem, 0.0),
        zobrist=zobrist.astype(np.uint64),
        bound=must_live_bound(graph, keep_outputs=keep_outputs),
    )
    start = time.perf_counter()
    steps = FIRST_CHUNK_STEPS
    while True:
        began, before = time.perf_counter(), int(arrays["state"][2])
        _search(**arrays, steps=steps)
        if arrays["state"][3]:  # the candidate lists of the path outgrew their array
            arrays["state"][3] = 0
            arrays["cand"] = _grown(arrays["cand"])
        finished = bool(arrays["state"][1])
        found = np.isfinite(arrays["best"][0])
        elapsed = time.perf_counter() - start
        rate = (arrays["state"][2] - before) / max(time.perf_counter() - began, 1e-6)
        steps = max(FIRST_CHUNK_STEPS, int(rate * CHUNK_SECONDS))
        if finished or (found and elapsed >= time_limit):
            break
        best = f"best peak {arrays['best'][0]:.6g}" if found else "no order yet"
        report(f"dfs-dp: {int(arrays['state'][2]):,} iterations, {best}", int(elapsed), None)
    info = {"iterations": int(arrays["state"][2]), "memo_entries": int(arrays["fill"][0])}
    return arrays["best_order"].copy(), finished, info


@register(
    "dfs-dp",
    "depth-first DP of C.3: random DFS with backtracking, set memo and incumbent pruning",
)
def solve_dfs_dp(
    graph: Graph,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    **_: object,
) -> SolverResult:
    seed = int(np.random.default_rng(seed).integers(2**31)) if seed is None else int(seed)
    limit = 3600.0 if time_limit is None else float(time_limit)
    order, finished, info = depth_first_dp(
        graph, seed=seed, time_limit=limit, keep_outputs=keep_outputs
    )
    return SolverResult(order=order, proved_optimal=finished, info=info)
