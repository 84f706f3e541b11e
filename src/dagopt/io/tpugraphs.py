"""TpuGraphs ``.npz`` files, the collection folders and the competition's submission CSV.

The public TpuGraphs dataset (the data of paper 002, TGraph) ships one ``.npz`` per
graph; ``docs/tpugraphs.md`` and ``../shared/papers/tpugraphs-format.md`` describe the
arrays. A file reads into a frozen ``TileRecord`` (one configuration per graph) or
``LayoutRecord`` (one configuration per configurable node), whose arrays keep the
dtypes and shapes of the file, so ``read_tpugraphs(write_tpugraphs(record, path))``
gives back the same arrays bit for bit. Files of the test split carry no runtimes:
their runtime fields are ``None``.

``edge_index`` rows are ``[consumer, producer]`` as published; ``tpugraphs_graph``
reverses them into a ``Graph`` whose edges follow the data (producer -> consumer).
Every array is checked on construction; a bad file is a one-line ``InputError``.
"""

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import numpy as np

from dagopt.errors import GraphError, InputError
from dagopt.graph import Graph
from dagopt.io.archive import check_zip_file
from dagopt.io.atomic import write_bytes_atomic, write_text_atomic

NODE_FEATURES = 140
TILE_CONFIG_FEATURES = 24
LAYOUT_CONFIG_FEATURES = 18
KERNEL_BOUNDS = slice(0, 6)
OUTPUT_BOUNDS = slice(8, 14)
"""``config_feat`` columns of the kernel's and the output's tile sizes (0-padded)."""
LAYOUT_MIN, LAYOUT_MAX = -1, 5
"""Every ``node_config_feat`` value is a dimension index 0..5 or the pad -1."""

IS_ROOT = 0
"""``node_feat`` column of ``is_root`` (1 on the graph's root)."""
SHAPE_DIMS = slice(21, 27)
"""``node_feat`` columns of the output shape's dimensions 0-5 (0-padded)."""
SHAPE_PRODUCT = 28
"""``node_feat`` column of the product of the output dimensions (1 for a scalar)."""
LAYOUT_COLUMNS = slice(134, 140)
"""``node_feat`` columns ``layout_minor_to_major_0..5`` (0-padded as published)."""

ELEMENT_BYTES = np.array(
    [0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0], dtype=np.float64
)
"""Bytes per element of the one-hot element types in ``node_feat`` columns 2-20: invalid,
pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, f32, f64, bf16, c64, c128, tuple,
opaque, token (the last three hold no tensor data of their own)."""
ELEMENT_TYPES = slice(2, 21)

_OPCODE_NAMES = """
abs add add-dependency after-all all-reduce all-to-all atan2 batch-norm-grad
batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call ceil
cholesky clamp collective-permute count-leading-zeros compare complex concatenate
conditional constant convert convolution copy copy-done copy-start cosine custom-call
divide domain dot dynamic-slice dynamic-update-slice exponential exponential-minus-one
fft floor fusion gather get-dimension-size set-dimension-size get-tuple-element imag
infeed iota is-finite log log-plus-one and not or xor map maximum minimum multiply
negate outfeed pad parameter partition-id popcnt power real recv recv-done reduce
reduce-precision reduce-window remainder replica-id reshape reverse rng
rng-get-and-update-state rng-bit-generator round-nearest-afz rsqrt scatter select
select-and-scatter send send-done shift-left shift-right-arithmetic shift-right-logical
sign sine slice sort sqrt subtract tanh trace transpose triangular-solve tuple
tuple-select while cbrt all-gather collective-permute-start collective-permute-done
logistic dynamic-reshape all-reduce-start all-reduce-done reduce-scatter
all-gather-start all-gather-done opt-barrier async-start async-update async-done
round-nearest-even stochastic-convert tan
"""
HLO_OPCODES: dict[int, str] = dict(enumerate(_OPCODE_NAMES.split(), start=1))
"""HLO opcode id -> name, as the dataset's featurizer numbers them (``hlo_opcode.h`` of
google-research-datasets/tpu_graphs; 0 is an unknown opcode, 97 and 101 are opcodes
since removed from HLO)."""

COLLECTIONS = (
    "tile:xla",
    "layout:xla:random",
    "layout:xla:default",
    "layout:nlp:random",
    "layout:nlp:default",
)
"""The five collections, named as the submission IDs prefix them."""
SPLITS = ("train", "valid", "test")


def _array(name: str, value: object) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise InputError(f"{name} must be a numpy array, got {type(value).__name__}")
    return value


def _column_count(name: str, array: np.ndarray, ndim: int, width: int) -> None:
    if array.ndim != ndim or array.shape[-1] != width:
        expected = ", ".join(["?"] * (ndim - 1) + [str(width)])
        raise InputError(f"{name} has shape {array.shape}, expected ({expected})")


def _kind(name: str, array: np.ndarray, kinds: str, what: str) -> None:
    if array.dtype.kind not in kinds:
        raise InputError(f"{name} has dtype {array.dtype}, expected {what}")


def _length(name: str, array: np.ndarray, size: int, of: str) -> None:
    if array.shape[0] != size:
        raise InputError(f"{name} has {array.shape[0]} rows, expected {size} (one per {of})")


def _ids(name: str, array: np.ndarray, num_nodes: int) -> None:
    if array.size and (array.min() < 0 or array.max() >= num_nodes):
        bad = array[(array < 0) | (array >= num_nodes)].flat[0]
        raise InputError(f"{name} holds node id {int(bad)}, outside 0..{num_nodes - 1}")


def _finite(name: str, array: np.ndarray) -> None:
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise InputError(f"{name} holds NaN or infinite values")


def _runtimes(name: str, value: object, num_configs: int) -> None:
    array = _array(name, value)
    _kind(name, array, "iuf", "integer or float runtimes")
    if array.ndim != 1:
        raise InputError(f"{name} has shape {array.shape}, expected (c,)")
    _length(name, array, num_configs, "configuration")
    _finite(name, array)
    if array.size and array.min() <= 0:
        raise InputError(f"{name} holds a runtime <= 0 ({array.min()})")


def _frozen(record: object) -> None:
    """Replace every array field by a read-only view (the caller's array is untouched)."""
    for field in fields(record):
        value = getattr(record, field.name)
        if isinstance(value, np.ndarray):
            view = value.view()
            view.setflags(write=False)
            object.__setattr__(record, field.name, view)


def _check_graph(record: "TileRecord | LayoutRecord") -> int:
    """Validate the arrays every file has; returns the number of nodes."""
    feat, opcode, edges = (
        _array(name, getattr(record, name)) for name in ("node_feat", "node_opcode", "edge_index")
    )
    _kind("node_feat", feat, "f", "float")
    _column_count("node_feat", feat, 2, NODE_FEATURES)
    _finite("node_feat", feat)
    n = feat.shape[0]
    _kind("node_opcode", opcode, "iu", "integer")
    if opcode.ndim != 1:
        raise InputError(f"node_opcode has shape {opcode.shape}, expected (n,)")
    _length("node_opcode", opcode, n, "node")
    if opcode.size and opcode.min() < 0:
        raise InputError(f"node_opcode holds a negative opcode {int(opcode.min())}")
    _kind("edge_index", edges, "iu", "integer")
    _column_count("edge_index", edges, 2, 2)
    _ids("edge_index", edges, n)
    return n


@dataclass(frozen=True, eq=False)
class TileRecord:
    """One graph of the tile collection: c configurations of the whole (fused) graph.

    ``config_runtime`` and ``config_runtime_normalizers`` are nanoseconds under each
    configuration and under the default one; both are ``None`` in the test split.
    """

    node_feat: np.ndarray
    node_opcode: np.ndarray
    edge_index: np.ndarray
    config_feat: np.ndarray
    config_runtime: np.ndarray | None = None
    config_runtime_normalizers: np.ndarray | None = None
    name: str = "graph"

    def __post_init__(self) -> None:
        _check_graph(self)
        feat = _array("config_feat", self.config_feat)
        _kind("config_feat", feat, "f", "float")
        _column_count("config_feat", feat, 2, TILE_CONFIG_FEATURES)
        _finite("config_feat", feat)
        labels = (self.config_runtime, self.config_runtime_normalizers)
        if (labels[0] is None) != (labels[1] is None):
            raise InputError("config_runtime and config_runtime_normalizers come together")
        if labels[0] is not None:
            c = feat.shape[0]
            _runtimes("config_runtime", labels[0], c)
            _runtimes("config_runtime_normalizers", labels[1], c)
        _frozen(self)

    @property
    def num_configs(self) -> int:
        return int(self.config_feat.shape[0])

    @property
    def normalized_runtime(self) -> np.ndarray | None:
        """The prediction target ``config_runtime / config_runtime_normalizers`` (float64)."""
        if self.config_runtime is None:
            return None
        return self.config_runtime / self.config_runtime_normalizers.astype(np.float64)


@dataclass(frozen=True, eq=False)
class LayoutRecord:
    """One graph of a layout collection: c configurations of its nc configurable nodes.

    ``node_config_feat[j, k]`` is the layout (minor-to-major dimension orders of output,
    input and kernel, -1 padded) of node ``node_config_ids[k]`` in configuration ``j``;
    ``config_runtime`` is ``None`` in the test split. ``node_splits`` (optional) holds
    the first node of each HLO computation, shaped ``(k,)`` or ``(1, k)`` as in the file.
    """

    node_feat: np.ndarray
    node_opcode: np.ndarray
    edge_index: np.ndarray
    node_config_ids: np.ndarray
    node_config_feat: np.ndarray
    config_runtime: np.ndarray | None = None
    node_splits: np.ndarray | None = None
    name: str = "graph"

    def __post_init__(self) -> None:
        n = _check_graph(self)
        ids = _array("node_config_ids", self.node_config_ids)
        feat = _array("node_config_feat", self.node_config_feat)
        _kind("node_config_ids", ids, "iu", "integer")
        if ids.ndim != 1:
            raise InputError(f"node_config_ids has shape {ids.shape}, expected (nc,)")
        _ids("node_config_ids", ids, n)
        if np.unique(ids).size != ids.size:
            raise InputError("node_config_ids lists a node twice")
        _kind("node_config_feat", feat, "f", "float")
        _column_count("node_config_feat", feat, 3, LAYOUT_CONFIG_FEATURES)
        if feat.shape[1] != ids.size:
            raise InputError(
                f"node_config_feat has shape {feat.shape}, expected {ids.size} configurable "
                "nodes on axis 1 (one per node_config_ids entry)"
            )
        if feat.size:
            low, high = feat.min(), feat.max()  # NaN propagates into both
            if not (low >= LAYOUT_MIN and high <= LAYOUT_MAX) or not _integral(feat):
                raise InputError(
                    f"node_config_feat holds values outside {{{LAYOUT_MIN}, ..., {LAYOUT_MAX}}}"
                )
        if self.config_runtime is not None:
            _runtimes("config_runtime", self.config_runtime, feat.shape[0])
        if self.node_splits is not None:
            splits = _array("node_splits", self.node_splits)
            _kind("node_splits", splits, "iu", "integer")
            if splits.ndim not in (1, 2) or (splits.ndim == 2 and splits.shape[0] != 1):
                raise InputError(f"node_splits has shape {splits.shape}, expected (k,) or (1, k)")
            _ids("node_splits", splits, n)
        _frozen(self)

    @property
    def num_configs(self) -> int:
        return int(self.node_config_feat.shape[0])


def _integral(values: np.ndarray) -> bool:
    """True when every value is a whole number (checked in blocks to bound the memory)."""
    flat = values.reshape(-1)
    block = 1 << 22
    return all(
        np.array_equal(flat[i : i + block], np.floor(flat[i : i + block]))
        for i in range(0, flat.size, block)
    )


TpuGraphsFile = TileRecord | LayoutRecord


def _record_from_arrays(arrays: Mapping[str, np.ndarray], name: str) -> TpuGraphsFile:
    keys = set(arrays)
    if "config_feat" in keys and keys & {"node_config_feat", "node_config_ids"}:
        raise InputError("file mixes tile (config_feat) and layout (node_config_*) arrays")
    kind = TileRecord if "config_feat" in keys else LayoutRecord
    unknown = sorted(keys - {f.name for f in fields(kind) if f.name != "name"})
    if unknown:
        raise InputError(f"unknown array {unknown[0]!r} in a TpuGraphs file")
    required = {f.name for f in fields(kind) if f.default is MISSING}
    missing = sorted(required - keys)
    if missing:
        if kind is LayoutRecord and missing == ["node_config_feat", "node_config_ids"]:
            raise InputError("not a TpuGraphs file: no config_feat (tile) or node_config_feat")
        raise InputError(f"missing array {missing[0]!r}")
    return kind(**arrays, name=name)


def read_tpugraphs(path: str | os.PathLike) -> TpuGraphsFile:
    """Read one TpuGraphs ``.npz`` (tile or layout, labelled or not) into a record.

    The record is named after the file (``resnet50.4x4.fp16.npz`` -> ``resnet50.4x4.fp16``),
    the name the submission IDs use. Arrays keep the file's dtypes and shapes.
    """
    file = Path(path)
    check_zip_file(file, "a TpuGraphs .npz file", "not an npz archive")
    try:
        with np.load(file, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except Exception as exc:  # corrupt bytes: zipfile, zlib and numpy's header parser raise
        # OSError, ValueError, EOFError, BadZipFile, zlib.error, tokenize.TokenError, ...
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{file}: not a readable npz archive ({reason})") from None
    try:
        return _record_from_arrays(arrays, file.stem)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None


def write_tpugraphs(
    record: TpuGraphsFile, path: str | os.PathLike, *, compressed: bool = False
) -> Path:
    """Write ``record`` as the dataset does (``np.savez``; ``np.savez_compressed`` when
    ``compressed``), atomically. Absent runtimes and splits are left out of the file."""
    arrays = {
        f.name: getattr(record, f.name)
        for f in fields(record)
        if f.name != "name" and getattr(record, f.name) is not None
    }
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return write_bytes_atomic(path, buffer.getvalue())


def tensor_bytes(node_feat: np.ndarray) -> np.ndarray:
    """Bytes of each node's output tensor: element count (column 28) times the size of the
    one-hot element type (columns 2-20); 0 for tuples, tokens and an unset type."""
    return node_feat[:, SHAPE_PRODUCT].astype(np.float64) * (
        node_feat[:, ELEMENT_TYPES].astype(np.float64) @ ELEMENT_BYTES
    )


def tpugraphs_graph(record: TpuGraphsFile) -> Graph:
    """The record's ``Graph``: edges producer -> consumer (``edge_index`` reversed).

    ``op`` is the HLO opcode name (the id as a string where ``HLO_OPCODES`` has none),
    ``mem`` the output tensor's bytes (``tensor_bytes``), ``node_data["node_feat"]`` the
    ``(n, 140)`` node features. Layout graphs also carry ``node_data["configurable"]``
    (1 for configurable nodes).
    """
    n = record.node_feat.shape[0]
    node_data = {"node_feat": record.node_feat}
    if isinstance(record, LayoutRecord):
        configurable = np.zeros(n)
        configurable[record.node_config_ids] = 1.0
        node_data["configurable"] = configurable
    ops = [HLO_OPCODES.get(code, str(code)) for code in record.node_opcode.tolist()]
    try:
        return Graph(
            n,
            record.edge_index[:, 1],
            record.edge_index[:, 0],
            mem=tensor_bytes(record.node_feat),
            op=ops,
            name=record.name,
            node_data=node_data,
        )
    except GraphError as exc:
        raise GraphError(f"{record.name}: {exc}") from None


def read_tpugraphs_graph(path: str | os.PathLike) -> Graph:
    """The ``Graph`` of a TpuGraphs ``.npz`` file (the reader behind ``dagopt.io.load``)."""
    return tpugraphs_graph(read_tpugraphs(path))


# ---------------------------------------------------------------- collections on disk
def _check_collection(collection: str) -> None:
    if collection not in COLLECTIONS:
        raise InputError(f"unknown collection {collection!r} (known: {', '.join(COLLECTIONS)})")


def collection_dir(root: str | os.PathLike, collection: str, split: str) -> Path:
    """``root/npz/tile/xla/{split}`` or ``root/npz/layout/{source}/{search}/{split}``, where
    ``root`` holds the ``npz`` folder of the unpacked dataset."""
    _check_collection(collection)
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
    return Path(root).expanduser().joinpath("npz", *collection.split(":"), split)


def collection_files(root: str | os.PathLike, collection: str, split: str) -> list[Path]:
    """The ``.npz`` files of one collection and split, sorted by name."""
    folder = collection_dir(root, collection, split)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder (is {root} the folder that holds npz/?)")
    return sorted(folder.glob("*.npz"))


# ---------------------------------------------------------------- submission CSV
SUBMISSION_HEADER = "ID,TopConfigs"


def submission_id(collection: str, name: str) -> str:
    """The submission ID of graph ``name``: ``tile:xla:NAME`` or ``layout:SRC:SEARCH:NAME``."""
    _check_collection(collection)
    if not name or any(c in name for c in ",\n\r"):
        raise InputError(f"graph name {name!r} cannot be a submission ID")
    return f"{collection}:{name}"


def _check_submission_id(text: str) -> None:
    if not any(text.startswith(f"{c}:") and len(text) > len(c) + 1 for c in COLLECTIONS):
        raise InputError(f"ID {text!r} is not COLLECTION:NAME ({', '.join(COLLECTIONS)})")


def write_submission(
    path: str | os.PathLike, rankings: Mapping[str, Sequence[int] | np.ndarray]
) -> Path:
    """Write the competition's CSV, ``ID,TopConfigs``, one row per graph: the ID, then
    configuration indices best first, joined by ``;`` (top 5 for tile, all for layout)."""
    lines = [SUBMISSION_HEADER]
    for key, ranking in rankings.items():
        _check_submission_id(key)
        if "," in key or "\n" in key:
            raise InputError(f"ID {key!r} contains a comma or a line break")
        values = np.asarray(ranking)
        if values.ndim != 1 or values.size == 0 or values.dtype.kind not in "iu":
            raise InputError(f"{key}: a ranking is a non-empty list of configuration indices")
        if values.min() < 0:
            raise InputError(f"{key}: negative configuration index {int(values.min())}")
        lines.append(f"{key},{';'.join(map(str, values.tolist()))}")
    return write_text_atomic(path, "\n".join(lines) + "\n")


def read_submission(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The rankings of a submission CSV (``ID`` -> int64 configuration indices, best first)."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: cannot read ({exc})") from None
    if not lines or lines[0].strip() != SUBMISSION_HEADER:
        raise InputError(f"{file}: the first line must be {SUBMISSION_HEADER!r}")
    rankings: dict[str, np.ndarray] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        where = f"{file}, line {number}"
        if len(cells) != 2:
            raise InputError(f"{where}: expected 2 comma-separated cells, got {len(cells)}")
        key, text = cells[0].strip(), cells[1].strip()
        try:
            _check_submission_id(key)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        if key in rankings:
            raise InputError(f"{where}: duplicate ID {key!r}")
        parts = text.split(";")
        if not all(p.isascii() and p.isdigit() for p in parts):
            raise InputError(f"{where}: TopConfigs must be ';'-separated indices >= 0")
        rankings[key] = np.array([int(p) for p in parts], dtype=np.int64)
    return rankings
