import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.objectives import bounds as bounds_module
from dagopt.objectives import lower_bound, must_live_bound, must_live_memory, peak_memory
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
