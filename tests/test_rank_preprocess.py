"""Paper 002's pre-processing (section 2.2) on SYNTHETIC TpuGraphs records: pruning,
de-duplication, base-7 compression, -1 re-padding and the fitted normaliser."""

import dataclasses

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dagopt.errors import InputError
from dagopt.generate.tpugraphs import synthetic_layout_record, synthetic_tile_record
from dagopt.io.tpugraphs import LAYOUT_COLUMNS, LayoutRecord
from dagopt.rank.preprocess import (
    FeatureNormalizer,
    compress_layout_configs,
    decompress_layout_configs,
    deduplicate_configs,
    pad_layout_with_minus_one,
    prune_layout,
    tensor_rank,
)


@pytest.fixture
def record() -> LayoutRecord:
    return synthetic_layout_record(7, num_nodes=120, num_configurable=8, num_configs=40)


# ---------------------------------------------------------------- pruning
@pytest.mark.parametrize("hops", [0, 1, 2, 5])
def test_prune_keeps_nodes_within_hops_of_a_configurable_node(record, hops):
    pruned, kept = prune_layout(record, hops=hops)
    undirected = nx.Graph()
    undirected.add_nodes_from(range(record.node_feat.shape[0]))
    undirected.add_edges_from(record.edge_index.tolist())
    expected = set()
    for v in record.node_config_ids.tolist():
        expected |= set(nx.single_source_shortest_path_length(undirected, v, cutoff=hops))
    assert kept.tolist() == sorted(expected)
    np.testing.assert_array_equal(pruned.node_feat, record.node_feat[kept])
    np.testing.assert_array_equal(pruned.node_opcode, record.node_opcode[kept])
    np.testing.assert_array_equal(kept[pruned.node_config_ids], record.node_config_ids)
    np.testing.assert_array_equal(pruned.node_config_feat, record.node_config_feat)
    original_edges = {tuple(e) for e in record.edge_index.tolist() if set(e) <= expected}
    assert {tuple(e) for e in kept[pruned.edge_index].tolist()} == original_edges
    assert pruned.edge_index.dtype == record.edge_index.dtype
    assert pruned.node_splits.shape[0] == 1 and pruned.node_splits[0, 0] == 0


def test_prune_with_hops_one_is_the_papers_rule(record):
    _, kept = prune_layout(record)
    configurable = set(record.node_config_ids.tolist())
    neighbours = {u for u, v in record.edge_index.tolist() if v in configurable}
    neighbours |= {v for u, v in record.edge_index.tolist() if u in configurable}
    assert set(kept.tolist()) == configurable | neighbours


def test_prune_maps_node_splits_to_their_first_kept_node():
    record = synthetic_layout_record(3, num_nodes=60, num_configurable=2)
    record = dataclasses.replace(record, node_splits=np.array([0, 10, 11, 30, 59]))
    pruned, kept = prune_layout(record, hops=0)
    starts = np.unique(np.searchsorted(kept, [0, 10, 11, 30, 59]))
    np.testing.assert_array_equal(pruned.node_splits, starts[starts < kept.size])
    assert pruned.node_splits.ndim == 1
    with pytest.raises(InputError, match="hops"):
        prune_layout(record, hops=-1)


# ---------------------------------------------------------------- de-duplication
def test_deduplicate_layout_keeps_the_fastest_copy(record):
    feat = record.node_config_feat
    order = [0, 1, 0, 2, 1, 1, 3]
    runtime = np.array([50, 40, 30, 20, 60, 10, 70], dtype=np.int32)
    doubled = dataclasses.replace(record, node_config_feat=feat[order], config_runtime=runtime)
    unique, kept = deduplicate_configs(doubled)
    assert kept.tolist() == [2, 3, 5, 6]  # config 0 at 30, 2, config 1 at 10, 3
    np.testing.assert_array_equal(unique.node_config_feat, feat[[0, 2, 1, 3]])
    np.testing.assert_array_equal(unique.config_runtime, [30, 20, 10, 70])
    assert unique.config_runtime.dtype == np.int32


def test_deduplicate_tile_uses_the_normalised_runtime():
    record = synthetic_tile_record(5, num_configs=4)
    feat = record.config_feat[[0, 0, 1, 1]]
    feat[1, 4] = -0.0  # the same tile size as row 0's 0.0
    runtime = np.array([100, 90, 10, 10], dtype=np.int64)
    normalizer = np.array([100, 45, 10, 20], dtype=np.int64)  # targets 1, 2, 1, 0.5
    doubled = dataclasses.replace(
        record, config_feat=feat, config_runtime=runtime, config_runtime_normalizers=normalizer
    )
    unique, kept = deduplicate_configs(doubled)
    assert kept.tolist() == [0, 3]
    np.testing.assert_array_equal(unique.config_runtime_normalizers, [100, 20])


def test_deduplicate_unlabelled_keeps_first_copies():
    record = synthetic_layout_record(2, num_nodes=50, num_configurable=4, labelled=False)
    doubled = dataclasses.replace(record, node_config_feat=record.node_config_feat[[3, 3, 1, 3]])
    unique, kept = deduplicate_configs(doubled)
    assert kept.tolist() == [0, 2] and unique.config_runtime is None


# ---------------------------------------------------------------- compression
@settings(max_examples=60, deadline=None)
@given(
    feat=hnp.arrays(
        np.float32,
        st.tuples(st.integers(0, 5), st.integers(0, 6), st.sampled_from([6, 12, 18])),
        elements=st.integers(-1, 5).map(float),
    )
)
def test_decompress_inverts_compress_exactly(feat):
    codes = compress_layout_configs(feat)
    assert codes.dtype == np.int32 and codes.shape == (*feat.shape[:-1], feat.shape[-1] // 6)
    assert codes.size == 0 or (codes.min() >= 0 and codes.max() < 7**6)
    back = decompress_layout_configs(codes)
    assert back.dtype == np.float32 and back.tobytes() == feat.tobytes()


def test_compression_saves_five_sixths(record):
    codes = compress_layout_configs(record.node_config_feat)
    assert record.node_config_feat.nbytes == 6 * codes.nbytes
    subset = decompress_layout_configs(codes[[4, 0]])  # decode sampled configurations only
    np.testing.assert_array_equal(subset, record.node_config_feat[[4, 0]])


def test_compression_code_is_base_seven():
    layout = np.array([[5, -1, -1, -1, -1, -1], [0, 1, 2, 3, 4, 5]], dtype=np.float32)
    expected = [6, sum((d + 1) * 7**d for d in range(6))]
    assert compress_layout_configs(layout).reshape(-1).tolist() == expected


@pytest.mark.parametrize("value", [6.0, -2.0, 0.5, np.nan])
def test_compression_rejects_values_outside_the_alphabet(value):
    feat = np.zeros((2, 18), dtype=np.float32)
    feat[1, 4] = value
    with pytest.raises(InputError, match="whole numbers"):
        compress_layout_configs(feat)
    with pytest.raises(InputError, match="6k"):
        compress_layout_configs(np.zeros((2, 17)))


# ---------------------------------------------------------------- -1 re-padding
def test_rank_and_minus_one_padding():
    feat = np.zeros((5, 140), dtype=np.float32)
    feat[0, 21:24] = [8, 4, 2]  # rank 3, layout {0, 1, 2}
    feat[0, 134:137] = [2, 0, 1]
    feat[1, 21] = 16  # rank 1: the layout's only entry is 0
    feat[2, 28] = 1  # scalar
    feat[3, 21:23] = [4, 0]  # a zero-sized trailing dimension: the layout tells rank 2
    feat[3, 134:136] = [0, 1]
    feat[4, 18] = 1  # tuple: no shape, no layout
    assert tensor_rank(feat).tolist() == [3, 1, 0, 2, 0]
    padded = pad_layout_with_minus_one(feat)
    np.testing.assert_array_equal(
        padded[:, LAYOUT_COLUMNS],
        [
            [2, 0, 1, -1, -1, -1],
            [0, -1, -1, -1, -1, -1],
            [-1] * 6,
            [0, 1, -1, -1, -1, -1],
            [-1] * 6,
        ],
    )
    np.testing.assert_array_equal(padded[:, :134], feat[:, :134])
    assert feat[2, 134] == 0 and padded.dtype == feat.dtype  # the input is untouched


def test_padding_synthetic_layouts_reads_like_node_config_feat(record):
    padded = pad_layout_with_minus_one(record.node_feat)[:, LAYOUT_COLUMNS]
    rank = tensor_rank(record.node_feat)
    assert ((padded >= 0).sum(axis=1) == rank).all()
    for row, r in zip(padded, rank, strict=True):
        assert sorted(row[:r].tolist()) == list(range(r))


# ---------------------------------------------------------------- normalisation
def test_normalizer_matches_standardising_the_stacked_training_rows(tmp_path):
    rng = np.random.default_rng(0)
    train = [rng.normal(1e6, 10.0, size=(k, 5)).astype(np.float32) for k in (3, 40, 1, 17)]
    for block in train:
        block[:, 4] = train[0][0, 4]  # a constant column scales by 1
    stacked = np.concatenate(train).astype(np.float64)
    normalizer = FeatureNormalizer.fit(train, columns=4)
    np.testing.assert_allclose(normalizer.mean, stacked[:, :4].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(normalizer.scale, stacked[:, :4].std(axis=0), rtol=1e-9)
    assert normalizer.count == 61
    test = rng.normal(1e6, 10.0, size=(6, 5)).astype(np.float32)
    out = normalizer.transform(test)
    assert out.dtype == np.float32
    np.testing.assert_allclose(
        out[:, :4], (test[:, :4] - normalizer.mean) / normalizer.scale, rtol=1e-5
    )
    np.testing.assert_array_equal(out[:, 4], test[:, 4])  # columns past `columns` untouched
    back = FeatureNormalizer.load(normalizer.save(tmp_path / "norm.json"))
    assert back.mean.tobytes() == normalizer.mean.tobytes()
    assert back.scale.tobytes() == normalizer.scale.tobytes() and back.count == 61


def test_normalizer_constant_columns_and_errors(tmp_path):
    normalizer = FeatureNormalizer.fit([np.ones((4, 3))])
    np.testing.assert_array_equal(normalizer.scale, [1.0, 1.0, 1.0])
    with pytest.raises(InputError, match="no feature rows"):
        FeatureNormalizer.fit([np.zeros((0, 3))])
    with pytest.raises(InputError, match="columns"):
        FeatureNormalizer.fit([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(InputError, match="at least 3 columns"):
        normalizer.transform(np.ones((2, 2)))
    (tmp_path / "bad.json").write_text('{"format": "dagopt-feature-normalizer", "mean": [1]}')
    with pytest.raises(InputError, match="bad normaliser file"):
        FeatureNormalizer.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="not a dagopt feature normaliser"):
        FeatureNormalizer.load(tmp_path / "other.json")
