"""Encoders of paper 000: Topoformer (4.1), the ablations of 5.3, the priority model (C.2)."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from dagopt import Graph, InputError
from dagopt.generate import generate_layered
from dagopt.nn import (
    KINDS,
    Encoder,
    EncoderConfig,
    PriorityModel,
    encoder_inputs,
    graph_inputs,
    normalise_priorities,
)

SMALL = {"layers": 2, "dim": 32, "heads_per_group": (2,) * 7, "head_dim": 8}


def small(kind: str, **changes) -> EncoderConfig:
    return EncoderConfig(**{"kind": kind, **SMALL, **changes})


def num_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.fixture(scope="module")
def layered():
    graph = generate_layered(30, seed=11)
    return graph, graph_inputs(graph)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_encodes_finite_embeddings(kind, layered):
    graph, inputs = layered
    torch.manual_seed(0)
    config = small(kind)
    if kind == "topoformer-sparse":
        inputs = encoder_inputs(graph, config)
    out = Encoder(config)(inputs)
    assert out.shape == (graph.num_nodes, 32)
    assert torch.isfinite(out).all()
    out.sum().backward()


def test_paper_config_defaults():
    config = EncoderConfig()
    assert (config.kind, config.layers, config.dim, config.head_dim) == ("topoformer", 4, 256, 64)
    assert config.heads_per_group == (10,) * 7 and config.pe_dim == 20
    assert config.gat_heads == 8  # largest divisor of 256 up to 10
    assert EncoderConfig(**json.loads(json.dumps(dataclasses.asdict(config)))) == config


def test_config_rejects_bad_values():
    with pytest.raises(InputError, match="unknown encoder kind"):
        EncoderConfig(kind="gcn")
    with pytest.raises(InputError, match="7 counts"):
        EncoderConfig(heads_per_group=(1, 2))
    with pytest.raises(InputError, match="no attention head"):
        EncoderConfig(kind="topoformer-dag", heads_per_group=(0, 1, 1, 0, 1, 1, 1))
    with pytest.raises(InputError, match="positive"):
        EncoderConfig(dim=0)


def test_zero_heads_drop_groups(layered):
    _, inputs = layered
    full = Encoder(small("topoformer"))
    forward_only = Encoder(small("topoformer", heads_per_group=(2, 2, 2, 0, 0, 0, 0)))
    assert num_parameters(forward_only) < num_parameters(full)
    assert torch.isfinite(forward_only(inputs)).all()


def test_masks_restrict_messages_to_their_graph():
    """With only forward-TR heads and one layer, a node sees itself and its TR predecessors."""
    graph = Graph(4, [0, 1, 0], [1, 2, 3], mem=[1, 2, 3, 4])
    inputs = graph_inputs(graph, pe_dim=0)
    config = small("topoformer", layers=1, pe_dim=0, heads_per_group=(2, 0, 0, 0, 0, 0, 0))
    encoder = Encoder(config).eval()
    changed = dataclasses.replace(inputs, x=inputs.x.clone())
    changed.x[1] += 1.0  # node 1 feeds node 2 only
    moved = (encoder(changed) - encoder(inputs)).abs().sum(dim=1) > 1e-6
    assert moved.tolist() == [False, True, True, False]


@pytest.mark.parametrize("alpha", [5.0, 2.0])
def test_priorities_are_normalised(alpha, layered):
    graph, inputs = layered
    torch.manual_seed(1)
    y = PriorityModel(small("topoformer"), alpha=alpha)(inputs)
    assert y.shape == (graph.num_nodes,)
    assert abs(y.mean().item()) < 1e-4
    assert y.std(correction=0).item() == pytest.approx(alpha, rel=1e-4)


def test_normalise_priorities_degenerate_cases():
    assert normalise_priorities(torch.tensor([3.0]), 5.0).tolist() == [0.0]
    flat = torch.full((4,), 0.1, requires_grad=True)
    y = normalise_priorities(flat, 5.0)
    y.sum().backward()
    assert y.tolist() == [0.0] * 4 and torch.isfinite(flat.grad).all()


def relabel(graph: Graph, perm: np.ndarray) -> Graph:
    """The same graph with node ``i`` renamed ``perm[i]``."""
    src, dst = graph.edges
    mem, param = np.empty(graph.num_nodes), np.empty(graph.num_nodes)
    mem[perm], param[perm] = graph.mem, graph.param_mem
    return Graph(graph.num_nodes, perm[src], perm[dst], mem=mem, param_mem=param)


@pytest.mark.parametrize("kind", ["topoformer", "topoformer-dag", "gat-bidirectional"])
def test_permutation_equivariance(kind, layered):
    graph, _ = layered
    perm = np.random.default_rng(4).permutation(graph.num_nodes)
    torch.manual_seed(2)
    model = PriorityModel(small(kind, pe_dim=0)).double().eval()
    with torch.no_grad():
        y = model(graph_inputs(graph, pe_dim=0))
        y_relabelled = model(graph_inputs(relabel(graph, perm), pe_dim=0))
    torch.testing.assert_close(y_relabelled[perm], y, atol=1e-4, rtol=0)


def test_batched_groups_match_group_by_group_attention():
    from dagopt.nn.attention import TopoformerLayer, attention_bias
    from dagopt.nn.masks import topological_masks

    torch.manual_seed(0)
    graph = generate_layered(40, seed=3)
    bias = attention_bias(torch.from_numpy(topological_masks(graph)), torch.float64)
    layer = TopoformerLayer(16, (2,) * 7, 8).double()
    h = torch.randn(40, 16, dtype=torch.float64)
    qkv = layer.qkv(layer.norm_attention(h)).view(40, 3, -1, 8)
    q, k, v = qkv.permute(1, 2, 0, 3).unsqueeze(1)
    batched = layer._groups_as_batch(q, k, v, bias)
    looped = layer._group_by_group(q, k, v, bias)
    assert torch.allclose(batched, looped, atol=1e-12)
