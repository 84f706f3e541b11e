import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph, InputError, SolverError
from dagopt.generate import generate_layered
from dagopt.objectives import peak_memory
from dagopt.schedule import SOLVERS, solve
from dagopt.schedule.dp import state_dp
from dags import all_topological_orders, dags, reference_peak, sparse_dag

HEURISTICS = ["bfs", "dfs", "random", "lpmf", "inductor-bfs", "inductor-dfs", "inductor"]


def brute_force(graph: Graph, keep_outputs: bool = False) -> float:
    return min(reference_peak(graph, o, keep_outputs) for o in all_topological_orders(graph))


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=9, integer_sizes=False), st.booleans())
def test_every_solver_returns_a_valid_order_with_recomputed_peak(g, keep):
    for method in SOLVERS.all():
        schedule = solve(g, method, seed=1, time_limit=5, keep_outputs=keep)
        assert g.is_topological(schedule.order), method
        expected = reference_peak(g, schedule.order, keep_outputs=keep)
        assert schedule.peak_memory == pytest.approx(expected, rel=1e-12), method


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=7), st.booleans())
def test_exact_dp_equals_brute_force_and_beats_heuristics(g, keep):
    optimum = brute_force(g, keep)
    exact = solve(g, "exact-dp", keep_outputs=keep)
    assert exact.proved_optimal
    assert exact.peak_memory == optimum
    for method in HEURISTICS:
        assert solve(g, method, seed=0, keep_outputs=keep).peak_memory >= optimum
    depth_first = solve(g, "dfs-dp", seed=3, time_limit=5, keep_outputs=keep)
    assert depth_first.proved_optimal and depth_first.peak_memory == optimum


@settings(max_examples=40, deadline=None)
@given(dags(min_nodes=8, max_nodes=16, integer_sizes=False))
def test_approx_dp_with_huge_beam_equals_exact_dp(g):
    exact = solve(g, "exact-dp")
    approx = solve(g, "approx-dp", beam_width=10**7)
    assert approx.proved_optimal
    assert approx.peak_memory == pytest.approx(exact.peak_memory, rel=1e-12)
    narrow = solve(g, "approx-dp", beam_width=1)
    # Equal peaks of different orders may differ in the last bit of a float sum.
    assert narrow.peak_memory >= exact.peak_memory * (1 - 1e-12)


def test_narrow_beam_is_not_claimed_optimal():
    n = 40
    g = sparse_dag(n, 0.1, seed=0)
    schedule = solve(g, "approx-dp", beam_width=2)
    assert schedule.proved_optimal is False
    assert schedule.info["widest_step"] > 2


def test_exact_dp_state_budget_is_a_clear_error():
    g = Graph(16, [], [], mem=np.ones(16))  # 16 independent nodes: C(16, 8) states
    with pytest.raises(SolverError, match="more than 100 states"):
        solve(g, "exact-dp", max_states=100)


def test_lpmf_follows_inductor_rule():
    # Two branches from a source: one big short-lived, one small. LPMF must finish
    # the branch that frees memory first.
    g = Graph(5, [0, 0, 1, 2, 3], [1, 2, 3, 4, 4], mem=[1, 10, 1, 1, 1], names=list("sbcde"))
    order = solve(g, "lpmf").order.tolist()
    assert order.index(3) == order.index(1) + 1  # b's only consumer runs right after it


def test_inductor_picks_the_best_candidate():
    n = 60
    g = sparse_dag(n, 0.08, seed=5)
    best = solve(g, "inductor")
    given = peak_memory(g, np.arange(n))  # node order is topological here (src < dst)
    parts = [solve(g, m).peak_memory for m in ("lpmf", "inductor-bfs", "inductor-dfs")]
    assert best.peak_memory == min([given, *parts])
    assert best.info["peaks"]["given"] == given


def test_unknown_method_and_option():
    g = Graph(1, [], [], mem=[1])
    with pytest.raises(InputError, match="unknown method 'nope'"):
        solve(g, "nope")
    with pytest.raises(InputError, match="has no option 'beam_width'"):
        solve(g, "bfs", beam_width=3)


def test_random_is_seeded():
    n = 50
    g = sparse_dag(n, 0.1, seed=1)
    a, b = solve(g, "random", seed=7), solve(g, "random", seed=7)
    assert np.array_equal(a.order, b.order)


def test_empty_graph():
    g = Graph(0, [], [], mem=[])
    for method in SOLVERS.all():
        assert solve(g, method, seed=0).order.size == 0


def test_approx_dp_time_limit_finishes_greedily_and_says_so():
    g = sparse_dag(120, 0.03, seed=2)
    schedule = solve(g, "approx-dp", beam_width=100_000, time_limit=0.0)
    assert g.is_topological(schedule.order)
    assert schedule.proved_optimal is False
    assert schedule.info["time_limit_hit_at_step"] == 1


def width_one_children(g: Graph, done: set, peak: float, live: float, keep: bool):
    """Every ready node's ``(peak, live)`` after it runs, as the set DP scores a child."""
    children = {}
    for v in range(g.num_nodes):
        preds = g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]]
        if v in done or not set(preds.tolist()) <= done:
            continue
        after = done | {v}
        freed = g.mem[v] if g.out_degree[v] == 0 and not keep else 0.0  # the kernels' order
        for u in preds:
            if set(g.succ_idx[g.succ_ptr[u] : g.succ_ptr[u + 1]].tolist()) <= after:
                freed += g.mem[u]
        children[v] = (max(peak, live + (g.mem[v] + g.param_mem[v])), live + g.mem[v] - freed)
    return children


@settings(max_examples=60, deadline=None)
@given(dags(min_nodes=2, max_nodes=30, integer_sizes=False), st.booleans())
def test_the_greedy_tail_past_a_time_limit_is_the_dp_at_width_one(g, keep):
    """Past its time limit the set DP finishes in one kernel (``greedy_tail``) what it
    would do step by step at beam width 1: at every step a child least by (peak, live)
    (ties to the lower node; the step-by-step loop takes any of them), and the same
    order as that loop where no two children tie."""
    stepwise, stepwise_exact, _ = state_dp(g, beam_width=1, keep_outputs=keep)
    timed, exact, info = state_dp(g, beam_width=1, keep_outputs=keep, time_limit=0.0)
    assert info["time_limit_hit_at_step"] == 1 and exact == stepwise_exact
    done, peak, live, tied = set(), 0.0, 0.0, False
    for step, v in enumerate(timed.tolist()):
        children = width_one_children(g, done, peak, live, keep)
        least = min(children.values())
        assert children[v] == least  # step 0 is the loop's: any of the least
        assert step == 0 or v == min(u for u, c in children.items() if c == least)
        tied = tied or sum(c == least for c in children.values()) > 1
        done.add(v)
        peak, live = children[v]
    assert tied or np.array_equal(timed, stepwise)


def test_anchored_dp_past_its_time_limit_returns_its_anchor():
    """At width 1 the anchored beam keeps the anchor's state alone, so past the limit
    the anchor order (Inductor's best) is the answer, given at once."""
    g = generate_layered(300, seed=1)
    timed = solve(g, "anchored-dp", beam_width=1000, time_limit=0.0)
    assert np.array_equal(timed.order, solve(g, "inductor").order)
    assert timed.info["time_limit_hit_at_step"] == 1


def test_dfs_dp_candidate_lists_grow_without_changing_the_search(monkeypatch):
    """The candidate lists of the path live in one array that doubles when they outgrow
    it: starting from one entry per node, the search is the same, draw for draw."""
    from dagopt.schedule import dfs_dp

    graphs = [generate_layered(40, seed=seed) for seed in range(3)]
    wide = [dfs_dp.depth_first_dp(g, seed=1, time_limit=60, keep_outputs=False) for g in graphs]
    monkeypatch.setattr(dfs_dp, "FIRST_CANDIDATES", 1)
    for g, (order, finished, info) in zip(graphs, wide, strict=True):
        grown = dfs_dp.depth_first_dp(g, seed=1, time_limit=60, keep_outputs=False)
        assert np.array_equal(grown[0], order) and grown[1] == finished and grown[2] == info


def test_exact_dp_time_limit_is_a_clear_error():
    with pytest.raises(SolverError, match="exceeded the time limit"):
        solve(sparse_dag(60, 0.02, seed=3), "exact-dp", time_limit=0.0)


def test_dfs_dp_returns_best_found_within_time_limit():
    g = sparse_dag(150, 0.03, seed=4)
    schedule = solve(g, "dfs-dp", seed=0, time_limit=0.2)
    assert g.is_topological(schedule.order)
    assert schedule.proved_optimal is False
    assert schedule.seconds < 5


@settings(max_examples=40, deadline=None)
@given(dags(min_nodes=6, max_nodes=16, integer_sizes=False), st.booleans())
def test_anchored_dp_is_never_worse_than_inductor(g, keep):
    inductor = solve(g, "inductor", keep_outputs=keep)
    for width in (1, 2, 8):
        anchored = solve(g, "anchored-dp", beam_width=width, keep_outputs=keep)
        assert anchored.peak_memory <= inductor.peak_memory * (1 + 1e-12)


def test_one_time_setup_is_timed_apart_from_the_solve():
    """The first call of a method runs it once on a small warm-up graph (where numba
    compiles and models load); that time is ``setup_seconds``, not ``seconds``."""
    from dagopt.schedule.base import SolverResult, register

    compiled = []

    @register("test-compiling", "test only: slow on its first call")
    def _solve(graph, **_):
        if not compiled:
            time.sleep(0.3)
            compiled.append(True)
        return SolverResult(order=graph.topological_order)

    try:
        graph = generate_layered(30, seed=1)
        first, second = (solve(graph, "test-compiling") for _ in range(2))
    finally:
        SOLVERS.unregister("test-compiling")
    assert first.setup_seconds >= 0.3 and first.seconds < 0.3
    assert second.setup_seconds == 0.0


def test_a_beam_that_cannot_fit_stops_before_allocating():
    n = 200_000
    chain = Graph(n, np.arange(n - 1), np.arange(1, n), mem=np.ones(n))
    began = time.perf_counter()
    with pytest.raises(SolverError, match=r"needs about .* GiB.*beam width of at most"):
        solve(chain, "approx-dp", beam_width=100_000)
    assert time.perf_counter() - began < 5
    # dfs-dp keeps only the current path's candidate lists (no (n + 1) x n matrix, 298 GiB
    # here): it runs, and the chain's only order is the one it proves optimal
    chained = solve(chain, "dfs-dp", time_limit=1)
    assert np.array_equal(chained.order, np.arange(n)) and chained.proved_optimal


def test_the_set_dp_reports_its_steps():
    from dagopt.progress import reporting

    seen = []
    graph = generate_layered(40, seed=2)
    with reporting(lambda stage, done, total: seen.append((stage, done, total))):
        solve(graph, "approx-dp", beam_width=50)
    steps = [s for s in seen if s[0].startswith("set DP") and s[2] == graph.num_nodes]
    assert [done for _, done, _ in steps] == list(range(graph.num_nodes))


@pytest.mark.skipif(
    __import__("numba").config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads"
)
def test_approx_dp_answer_does_not_depend_on_the_thread_count():
    """State collapsing returns its survivors in index order, so the beam keeps the same
    states, and the same order comes out, on one thread as on several."""
    import numba

    graph = generate_layered(300, seed=1_000_001)
    orders = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            orders.append(solve(graph, "approx-dp", beam_width=50).order)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(*orders)


@pytest.mark.parametrize("keep_outputs", [False, True])
def test_inductor_kernels_make_the_reference_sorts_choices(keep_outputs):
    """The numba sorts give exactly the orders of the Python transcriptions of
    Inductor's sorts, on layered graphs (many ties in size) and random sparse DAGs."""
    from dagopt.schedule.inductor import fifo_bfs_order, lpmf_order, size_dfs_order
    from inductor_reference import reference_fifo_bfs, reference_lpmf, reference_size_dfs

    graphs = [generate_layered(n, seed=seed) for n, seed in ((60, 1), (300, 2), (1000, 3))]
    graphs += [sparse_dag(80, 0.08, seed) for seed in range(5)]
    for graph in graphs:
        np.testing.assert_array_equal(
            lpmf_order(graph, keep_outputs=keep_outputs),
            reference_lpmf(graph, keep_outputs=keep_outputs),
        )
        np.testing.assert_array_equal(fifo_bfs_order(graph), reference_fifo_bfs(graph))
        np.testing.assert_array_equal(size_dfs_order(graph), reference_size_dfs(graph))


@pytest.mark.parametrize("method", ["random", "topoformer-sample", "topoformer-ar-sample"])
def test_sampling_methods_stop_at_the_time_limit(method):
    graph = generate_layered(200, seed=5)
    result = solve(graph, method, seed=0, time_limit=0.2, samples=10_000_000)
    assert result.info["stopped_by_time_limit"]
    assert 0 < result.info["samples"] < 10_000_000
    assert result.seconds < 30


def test_chunked_sampling_draws_the_orders_of_one_draw():
    from dagopt.schedule.classic import SAMPLE_CHUNK, best_sampled, least_peak, sampler
    from dagopt.schedule.priority import sample_orders

    graph = generate_layered(60, seed=2)
    priorities = np.random.default_rng(1).normal(size=graph.num_nodes)
    count = 2 * SAMPLE_CHUNK + 17
    orders, _ = sample_orders(graph, priorities, count, np.random.default_rng(7))
    expected, _ = least_peak(graph, orders, keep_outputs=False)
    draw = sampler(graph, priorities, 7)
    result = best_sampled(graph, draw, count, None, keep_outputs=False)
    assert np.array_equal(result.order, expected)
    assert result.info == {"samples": count, "stopped_by_time_limit": False}
