import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

from dagopt import Graph, GraphError
from dags import dags


def chain(n: int) -> Graph:
    return Graph(n, range(n - 1), range(1, n), mem=np.ones(n))


def test_csr_arrays_and_duplicate_edges_merged():
    g = Graph(3, [0, 0, 0, 1], [1, 2, 1, 2], mem=[1, 2, 3])
    assert g.num_edges == 3
    assert g.successors(0).tolist() == [1, 2]
    assert g.predecessors(2).tolist() == [0, 1]
    assert g.in_degree.tolist() == [0, 1, 2]
    assert g.out_degree.tolist() == [2, 1, 0]
    assert g.param_mem.tolist() == [0, 0, 0]


def test_graph_is_immutable():
    g = chain(3)
    with pytest.raises(AttributeError):
        g.name = "x"
    with pytest.raises(ValueError):
        g.mem[0] = 5.0


def test_cycle_error_names_nodes_on_the_cycle():
    names = ["a", "b", "c", "d"]
    with pytest.raises(GraphError, match="cycle") as err:
        Graph(4, [0, 1, 2, 3], [1, 2, 3, 1], mem=[1] * 4, names=names)
    message = str(err.value)
    assert "'b'" in message and "'c'" in message and "'d'" in message
    assert "'a'" not in message


@pytest.mark.parametrize(
    ("src", "dst", "mem", "fragment"),
    [
        ([0], [0], [1, 1], "self-loop"),
        ([0], [5], [1, 1], "unknown node"),
        ([0], [1], [1, -1], "invalid mem"),
        ([0], [1], [1, float("inf")], "invalid mem"),
        ([0], [1], [1, float("nan")], "invalid mem"),
        ([0], [1], [1], "expected one per node"),
    ],
)
def test_invalid_graphs_raise(src, dst, mem, fragment):
    with pytest.raises(GraphError, match=fragment):
        Graph(2, src, dst, mem=mem)


def test_duplicate_names_rejected():
    with pytest.raises(GraphError, match="duplicate node id"):
        Graph(2, [], [], mem=[1, 1], names=["x", "x"])


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=12))
def test_closure_and_reduction_match_networkx(g):
    ref = nx.DiGraph()
    ref.add_nodes_from(range(g.num_nodes))
    src, dst = g.edges
    ref.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    closure = nx.transitive_closure_dag(ref)
    expected = np.zeros((g.num_nodes, g.num_nodes), dtype=bool)
    for u, v in closure.edges:
        expected[u, v] = True
    assert np.array_equal(g.closure_matrix, expected)
    tr_src, tr_dst = g.transitive_reduction
    assert set(zip(tr_src.tolist(), tr_dst.tolist(), strict=True)) == set(
        nx.transitive_reduction(ref).edges
    )
    assert g.is_topological(g.topological_order)


def test_closure_of_wide_graph_crosses_word_boundaries():
    g = chain(200)
    assert g.closure_matrix[0, 199] and g.closure_matrix[63, 64] and not g.closure_matrix[64, 63]
    assert g.closure_matrix.sum() == 200 * 199 // 2
    assert g.transitive_reduction[0].size == 199
