"""TpuGraphs pre-processing of paper 002 (TGraph), section 2.2, on ``dagopt.io.tpugraphs`` records.

- ``prune_layout`` (2.2.1): keep the configurable nodes and their neighbours ``hops``
  edges away (either direction); the rest of a layout graph does not change between
  configurations.
- ``deduplicate_configs`` (2.2.2): identical configurations keep one row, the one with
  the smallest runtime.
- ``compress_layout_configs`` / ``decompress_layout_configs`` (2.2.3): each 6-value
  layout (values -1..5) becomes one base-7 integer, lossless; 6x less memory.
- ``pad_layout_with_minus_one`` (2.2.4): ``node_feat`` layout columns -1 padded beyond
  the tensor's rank, like ``node_config_feat``; the rank is read off the features
  (``tensor_rank``) because the raw protobufs are not published with the ``.npz`` files.
- ``FeatureNormalizer`` (2.2.5): per-column standardisation fitted on training files only.
"""

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from dagopt.errors import InputError
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file
from dagopt.io.tpugraphs import (
    LAYOUT_COLUMNS,
    LAYOUT_MAX,
    LAYOUT_MIN,
    SHAPE_DIMS,
    LayoutRecord,
    TileRecord,
)

BASE = LAYOUT_MAX - LAYOUT_MIN + 1  # 7 values per layout entry
LAYOUT_WIDTH = 6  # entries per tensor layout (output, input, kernel)
_POWERS = BASE ** np.arange(LAYOUT_WIDTH, dtype=np.int32)
Record = TypeVar("Record", TileRecord, LayoutRecord)


# ---------------------------------------------------------------- 2.2.1 graph pruning
def prune_layout(record: LayoutRecord, *, hops: int = 1) -> tuple[LayoutRecord, np.ndarray]:
    """The sub-graph of the configurable nodes and the nodes within ``hops`` edges of one.

    ``hops=1`` is paper 002's rule (a node stays when it is configurable or an input or
    output of a configurable node); ``hops=0`` keeps the configurable nodes alone. Nodes
    keep their relative (topological) order and are renumbered; edges, configurable ids
    and node splits follow (a split starts at its first kept node; emptied splits go).
    Returns the pruned record and the original id of each kept node.
    """
    if hops < 0:
        raise InputError(f"hops must be >= 0, got {hops}")
    n = record.node_feat.shape[0]
    consumer, producer = record.edge_index[:, 0], record.edge_index[:, 1]
    keep = np.zeros(n, dtype=bool)
    keep[record.node_config_ids] = True
    frontier = keep.copy()
    for _ in range(hops):
        reached = np.zeros(n, dtype=bool)
        reached[producer[frontier[consumer]]] = True
        reached[consumer[frontier[producer]]] = True
        frontier = reached & ~keep
        if not frontier.any():
            break
        keep |= frontier
    kept = np.flatnonzero(keep)
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[kept] = np.arange(kept.size)
    edges = record.edge_index[keep[consumer] & keep[producer]]
    splits = record.node_splits
    if splits is not None:
        starts = np.unique(np.searchsorted(kept, splits.reshape(-1)))
        splits = (
            starts[starts < kept.size]
            .astype(splits.dtype)
            .reshape((1, -1) if splits.ndim == 2 else -1)
        )
    pruned = dataclasses.replace(
        record,
        node_feat=record.node_feat[kept],
        node_opcode=record.node_opcode[kept],
        edge_index=new_id[edges].astype(record.edge_index.dtype),
        node_config_ids=new_id[record.node_config_ids].astype(record.node_config_ids.dtype),
        node_splits=splits,
    )
    return pruned, kept


# ---------------------------------------------------------------- 2.2.2 de-duplication
def deduplicate_configs(record: Record) -> tuple[Record, np.ndarray]:
    """Drop repeated configurations; of identical rows the one with the smallest runtime
    stays (``normalized_runtime`` for tile; the first one in an unlabelled file).

    Kept rows stay in file order. Returns the record and the kept configuration indices
    (to map predictions back to the file's indices, as a submission needs).
    """
    if isinstance(record, LayoutRecord):
        rows = compress_layout_configs(record.node_config_feat).reshape(record.num_configs, -1)
        runtime = record.config_runtime
    else:
        rows = record.config_feat + 0.0  # -0.0 and 0.0 are the same tile size
        runtime = record.normalized_runtime
    c = record.num_configs
    if c == 0:
        return record, np.arange(0)
    _, group = np.unique(rows, axis=0, return_inverse=True)
    group = group.reshape(-1)
    target = np.zeros(c) if runtime is None else runtime
    order = np.lexsort((np.arange(c), target, group))  # by group, runtime, index
    first = np.ones(c, dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    kept = np.sort(order[first])
    if isinstance(record, LayoutRecord):
        labels = {"config_runtime": None if runtime is None else record.config_runtime[kept]}
        configs = {"node_config_feat": record.node_config_feat[kept]}
    else:
        labelled = runtime is not None
        labels = {
            "config_runtime": record.config_runtime[kept] if labelled else None,
            "config_runtime_normalizers": (
                record.config_runtime_normalizers[kept] if labelled else None
            ),
        }
        configs = {"config_feat": record.config_feat[kept]}
    return dataclasses.replace(record, **configs, **labels), kept


# ---------------------------------------------------------------- 2.2.3 compression
def compress_layout_configs(node_config_feat: np.ndarray) -> np.ndarray:
    """Pack each 6-value layout into one base-7 integer: ``sum_i (x_i + 1) 7**i``.

    ``(c, nc, 18)`` float32 (72 bytes per node and configuration) becomes ``(c, nc, 3)``
    int32 codes in ``0 .. 7**6 - 1`` (12 bytes): 6x less memory. Any shape whose last
    axis is a multiple of 6 works; values must be whole numbers in -1..5.
    """
    feat = np.asarray(node_config_feat)
    if feat.ndim == 0 or feat.shape[-1] % LAYOUT_WIDTH:
        raise InputError(f"layouts have shape {feat.shape}; the last axis must be 6k")
    in_range = feat.size == 0 or (feat.min() >= LAYOUT_MIN and feat.max() <= LAYOUT_MAX)
    digits = feat.astype(np.int32) + 1 if in_range else None  # NaN fails the range test
    if digits is None or not np.array_equal(digits - 1, feat):
        raise InputError(f"layout values must be whole numbers in {LAYOUT_MIN}..{LAYOUT_MAX}")
    grouped = digits.reshape(*feat.shape[:-1], feat.shape[-1] // LAYOUT_WIDTH, LAYOUT_WIDTH)
    return np.einsum("...i,i->...", grouped, _POWERS, dtype=np.int32)


def decompress_layout_configs(codes: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """The layouts ``compress_layout_configs`` packed: ``(..., k)`` codes -> ``(..., 6k)``."""
    codes = np.asarray(codes)
    if codes.ndim == 0:
        raise InputError("layout codes need at least one axis")
    digits = codes[..., None] // _POWERS % BASE
    shape = (*codes.shape[:-1], codes.shape[-1] * LAYOUT_WIDTH)
    return (digits.reshape(shape) + LAYOUT_MIN).astype(dtype)


# ---------------------------------------------------------------- 2.2.4 -1 padding
def tensor_rank(node_feat: np.ndarray) -> np.ndarray:
    """Rank of each node's output tensor, read off ``node_feat``.

    The published features are 0-padded, so the rank is the larger of (a) one past the
    last non-zero dimension size (columns 21-26) and (b) one past the largest
    ``layout_minor_to_major`` entry (columns 134-139), which also counts trailing
    dimensions of size 0. Scalars, tuples and tokens have rank 0; an empty rank-1
    tensor (shape ``[0]``) cannot be told from a scalar and also reads 0.
    """
    nonzero = node_feat[:, SHAPE_DIMS] != 0
    width = nonzero.shape[1]
    by_dims = np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0)
    largest = node_feat[:, LAYOUT_COLUMNS].max(axis=1, initial=0)
    by_layout = np.where(largest > 0, largest + 1, 0).astype(np.int64)
    return np.maximum(by_dims, by_layout)


def pad_layout_with_minus_one(node_feat: np.ndarray) -> np.ndarray:
    """A copy of ``node_feat`` with ``layout_minor_to_major_i`` = -1 for ``i >= rank``
    (paper 002, 2.2.4), so 0 always means dimension 0 and the columns read like
    ``node_config_feat``."""
    out = np.array(node_feat, copy=True)
    pad = np.arange(LAYOUT_COLUMNS.stop - LAYOUT_COLUMNS.start) >= tensor_rank(node_feat)[:, None]
    out[:, LAYOUT_COLUMNS][pad] = -1  # a view of out's columns
    return out


# ---------------------------------------------------------------- 2.2.5 normalisation
@dataclass(frozen=True, eq=False)
class FeatureNormalizer:
    """Per-column ``(x - mean) / scale`` on the first ``mean.size`` columns (paper 002's
    StandardScaler: population standard deviation, 1 where a column is constant).

    Fit it on the training split only, then transform every split with it. For
    ``node_feat`` pass ``columns=LAYOUT_COLUMNS.start`` (134): the layout columns are
    dimension indices, embedded rather than scaled.
    """

    mean: np.ndarray
    scale: np.ndarray
    count: int

    @classmethod
    def fit(
        cls, arrays: Iterable[np.ndarray], *, columns: int | None = None
    ) -> "FeatureNormalizer":
        """Fit on the rows of all ``arrays`` (e.g. the ``node_feat`` of every training file),
        merging per-array moments (Chan et al.) in float64."""
        count, mean, m2 = 0, None, None
        for array in arrays:
            block = np.asarray(array, dtype=np.float64)
            if block.ndim != 2:
                raise InputError(f"features have shape {block.shape}, expected (rows, columns)")
            width = block.shape[1] if columns is None else columns
            if block.shape[1] < width or (mean is not None and mean.size != width):
                raise InputError(f"features have {block.shape[1]} columns, expected {width}")
            block = block[:, :width]
            if block.shape[0] == 0:
                continue
            block_mean = block.mean(axis=0)
            block_m2 = ((block - block_mean) ** 2).sum(axis=0)
            if mean is None:
                count, mean, m2 = block.shape[0], block_mean, block_m2
                continue
            total = count + block.shape[0]
            delta = block_mean - mean
            mean = mean + delta * (block.shape[0] / total)
            m2 = m2 + block_m2 + delta**2 * (count * block.shape[0] / total)
            count = total
        if mean is None:
            raise InputError("no feature rows to fit the normaliser on")
        std = np.sqrt(m2 / count)
        return cls(mean=mean, scale=np.where(std > 0, std, 1.0), count=count)

    def transform(self, array: np.ndarray) -> np.ndarray:
        """A float32 copy of ``array`` with its first ``mean.size`` columns standardised."""
        width = self.mean.size
        if array.ndim != 2 or array.shape[1] < width:
            raise InputError(
                f"features have shape {array.shape}, expected at least {width} columns"
            )
        out = np.array(array, dtype=np.float32, copy=True)
        out[:, :width] = (array[:, :width] - self.mean) / self.scale
        return out

    def save(self, path: str | os.PathLike) -> Path:
        """Write the fitted normaliser as JSON (floats round-trip exactly), atomically."""
        data = {
            "format": "dagopt-feature-normalizer",
            "count": self.count,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
        }
        return write_text_atomic(path, json.dumps(data))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "FeatureNormalizer":
        """Read a normaliser ``save`` wrote."""
        data = read_json_file(path)
        if not isinstance(data, dict) or data.get("format") != "dagopt-feature-normalizer":
            raise InputError(f"{path}: not a dagopt feature normaliser file")
        try:
            mean = np.array(data["mean"], dtype=np.float64)
            scale = np.array(data["scale"], dtype=np.float64)
            count = int(data["count"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: bad normaliser file ({exc})") from None
        if mean.ndim != 1 or mean.shape != scale.shape or not (scale > 0).all():
            raise InputError(f"{path}: mean and scale must be equal-length lists, scale > 0")
        return cls(mean=mean, scale=scale, count=count)
