"""Sparse Topoformer (``topoformer-sparse``), its edge lists and the fast Laplacian PE."""

import numpy as np
import pytest
import torch

from dagopt import Graph, InputError
from dagopt.generate import generate_layered
from dagopt.graph.reduction import redundant_edges
from dagopt.nn import Encoder, EncoderConfig, PriorityModel, encoder_inputs, graph_inputs
from dagopt.nn.features import laplacian_pe
from dagopt.nn.masks import SPARSE_GROUPS, sparse_groups, topological_masks

SMALL = {"layers": 2, "dim": 32, "head_dim": 8}


def test_sparse_groups_are_the_dense_masks_plus_self_loops():
    graph = generate_layered(60, seed=5)
    n = graph.num_nodes
    masks = topological_masks(graph)
    for edges, k in zip(sparse_groups(graph), SPARSE_GROUPS, strict=True):
        dense = np.zeros((n, n), dtype=np.int64)
        np.add.at(dense, (edges[0], edges[1]), 1)
        assert dense.max() == 1  # no pair twice
        assert np.array_equal(dense.astype(bool), masks[k] | np.eye(n, dtype=bool))


def test_redundant_edges_in_small_blocks_match_one_block(monkeypatch):
    """One-word blocks (a tiny block budget) give the same answer as one block."""
    import dagopt.graph.reduction as reduction

    graph = generate_layered(300, seed=9)
    args = (graph.succ_ptr, graph.succ_idx, graph.topological_order)
    whole = redundant_edges(*args)
    monkeypatch.setattr(reduction, "BLOCK_BYTES", 8)
    assert np.array_equal(reduction.redundant_edges(*args), whole)
    assert 0 < whole.sum() < whole.size


def test_sparse_kind_equals_dense_attention_on_the_same_groups():
    """topoformer-sparse == topoformer whose dense groups have 0 heads (same weights)."""
    graph = generate_layered(50, seed=3)
    heads = (2, 1, 0, 2, 3, 0, 0)
    torch.manual_seed(0)
    dense = PriorityModel(EncoderConfig(kind="topoformer", heads_per_group=heads, **SMALL))
    sparse = PriorityModel(
        EncoderConfig(kind="topoformer-sparse", heads_per_group=(2, 1, 5, 2, 3, 5, 5), **SMALL)
    )
    sparse.load_state_dict(dense.state_dict())
    dense_inputs = encoder_inputs(graph, dense.config)
    sparse_inputs = encoder_inputs(graph, sparse.config)
    assert dense_inputs.groups is None and sparse_inputs.masks is None
    torch.testing.assert_close(sparse(sparse_inputs), dense(dense_inputs), atol=1e-5, rtol=1e-5)
    sparse(sparse_inputs).square().sum().backward()  # differentiable
    assert all(torch.isfinite(p.grad).all() for p in sparse.parameters() if p.grad is not None)


def test_sparse_kind_needs_sparse_inputs_and_skips_dense_groups():
    config = EncoderConfig(kind="topoformer-sparse", heads_per_group=(1, 0, 9, 1, 0, 9, 9), **SMALL)
    assert config.group_heads == (1, 0, 1, 0)
    graph = generate_layered(20, seed=1)
    with pytest.raises(InputError, match="sparse inputs"):
        Encoder(config)(graph_inputs(graph))
    assert Encoder(config)(encoder_inputs(graph, config)).shape == (graph.num_nodes, 32)
    with pytest.raises(InputError, match="no attention head"):
        EncoderConfig(kind="topoformer-sparse", heads_per_group=(0, 0, 1, 0, 0, 1, 1))


def test_fast_laplacian_pe_spans_the_same_eigenvectors():
    """Same eigenvalues, so (eigenvalues distinct here) the same vectors up to sign."""
    graph = generate_layered(400, seed=4)
    exact = laplacian_pe(graph, 8)
    fast = laplacian_pe(graph, 8, kind="laplacian-fast")
    cosine = (
        np.abs((exact * fast).sum(0)) / np.linalg.norm(exact, axis=0) / np.linalg.norm(fast, axis=0)
    )
    assert cosine.min() > 0.999
    with pytest.raises(InputError, match="positional encoding"):
        laplacian_pe(graph, 8, kind="rwse")
    with pytest.raises(InputError, match="positional encoding"):
        EncoderConfig(pe="spectral")


def test_old_model_dicts_load_with_the_shipped_encoding():
    data = EncoderConfig().to_dict()
    del data["pe"]
    assert EncoderConfig.from_dict(data).pe == "laplacian"


def test_sparse_memory_guard_is_one_line():
    from dagopt.errors import SolverError

    encoder = Encoder(EncoderConfig(kind="topoformer-sparse", **SMALL))
    encoder.check_fits(1000, 5000)
    with pytest.raises(SolverError, match="topoformer-sparse forward pass"):
        encoder.check_fits(10**9, 10**12)


def test_isolated_nodes_attend_to_themselves():
    graph = Graph(3, [0], [1], mem=[1.0, 2.0, 3.0])
    config = EncoderConfig(kind="topoformer-sparse", pe_dim=0, **SMALL)
    out = Encoder(config)(encoder_inputs(graph, config))
    assert torch.isfinite(out).all()
