import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.generate import generate_layered
from dagopt.objectives import bounds as bounds_module
from dagopt.objectives import (
    branch_bound,
    cut_bound,
    lower_bound,
    must_live_bound,
    must_live_memory,
    peak_memory,
)
from dagopt.schedule import solve
from dags import all_topological_orders, dags


def skip_chain() -> Graph:
    # 0 -> 1 -> 2 -> 3 -> 4 and 0 -> 4: node 0's output lives until node 4 runs.
    return Graph(5, [0, 1, 2, 3, 0], [1, 2, 3, 4, 4], mem=[5, 1, 4, 1, 1])


def test_must_live_by_hand_beats_the_working_set_and_is_tight():
    g = skip_chain()
    # while 2 runs: 0 (read by 4) and 1 (read by 2) are live: 4 + 5 + 1
    assert must_live_memory(g).tolist() == [5, 6, 10, 10, 7]
    assert lower_bound(g) == 7
    assert must_live_bound(g) == 10 == peak_memory(g, np.arange(5))


@pytest.mark.parametrize(
    "graph",
    [
        Graph(4, [0, 1, 2], [1, 2, 3], mem=[3, 1, 4, 1], param_mem=[0, 2, 0, 0]),  # chain
        Graph(4, [0, 0, 0], [1, 2, 3], mem=[2, 5, 1, 3]),  # out-tree
        Graph(4, [0, 1, 2], [3, 3, 3], mem=[2, 5, 1, 3]),  # in-tree
    ],
    ids=["chain", "out-tree", "in-tree"],
)
def test_tight_on_chains_and_trees(graph):
    optimum = solve(graph, "exact-dp").peak_memory
    assert must_live_bound(graph) == pytest.approx(optimum)


def test_kept_outputs_add_every_sink():
    g = Graph(3, [0], [1], mem=[1, 5, 2], param_mem=[0, 0, 3])  # node 2: isolated sink
    assert must_live_bound(g) == 6
    # at the last step both sinks are live, the last one with its parameters (>= 0)
    assert must_live_bound(g, keep_outputs=True) == 7
    assert solve(g, "exact-dp", keep_outputs=True).peak_memory >= 7


def test_falls_back_to_the_working_set_above_the_memory_guard(monkeypatch):
    monkeypatch.setattr(bounds_module, "MAX_BOUND_BYTES", 8.0)
    g = skip_chain()
    assert must_live_memory(g) is None
    assert must_live_bound(g) == lower_bound(g)


def test_empty_graph():
    assert must_live_bound(Graph(0, [], [], mem=[])) == 0.0


@settings(max_examples=120, deadline=None)
@given(dags(max_nodes=7, integer_sizes=False), st.booleans())
def test_never_above_the_optimum_nor_any_order(g, keep):
    bound = must_live_bound(g, keep_outputs=keep)
    assert bound >= lower_bound(g) - 1e-9
    optimum = solve(g, "exact-dp", keep_outputs=keep).peak_memory
    assert bound <= optimum * (1 + 1e-12) + 1e-12
    for order in all_topological_orders(g):
        assert peak_memory(g, order, keep_outputs=keep) >= bound * (1 - 1e-12) - 1e-12


def siblings_swap() -> Graph:
    # 0 -> 1 -> 3 -> 4 and 0 -> 2 -> 4: before 3 runs, either 2 has not run (0's output
    # is live) or it has (its own output is live, read by 4).
    return Graph(5, [0, 0, 1, 2, 3], [1, 2, 3, 4, 4], mem=[1, 5, 1, 4, 2])


def test_cut_bound_by_hand_beats_must_live_and_is_tight():
    g = siblings_swap()
    # must-live while 3 runs: 1 (read by 3) and 3 itself; the cut adds 0's or 2's output
    assert must_live_bound(g) == 9
    result = cut_bound(g)
    assert result.bound == 10  # sizes are integers: the scaled cut is exact
    assert result.node == 3 and result.complete
    assert solve(g, "exact-dp").peak_memory == 10


def test_cut_bound_stopped_by_its_time_limit_is_still_a_bound():
    g = siblings_swap()
    stopped = cut_bound(g, time_limit=0.0)
    assert not stopped.complete and stopped.cuts == 0
    assert stopped.bound == must_live_bound(g)


def test_cut_bound_of_the_empty_graph():
    assert cut_bound(Graph(0, [], [], mem=[])).bound == 0.0


@settings(max_examples=150, deadline=None)
@given(dags(max_nodes=7, integer_sizes=False), st.booleans())
def test_cut_bound_never_above_the_optimum_nor_below_must_live(g, keep):
    bound = cut_bound(g, keep_outputs=keep).bound
    assert bound >= must_live_bound(g, keep_outputs=keep)
    optimum = solve(g, "exact-dp", keep_outputs=keep).peak_memory
    assert bound <= optimum * (1 + 1e-12) + 1e-12
    for order in all_topological_orders(g):
        assert peak_memory(g, order, keep_outputs=keep) >= bound * (1 - 1e-12) - 1e-12


def test_branch_bound_proves_an_order_optimal_where_the_cut_bound_cannot():
    g = generate_layered(40, seed=2)
    optimum = solve(g, "exact-dp").peak_memory
    assert cut_bound(g).bound < 0.9 * optimum
    result = branch_bound(g, upper=optimum, time_limit=30)
    assert result.optimal and result.bound == optimum and result.expanded >= 1


def test_branch_bound_stopped_at_once_is_still_a_bound():
    g = generate_layered(40, seed=2)
    stopped = branch_bound(g, upper=1e9, time_limit=0.0)
    assert not stopped.optimal and stopped.expanded == 0
    assert stopped.bound == must_live_bound(g)


def test_branch_bound_of_the_empty_graph():
    assert branch_bound(Graph(0, [], [], mem=[]), upper=0.0, time_limit=1).optimal


@settings(max_examples=150, deadline=None)
@given(dags(max_nodes=8, integer_sizes=False), st.booleans())
def test_branch_bound_between_the_cut_bound_and_the_optimum(g, keep):
    # upper: the peak of a first-found order, usually not optimal, so that the search
    # branches until its time limit or a single order (whose peak is then the optimum)
    upper = peak_memory(g, next(all_topological_orders(g)), keep_outputs=keep)
    result = branch_bound(g, upper=upper, keep_outputs=keep, time_limit=2)
    optimum = solve(g, "exact-dp", keep_outputs=keep).peak_memory
    assert result.bound <= optimum * (1 + 1e-12) + 1e-12
    assert result.bound >= min(cut_bound(g, keep_outputs=keep).bound, upper) * (1 - 1e-12)
    if result.optimal:
        assert result.bound == pytest.approx(optimum, rel=1e-9)
