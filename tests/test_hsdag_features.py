"""HSDAG groundwork (paper 004): co-location coarsening (appendix G) and node features
(section 2.3, eq. 3-5)."""

import numpy as np
import pytest

from dagopt import Graph
from dagopt.generate import generate_layered
from dagopt.graph.coarsen import colocate, colocation_groups
from dagopt.nn.hsdag.features import (
    SHAPE_KEY,
    FeatureGroups,
    FeatureSpace,
    fractal_dimension,
    positional_encoding,
)


def path(n: int) -> Graph:
    return Graph(n, np.arange(n - 1), np.arange(1, n), mem=np.ones(n))


def grid(k: int) -> Graph:
    index = np.arange(k * k).reshape(k, k)
    src = np.concatenate([index[:, :-1].ravel(), index[:-1, :].ravel()])
    dst = np.concatenate([index[:, 1:].ravel(), index[1:, :].ravel()])
    return Graph(k * k, src, dst, mem=np.ones(k * k))


def test_a_chain_collapses_and_branches_stay_apart():
    # 0 -> 1 -> 2 (2 forks) -> 3, 4 -> 5 (5 joins): only 0-1-2 is a co-location chain.
    graph = Graph(
        6, [0, 1, 2, 2, 3, 4], [1, 2, 3, 4, 5, 5], mem=np.arange(1.0, 7.0),
        param_mem=[1, 2, 0, 0, 0, 0], op=["in", "conv", "relu", "a", "b", "add"],
        node_data={"runtime": np.ones(6), "layer": np.arange(6)},
    )  # fmt: skip
    coarse = colocate(graph)
    assert coarse.group.tolist() == [0, 0, 0, 1, 2, 3]
    quotient = coarse.quotient
    assert quotient.num_nodes == 4 and sorted(zip(*quotient.edges, strict=True)) == [
        (0, 1), (0, 2), (1, 3), (2, 3),
    ]  # fmt: skip
    assert quotient.mem.tolist() == [3.0, 4.0, 5.0, 6.0]  # a group's output: its last op's
    assert quotient.param_mem.tolist() == [3.0, 0.0, 0.0, 0.0]
    assert quotient.node_data["runtime"].tolist() == [3.0, 1.0, 1.0, 1.0]
    assert "layer" not in quotient.node_data and quotient.op[0] == "in+conv+relu"
    types = coarse.op_types
    assert np.allclose(coarse.op_mix[0][[types.index(t) for t in ("in", "conv", "relu")]], 1 / 3)
    assert np.allclose(coarse.op_mix.sum(axis=1), 1.0)


def test_a_join_or_a_fork_is_never_merged():
    fork = Graph(3, [0, 0], [1, 2], mem=np.ones(3))
    join = Graph(3, [0, 1], [2, 2], mem=np.ones(3))
    assert colocation_groups(fork).tolist() == [0, 1, 2]
    assert colocation_groups(join).tolist() == [0, 1, 2]
    assert colocation_groups(path(5)).tolist() == [0] * 5


@pytest.mark.parametrize("seed", range(4))
def test_the_quotient_of_a_random_graph_is_a_dag_with_every_crossing_edge(seed):
    graph = generate_layered(120, seed=seed)
    coarse = colocate(graph)
    group, quotient = coarse.group, coarse.quotient
    src, dst = graph.edges
    crossing = {(int(a), int(b)) for a, b in zip(group[src], group[dst], strict=True) if a != b}
    assert crossing == set(zip(*map(np.ndarray.tolist, quotient.edges), strict=True))
    assert np.isclose(quotient.param_mem.sum(), graph.param_mem.sum())
    # Within a group, every op but the last has exactly one consumer, inside the group.
    for g in range(quotient.num_nodes):
        members = np.flatnonzero(group == g)
        assert all(graph.out_degree[v] == 1 for v in members[:-1])


def test_the_fractal_dimension_is_about_one_on_a_path_and_two_on_a_grid():
    line, square = fractal_dimension(path(201)), fractal_dimension(grid(31))
    assert 0.9 < line[100] < 1.1
    assert 1.5 < square[31 * 15 + 15] < 2.1
    assert np.median(square) > np.median(line) + 0.4
    assert fractal_dimension(Graph(2, [0], [1], mem=np.ones(2))).tolist() == [0.0, 0.0]


def reference_fractal_dimension(graph: Graph) -> np.ndarray:
    """Eq. 4 spelled out with networkx's hop distances: the least-squares slope of
    ``log N(v, r)`` on ``log r`` over the distances ``r >= 1`` that ``v`` reaches."""
    import networkx as nx

    undirected = nx.Graph()
    undirected.add_nodes_from(range(graph.num_nodes))
    undirected.add_edges_from(zip(*(e.tolist() for e in graph.edges), strict=True))
    out = np.zeros(graph.num_nodes)
    for v in range(graph.num_nodes):
        hops = np.array(list(nx.single_source_shortest_path_length(undirected, v).values()))
        radii = np.unique(hops[hops > 0])
        if radii.size >= 2:
            within = np.array([(hops <= r).sum() for r in radii], dtype=float)
            out[v] = np.polyfit(np.log(radii), np.log(within), 1)[0]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_fractal_dimension_is_eq_4_on_layered_graphs(seed):
    graph = generate_layered(120, seed=seed)
    np.testing.assert_allclose(
        fractal_dimension(graph), reference_fractal_dimension(graph), rtol=1e-9, atol=1e-12
    )


def test_positional_encoding_follows_eq_5():
    graph = Graph(3, [2, 0], [0, 1], mem=np.ones(3))  # topological order 2, 0, 1
    pe = positional_encoding(graph, 4)
    pos = np.array([2.0, 3.0, 1.0])
    assert np.allclose(pe[:, 0], np.sin(pos)) and np.allclose(pe[:, 1], np.cos(pos))
    assert np.allclose(pe[:, 2], np.sin(pos / 100)) and np.allclose(pe[:, 3], np.cos(pos / 100))


def test_feature_groups_switch_off_for_the_ablations():
    a = Graph(3, [0, 1], [1, 2], mem=np.ones(3), op=["x", "y", "x"],
              node_data={SHAPE_KEY: [[1, 3], [1, 8], [1, 8]]})  # fmt: skip
    b = grid(4)
    space = FeatureSpace.fit([a, b])
    assert space.op_types == ("", "x", "y") and space.shape_length == 2
    full = space.features(a)
    width = 3 + 2 + len(space.in_degrees) + len(space.out_degrees) + 1 + 16
    assert full.shape == (3, width) and full.dtype == np.float32
    assert full[0, :3].tolist() == [0, 1, 0]
    assert space.features(b)[:, 3:5].tolist() == [[0, 0]] * 16  # no shapes: zeros
    off = FeatureSpace.fit([a, b], FeatureGroups(fractal=False, positional=False))
    assert off.features(a).shape == (3, width - 17)


def test_parsing_keeps_each_nodes_best_edge():
    from dagopt.nn.hsdag.model import parse_groups

    # 0-1 (0.9), 1-2 (0.2), 2-3 (0.8), 3-4 (0.1): node 1 keeps 0-1, node 2 keeps 2-3,
    # node 4 keeps its only edge 3-4, so the groups are {0, 1} and {2, 3, 4}.
    edges = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    groups = parse_groups(5, edges, np.array([0.9, 0.2, 0.8, 0.1]))
    assert groups.tolist() == [0, 0, 1, 1, 1]
    assert parse_groups(3, np.zeros((2, 0), dtype=np.int64), np.zeros(0)).tolist() == [0, 1, 2]


def test_one_parsing_level_gives_several_groups_and_converging_gives_one():
    import torch

    from dagopt.nn.hsdag.model import HsdagConfig, HsdagPolicy

    graph = generate_layered(150, seed=1)
    x = torch.from_numpy(FeatureSpace.fit([graph]).features(graph))
    edges = torch.from_numpy(np.stack(graph.edges).astype(np.int64))
    torch.manual_seed(0)
    one = HsdagPolicy(HsdagConfig(in_features=x.shape[1]))
    parsing = one(x, edges)
    assert 1 < parsing.num_groups < graph.num_nodes
    assert parsing.logits.shape == (parsing.num_groups, 2)
    assert sorted(set(parsing.group.tolist())) == list(range(parsing.num_groups))
    # eq. 11: A' = X^T A X counts the edges between (and inside) groups.
    assert parsing.adjacency.sum() == graph.num_edges
    # The log-probability of a placement reaches the GCN and the edge-score MLP.
    devices = torch.zeros(parsing.num_groups, dtype=torch.long)
    torch.distributions.Categorical(logits=parsing.logits).log_prob(devices).sum().backward()
    assert one.edge_score[0].weight.grad.abs().sum() > 0
    assert one.gcn.lin.weight.grad.abs().sum() > 0
    converged = HsdagPolicy(HsdagConfig(in_features=x.shape[1], parsing_levels=None))
    assert converged(x, edges).num_groups == 1
