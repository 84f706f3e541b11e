"""Graph and order files: node-link round trips, networkx interchange, atomic writes."""

import json
import math

import networkx as nx
import numpy as np
import pytest

import dagopt.io.atomic
from dagopt.errors import GraphError, InputError
from dagopt.graph import Graph
from dagopt.io import load, read_graph_json, read_order, write_graph_json, write_order
from dagopt.io.json import graph_from_node_link
from dagopt.io.nx import from_networkx, to_networkx
from dagopt.objectives import peak_memory

NODE_IDS = {
    "int-ids": [10, 3, 7, 0, 42],
    "str-ids": ["input", "conv", "relu", "add", "output"],
}


@pytest.fixture(params=sorted(NODE_IDS))
def graph(request) -> Graph:
    """A 5-node DAG with float and integral sizes, parameters, ops, and extra node and edge
    data: one value or one row per node or edge."""
    return Graph(
        5,
        src=[0, 0, 1, 2, 3],
        dst=[1, 2, 3, 3, 4],
        mem=[4, 2.5, 3, 1, 7],
        param_mem=[0, 1, 0, 2, 0],
        op=["input", "conv", None, "add", "output"],
        names=NODE_IDS[request.param],
        name="sample",
        node_data={
            "runtime": [1.0, 2.0, 3.5, 4.0, 5.0],
            "features": np.arange(15.0).reshape(5, 3) / 7,
        },
        edge_data={"bytes": [4, 4, 2.5, 3, 1], "delay": [[0.5, 1], [0, 0], [1, 2], [3, 4], [5, 6]]},
    )


def assert_same_graph(a: Graph, b: Graph) -> None:
    assert a.names == b.names
    assert [type(x) for x in a.names] == [type(x) for x in b.names]
    assert a.name == b.name
    for left, right in zip(a.edges, b.edges, strict=True):
        np.testing.assert_array_equal(left, right)
    np.testing.assert_array_equal(a.mem, b.mem)
    np.testing.assert_array_equal(a.param_mem, b.param_mem)
    assert a.op == b.op
    for mine, theirs in ((a.node_data, b.node_data), (a.edge_data, b.edge_data)):
        assert list(mine) == list(theirs)
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key])
            assert mine[key].shape == theirs[key].shape


def test_node_link_round_trip(graph, tmp_path):
    path = write_graph_json(graph, tmp_path / "g.json")
    assert_same_graph(graph, read_graph_json(path))
    assert_same_graph(graph, load(path))


def test_networkx_reads_our_file_and_back(graph, tmp_path):
    path = write_graph_json(graph, tmp_path / "g.json")
    data = json.loads(path.read_text())
    g = nx.node_link_graph(data, edges="edges")
    assert g.is_directed() and nx.is_directed_acyclic_graph(g)
    assert_same_graph(graph, from_networkx(g))


def test_networkx_writes_a_file_we_read(graph):
    data = nx.node_link_data(to_networkx(graph), edges="edges")
    assert_same_graph(graph, graph_from_node_link(json.loads(json.dumps(data))))


def test_node_and_edge_data_in_the_file(graph, tmp_path):
    data = json.loads(write_graph_json(graph, tmp_path / "g.json").read_text())
    assert data["nodes"][1]["features"] == pytest.approx([3 / 7, 4 / 7, 5 / 7])
    assert data["edges"][2] == {
        "source": graph.names[1],
        "target": graph.names[3],
        "bytes": 2.5,
        "delay": [1, 2],
    }


def test_only_numeric_data_every_node_or_edge_has_is_kept():
    nodes = [
        {"id": "a", "mem": 1, "vec": [1, 2], "ragged": [1], "mixed": 1, "label": "x"},
        {"id": "b", "mem": 1, "vec": [3, 4], "ragged": [1, 2], "mixed": [1], "label": "y"},
        {"id": "c", "mem": 1, "vec": (5, 6.5), "ragged": [1], "mixed": 2, "label": "z"},
    ]
    edges = [
        {"source": "a", "target": "b", "w": 2, "flag": True, "some": 1},
        {"source": "b", "target": "c", "w": 3, "flag": False},
    ]
    graph = graph_from_node_link({"nodes": nodes, "edges": edges})
    assert list(graph.node_data) == ["vec"]
    np.testing.assert_array_equal(graph.node_data["vec"], [[1, 2], [3, 4], [5, 6.5]])
    assert list(graph.edge_data) == ["w"]
    np.testing.assert_array_equal(graph.edge_data["w"], [2, 3])


def test_non_finite_attribute_is_an_error_not_dropped():
    """A NaN runtime would otherwise vanish and read as "no runtime attribute"."""
    nodes = [{"id": "a", "mem": 1, "runtime": 1.0}, {"id": "b", "mem": 1, "runtime": math.nan}]
    with pytest.raises(GraphError, match="node 'b' has a non-finite 'runtime': nan"):
        graph_from_node_link({"nodes": nodes, "edges": []})
    edges = [{"source": "a", "target": "b", "w": [1.0, math.inf]}]
    with pytest.raises(GraphError, match="edge 'a' -> 'b' has a non-finite 'w': inf"):
        plain = [nodes[0], {"id": "b", "mem": 1}]
        graph_from_node_link({"nodes": plain, "edges": edges})


@pytest.mark.parametrize(
    ("node", "fragment"),
    [
        ({"id": "a", "mem": 10**400}, "node 'a': 'mem' is too large"),
        ({"id": "a", "mem": 1, "param_mem": -(10**400)}, "'param_mem' is too large"),
        ({"id": "a", "mem": 1, "flops": 10**400}, "node 'a': 'flops' is too large"),
        ({"id": "a", "mem": 1, "vec": [1, 10**400]}, "node 'a': 'vec' is too large"),
    ],
)
def test_integers_beyond_the_float_range_are_input_errors(node, fragment):
    with pytest.raises(InputError, match=fragment):
        graph_from_node_link({"nodes": [node], "edges": []})


@pytest.mark.parametrize("end", [["a"], {"id": "a"}, 1.5, None, True])
def test_edge_end_that_is_no_node_id_is_an_input_error(end):
    nodes = [{"id": "a", "mem": 1}, {"id": "b", "mem": 1}]
    with pytest.raises(InputError, match="edge #0: source: node id must be an integer or a string"):
        graph_from_node_link({"nodes": nodes, "edges": [{"source": end, "target": "b"}]})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        ('{"nodes": [{"id": "a", "mem": ' + "9" * 5000 + "}]}", "unreadable JSON number"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_json_files_python_cannot_parse_are_input_errors(text, fragment, tmp_path):
    path = tmp_path / "g.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(InputError, match=fragment):
        read_graph_json(path)


def test_networkx_attributes_become_graph_data():
    g = nx.DiGraph()
    g.add_node("x", mem=1, emb=np.array([0.5, 1.5]))
    g.add_node("y", mem=2, emb=np.array([2.5, 3.5]))
    g.add_node("z", mem=3, emb=np.array([4.5, 5.5]))
    g.add_edge("y", "z", weight=7.0)
    g.add_edge("x", "y", weight=3.0)
    graph = from_networkx(g)
    np.testing.assert_array_equal(graph.node_data["emb"], [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]])
    # graph.edges order: x -> y (0 -> 1), then y -> z (1 -> 2).
    np.testing.assert_array_equal(graph.edge_data["weight"], [3.0, 7.0])
    back = to_networkx(graph)
    assert back.edges["y", "z"]["weight"] == 7 and back.nodes["z"]["emb"] == [4.5, 5.5]


def test_links_is_a_synonym_of_edges(graph, tmp_path):
    path = write_graph_json(graph, tmp_path / "g.json")
    data = json.loads(path.read_text())
    data["links"] = data.pop("edges")
    path.write_text(json.dumps(data))
    assert_same_graph(graph, read_graph_json(path))


def test_order_file_round_trip(graph, tmp_path):
    order = np.array([0, 2, 1, 3, 4])
    peak = peak_memory(graph, order)
    path = write_order(
        tmp_path / "order.json",
        graph,
        order,
        method="handmade",
        peak_memory=peak,
        keep_outputs=True,
        seconds=0.25,
        proved_optimal=False,
    )
    assert json.loads(path.read_text())["order"] == [graph.names[v] for v in order]
    back = read_order(path, graph)
    np.testing.assert_array_equal(back.order, order)
    assert (back.graph, back.method) == ("sample", "handmade")
    assert (back.peak_memory, back.seconds, back.proved_optimal) == (peak, 0.25, False)
    assert back.keep_outputs is True


@pytest.mark.parametrize("entry", [["a"], {"a": 1}, None, 2.5])
def test_order_entry_that_is_no_node_id_is_an_input_error(graph, entry, tmp_path):
    path = tmp_path / "order.json"
    path.write_text(json.dumps({"order": [entry, *graph.names[1:]]}))
    with pytest.raises(InputError, match="is not a node id"):
        read_order(path, graph)


@pytest.mark.parametrize(
    ("key", "recorded", "wanted"),
    [
        *(("peak_memory", bad, "a finite number") for bad in ("9" * 400, "1e999", "NaN")),
        ("seconds", '"big"', "a finite number"),
        ("seconds", "true", "a finite number"),
        ("keep_outputs", '"true"', "true, false or null"),
        ("proved_optimal", "1", "true, false or null"),
    ],
)
def test_an_order_file_field_of_the_wrong_kind_is_an_input_error(
    graph, key, recorded, wanted, tmp_path
):
    path = tmp_path / "order.json"
    order = json.dumps([graph.names[v] for v in graph.topological_order.tolist()])
    path.write_text(f'{{"order": {order}, "{key}": {recorded}}}')
    with pytest.raises(InputError, match=f"order.json: .{key}. must be {wanted}"):
        read_order(path, graph)
    path.write_text(f'{{"order": {order}, "{key}": null}}')
    assert getattr(read_order(path, graph), key) is None


def test_atomic_write_names_a_directory_or_file_in_the_way(graph, tmp_path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory") as err:
        write_graph_json(graph, tmp_path / "folder")
    assert err.value.filename == str(tmp_path / "folder")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file") as err:
        write_graph_json(graph, tmp_path / "file" / "sub" / "g.json")
    assert err.value.filename == str(tmp_path / "file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder"]


def test_atomic_write_leaves_no_temp_file(graph, tmp_path):
    target = tmp_path / "g.json"
    write_graph_json(graph, target)
    write_graph_json(graph, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_failed_atomic_write_keeps_old_file_and_no_temp_file(graph, tmp_path, monkeypatch):
    target = tmp_path / "g.json"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(dagopt.io.atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_graph_json(graph, target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_atomic_write_goes_through_a_symbolic_link(graph, tmp_path):
    destination = tmp_path / "real.json"
    destination.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(destination)
    write_graph_json(graph, link)
    assert link.is_symlink()
    assert read_graph_json(destination).num_nodes == graph.num_nodes


def test_atomic_write_writes_into_a_fifo_instead_of_replacing_it(graph, tmp_path):
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_graph_json(graph, fifo)
    reader.join(timeout=30)
    assert fifo.is_fifo()
    assert json.loads(received[0])["nodes"]


def test_atomic_write_errors_name_the_target_not_the_temporary_file(graph, tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".g.json.abc.tmp"))

    monkeypatch.setattr(dagopt.io.atomic.tempfile, "mkstemp", refused)
    with pytest.raises(PermissionError) as err:
        write_graph_json(graph, tmp_path / "g.json")
    assert err.value.filename == str(tmp_path / "g.json")


def test_a_graph_with_both_edges_and_links_is_refused():
    nodes = [{"id": "a", "mem": 1}, {"id": "b", "mem": 1}]
    with pytest.raises(InputError, match='"edges" or "links", not both'):
        graph_from_node_link(
            {"nodes": nodes, "links": [{"source": "a", "target": "b"}], "edges": []}
        )
