"""SYNTHETIC TpuGraphs records, for format tests, examples and load benchmarks only.

Nothing here is measured: the graphs are random DAGs, the features a plausible
subset (output shape, element type, layout, opcode) and the runtimes random numbers.
The records have the arrays, shapes and dtypes of the published files (``int32`` ids,
``float32`` features, ``int64`` tile runtimes, ``(1, k)`` node splits), so they
exercise ``dagopt.io.tpugraphs`` like real files do; they say nothing about TPUs.
Real files come from the TpuGraphs download (``docs/tpugraphs.md``).
"""

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dagopt.errors import InputError
from dagopt.io.tpugraphs import (
    IS_ROOT,
    LAYOUT_COLUMNS,
    LAYOUT_CONFIG_FEATURES,
    NODE_FEATURES,
    SHAPE_DIMS,
    SHAPE_PRODUCT,
    TILE_CONFIG_FEATURES,
    LayoutRecord,
    TileRecord,
    collection_dir,
    write_tpugraphs,
)

_PLAIN_OPS = np.array([2, 13, 24, 41, 45, 59, 63, 70, 98])
"""add, broadcast, constant, fusion, get-tuple-element, multiply, parameter, reduce,
transpose: opcodes drawn for nodes that are not configurable."""
_CONFIGURABLE_OPS = np.array([26, 34, 75])  # convolution, dot, reshape (paper 002, 2.2.1)
_ELEMENT_COLUMNS = np.array([13, 15, 6])  # f32, bf16, s32 one-hot columns


def _graph(rng: np.random.Generator, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Random ``node_feat`` (float32) and ``edge_index`` rows ``[consumer, producer]``.

    Node ``i`` consumes one or two of the eight nodes before it, so ids are a topological
    order; each node gets a rank 0-4 output shape, an element type and a layout.
    """
    feat = np.zeros((num_nodes, NODE_FEATURES), dtype=np.float32)
    rank = rng.choice(5, size=num_nodes, p=[0.1, 0.2, 0.3, 0.2, 0.2])
    dims = 2 ** rng.integers(0, 9, size=(num_nodes, 6))
    dims[np.arange(6) >= rank[:, None]] = 0
    feat[:, SHAPE_DIMS] = dims
    feat[:, SHAPE_DIMS.stop] = dims.sum(axis=1)
    feat[:, SHAPE_PRODUCT] = np.where(dims > 0, dims, 1).prod(axis=1)
    feat[np.arange(num_nodes), rng.choice(_ELEMENT_COLUMNS, size=num_nodes)] = 1.0
    feat[:, LAYOUT_COLUMNS] = np.maximum(_permutations(rng, rank), 0)  # published: 0-padded
    if num_nodes:
        feat[-1, IS_ROOT] = 1.0
    consumers = np.repeat(np.arange(1, num_nodes), 2)
    producers = consumers - rng.integers(1, 9, size=consumers.size)
    keep = (producers >= 0) & (
        (np.arange(consumers.size) % 2 == 0) | (rng.random(consumers.size) < 0.5)
    )
    edges = np.unique(np.stack([consumers, np.maximum(producers, 0)], axis=1)[keep], axis=0)
    return feat, edges.astype(np.int32).reshape(-1, 2)


def _permutations(rng: np.random.Generator, rank: np.ndarray) -> np.ndarray:
    """Random minor-to-major orders: row ``i`` is a permutation of ``0..rank[i]-1`` then -1s
    (any leading shape of ``rank`` gives that many rows of 6)."""
    keys = rng.random((*rank.shape, 6))
    pad = np.arange(6) >= rank[..., None]
    keys[pad] = np.inf
    order = np.argsort(keys, axis=-1)
    order[pad] = -1
    return order


def synthetic_tile_record(
    seed: int,
    *,
    num_nodes: int = 20,
    num_configs: int = 30,
    labelled: bool = True,
    name: str = "synthetic-tile",
    runtimes: str = "random",
) -> TileRecord:
    """A SYNTHETIC tile record (random graph, tile sizes and runtimes; format tests only).

    ``runtimes="planted"`` replaces the random runtimes by ``planted_tile_runtimes``."""
    _check_runtimes(runtimes)
    rng = np.random.default_rng(seed)
    feat, edges = _graph(rng, num_nodes)
    config = np.zeros((num_configs, TILE_CONFIG_FEATURES), dtype=np.float32)
    for block in (0, 8):  # kernel and output bounds; input bounds stay 0 as published
        bounds = 2 ** rng.integers(0, 8, size=(num_configs, 4))
        config[:, block : block + 4] = bounds
        config[:, block + 6] = bounds.sum(axis=1)
        config[:, block + 7] = bounds.prod(axis=1)
    runtime = normalizer = None
    if labelled:
        normalizer = rng.integers(100_000, 110_000, size=num_configs, dtype=np.int64)
        runtime = (normalizer * rng.lognormal(0.0, 0.3, size=num_configs)).astype(np.int64) + 1
        if runtimes == "planted":
            ratio = planted_tile_runtimes(feat, config) * rng.lognormal(0.0, 0.01, num_configs)
            runtime = (normalizer * ratio).astype(np.int64) + 1
    return TileRecord(
        node_feat=feat,
        node_opcode=rng.choice(_PLAIN_OPS, size=num_nodes).astype(np.int32),
        edge_index=edges,
        config_feat=config,
        config_runtime=runtime,
        config_runtime_normalizers=normalizer,
        name=name,
    )


def synthetic_layout_record(
    seed: int,
    *,
    num_nodes: int = 200,
    num_configurable: int = 20,
    num_configs: int = 50,
    labelled: bool = True,
    name: str = "synthetic-layout",
    runtimes: str = "random",
) -> LayoutRecord:
    """A SYNTHETIC layout record (random graph, layouts and runtimes; format tests only).

    ``num_configurable`` nodes, taken among those with a tensor output, get a convolution,
    dot or reshape opcode; each configuration draws their output and input layouts (the
    kernel's too for a convolution), with one in five tensors left to the compiler (-1s).
    ``runtimes="planted"`` replaces the random runtimes by ``planted_layout_runtimes``.
    """
    _check_runtimes(runtimes)
    rng = np.random.default_rng(seed)
    feat, edges = _graph(rng, num_nodes)
    opcode = rng.choice(_PLAIN_OPS, size=num_nodes).astype(np.int32)
    rank = np.count_nonzero(feat[:, SHAPE_DIMS], axis=1)
    candidates = np.flatnonzero(rank > 0)
    if num_configurable > candidates.size:
        raise InputError(
            f"{num_configurable} configurable nodes asked, {candidates.size} have a tensor output"
        )
    ids = np.sort(rng.choice(candidates, size=num_configurable, replace=False)).astype(np.int32)
    opcode[ids] = rng.choice(_CONFIGURABLE_OPS, size=ids.size)
    tensor_rank = np.broadcast_to(rank[ids][None, :, None], (num_configs, ids.size, 3)).copy()
    tensor_rank[..., 2] *= opcode[ids][None, :] == 26  # only convolutions have a kernel
    tensor_rank[rng.random(tensor_rank.shape) < 0.2] = 0  # compiler's choice: all -1
    config = _permutations(rng, tensor_rank).reshape(num_configs, ids.size, -1)
    runtime = None
    if labelled:
        runtime = rng.integers(1_000_000, 2_000_000, size=num_configs).astype(np.int32)
        if runtimes == "planted":
            cost = planted_layout_runtimes(feat[ids], config) * rng.lognormal(0, 0.01, num_configs)
            runtime = (1_000_000 * cost).astype(np.int32)
    starts = rng.choice(np.arange(1, num_nodes), size=min(2, num_nodes - 1), replace=False)
    return LayoutRecord(
        node_feat=feat,
        node_opcode=opcode,
        edge_index=edges,
        node_config_ids=ids,
        node_config_feat=config.astype(np.float32).reshape(
            num_configs, ids.size, LAYOUT_CONFIG_FEATURES
        ),
        config_runtime=runtime,
        node_splits=np.concatenate([[0], np.sort(starts)])[None, :],
        name=name,
    )


RUNTIME_KINDS = ("random", "planted")


def _check_runtimes(runtimes: str) -> None:
    if runtimes not in RUNTIME_KINDS:
        raise InputError(f"runtimes must be one of {', '.join(RUNTIME_KINDS)}, got {runtimes!r}")


def planted_layout_runtimes(node_feat: np.ndarray, config: np.ndarray) -> np.ndarray:
    """A PLANTED rule (no hardware behind it) for testing that a model can learn:
    ``1 + sum_k w_k (m_out + 0.5 m_in)`` per configuration, where for configurable node
    ``k`` (features ``node_feat[k]``, layouts ``config[:, k]``), ``w_k = log2`` of its
    element count plus 1 over the node count, ``m_out`` the share of output layout
    positions that differ from the row-major order ``(r-1, ..., 0)`` (0.3 when left to
    the compiler) and ``m_in`` the share where the input layout differs from the output's."""
    rank = np.count_nonzero(node_feat[:, SHAPE_DIMS], axis=1)
    weight = (np.log2(np.maximum(node_feat[:, SHAPE_PRODUCT], 1)) + 1) / max(1, rank.size)
    out, inp = config[..., 0:6], config[..., 6:12]
    preferred = np.where(np.arange(6) < rank[:, None], rank[:, None] - 1 - np.arange(6), -1)
    valid = np.arange(6) < np.maximum(rank, 1)[:, None]
    share = lambda a, b: ((a != b) & valid).sum(-1) / valid.sum(-1)  # noqa: E731
    m_out = np.where(out[..., 0] < 0, 0.3, share(out, preferred))
    m_in = np.where((out[..., 0] < 0) | (inp[..., 0] < 0), 0.0, share(inp, out))
    return 1.0 + ((m_out + 0.5 * m_in) * weight).sum(axis=1)


def planted_tile_runtimes(node_feat: np.ndarray, config: np.ndarray) -> np.ndarray:
    """A PLANTED rule (no hardware behind it) for testing that a model can learn:
    ``1 + 0.15 sum_j |log2 kernel_j - t_j| + 0.05 sum_j |log2 output_j - t_j|`` over the
    four tile dimensions, ``t_j`` the graph's mean ``log2`` output size in dimension ``j``."""
    dims = node_feat[:, SHAPE_DIMS][:, :4]
    target = np.log2(np.maximum(dims, 1)).mean(axis=0)
    kernel, output = np.log2(config[:, 0:4]), np.log2(config[:, 8:12])
    return 1.0 + 0.15 * np.abs(kernel - target).sum(1) + 0.05 * np.abs(output - target).sum(1)


def write_synthetic_collection(
    root: str | os.PathLike,
    collection: str,
    *,
    graphs: Mapping[str, int],
    seed: int = 0,
    num_configs: int = 50,
    runtimes: str = "random",
) -> list[Path]:
    """Write SYNTHETIC files of ``collection`` under ``root/npz/...`` (``graphs``: split ->
    number of files; the test split unlabelled, as published). For smoke runs of the
    training and benchmark code only: ``random`` runtimes hold nothing to learn,
    ``planted`` ones a made-up rule a model should learn (``planted_*_runtimes``)."""
    tile = collection == "tile:xla"
    paths = []
    for s, split in enumerate(sorted(graphs)):
        for i in range(graphs[split]):
            name = f"synthetic-{split}-{i:03d}"
            options = {
                "num_configs": num_configs,
                "labelled": split != "test",
                "name": name,
                "runtimes": runtimes,
            }
            draw = seed * 1_000_000 + s * 10_000 + i
            record = (
                synthetic_tile_record(draw, **options)
                if tile
                else synthetic_layout_record(draw, num_nodes=80, num_configurable=8, **options)
            )
            folder = collection_dir(root, collection, split)
            paths.append(write_tpugraphs(record, folder / f"{name}.npz"))
    return paths
