import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

from dagopt import Graph, GraphError
from dagopt.errors import InputError
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


def test_ids_equal_as_text_rejected():
    """Placement files key nodes by ``str(id)``: ``1`` and ``"1"`` could not be told apart."""
    with pytest.raises(GraphError, match="node ids 1 and '1' are the same as text"):
        Graph(3, [], [], mem=[1, 1, 1], names=[1, "x", "1"])
    assert Graph(2, [], [], mem=[1, 1], names=[1, "01"]).names == (1, "01")


def test_sizes_whose_total_overflows_rejected():
    """Every peak is at most ``sum(mem) + max(param_mem)``; past the float range it would
    be infinite."""
    with pytest.raises(GraphError, match="sizes too large"):
        Graph(2, [0], [1], mem=[1e308, 1e308])
    with pytest.raises(GraphError, match="sizes too large"):
        Graph(1, [], [], mem=[1.7e308], param_mem=[1e308])
    assert Graph(2, [0], [1], mem=[1e307, 1e307]).mem.sum() == 2e307


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


def test_node_data_rows_and_edge_data_in_edge_order():
    # Edges given out of order and once twice: stored in graph.edges order, merged.
    g = Graph(
        3,
        [1, 0, 0, 1],
        [2, 1, 2, 2],
        mem=[1, 2, 3],
        node_data={"runtime": [1, 2, 3], "features": np.arange(6).reshape(3, 2)},
        edge_data={"bytes": [5, 1, 2, 5], "both": [[5, 0], [1, 0], [2, 0], [5, 0]]},
    )
    assert [a.tolist() for a in g.edges] == [[0, 0, 1], [1, 2, 2]]
    assert g.node_data["features"].shape == (3, 2)
    assert g.node_data["features"].dtype == np.float64
    assert g.edge_data["bytes"].tolist() == [1.0, 2.0, 5.0]
    assert g.edge_data["both"].tolist() == [[1, 0], [2, 0], [5, 0]]
    for array in (*g.node_data.values(), *g.edge_data.values()):
        with pytest.raises(ValueError):
            array[0] = 9.0
    assert chain(3).edge_data == {}


@pytest.mark.parametrize(
    ("node_data", "edge_data", "fragment"),
    [
        ({"f": np.ones((3, 2, 2))}, None, r"node attribute 'f' has shape \(3, 2, 2\)"),
        ({"f": [1, 2]}, None, r"has shape \(2,\), expected \(3,\) or \(3, k\)"),
        ({"f": [[1], [2, 3], [4]]}, None, "must be an array of numbers"),
        ({"f": ["a", "b", "c"]}, None, "must be an array of numbers"),
        ({"f": [1, None, 3]}, None, "must be an array of numbers"),
        ({"f": [[1, 2], [3, np.nan], [5, 6]]}, None, "node 'b' has a non-finite 'f': nan"),
        ({1: [1, 2, 3]}, None, "names must be strings"),
        (None, {"w": [1, 2, 3]}, r"edge attribute 'w' has shape \(3,\), expected \(2,\)"),
        (None, {"w": [1, np.inf]}, "edge 'b' -> 'c' has a non-finite 'w': inf"),
        (None, {"w": ["x", "y"]}, "edge attribute 'w' must be an array of numbers"),
        (None, {"source": [1, 2]}, "reserved"),
    ],
)
def test_invalid_node_and_edge_data_raise(node_data, edge_data, fragment):
    with pytest.raises(GraphError, match=fragment) as err:
        Graph(
            3,
            [0, 1],
            [1, 2],
            mem=[1, 1, 1],
            names=["a", "b", "c"],
            node_data=node_data,
            edge_data=edge_data,
        )
    assert "\n" not in str(err.value)


def test_duplicate_edges_with_different_data_raise():
    with pytest.raises(GraphError, match="duplicate edge 0 -> 1 has different 'w' values"):
        Graph(2, [0, 0], [1, 1], mem=[1, 1], edge_data={"w": [1.0, 2.0]})
    same = Graph(2, [0, 0], [1, 1], mem=[1, 1], edge_data={"w": [[1.0, 3.0], [1.0, 3.0]]})
    assert same.edge_data["w"].tolist() == [[1.0, 3.0]]


def test_an_unpickled_graph_stays_read_only():
    """A worker process gets graphs by pickle; numpy's pickles drop the read-only flag."""
    import pickle

    graph = Graph(3, [0, 1], [1, 2], mem=[1, 2, 3], node_data={"runtime": [1.0, 2.0, 3.0]})
    copy = pickle.loads(pickle.dumps(graph))
    assert copy.mem.tolist() == [1, 2, 3] and copy.topological_order.tolist() == [0, 1, 2]
    for array in (copy.mem, copy.succ_idx, copy.node_data["runtime"]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


def test_join_shares_gives_one_node_per_operator():
    """``join_shares`` merges each share node ``<op>.<j>`` into ``<op>``: its bytes and
    FLOPs add to the operator's, its edges become the operator's (the one between them
    is dropped); a graph without share nodes comes back as is."""
    from dagopt.graph.shares import SHARE_KEY, join_shares
    from dagopt.objectives.placement import SimulatedCostModel

    names = ["x", "f.1", "f.2", "f", "g", "h"]
    edges = [(0, 1), (0, 2), (0, 3), (1, 3), (2, 3), (1, 4), (3, 4), (2, 5), (4, 5)]
    split = Graph(
        6,
        *zip(*edges, strict=True),
        mem=[8, 4, 2, 16, 1, 1],
        param_mem=[0, 0, 0, 3, 5, 0],
        names=names,
        op=["input", "f.1", "f.2", "f", "g", "h"],
        node_data={SHARE_KEY: [0, 1, 2, 0, 0, 0], "flops": [0, 0, 0, 7, 2, 1]},
    )
    joint = join_shares(split)
    assert joint.names == ("x", "f", "g", "h") and joint.op == ("input", "f", "g", "h")
    assert joint.mem.tolist() == [8, 22, 1, 1] and joint.param_mem.tolist() == [0, 3, 5, 0]
    pairs = sorted(zip(*(e.tolist() for e in joint.edges), strict=True))
    assert pairs == [(0, 1), (1, 2), (1, 3), (2, 3)]
    assert list(joint.node_data) == ["flops"] and joint.node_data["flops"].tolist() == [0, 7, 2, 1]
    assert join_shares(joint) is joint
    with pytest.raises(InputError, match=r"has 2 share nodes .* join them first"):
        SimulatedCostModel(split)
    SimulatedCostModel(joint, runtimes=np.ones(4))
    orphan = Graph(2, [0], [1], mem=[1, 1], names=["a", "b.1"], node_data={SHARE_KEY: [0, 1]})
    with pytest.raises(GraphError, match=r"share node 'b\.1' of graph 'graph' names no operator"):
        join_shares(orphan)
