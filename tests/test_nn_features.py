"""Featurisation of paper 000: the seven Topoformer masks (4.1), node features and PE (C.5)."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings

from dagopt import Graph, SolverError
from dagopt.generate import generate_layered
from dagopt.nn import (
    FEATURE_NAMES,
    MASK_NAMES,
    attention_bias,
    graph_inputs,
    laplacian_pe,
    node_features,
    topological_masks,
)
from dags import dags, sparse_dag


def adjacency(n: int, edges) -> np.ndarray:
    matrix = np.zeros((n, n), dtype=bool)
    for u, v in edges:
        matrix[u, v] = True
    return matrix


# ------------------------------------------------------------------------------ masks
@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=10))
def test_masks_partition_all_ordered_pairs(graph):
    masks = topological_masks(graph)
    n = graph.num_nodes
    assert masks.shape == (7, n, n) and masks.dtype == bool
    np.testing.assert_array_equal(masks.sum(axis=0), 1 - np.eye(n, dtype=int))
    np.testing.assert_array_equal(masks[6], masks[6].T)


@pytest.mark.parametrize(
    "graph",
    [sparse_dag(30, 0.15, seed=1), sparse_dag(25, 0.4, seed=2), generate_layered(40, seed=3)],
    ids=["sparse", "dense", "layered"],
)
def test_masks_match_networkx(graph):
    n = graph.num_nodes
    dag = nx.DiGraph(zip(*(a.tolist() for a in graph.edges), strict=True))
    dag.add_nodes_from(range(n))
    g = adjacency(n, dag.edges)
    tr = adjacency(n, nx.transitive_reduction(dag).edges)
    tc = adjacency(n, nx.transitive_closure_dag(dag).edges)
    expected = [tr, g & ~tr, tc & ~g]
    masks = topological_masks(graph)
    for k, directed in enumerate(expected):
        np.testing.assert_array_equal(masks[k], directed.T, err_msg=MASK_NAMES[k])
        np.testing.assert_array_equal(masks[k + 3], directed, err_msg=MASK_NAMES[k + 3])
    incomparable = ~(tc | tc.T | np.eye(n, dtype=bool))
    np.testing.assert_array_equal(masks[6], incomparable)


def test_mask_convention_on_a_chain():
    """Edge u -> v: the query v attends to the key u in the forward graphs."""
    masks = topological_masks(Graph(3, [0, 1], [1, 2], mem=[1, 1, 1]))
    on = {(k, i, j) for k, i, j in zip(*np.nonzero(masks), strict=True)}
    assert on == {(0, 1, 0), (0, 2, 1), (2, 2, 0), (3, 0, 1), (3, 1, 2), (5, 0, 2)}


# --------------------------------------------------------------------- node features
@pytest.fixture
def diamond_tail() -> Graph:
    """Diamond 0 -> {1, 2} -> 3 with a shortcut 0 -> 3, tail 3 -> 4, second source 5 -> 4."""
    src = [0, 0, 1, 2, 0, 3, 5]
    dst = [1, 2, 3, 3, 3, 4, 4]
    return Graph(6, src, dst, mem=[1, 2, 3, 4, 5, 6], param_mem=[0, 0, 0, 0, 0, 0])


def test_node_features_by_hand(diamond_tail):
    features = node_features(diamond_tail)
    assert features.shape == (6, len(FEATURE_NAMES)) and features.dtype == np.float32
    raw = {
        "mem": [1, 2, 3, 4, 5, 6],
        "param_mem": [0, 0, 0, 0, 0, 0],
        "in_degree": [0, 1, 1, 3, 2, 0],
        "out_degree": [3, 1, 1, 1, 0, 1],
        "min_hops_from_source": [0, 1, 1, 1, 1, 0],
        "max_hops_from_source": [0, 1, 1, 2, 3, 0],
        "min_hops_to_sink": [2, 2, 2, 1, 0, 1],
        "max_hops_to_sink": [3, 2, 2, 1, 0, 1],
    }
    for column, name in enumerate(FEATURE_NAMES):
        values = np.array(raw[name], dtype=float)
        expected = values / values.max() if values.max() > 0 else values
        np.testing.assert_allclose(features[:, column], expected, rtol=1e-6, err_msg=name)


@settings(max_examples=40, deadline=None)
@given(dags(min_nodes=1, max_nodes=10))
def test_node_features_lie_in_unit_interval_with_max_one(graph):
    features = node_features(graph)
    assert np.all((features >= 0) & (features <= 1))
    top = features.max(axis=0)
    assert np.all((top == 1) | (top == 0))


def test_hop_distances_match_networkx_longest_and_shortest_paths():
    graph = generate_layered(60, seed=5)
    dag = nx.DiGraph(zip(*(a.tolist() for a in graph.edges), strict=True))
    features = node_features(graph)
    distance = nx.multi_source_dijkstra_path_length(dag, set(graph.sources.tolist()))
    shortest = np.array([distance[v] for v in range(graph.num_nodes)], dtype=float)
    longest = np.zeros(graph.num_nodes)
    for v in nx.topological_sort(dag):
        longest[v] = max((longest[u] + 1 for u in dag.predecessors(v)), default=0)
    np.testing.assert_allclose(features[:, 4], shortest / shortest.max(), rtol=1e-6)
    np.testing.assert_allclose(features[:, 5], longest / longest.max(), rtol=1e-6)


# ---------------------------------------------------------------- positional encodings
def reference_pe(graph: Graph, dim: int) -> np.ndarray:
    """Dense eigendecomposition of the normalised Laplacian (connected graphs)."""
    n = graph.num_nodes
    a = adjacency(n, zip(*graph.edges, strict=True))
    a = (a | a.T).astype(float)
    scale = 1 / np.sqrt(a.sum(axis=1))
    vectors = np.linalg.eigh(np.eye(n) - scale[:, None] * a * scale[None, :])[1][:, 1 : dim + 1]
    return vectors * np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(dim)])


def test_pe_matches_dense_reference_on_a_larger_graph():
    graph = generate_layered(200, seed=7)
    np.testing.assert_allclose(laplacian_pe(graph, 20), reference_pe(graph, 20), atol=1e-5)


def test_pe_shapes_and_zero_padding_on_tiny_graphs():
    assert laplacian_pe(Graph(1, [], [], mem=[1]), 20).tolist() == [[0.0] * 20]
    chain_graph = Graph(3, [0, 1], [1, 2], mem=[1, 1, 1])
    chain = laplacian_pe(chain_graph, 20)
    assert chain.shape == (3, 20) and chain.dtype == np.float32
    assert np.all(np.abs(chain[:, :2]).max(axis=0) > 0.1) and not chain[:, 2:].any()
    np.testing.assert_allclose(np.linalg.norm(chain[:, :2], axis=0), 1, rtol=1e-6)
    two_edges = laplacian_pe(Graph(4, [0, 2], [1, 3], mem=[1] * 4), 5)  # two components
    assert np.abs(two_edges[:, :2]).max(axis=0).min() > 0.1 and not two_edges[:, 2:].any()
    assert laplacian_pe(chain_graph, 0).shape == (3, 0)
    np.testing.assert_array_equal(laplacian_pe(chain_graph, 2), chain[:, :2])


def test_graph_inputs_shapes_and_sign_flip():
    graph = generate_layered(30, seed=1)
    plain = graph_inputs(graph)
    n, e = graph.num_nodes, graph.num_edges
    assert plain.num_nodes == n and plain.x.shape == (n, 28) and plain.x.dtype == torch.float32
    assert plain.masks.shape == (7, n, n) and plain.masks.dtype == torch.bool
    assert plain.edge_index.shape == (2, e) and plain.edge_index.dtype == torch.long
    flipped = graph_inputs(graph, sign_flip=np.random.default_rng(3))
    torch.testing.assert_close(flipped.x[:, :8], plain.x[:, :8])
    signs = (flipped.x[:, 8:] * plain.x[:, 8:]).sum(dim=0).sign()
    assert (signs == -1).any() and (signs == 1).any()
    torch.testing.assert_close(flipped.x[:, 8:], plain.x[:, 8:] * signs)
    assert torch.equal(flipped.masks, plain.masks)


# ------------------------------------------------------------------------------ memory guards
@pytest.fixture
def little_memory(monkeypatch):
    """8 MB available: the dense arrays of a few hundred nodes no longer fit."""
    import dagopt.resources

    monkeypatch.setattr(dagopt.resources, "available_bytes", lambda: 8e6)


def test_masks_too_large_for_memory_raise_before_allocating(little_memory):
    with pytest.raises(SolverError, match="Topoformer masks of 1,000 nodes") as err:
        topological_masks(generate_layered(1000, seed=0))
    assert "graphs of up to about 676 nodes fit" in str(err.value)  # sqrt(0.8 * 8e6 / 14)
    assert topological_masks(generate_layered(300, seed=0)).shape == (7, 300, 300)


def test_attention_bias_too_large_for_memory_raises(little_memory):
    masks = torch.zeros((7, 600, 600), dtype=torch.bool)
    with pytest.raises(SolverError, match="attention bias of 600 nodes"):
        attention_bias(masks, torch.float32)
    assert attention_bias(masks[:, :300, :300], torch.float32).shape == (7, 300, 300)


def test_dense_pe_of_many_components_too_large_for_memory_raises(little_memory):
    """Isolated nodes are components of their own: the encodings then need a dense
    eigendecomposition of the whole Laplacian."""
    isolated = Graph(1000, [0], [1], mem=np.ones(1000))
    with pytest.raises(SolverError, match="Laplacian positional encodings of 1,000 nodes"):
        laplacian_pe(isolated)
    assert laplacian_pe(Graph(300, [0], [1], mem=np.ones(300))).shape == (300, 20)
