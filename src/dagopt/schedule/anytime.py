"""Anytime ordering: improve Inductor's best order by local search until the time limit.

The objective is paper 000's peak memory (eq. 1-3, 15). The search starts from
PyTorch Inductor's best order (``inductor_best_order``) and only ever keeps an order
whose score is no worse, so it returns an order at most as high as Inductor's and
never stops improving while time is left. It alternates two neighbourhoods, both
scored by ``(peak, excess)``, where the excess ``sum_t max(0, M_t - tau)`` with
``tau = 0.9 * peak`` rewards lowering any step near the peak (so a search facing
several steps at the peak can lower them one at a time), and a third, closure moves,
between them:

- **node moves** (``node_moves``): move one node anywhere between its last
  predecessor and its first successor, delaying an allocation past the peak or
  running a consumer that frees a large tensor before it. A move changes the memory
  profile only between its two steps, so all the targets of a node are scored in
  one sweep over that stretch (O(distance)); each sweep applies every node's best
  move whose stretch no better move's overlaps (``disjoint_moves``: such moves do
  not interact), then the moves it passed over, each scored again on the new order
  and applied where it still improves (as long as that costs no more than the sweep),
  until none improves (a local optimum) or ``FLAT_CALLS`` calls in a row lower only
  the excess (a plateau);
- **window DP** (``window_dp``), the large neighbourhood: the nodes of ``L``
  consecutive steps around a peak step are reordered by the set DP of appendix C.3
  (``approx-dp``) restricted to them, with the live memory entering the window and
  the outputs it cannot free as boundary conditions, a beam of ``K`` states and the
  current window order anchored in the beam (as ``anchored-dp``), so the peak never
  rises. A window order of equal score is taken too (a sideways step across ties).
- **closure moves** (``closure_kernels.closure_sweep``), tried when node moves
  reach a local optimum, before a window: a node pulled earlier together with its
  ancestors that stand in the way, or pushed later with its descendants, over a
  stretch holding a peak step (``CLOSURE_RATIO``) of up to 2048 steps
  (``CLOSURE_REACH``), to the order's ends at most. They move a whole branch where a
  single node move is blocked by a dependency and a window DP's beam drops the states
  that allocate early to free late. The improving ones over disjoint stretches are
  applied, best first, then the ones passed over that still improve; the search goes
  back to node moves after them. After a sweep that finds none, the next one at the
  same peak spans twice the steps (``closure_reaches``, up to the whole graph) if twice
  the last sweep's time fits in ``CLOSURE_TIME_SHARE`` of the time left; a sweep
  over the longest reach that finds none is not repeated until the peak has changed
  (the stretches it scores hold a peak step).

Window sizes grow from ``window`` (32) by doubling up to ``largest`` steps
(``LARGEST_WINDOW``; 0: the whole graph; the whole graph when it is smaller), one size
per failed attempt, back to the smallest after a success; when every size has
failed, the beam doubles and the search is kicked: a window of ``KICK_WINDOW`` steps
at the peak of the best order so far is re-solved by the window DP without its anchor
and with a large rank noise, taken whatever its score, and the search goes on from
there (iterated local search, Lourenço, Martin and Stützle, 2003; the best order is
kept and a trajectory that ends worse restarts from it). This is variable
neighbourhood search (Mladenović and Hansen, 1997) whose largest neighbourhood is the
anchored DP on ``largest`` steps (on small graphs the whole graph), like SERENITY's
(Ahn et al., 2020) DP on graph segments but with the segments chosen at the peak.
With a beam as wide as every step, the whole-graph window is the exact DP: the search
stops early then (``proved_optimal``), and when the peak meets the lower bound:
``must_live_bound`` from the start, raised to ``cut_bound`` (minimum cuts, about 0.5 s
at 2000 nodes) given ``CUT_BOUND_SHARE`` of the time left, the first time a search has
failed every window size (the search has stalled, so the time is cheapest there).

Guidance (``guide``): a priority model's greedy order (``neural.guide_order``, paper 000
section 4.2) is a second start beside Inductor's; the one of lower peak starts the
search (Inductor's on a tie), so the result is still never above Inductor's best. Its
featurisation and forward pass count against the time limit.

Threads: ``threads`` searches (seeds ``seed + 7919 i``) run side by side in threads
(the numba kernels release the GIL) and share the best order: a search restarting
after a failed cycle restarts from the best order of any thread.

Time: the kernels read the clock (``kernels.now``) between moves and DP steps; past
the deadline a window DP stops and its window keeps its order (kicks too). The
whole-graph window is only started with a beam whose measured cost fits in the time
left. Inductor's orders are computed within the time limit.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dagopt.errors import SolverError, is_interrupt
from dagopt.graph import Graph
from dagopt.objectives import cut_bound, meets_bound, must_live_bound, peak_memory
from dagopt.progress import report
from dagopt.resources import available_bytes
from dagopt.schedule import anytime_kernels as kernels
from dagopt.schedule import closure_kernels
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.inductor import inductor_best_order
from dagopt.schedule.neural import guide_order

#: Default time limit, seconds.
DEFAULT_TIME_LIMIT = 10.0
#: ``tau`` as a fraction of the current peak (tuned on validation graphs: 0.8 and 0.9
#: did alike, 0.97 and 1.0 (no excess) worse at 1000 and 2000 nodes).
EXCESS_RATIO = 0.9
#: Node-move calls in a row that leave the peak where it was (each applies
#: ``MOVES_PER_CALL`` moves or more, lowering the excess only) after which the search
#: treats node moves as stuck and tries closure moves and windows, which can lower a
#: peak that no single node move lowers: on a 100,000-node layered graph the sweeps
#: went on lowering the excess, hundreds of moves each, from about the 27th sweep to
#: the end of a 60 s run (a first choice, not tuned; docs/ordering.md, "Moves").
FLAT_CALLS = 10
#: First beam width of the window DP.
FIRST_BEAM = 64
#: Node moves per kernel call, at least (the driver checks the clock and the best in
#: between; a sweep applies all its disjoint moves, so a call may apply more).
MOVES_PER_CALL = 50
#: Relative noise on the live-memory rank of the window DP's beam: layered graphs share
#: sizes within a layer, so many states tie and the noise varies which ones survive.
RANK_NOISE = 1e-3
#: Iterated local search: after every window size has failed, kick (``Search.kick``) a
#: window of ``KICK_WINDOW`` steps at the peak of the best order with a rank noise of
#: ``KICK_NOISE`` and search again from there (tuned on validation graphs: windows of
#: 128-2048 steps and noise 0.3-1.0 did alike; 512 and 1.0 slightly best at 2000 nodes).
KICK_WINDOW = 512
KICK_NOISE = 1.0
#: Closure moves are scored only over stretches holding a step at or above this
#: fraction of the peak (tuned on validation layered graphs of 2000 nodes: with 0.9,
#: stretches holding a step above ``tau``, the sweeps took 60-70 % of the time for about
#: the same peaks, and 0.7 points worse with stretches of up to 64 steps; 0.97 was 0.3
#: points worse).
CLOSURE_RATIO = 1.0
#: The longest stretch of a closure move at first, steps (``closure_reach``; 0: the whole
#: graph), doubled at a peak where a sweep finds nothing (``closure_reaches``).
#: Tuned on validation layered graphs and the zoo's training graphs: up to 64 steps did
#: as well on layered graphs of 2000 nodes, but up to 512 took T5-small's training graph
#: from -9 % to -35 % below Inductor in 10 s, and up to 2048 to -35 % on every seed (512:
#: -12 to -35 % by the seed: its decoder embedding gradient and the buffer it is written
#: into must move together past the peak); up to 4096 or the whole graph gave the same
#: peaks there and less on an 18,545-node training graph, whose sweeps took most of the
#: 10 s (docs/ordering.md, tuning rounds 3 and 4; before sweeps applied the moves they
#: passed over and grew their reach, docs/ordering.md, "Moves").
CLOSURE_REACH = 2048
#: A closure sweep that finds nothing is followed, at the same peak, by one of twice the
#: reach (``closure_reaches``) when twice its time fits in this share of the time left
#: (a first choice, the value of ``CUT_BOUND_SHARE``: not tuned).
CLOSURE_TIME_SHARE = 0.25


def closure_distances(reach: int) -> np.ndarray:
    """The stretch lengths of the closure moves: 2, 3, 4, 6, 8, 12, ... (powers of two
    and one and a half times them) up to ``reach`` steps, and ``reach`` itself."""
    distances = []
    power = 2
    while power <= reach:
        distances += [d for d in (power, 3 * power // 2) if d <= reach]
        power *= 2
    if not distances or distances[-1] < reach:
        distances.append(reach)
    return np.array(distances, dtype=np.int64)


def closure_reaches(first: int, n: int) -> list[int]:
    """The reaches of the closure sweeps at one peak, steps: ``first`` (0: the whole
    graph), doubled after every sweep that finds nothing, up to the whole graph."""
    whole = max(n, 2)
    reaches = [min(first or whole, whole)]
    while reaches[-1] < whole:
        reaches.append(min(2 * reaches[-1], whole))
    return reaches


#: The largest window, steps; 0: the whole graph. On layered validation graphs of 2000
#: nodes 128-256 steps did 0.3 points better, but the held-out layered graphs did not
#: follow and on real training graphs whole-graph windows are what win (Llama-small's
#: training graph: -29.8 % from Inductor in 10 s, against -2.2 % with 256 steps), so
#: windows grow to the whole graph by default (docs/ordering.md, tuning round 2).
LARGEST_WINDOW = 0
#: The share of the time left given to ``cut_bound`` when the search first stalls.
CUT_BOUND_SHARE = 0.25


class Search:
    """An order being improved and its memory profile (see ``anytime_kernels``).

    ``tau`` is ``EXCESS_RATIO`` (or ``ratio``) times the current peak; closure moves span
    up to ``closure_reach`` steps (0: the whole graph).
    """

    def __init__(
        self,
        graph: Graph,
        order: np.ndarray,
        *,
        keep_outputs: bool,
        ratio: float = EXCESS_RATIO,
        closure_reach: int = CLOSURE_REACH,
    ) -> None:
        n = graph.num_nodes
        self.graph = graph
        self.ratio = ratio
        self.closure_levels = [closure_distances(r) for r in closure_reaches(closure_reach, n)]
        sinks = graph.out_degree == 0
        self.kept = sinks & keep_outputs
        self.alive = np.where(sinks & ~self.kept, 0.0, graph.mem)
        self.self_free = np.where(sinks & ~self.kept, graph.mem, 0.0)
        self.run = graph.mem + graph.param_mem
        self.zobrist = np.random.default_rng(0x5EED).integers(1, 2**63, size=n).astype(np.uint64)
        self.order = np.array(order, dtype=np.int64)
        self.pos = np.empty(n, dtype=np.int64)
        self.last = np.empty(n, dtype=np.int64)
        self.during = np.empty(n)
        self.after = np.empty(n)
        self.prefix_max = np.empty(n)
        self.suffix_max = np.empty(n)
        self.excess_sum = np.empty(n + 1)
        self.hot_next = np.empty(n, dtype=np.int64)
        self.hot_prev = np.empty(n, dtype=np.int64)
        self.scratch = np.zeros(n)
        self.target = np.empty(n, dtype=np.int64)
        self.move_peak = np.empty(n)
        self.move_excess = np.empty(n)
        self.taken = np.zeros(n, dtype=np.bool_)
        self.chosen = np.empty(n, dtype=np.int64)
        self.passed = np.empty(n, dtype=np.int64)
        self.loc = np.full(n, -1, dtype=np.int64)
        self.window_out = np.empty(n, dtype=np.int64)
        self.mark = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.stack = np.empty(n, dtype=np.int64)
        self.seq = np.empty(n, dtype=np.int64)
        self.stretch = np.empty(n)
        self.peak_next = np.empty(n, dtype=np.int64)
        self.refresh()

    def refresh(self) -> None:
        """Recompute the profile of ``order`` and its summaries (O(n + m)); every method
        that changes the order leaves them describing it."""
        g = self.graph
        kernels.refresh(
            self.order, self.pos, self.last, self.during, self.after, self.prefix_max,
            self.suffix_max, self.excess_sum, self.hot_next, self.hot_prev, g.succ_ptr,
            g.succ_idx, g.mem, self.run, self.kept, self.ratio, self.scratch,
        )  # fmt: skip

    @property
    def peak(self) -> float:
        return float(self.prefix_max[-1])

    @property
    def tau(self) -> float:
        """The excess threshold, ``ratio`` times the peak."""
        return self.ratio * self.peak

    @property
    def closure_distances(self) -> np.ndarray:
        """The stretch lengths of a first closure sweep (``closure_levels[0]``)."""
        return self.closure_levels[0]

    @property
    def excess(self) -> float:
        return float(self.excess_sum[-1])

    def node_moves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``kernels.node_moves`` on the current order: every step's best target (-1:
        none improves) and the score ``(peak, excess)`` the order would then have."""
        g = self.graph
        kernels.node_moves(
            self.order, self.pos, self.last, self.during, self.after, self.prefix_max,
            self.suffix_max, self.excess_sum, self.hot_next, self.hot_prev,
            g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx, g.mem, self.run, self.alive,
            self.tau, self.scratch, self.target, self.move_peak, self.move_excess,
        )  # fmt: skip
        return self.target.copy(), self.move_peak.copy(), self.move_excess.copy()

    def descend(self, moves: int, start: int, deadline: float) -> int:
        """Apply ``moves`` or more node moves, every disjoint improving one of a sweep at
        once, then the ones it passed over that still improve (``kernels.descend``);
        returns how many (fewer: a local optimum, or the deadline)."""
        g = self.graph
        return kernels.descend(
            self.order, self.pos, self.last, self.during, self.after, self.prefix_max,
            self.suffix_max, self.excess_sum, self.hot_next, self.hot_prev,
            g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx, g.mem, self.run, self.alive,
            self.kept, self.ratio, start, moves, deadline, self.scratch, self.target,
            self.move_peak, self.move_excess, self.taken, self.chosen, self.passed,
        )  # fmt: skip

    def closure_candidates(
        self,
        start: int,
        deadline: float,
        *,
        distances: np.ndarray | None = None,
        ratio: float = CLOSURE_RATIO,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``closure_kernels.closure_moves`` on the current order, over stretches of
        ``distances`` steps (default ``closure_distances``) holding a step at or above
        ``ratio`` times the peak: every step's best pull (target before it) or push
        (after it), -1 where none improves, and the score ``(peak, excess)`` the order
        would then have."""
        g = self.graph
        distances = self.closure_distances if distances is None else distances
        closure_kernels.closure_moves(
            self.order, self.pos, self.last, self.during, self.after, self.prefix_max,
            self.suffix_max, self.excess_sum, g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx,
            g.mem, self.run, self.alive, self.tau, ratio * self.peak, distances, start,
            deadline, self.mark, self.count, self.stack, self.seq, self.stretch,
            self.peak_next, self.target, self.move_peak, self.move_excess,
        )  # fmt: skip
        return self.target.copy(), self.move_peak.copy(), self.move_excess.copy()

    def closure_moves(
        self,
        start: int,
        deadline: float,
        *,
        distances: np.ndarray | None = None,
        ratio: float = CLOSURE_RATIO,
        limit: int | None = None,
    ) -> int:
        """Apply closure moves, every disjoint improving one of a sweep at once, then the
        ones it passed over that still improve (``closure_kernels.closure_sweep``), up to
        ``limit`` (default: no limit); returns how many."""
        g = self.graph
        distances = self.closure_distances if distances is None else distances
        return closure_kernels.closure_sweep(
            self.order, self.pos, self.last, self.during, self.after, self.prefix_max,
            self.suffix_max, self.excess_sum, self.hot_next, self.hot_prev, g.pred_ptr,
            g.pred_idx, g.succ_ptr, g.succ_idx, g.mem, self.run, self.alive, self.kept,
            self.ratio, ratio, distances, start, g.num_nodes if limit is None else limit,
            deadline, self.scratch, self.mark, self.count, self.stack, self.seq, self.stretch,
            self.peak_next, self.target, self.move_peak, self.move_excess, self.taken,
            self.chosen, self.passed,
        )  # fmt: skip

    def _outside(self, a: int, b: int) -> float:
        n = self.graph.num_nodes
        before = self.prefix_max[a - 1] if a > 0 else -np.inf
        return max(before, self.suffix_max[b] if b < n else -np.inf)

    def _window_dp(
        self, a: int, b: int, beam: int, deadline: float, noise: float, seed: int,
        anchored: bool = True,
    ) -> tuple[float, float, bool]:  # fmt: skip
        g = self.graph
        peak, excess, exact = kernels.window_dp(
            self.order, a, b, self.last, self.after, g.pred_ptr, g.pred_idx, g.succ_ptr,
            g.succ_idx, g.mem, self.run, self.self_free, self.zobrist, self._outside(a, b),
            self.tau, beam, deadline, noise, seed, anchored, self.loc, self.window_out,
        )  # fmt: skip
        return float(peak), float(excess), bool(exact)

    def solve_window(
        self, a: int, b: int, *, beam: int, deadline: float
    ) -> tuple[np.ndarray, float, bool]:
        """The window DP's order of steps ``[a, b)`` (not applied), its peak over the
        window, and whether it is exact; past ``deadline``, the current window order
        with an infinite peak."""
        peak, _, exact = self._window_dp(a, b, beam, deadline, 0.0, 0)
        if not np.isfinite(peak):
            return self.order[a:b].copy(), peak, exact
        return self.window_out[: b - a].copy(), peak, exact

    def try_window(
        self, a: int, b: int, *, beam: int, deadline: float, seed: int
    ) -> tuple[bool, bool]:
        """Re-solve steps ``[a, b)`` and take the result unless it scores worse; returns
        ``(improved, exact)`` (``(False, False)`` when the deadline stopped the DP)."""
        peak, excess, exact = self._window_dp(a, b, beam, deadline, RANK_NOISE, seed)
        if not np.isfinite(peak):
            return False, False
        new_peak = max(peak, self._outside(a, b))
        new_excess = self.excess - (self.excess_sum[b] - self.excess_sum[a]) + excess
        tolerance = kernels.RELATIVE_TOLERANCE * self.peak
        improved = new_peak < self.peak - tolerance or (
            new_peak <= self.peak + tolerance and new_excess < self.excess - tolerance
        )
        if improved or (new_peak <= self.peak + tolerance and new_excess <= self.excess):
            self.order[a:b] = self.window_out[: b - a]
            self.refresh()
        return improved, exact

    def kick(self, a: int, b: int, *, beam: int, deadline: float, seed: int) -> None:
        """Re-solve steps ``[a, b)`` by the window DP without its anchor and with a rank
        noise of ``KICK_NOISE``, and take the result whatever its score: the perturbation
        of iterated local search (none when the deadline stopped the DP)."""
        peak, _, _ = self._window_dp(a, b, beam, deadline, KICK_NOISE, seed, anchored=False)
        if not np.isfinite(peak):
            return
        self.order[a:b] = self.window_out[: b - a]
        self.refresh()

    def restore(self, order: np.ndarray) -> None:
        """Make ``order`` the current order again."""
        self.order[:] = order
        self.refresh()


def widest_beam(steps: int) -> int:
    """The widest window DP beam over ``steps`` steps that fits in a quarter of the
    available memory (at most 1 GiB): the path (8 bytes per step and state), four
    bitsets per state and the children of a step (assumed at most 256 per state)."""
    words = (steps + 63) // 64
    per_state = 8.0 * steps + 32.0 * words + 72.0 * min(steps, 256)
    return max(1, int(min(2.0**30, 0.25 * available_bytes()) / per_state))


def window_at_peak(search: Search, size: int, rng: np.random.Generator) -> int:
    """The first step of a random window of ``size`` steps holding a random peak step."""
    n = search.graph.num_nodes
    step = int(rng.choice(np.flatnonzero(search.during >= search.peak)))
    return int(rng.integers(max(0, step - size + 1), min(step, n - size) + 1))


class Incumbent:
    """The best order found so far and the best lower bound, shared by the search
    threads (under a lock)."""

    def __init__(
        self,
        order: np.ndarray,
        peak: float,
        start: float,
        trace: list[tuple[float, float]] | None,
        bound: float,
    ) -> None:
        self.lock = threading.Lock()
        self.order, self.peak = order.copy(), peak
        self.start, self.trace = start, trace
        self.stop = threading.Event()
        self.bound, self.bound_tightened, self.bound_seconds = bound, False, 0.0

    def tighten_bound(self, graph: Graph, *, keep_outputs: bool, deadline: float) -> None:
        """Raise the bound to ``cut_bound`` (given ``CUT_BOUND_SHARE`` of the time
        left), once for all threads."""
        with self.lock:
            if self.bound_tightened:
                return
            self.bound_tightened = True
        began = time.perf_counter()
        left = CUT_BOUND_SHARE * (deadline - began)
        found = cut_bound(graph, keep_outputs=keep_outputs, time_limit=max(0.0, left))
        with self.lock:
            self.bound = max(self.bound, found.bound)
            self.bound_seconds = time.perf_counter() - began

    def meets_bound(self) -> bool:
        with self.lock:
            return meets_bound(self.peak, self.bound)

    def offer(self, order: np.ndarray, peak: float) -> None:
        with self.lock:
            if peak < self.peak:
                self.order, self.peak = order.copy(), peak
                if self.trace is not None:
                    self.trace.append((time.perf_counter() - self.start, peak))

    def best(self) -> tuple[np.ndarray, float]:
        with self.lock:
            return self.order.copy(), self.peak


def search_thread(
    graph: Graph,
    first: np.ndarray,
    incumbent: Incumbent,
    *,
    seed: int,
    deadline: float,
    keep_outputs: bool,
    window: int,
    largest: int,
    windows: int | None,
    closure_reach: int,
    counts: dict,
) -> None:
    """One search (module docstring) from ``first``, offering every new best to
    ``incumbent`` and restarting from its best after a failed cycle."""
    n = graph.num_nodes
    rng = np.random.default_rng(seed)
    search = Search(graph, first, keep_outputs=keep_outputs, closure_reach=closure_reach)
    incumbent.offer(search.order, search.peak)
    top = n if largest == 0 else min(n, max(window, largest))
    sizes = [min(window, top)]
    while sizes[-1] < top:
        sizes.append(min(top, 2 * sizes[-1]))
    level, beam = 0, FIRST_BEAM
    whole_seconds_per_state = None  # measured cost of the whole-graph window DP
    closure_failed_at = -1.0  # the peak at which a closure sweep last found nothing
    reach, reach_seconds = 0, None  # the next sweep's level of reach; the last one's time
    flat_calls = 0  # node-move calls in a row that left the peak where it was
    while (
        time.perf_counter() < deadline
        and counts["windows"] != windows
        and not incumbent.stop.is_set()
    ):
        peak_before = search.peak
        moves = search.descend(MOVES_PER_CALL, int(rng.integers(n)), deadline)
        counts["moves"] += moves
        flat_calls = flat_calls + 1 if search.peak >= peak_before else 0
        # a local optimum of node moves, or a plateau where they lower the excess only
        stuck = moves < MOVES_PER_CALL or flat_calls == FLAT_CALLS
        if stuck:
            flat_calls = 0
            start = int(rng.integers(n))
        if stuck and search.peak != closure_failed_at:  # closure moves are at the peak
            reach, reach_seconds = 0, None
        if stuck and reach < len(search.closure_levels):
            left = deadline - time.perf_counter()
            if reach_seconds is None or 2 * reach_seconds <= CLOSURE_TIME_SHARE * left:
                began = time.perf_counter()
                applied = search.closure_moves(
                    start, deadline, distances=search.closure_levels[reach]
                )
                reach_seconds = time.perf_counter() - began
                counts["closure moves"] += applied
                counts["closure seconds"] += reach_seconds
                stuck = applied == 0
                closure_failed_at = search.peak if stuck else -1.0
                reach = reach + 1 if stuck else 0
        if stuck:
            size = sizes[level]
            width = min(beam, widest_beam(size))
            if size == n and whole_seconds_per_state is not None:
                left = deadline - time.perf_counter()
                width = max(1, min(width, int(0.8 * left / whole_seconds_per_state)))
            if width < FIRST_BEAM and size == n and size > sizes[0]:
                level = 0  # no time for the whole graph: keep to the smaller windows
                continue
            a = window_at_peak(search, size, rng)
            began = time.perf_counter()
            improved, exact = search.try_window(
                a, a + size, beam=width, deadline=deadline, seed=int(rng.integers(2**31))
            )
            if size == n and time.perf_counter() < deadline:
                whole_seconds_per_state = (time.perf_counter() - began) / width
            counts["windows"] += 1
            counts["improving windows"] += improved
            runs, gains, seconds = counts["windows by size"].get(size, (0, 0, 0.0))
            seconds += time.perf_counter() - began
            counts["windows by size"][size] = (runs + 1, gains + int(improved), seconds)
            if size == n and exact:  # the exact DP: this order is optimal
                counts["proved"] = True
                incumbent.offer(search.order, search.peak)
                incumbent.stop.set()
                break
            if improved:
                level = 0
            elif level + 1 < len(sizes):
                level += 1
            else:
                level, beam = 0, 2 * beam
                incumbent.tighten_bound(graph, keep_outputs=keep_outputs, deadline=deadline)
                best, best_peak = incumbent.best()
                if search.peak > best_peak:
                    search.restore(best)
                size = min(KICK_WINDOW, n)
                a = window_at_peak(search, size, rng)
                kick_seed = int(rng.integers(2**31))
                search.kick(a, a + size, beam=FIRST_BEAM, deadline=deadline, seed=kick_seed)
                counts["kicks"] += 1
        incumbent.offer(search.order, search.peak)
        elapsed = time.perf_counter() - incumbent.start
        report(
            f"anytime: best peak {incumbent.peak:.6g}",
            int(elapsed),
            int(deadline - incumbent.start),
        )
        if incumbent.meets_bound():
            counts["proved"] = True
            incumbent.stop.set()
    counts["beam_width"] = beam


def anytime_order(
    graph: Graph,
    *,
    seed: int,
    time_limit: float,
    keep_outputs: bool,
    window: int = 32,
    largest: int = LARGEST_WINDOW,
    windows: int | None = None,
    trace: list[tuple[float, float]] | None = None,
    threads: int = 1,
    guide: str | None = None,
    closure_reach: int = CLOSURE_REACH,
) -> tuple[np.ndarray, bool, dict]:
    """Run the search (module docstring) until ``time_limit`` seconds have passed, or
    ``windows`` window DPs have run, or the order is proved optimal. Returns ``(order,
    proved_optimal, info)``; ``trace`` receives ``(seconds, peak)`` at each new best.
    ``guide``: a priority model (file or shipped name) whose greedy order is a second
    start; ``closure_reach``: the longest closure move at first, steps (0: the whole
    graph), doubled at a peak where a sweep finds nothing."""
    start = time.perf_counter()
    deadline = start + time_limit
    n = graph.num_nodes
    anchor, chosen, peaks = inductor_best_order(graph, keep_outputs=keep_outputs)
    anchor_peak = peaks[chosen]
    guided = {}
    if guide is not None and n:
        guided = {"guide seconds": -time.perf_counter()}
        order = guide_order(graph, guide)
        guided["guide seconds"] += time.perf_counter()
        guide_peak = peak_memory(graph, order, keep_outputs=keep_outputs)
        guided["guide % vs inductor"] = 100 * (guide_peak / anchor_peak - 1)
        if guide_peak < anchor_peak:
            anchor, chosen, anchor_peak = order, "guide", guide_peak
    if n == 0:
        return anchor, True, {"start": chosen}
    bound = must_live_bound(graph, keep_outputs=keep_outputs)
    incumbent = Incumbent(anchor, float("inf"), start, trace, bound)
    totals = ("moves", "closure moves", "closure seconds", "windows", "improving windows", "kicks")
    all_counts = [{**dict.fromkeys(totals, 0), "windows by size": {}} for _ in range(threads)]

    def job(index: int) -> None:
        search_thread(
            graph, anchor, incumbent, seed=seed + 7919 * index, deadline=deadline,
            keep_outputs=keep_outputs, window=window, largest=largest, windows=windows,
            closure_reach=closure_reach, counts=all_counts[index],
        )  # fmt: skip

    if threads == 1:
        job(0)
    else:
        with ThreadPoolExecutor(threads) as pool:
            for done in [pool.submit(job, i) for i in range(threads)]:
                done.result()  # re-raises a thread's error
    best, _ = incumbent.best()
    proved = any(c.get("proved", False) for c in all_counts)
    # The kernels sum in another order than ``peak_memory``: never return an order the
    # objective finds worse than the start, even by a rounding error.
    if peak_memory(graph, best, keep_outputs=keep_outputs) > anchor_peak:
        best, proved = anchor, False
    info = {"start": chosen, **guided, "threads": threads}
    info["beam_width"] = all_counts[0]["beam_width"]
    info["lower bound"], info["cut bound seconds"] = incumbent.bound, incumbent.bound_seconds
    for key in totals:
        info[key] = sum(c[key] for c in all_counts)
    sizes = sorted({size for c in all_counts for size in c["windows by size"]})
    info["windows by size"] = {  # size: (windows, improving windows, seconds)
        size: tuple(
            sum(c["windows by size"].get(size, (0, 0, 0.0))[k] for c in all_counts)
            for k in range(3)
        )
        for size in sizes
    }
    return best, proved, info


@register(
    "anytime",
    "local search from inductor's best order (node and closure moves, window DP, kicks)"
    " until the time limit",
    ("window", "largest", "windows", "threads", "guide", "closure_reach"),
)
def solve_anytime(
    graph: Graph,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    window: int = 32,
    largest: int = LARGEST_WINDOW,
    windows: int | None = None,
    threads: int = 1,
    guide: str | None = None,
    closure_reach: int = CLOSURE_REACH,
    **_: object,
) -> SolverResult:
    """Never worse than ``inductor``; uses all of ``time_limit`` (default 10 s) unless it
    proves its order optimal first. ``window``: the smallest DP window (steps);
    ``largest``: the largest (0: the whole graph); ``windows``: stop after that many
    window DPs (with a seed and one thread, a reproducible run); ``threads``: searches
    sharing one best order; ``guide``: a priority model file, or a shipped model's name,
    whose greedy order is a second start; ``closure_reach``: the longest closure move
    at first, steps (0: the whole graph), doubled at a peak where a sweep finds nothing
    (module docstring)."""
    limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    if int(window) < 1:
        raise SolverError(f"window must be >= 1 step, got {window}")
    if windows is not None and int(windows) < 0:
        raise SolverError(f"windows must be >= 0, got {windows}")
    if int(largest) < 0:
        raise SolverError(f"largest must be >= 0 steps (0: the whole graph), got {largest}")
    if 0 < int(largest) < int(window):
        raise SolverError(
            f"largest ({largest} steps) is below window ({window}): give a largest >= window, "
            "or 0 for the whole graph"
        )
    if int(threads) < 1:
        raise SolverError(f"threads must be >= 1, got {threads}")
    if int(closure_reach) < 0 or int(closure_reach) == 1:
        raise SolverError(
            f"closure_reach must be >= 2 steps (0: the whole graph), got {closure_reach}"
        )
    try:
        order, proved, info = anytime_order(
            graph,
            seed=0 if seed is None else int(seed),
            time_limit=limit,
            keep_outputs=keep_outputs,
            window=int(window),
            largest=int(largest),
            windows=None if windows is None else int(windows),
            threads=int(threads),
            guide=None if guide is None else str(guide),
            closure_reach=int(closure_reach),
        )
    except SystemError as exc:  # numba wraps a Ctrl-C that lands in a kernel's clock
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        raise
    return SolverResult(order=order, proved_optimal=proved, info=info)
