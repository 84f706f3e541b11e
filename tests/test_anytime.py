import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.errors import SolverError
from dagopt.generate import generate_layered
from dagopt.objectives import memory_profile, must_live_bound, peak_memory
from dagopt.schedule import anytime_kernels as kernels
from dagopt.schedule import solve
from dagopt.schedule.anytime import CLOSURE_REACH, Search, closure_distances
from dags import dags, reference_peak, sparse_dag
from interrupts import ctrl_c_after


def _random_topological_order(graph: Graph, rng: np.random.Generator) -> np.ndarray:
    missing = graph.in_degree.astype(int).copy()
    ready = list(np.flatnonzero(missing == 0))
    order = []
    while ready:
        v = ready.pop(int(rng.integers(len(ready))))
        order.append(v)
        for w in graph.successors(v):
            missing[w] -= 1
            if missing[w] == 0:
                ready.append(w)
    return np.asarray(order, dtype=np.int64)


def _score(graph, order, keep, tau):
    during = memory_profile(graph, order, keep_outputs=keep).during
    return during.max(), np.maximum(0.0, during - tau).sum()


def _better(score, best, tolerance):
    return score[0] < best[0] - tolerance or (
        score[0] <= best[0] + tolerance and score[1] < best[1] - tolerance
    )


@settings(max_examples=60, deadline=None)
@given(dags(min_nodes=2, max_nodes=12, integer_sizes=False), st.booleans(), st.integers(0, 99))
def test_node_move_scores_match_a_full_recomputation(g, keep, seed):
    """``node_moves`` scores each node's moves from the profile stretch between the two
    steps; each node's pick must be its best move found by recomputing every moved order
    in full."""
    order = _random_topological_order(g, np.random.default_rng(seed))
    search = Search(g, order, keep_outputs=keep, ratio=0.9)
    tau = search.tau
    current = _score(g, order, keep, tau)
    tolerance = kernels.RELATIVE_TOLERANCE * current[0]
    target, peak, excess = search.node_moves()
    n = g.num_nodes
    for i in range(n):
        best = current
        for j in set(range(n)) - {i}:
            moved = order.copy()
            kernels.move_node(moved, i, j)
            low, high = min(i, j), max(i, j)
            if not g.is_topological(moved) or not (search.during[low : high + 1] > tau).any():
                continue
            score = _score(g, moved, keep, tau)
            if _better(score, best, tolerance):
                best = score
        if target[i] < 0:
            assert best == current
            continue
        moved = order.copy()
        kernels.move_node(moved, i, int(target[i]))
        assert g.is_topological(moved)
        scored = _score(g, moved, keep, tau)
        assert scored == pytest.approx((peak[i], excess[i]), rel=1e-9, abs=1e-9)
        assert (peak[i], excess[i]) == pytest.approx(best, rel=1e-9, abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(dags(min_nodes=2, max_nodes=30, integer_sizes=False), st.booleans(), st.integers(0, 99))
def test_disjoint_node_moves_apply_together(g, keep, seed):
    """The moves ``disjoint_moves`` picks have disjoint stretches (every other improving
    move overlaps one of them), and applied at once
    they give the order each predicts over its stretch: the excess falls by the sum of
    their falls (same ``tau``), the peak is at most the highest of their peaks, and the
    score is below the current one."""
    order = _random_topological_order(g, np.random.default_rng(seed))
    search = Search(g, order, keep_outputs=keep, ratio=0.9)
    target, peak, excess = search.node_moves()
    picked, skipped = kernels.disjoint_moves(
        search.target, search.move_peak, search.move_excess, search.peak, seed, g.num_nodes,
        search.taken, search.chosen, search.passed,
    )  # fmt: skip
    assert not search.taken.any()
    chosen = search.chosen[:picked].tolist()

    def stretch(i):
        return set(range(min(i, target[i]), max(i, target[i]) + 1))

    assert all(target[i] >= 0 for i in chosen)
    covered = set().union(*map(stretch, chosen))
    assert sum(len(stretch(i)) for i in chosen) == len(covered)  # disjoint
    assert all(stretch(i) & covered for i in np.flatnonzero(target >= 0))  # and maximal
    if not chosen:
        assert (target < 0).all()
        return
    moved = order.copy()
    for i in chosen:
        kernels.move_node(moved, i, int(target[i]))
    assert g.is_topological(moved)
    current = _score(g, order, keep, search.tau)
    new_peak, new_excess = _score(g, moved, keep, search.tau)
    falls = sum(current[1] - excess[i] for i in chosen)
    assert new_excess == pytest.approx(current[1] - falls, rel=1e-9, abs=1e-9)
    assert new_peak <= max(peak[i] for i in chosen) * (1 + 1e-12)
    assert _better((new_peak, new_excess), current, kernels.RELATIVE_TOLERANCE * current[0])
    passed = search.passed[:skipped].tolist()
    assert set(chosen) | set(passed) == set(np.flatnonzero(target >= 0).tolist())
    assert not set(chosen) & set(passed)
    tolerance = kernels.RELATIVE_TOLERANCE * search.peak
    assert all(peak[b] >= peak[a] - tolerance for a, b in itertools.pairwise(passed))


def _check_profile(search, g, keep):
    """The search's profile arrays describe its order."""
    assert g.is_topological(search.order)
    during = memory_profile(g, search.order, keep_outputs=keep).during
    np.testing.assert_allclose(search.during, during, rtol=1e-9, atol=1e-9)
    assert search.peak == pytest.approx(during.max(), rel=1e-9)
    excess = np.maximum(0.0, during - search.ratio * during.max()).sum()
    assert search.excess == pytest.approx(excess, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(dags(min_nodes=2, max_nodes=30, integer_sizes=False), st.booleans(), st.integers(0, 99))
def test_descend_only_improves_and_ends_at_a_local_optimum(g, keep, seed):
    """Each ``descend`` call that moves a node lowers the score (the peak never rises),
    leaves the profile arrays describing the new order, and a call that applies fewer
    than it was asked for ends where no node move improves."""
    order = _random_topological_order(g, np.random.default_rng(seed))
    search = Search(g, order, keep_outputs=keep, ratio=0.9)
    while True:
        before = (search.peak, search.excess)
        done = search.descend(1, seed, np.inf)
        _check_profile(search, g, keep)
        if done < 1:
            break
        assert _better((search.peak, search.excess), before, 1e-12 * before[0])
    assert (search.node_moves()[0] < 0).all()


def test_descend_applies_the_overlapping_moves_that_still_improve():
    """Sources read only by the last node of a chain, run first: each is best delayed to
    just before that node, and as all those stretches overlap, ``disjoint_moves`` takes
    one per sweep. ``descend`` scores the others again on the new order and applies
    them in the same sweep (each improves: the chain's steps all sit at the excess)."""
    length, count = 40, 8
    src = list(range(length - 1)) + list(range(length, length + count))
    dst = list(range(1, length)) + [length - 1] * count
    g = Graph(length + count, src, dst, mem=np.r_[np.full(length, 4.0), np.ones(count)])
    order = np.r_[np.arange(length, length + count), np.arange(length)]
    search = Search(g, order, keep_outputs=False, ratio=0.9)
    target, _, _ = search.node_moves()
    improving = np.flatnonzero(target >= 0)
    assert set(search.order[improving]) == set(range(length, length + count))
    picked, _ = kernels.disjoint_moves(
        search.target, search.move_peak, search.move_excess, search.peak, 0, g.num_nodes,
        search.taken, search.chosen, search.passed,
    )  # fmt: skip
    assert picked == 1
    excess = search.excess
    assert search.descend(1, 0, np.inf) > 1  # one sweep
    _check_profile(search, g, False)
    assert search.excess < excess - (length - 2)  # more than one source's fall


@settings(max_examples=60, deadline=None)
@given(dags(min_nodes=2, max_nodes=9, integer_sizes=False), st.booleans(), st.data())
def test_window_dp_is_exact_on_its_window(g, keep, data):
    """With a beam wider than every step, the window DP finds an order of the window's
    nodes of least peak (a window peak below the peak outside does not count), and
    leaves the profile outside the window unchanged."""
    n = g.num_nodes
    order = _random_topological_order(g, np.random.default_rng(data.draw(st.integers(0, 99))))
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, n))
    search = Search(g, order, keep_outputs=keep, ratio=0.9)
    window_order, peak, exact = search.solve_window(a, b, beam=10**4, deadline=np.inf)
    assert exact
    moved = order.copy()
    moved[a:b] = window_order
    assert g.is_topological(moved)
    before = memory_profile(g, order, keep_outputs=keep).during
    after = memory_profile(g, moved, keep_outputs=keep).during
    np.testing.assert_allclose(after[:a], before[:a])
    np.testing.assert_allclose(after[b:], before[b:])
    assert after[a:b].max() == pytest.approx(peak, rel=1e-12)
    best = np.inf
    for perm in itertools.permutations(order[a:b]):
        other = order.copy()
        other[a:b] = perm
        if g.is_topological(other):
            best = min(best, memory_profile(g, other, keep_outputs=keep).during[a:b].max())
    outside = max(before[:a].max(initial=-np.inf), before[b:].max(initial=-np.inf))
    assert max(peak, outside) == pytest.approx(max(best, outside), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(dags(min_nodes=1, max_nodes=14, integer_sizes=False), st.booleans())
def test_valid_never_worse_than_inductor_and_optimal_on_tiny_graphs(g, keep):
    inductor = solve(g, "inductor", keep_outputs=keep)
    anytime = solve(g, "anytime", seed=0, time_limit=5, keep_outputs=keep)
    assert g.is_topological(anytime.order)
    assert anytime.peak_memory <= inductor.peak_memory
    assert anytime.peak_memory == pytest.approx(reference_peak(g, anytime.order, keep), rel=1e-12)
    exact = solve(g, "exact-dp", keep_outputs=keep)
    assert anytime.peak_memory == pytest.approx(exact.peak_memory, rel=1e-12)
    assert anytime.proved_optimal


@pytest.mark.parametrize("seed", range(4))
def test_reaches_the_optimum_that_exact_dp_proves(seed):
    """Graphs larger than the first window: node moves and window DPs improve on
    inductor until the whole-graph window, its beam doubled on each failure, is exact
    and proves the optimum."""
    g = generate_layered(60, seed=seed)
    exact = solve(g, "exact-dp")
    anytime = solve(g, "anytime", seed=seed, time_limit=3)
    assert anytime.peak_memory == pytest.approx(exact.peak_memory, rel=1e-12)
    assert anytime.proved_optimal


def test_never_worse_than_inductor_on_layered_graphs_with_outputs_kept():
    for seed, keep in itertools.product(range(3), (False, True)):
        g = generate_layered(300, seed=seed)
        inductor = solve(g, "inductor", keep_outputs=keep)
        anytime = solve(g, "anytime", seed=seed, time_limit=0.5, keep_outputs=keep)
        assert g.is_topological(anytime.order)
        assert anytime.peak_memory <= inductor.peak_memory


def test_kick_keeps_a_valid_order_and_its_profile():
    g = generate_layered(200, seed=5)
    order = _random_topological_order(g, np.random.default_rng(0))
    search = Search(g, order, keep_outputs=False)
    search.kick(40, 140, beam=8, deadline=np.inf, seed=3)
    assert g.is_topological(search.order)
    np.testing.assert_array_equal(search.order[:40], order[:40])
    np.testing.assert_array_equal(search.order[140:], order[140:])
    assert search.peak == pytest.approx(peak_memory(g, search.order), rel=1e-12)


def test_a_window_dp_past_its_deadline_gives_no_order_and_the_order_stands():
    """Past the deadline a window DP stops at once instead of finishing with its anchor
    state (the current order again, seconds late on windows of thousands of steps):
    the window, a kick and solve_window leave the order as it was."""
    g = generate_layered(200, seed=5)
    order = _random_topological_order(g, np.random.default_rng(0))
    search = Search(g, order, keep_outputs=False)
    assert search.try_window(40, 140, beam=8, deadline=0.0, seed=3) == (False, False)
    search.kick(40, 140, beam=8, deadline=0.0, seed=3)
    window_order, peak, exact = search.solve_window(40, 140, beam=8, deadline=0.0)
    np.testing.assert_array_equal(search.order, order)
    np.testing.assert_array_equal(window_order, order[40:140])
    assert peak == np.inf and not exact
    assert search.try_window(40, 140, beam=8, deadline=np.inf, seed=3)[0]  # it can improve


def test_kicks_once_every_window_size_has_failed():
    g = generate_layered(300, seed=2)
    inductor = solve(g, "inductor")
    anytime = solve(g, "anytime", seed=0, time_limit=60, windows=60)
    assert anytime.info["kicks"] > 0
    assert g.is_topological(anytime.order)
    assert anytime.peak_memory <= inductor.peak_memory


@pytest.mark.parametrize(("nodes", "limit"), [(2000, 1.0), (1000, 0.3)])
def test_uses_and_honours_the_time_limit(nodes, limit):
    g = generate_layered(nodes, seed=11)
    schedule = solve(g, "anytime", seed=0, time_limit=limit)
    assert g.is_topological(schedule.order)
    assert 0.8 * limit <= schedule.seconds <= 1.1 * limit


def test_stops_early_once_optimal():
    g = sparse_dag(10, 0.3, seed=1)
    schedule = solve(g, "anytime", seed=0, time_limit=30)
    assert schedule.proved_optimal
    assert schedule.seconds < 5


def test_proves_optimality_by_the_cut_bound_where_must_live_is_loose():
    # a 300-node layered graph whose optimal peak is 25 % above the must-live bound and
    # equal to the cut bound, computed once the search has stalled
    g = generate_layered(300, seed=7)
    schedule = solve(g, "anytime", seed=0, time_limit=60)
    bound = schedule.info["lower bound"]
    assert bound > 1.2 * must_live_bound(g)
    assert schedule.proved_optimal
    assert schedule.peak_memory <= bound * (1 + 1e-9)
    assert schedule.info["cut bound seconds"] > 0


def test_deterministic_for_a_fixed_seed_and_work_budget():
    g = generate_layered(400, seed=3)
    runs = [solve(g, "anytime", seed=7, time_limit=60, windows=40) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].order, runs[1].order)
    assert runs[0].info["windows"] == 40


def test_empty_and_single_node_graphs():
    assert solve(Graph(0, [], [], mem=[]), "anytime").order.size == 0
    one = solve(Graph(1, [], [], mem=[3.0], param_mem=[1.0]), "anytime", time_limit=1)
    assert one.order.tolist() == [0] and one.peak_memory == peak_memory(
        Graph(1, [], [], mem=[3.0], param_mem=[1.0]), [0]
    )


def test_two_search_threads_return_one_valid_order_never_above_inductor():
    g = generate_layered(600, seed=5)
    inductor = solve(g, "inductor")
    two = solve(g, "anytime", seed=0, time_limit=0.5, threads=2)
    assert two.info["threads"] == 2 and two.info["windows"] > 0
    assert g.is_topological(two.order)
    assert two.peak_memory <= inductor.peak_memory
    assert two.peak_memory == pytest.approx(reference_peak(g, two.order, False), rel=1e-12)


def test_closure_distances_up_to_the_reach():
    assert list(closure_distances(512)) == [
        2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512
    ]  # fmt: skip
    assert list(closure_distances(CLOSURE_REACH)[-3:]) == [1024, 1536, 2048]
    assert list(closure_distances(1000)[-3:]) == [512, 768, 1000]
    assert list(closure_distances(2)) == [2]


def test_closure_reach_zero_spans_the_whole_graph():
    g = generate_layered(300, seed=1)
    assert (
        Search(g, g.topological_order, keep_outputs=False, closure_reach=0).closure_distances[-1]
        == 300
    )


def test_largest_caps_the_window_sizes():
    g = generate_layered(400, seed=3)
    capped = solve(g, "anytime", seed=0, time_limit=60, windows=30, largest=64)
    assert set(capped.info["windows by size"]) == {32, 64}
    whole = solve(g, "anytime", seed=0, time_limit=60, windows=30, largest=0)
    assert 400 in whole.info["windows by size"]


@pytest.mark.parametrize(
    "options", [{"threads": 0}, {"largest": -1}, {"closure_reach": 1}, {"closure_reach": -2}]
)
def test_rejects_bad_options(options):
    with pytest.raises(SolverError):
        solve(generate_layered(20, seed=0), "anytime", time_limit=1, **options)


def test_ctrl_c_in_a_kernel_is_a_keyboard_interrupt():
    """numba turns a KeyboardInterrupt raised in a kernel's clock (``kernels.now``) into
    a SystemError; the solver gives the Ctrl-C back (the CLI then exits 130)."""
    graph = generate_layered(200, seed=0)
    solve(graph, "anytime", seed=0, time_limit=0.2)  # compiled: the search is in kernels
    with ctrl_c_after(1.0), pytest.raises(KeyboardInterrupt):
        solve(graph, "anytime", seed=0, time_limit=30)
