"""Breadth-first dynamic programming over executed-node sets (paper 000, appendix C.3).

Step ``t`` holds states ``S_t`` (sets of ``t`` executed nodes), each with the least
peak of any partial order reaching it. Every state is expanded by each of its
ready nodes, children with the same set are collapsed to the one of least peak,
and ``approx-dp`` keeps the best ``K`` children (by peak so far, ties by live
memory), default ``K = 100000`` as in the paper; when a time limit runs out it
finishes the remaining steps with ``K = 1`` (greedy on the best state, in one kernel:
``greedy_tail``; with an anchor, the anchor order) and says so in ``info``.
``exact-dp`` keeps every state and is exact; it stops with a clear error once a step
exceeds its state budget or the time limit.
Expansion and materialisation run in parallel (numba ``prange``) on all cores.
"""

import time

import numba
import numpy as np

from dagopt.errors import SolverError
from dagopt.graph import Graph, bits_to_bool, num_words
from dagopt.progress import report
from dagopt.resources import available_bytes, check_fits
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.dp_kernels import (
    DPGraph,
    collapse,
    count_children,
    expand,
    greedy_tail,
    materialize,
)
from dagopt.schedule.inductor import inductor_best_order

#: Bytes per child of a step (parent, node, hash, peak, live) and per kept state of the
#: path (parent, node), for ``state_bytes``.
CHILD_BYTES, PATH_BYTES = 40, 16


def state_bytes(n: int, words: int, states: int, children: int) -> float:
    """What a step of the set DP holds at most: the kept states' node sets and ready
    sets (old and new, ``words`` 64-bit words each), the children of the step, and the
    parent/node path of every step (``n`` steps of ``states``)."""
    return 4.0 * states * words * 8 + children * CHILD_BYTES + float(n) * states * PATH_BYTES


def graph_bytes(n: int, words: int) -> float:
    """The bitset views of ``DPGraph``: three ``(n, words)`` arrays of 64-bit words."""
    return 3.0 * n * words * 8


def fitting_width(n: int, words: int) -> int:
    """The largest beam width whose path and state arrays fit beside the graph's
    bitsets in the available memory (0 when the bitsets alone do not fit)."""
    per_state = 4.0 * words * 8 + float(n) * PATH_BYTES + CHILD_BYTES
    return max(0, int((0.8 * available_bytes() - graph_bytes(n, words)) / per_state))


def select_best(peak: np.ndarray, live: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` entries least by ``(peak, live)``, in O(n) expected time."""
    if peak.size <= k:
        return np.arange(peak.size)
    kth = np.partition(peak, k - 1)[k - 1]
    below = np.flatnonzero(peak < kth)
    tied = np.flatnonzero(peak == kth)
    fill = k - below.size
    if tied.size > fill:
        tied = tied[np.argpartition(live[tied], fill - 1)[:fill]]
    return np.concatenate((below, tied))


def top_scores(score: np.ndarray, node: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, ties to the lower node index."""
    return np.lexsort((node, -score))[:k]


def ready_log_normalizer(ready: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """``log sum_{j ready} exp(y_j)`` for each state's ready bitset: eq. (8)'s denominator."""
    mask = bits_to_bool(ready, priorities.size)
    masked = np.where(mask, priorities[None, :], -np.inf)
    top = masked.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(masked - top).sum(axis=1, keepdims=True)))[:, 0]


def _keep_anchor(
    keep: np.ndarray, unique: np.ndarray, anchor_hash: np.uint64, c_hash: np.ndarray
) -> np.ndarray:
    """``keep`` (indices into ``unique``) with the anchor's state forced in: the collapsed
    child holding the anchor prefix (found by its Zobrist hash) replaces the last kept
    one if it was not selected."""
    anchored = np.flatnonzero(c_hash[unique] == anchor_hash)
    if anchored.size == 0 or np.isin(anchored[0], keep):
        return keep
    return np.concatenate((keep[:-1], anchored[:1]))


def state_dp(
    graph: Graph,
    *,
    beam_width: int | None,
    keep_outputs: bool,
    max_states: int | None = None,
    time_limit: float | None = None,
    priorities: np.ndarray | None = None,
    anchor: np.ndarray | None = None,
) -> tuple[np.ndarray, bool, dict]:
    """Run the set DP. Returns ``(order, exact, info)``; ``exact`` is true when no step
    was truncated to the beam, so the order is proved optimal.

    With ``priorities`` it is the paper's beam search with state collapsing (section
    4.2): the beam keeps the ``beam_width`` partial orders of highest log-probability
    under eq. (8), and of two partial orders with the same node set only the one of
    lower peak survives.

    With ``anchor`` (a complete topological order) the state holding the anchor's first
    ``t`` nodes is never dropped from the beam (it takes the place of the worst kept
    state when needed), so the result is never worse than the anchor order.
    """
    start = time.perf_counter()  # the limit covers building the bitsets too
    n = graph.num_nodes
    if n == 0:
        return (
            np.zeros(0, dtype=np.int64),
            True,
            {"widest_step": 0, "beam_width": beam_width, "time_limit_hit_at_step": 0},
        )
    words = num_words(n)
    name = "exact-dp" if beam_width is None else f"beam width {beam_width:,}"
    advice = "use method inductor"
    if beam_width is not None and fitting_width(n, words) >= 1:
        advice = f"use a beam width of at most {fitting_width(n, words):,} or method inductor"
    check_fits(
        graph_bytes(n, words) + state_bytes(n, words, beam_width or 1, beam_width or 1),
        f"the set DP with {name} on {n:,} nodes",
        advice,
    )
    dpg = DPGraph(graph, keep_outputs=keep_outputs)
    sets = np.zeros((1, dpg.words), dtype=np.uint64)
    ready = dpg.initial_ready()[None, :].copy()
    live = np.zeros(1)
    peak = np.zeros(1)
    hashes = np.zeros(1, dtype=np.uint64)
    score = np.zeros(1)
    anchor_hash = np.uint64(0)
    parents: list[np.ndarray] = []
    nodes: list[np.ndarray] = []
    exact = True
    widest = 1
    width, late = beam_width, 0
    tail = np.zeros(0, dtype=np.int64)
    for t in range(n):
        if late and anchor is not None:  # at width 1 the anchor's state is the one kept
            info = {"widest_step": widest, "beam_width": beam_width, "time_limit_hit_at_step": late}
            return np.array(anchor, dtype=np.int64), False, info
        if late and sets.shape[0] == 1:  # the rest at width 1, in one kernel
            tail, branched = greedy_tail(
                sets[0].copy(), ready[0].copy(), live[0], peak[0],
                np.zeros(0) if priorities is None else priorities,
                dpg.pred_ptr, dpg.pred_idx, dpg.succ_ptr, dpg.succ_idx, dpg.succ_mask,
                dpg.pred_mask, dpg.mem, dpg.run_mem, dpg.self_free,
            )  # fmt: skip
            exact = exact and not branched
            break
        report(f"set DP ({name}): step {t + 1:,} of {n:,}, {sets.shape[0]:,} states", t, n)
        offsets = np.cumsum(count_children(ready, sets.shape[0]))
        check_fits(  # what this step allocates beyond the arrays already held
            int(offsets[-1]) * CHILD_BYTES + 2.0 * sets.shape[0] * words * 8,
            f"the set DP ({name}) at step {t + 1} of {n:,}",
            "use a smaller beam width (approx-dp) or method inductor",
        )
        c_parent, c_node, c_hash, c_peak, c_live = expand(
            sets, ready, live, peak, hashes, offsets,
            dpg.pred_ptr, dpg.pred_idx, dpg.succ_mask, dpg.mem, dpg.run_mem,
            dpg.self_free, dpg.zobrist,
        )  # fmt: skip
        unique = collapse(sets, c_parent, c_node, c_hash, c_peak, c_live, numba.get_num_threads())
        widest = max(widest, unique.size)
        if max_states is not None and unique.size > max_states:
            raise SolverError(
                f"exact-dp needs more than {max_states} states at step {t + 1} of {n}; "
                "raise --max-states or use approx-dp"
            )
        if priorities is not None:
            lognorm = ready_log_normalizer(ready, priorities)
            c_score = score[c_parent[unique]] + priorities[c_node[unique]]
            c_score -= lognorm[c_parent[unique]]
        if width is not None and unique.size > width:
            exact = False
            if priorities is None:
                keep = select_best(c_peak[unique], c_live[unique], width)
            else:
                keep = top_scores(c_score, c_node[unique], width)
            if anchor is not None:
                keep = _keep_anchor(keep, unique, anchor_hash ^ dpg.zobrist[anchor[t]], c_hash)
            if priorities is not None:
                c_score = c_score[keep]
            unique = unique[keep]
        if priorities is not None:
            score = c_score
        sets, ready, hashes = materialize(
            sets, ready, unique, c_parent, c_node, c_hash,
            dpg.pred_mask, dpg.succ_ptr, dpg.succ_idx,
        )  # fmt: skip
        live, peak = c_live[unique], c_peak[unique]
        if anchor is not None:
            anchor_hash ^= dpg.zobrist[anchor[t]]
        parents.append(c_parent[unique])
        nodes.append(c_node[unique])
        if time_limit is not None and time.perf_counter() - start > time_limit and not late:
            if beam_width is None:
                raise SolverError(f"exact-dp exceeded the time limit of {time_limit:g} s")
            width, late = 1, t + 1
    order = np.empty(n, dtype=np.int64)
    state = int(np.argmin(peak))
    for t in range(len(nodes) - 1, -1, -1):
        order[t] = nodes[t][state]
        state = int(parents[t][state])
    order[len(nodes) :] = tail
    info = {"widest_step": int(widest), "beam_width": beam_width, "time_limit_hit_at_step": late}
    return order, exact, info


@register(
    "approx-dp",
    "approximate DP of C.3: best K set-states per step (default K=100000)",
    ("beam_width",),
)
def solve_approx_dp(
    graph: Graph,
    *,
    keep_outputs: bool = False,
    time_limit: float | None = None,
    beam_width: int = 100_000,
    **_: object,
) -> SolverResult:
    if int(beam_width) < 1:
        raise SolverError(f"beam width must be >= 1, got {beam_width}")
    order, exact, info = state_dp(
        graph, beam_width=int(beam_width), keep_outputs=keep_outputs, time_limit=time_limit
    )
    return SolverResult(order=order, proved_optimal=exact, info=info)


@register(
    "exact-dp",
    "exact DP over executed-node sets (errors past --max-states per step, default 2M)",
    ("max_states",),
)
def solve_exact_dp(
    graph: Graph,
    *,
    keep_outputs: bool = False,
    time_limit: float | None = None,
    max_states: int = 2_000_000,
    **_: object,
) -> SolverResult:
    if int(max_states) < 1:
        raise SolverError(f"max states must be >= 1, got {max_states}")
    order, _, info = state_dp(
        graph,
        beam_width=None,
        keep_outputs=keep_outputs,
        max_states=int(max_states),
        time_limit=time_limit,
    )
    return SolverResult(order=order, proved_optimal=True, info=info)


@register(
    "anchored-dp",
    "approx-dp whose beam always keeps the path of inductor's best order (never worse;"
    " default K=1000)",
    ("beam_width",),
)
def solve_anchored_dp(
    graph: Graph,
    *,
    keep_outputs: bool = False,
    time_limit: float | None = None,
    beam_width: int = 1_000,
    **_: object,
) -> SolverResult:
    """The approximate DP anchored on PyTorch Inductor's best order: ranking by peak so
    far is myopic on real graphs (paper 000, Table 2: approx. DP far from the best), and
    the anchor guarantees the result is at least as good as the compiler's own.

    Not a method of the paper, so its default beam is the K = 1000 of every table that
    measures it (docs/results.md, Table 2: up to 33 s per zoo graph), not approx-dp's
    100000, which costs about 100x the time (``benchmarks/table2.py --help``)."""
    if int(beam_width) < 1:
        raise SolverError(f"beam width must be >= 1, got {beam_width}")
    anchor = inductor_best_order(graph, keep_outputs=keep_outputs)[0]
    order, exact, info = state_dp(
        graph,
        beam_width=int(beam_width),
        keep_outputs=keep_outputs,
        time_limit=time_limit,
        anchor=anchor,
    )
    return SolverResult(order=order, proved_optimal=exact, info=info)
