"""ONNX importer and writer: a model file -> ``Graph``, and the model back in any order.

``read_onnx`` loads a model, checks it (``onnx.checker``), gives the graph inputs'
symbolic dimensions the sizes the caller names (``dims``) and runs strict ONNX shape
inference; the node outputs it leaves without a static size take the static types
onnxruntime's symbolic shape inference gives them (it evaluates the shape arithmetic
of exported models, ``Shape -> Gather -> ... -> Expand``, where ONNX's data propagation
stops). The rules (``docs/real_models.md``, section ONNX):

- nodes: one per graph input that has no initializer (op ``input``), one per ONNX node
  of the main graph in the file's order, then one ``output`` node: ``np.arange(n)`` is
  the file order;
- ``mem``: bytes of the node's output tensors (sum over its outputs, read or not), from
  the element type and static shape of ``value_info`` / graph inputs / outputs;
  sub-byte types are packed. A tensor without a static size after both inferences
  (and, with ``run_shapes``, an onnxruntime run: symbolic or unknown dims, unknown type,
  strings, sequences) is an ``InputError`` naming it, unless ``assume_size`` gives the
  bytes to assume;
- parameters: initializers and the values of ``Constant`` nodes. A ``Constant`` node
  has ``mem`` 0, and so has an ``Identity`` of a parameter (the exporters write them for
  shared weights; runtimes alias them): its output is that parameter. ``param_mem`` of
  a node is the bytes of the distinct parameters it reads (directly, through such
  aliases, or from inside its subgraphs), plus the initializers of its subgraphs;
- edges: producer -> consumer for every tensor a node reads, including the outer-scope
  tensors its subgraphs (``If``, ``Loop``, ``Scan``) read: such nodes are opaque, the
  memory inside their subgraphs is not modelled;
- the ``output`` node (``mem`` 0) reads every graph output and every value nothing else
  reads, so every node is one of its ancestors: it runs last and the outputs stay alive
  to the end, as in the PyTorch importer;
- ``node_data["flops"]``: FLOPs of ``MatMul``, ``Gemm``, ``Conv`` and ``ConvTranspose``
  from the inferred shapes (``node_flops``, the formulas of ``torch.utils.flop_counter``);
  every other node counts 0, as in the PyTorch importer (elementwise ops are
  memory-bound: the roofline's bytes term dominates), and so does a node whose shapes
  are not static.

``write_onnx`` writes the model with its main-graph node list in a given order of the
``Graph``; everything else in the model is kept as it was.
"""

import copy
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto

from dagopt.errors import InputError
from dagopt.graph import Graph, validate_order
from dagopt.graph.core import BEYOND_FLOAT_RANGE
from dagopt.io.atomic import write_bytes_atomic

#: Bits per element of the element types ONNX packs below one byte per element.
PACKED_BITS = {
    getattr(TensorProto, name): bits
    for name, bits in (
        ("INT2", 2),
        ("UINT2", 2),
        ("INT4", 4),
        ("UINT4", 4),
        ("FLOAT4E2M1", 4),
        ("FLOAT6E2M3", 6),
        ("FLOAT6E3M2", 6),
    )
    if hasattr(TensorProto, name)
}
DEFAULT_DOMAINS = ("", "ai.onnx")
#: The ops ``node_flops`` counts; every other op is 0 FLOPs.
FLOP_OPS = ("MatMul", "Gemm", "Conv", "ConvTranspose")
MAX_MESSAGE = 300
#: Initializers of at most this many elements keep their values for shape inference
#: (shape arithmetic reads them); larger ones are weights (``_without_weights``).
SHAPE_VALUES = 1024


@dataclass(frozen=True)
class OnnxGraph:
    """A model's ``Graph`` and the model it was read from.

    ``origin[v]`` tells where dagopt node ``v`` comes from: an ``int`` is an index into
    ``model.graph.node``, a ``str`` the name of a graph input, ``None`` the ``output``
    node. ``model`` is the file's model as loaded (without inferred shapes);
    ``param_bytes`` the bytes of all its parameters (initializers, ``Constant`` values,
    initializers of subgraphs), each counted once; ``symbolic_sized`` and ``run_sized``
    the names of the node outputs whose sizes came from onnxruntime's symbolic shape
    inference and from an onnxruntime run (``read_onnx(run_shapes=True)``);
    ``param_aliases`` the nodes whose output is a parameter (an ``Identity`` of one: ``mem``
    0, the parameter in its ``param_mem``).
    """

    graph: Graph
    model: onnx.ModelProto
    origin: tuple[int | str | None, ...]
    param_bytes: float
    symbolic_sized: frozenset[str] = frozenset()
    run_sized: frozenset[str] = frozenset()
    param_aliases: frozenset[int] = frozenset()

    def onnx_order(self, order: Sequence[int] | np.ndarray) -> list[int]:
        """Indices into ``model.graph.node`` in the order ``order`` runs them.

        ``order`` is a topological order of ``graph`` (else ``OrderError``); graph-input
        nodes and the ``output`` node are skipped.
        """
        valid = validate_order(self.graph, order).tolist()
        return [self.origin[v] for v in valid if isinstance(self.origin[v], int)]


def read_onnx(
    path: str | os.PathLike,
    *,
    assume_size: float | None = None,
    dims: Mapping[str, int] | None = None,
    run_shapes: bool = False,
) -> OnnxGraph:
    """Read an ONNX model file into a ``Graph`` (rules in the module doc).

    ``dims`` maps symbolic dimension names of the graph inputs (``batch``,
    ``sequence``...) to sizes; a name no graph input has is an ``InputError``. The model
    of the result is the file's, symbolic dimensions and all. ``run_shapes`` sizes the
    node outputs both shape inferences leave unknown from one onnxruntime run of the
    model (``_run_values``). ``assume_size`` is the size in bytes taken for every tensor
    whose size is still unknown; without it such a tensor is an ``InputError``. A
    missing, truncated or invalid file, or a failed shape inference or run, is an
    ``InputError``.
    """
    file = Path(path)
    if assume_size is not None and not (math.isfinite(assume_size) and assume_size >= 0):
        raise InputError(f"assume_size must be a finite number of bytes >= 0, got {assume_size}")
    model = _load(file)
    try:
        light = _without_weights(model)
        _size_dims(light.graph.input, dims or {})
        types, sized = _inferred_types(light, model if run_shapes else None)
        return _build(model, types, file.stem, assume_size, sized)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    except OverflowError:  # a size or FLOP count of dimensions beyond the float range
        raise InputError(f"{file}: {BEYOND_FLOAT_RANGE}") from None
    except UnicodeDecodeError:  # protobuf decodes a string field when it is read
        raise InputError(f"{file}: a name or string in the model is not UTF-8") from None


def write_onnx(
    onnx_graph: OnnxGraph, order: Sequence[int] | np.ndarray, path: str | os.PathLike
) -> Path:
    """Write ``onnx_graph.model`` with its nodes in ``order`` (node indices of its graph).

    The order must be a topological order of ``onnx_graph.graph`` (else ``OrderError``);
    the written model passes ``onnx.checker.check_model(..., full_check=True)`` before
    it replaces ``path`` atomically.
    """
    nodes = onnx_graph.onnx_order(order)
    source = onnx_graph.model
    model = onnx.ModelProto()
    model.CopyFrom(source)
    del model.graph.node[:]
    model.graph.node.extend(source.graph.node[i] for i in nodes)
    try:
        onnx.checker.check_model(model, full_check=True)
        data = model.SerializeToString()
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError) as exc:
        raise InputError(f"reordered model fails the ONNX checker: {_one_line(exc)}") from None
    return write_bytes_atomic(path, data)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _load(file: Path) -> onnx.ModelProto:
    """``onnx.load`` and ``onnx.checker.check_model``; every failure is one ``InputError``."""
    try:
        # The protobuf encoding whatever the suffix: onnx.load would parse a .json
        # file as ONNX's JSON form and fail deep inside protobuf.
        model = onnx.load(file, format="protobuf")
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as exc:
        raise InputError(f"{file}: cannot read ({exc.strerror or exc})") from None
    except DecodeError:
        raise InputError(f"{file}: not an ONNX model (truncated or corrupt protobuf)") from None
    except (onnx.checker.ValidationError, ValueError) as exc:  # its external data
        raise InputError(f"{file}: cannot read its external data: {_one_line(exc)}") from None
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        raise InputError(f"{file}: invalid ONNX model: {_one_line(exc)}") from None
    return model


# ----------------------------------------------------------------------- shape inference
def _without_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` for shape inference: its initializers of more than
    ``SHAPE_VALUES`` elements are graph inputs of their type and shape instead. Inference
    reads no more of them (values matter to shape arithmetic only, whose tensors are
    small), and the weights are neither copied nor serialized (docs/results.md, "ONNX
    models in onnxruntime": GPT-2's 500 MB export reads in less than half the time)."""
    graph = model.graph
    small = [t for t in graph.initializer if math.prod(t.dims) <= SHAPE_VALUES]
    inputs = {value.name for value in graph.input}
    weights = [
        onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
        for t in graph.initializer
        if math.prod(t.dims) > SHAPE_VALUES and t.name not in inputs
    ]
    light = onnx.ModelProto(
        ir_version=model.ir_version, opset_import=model.opset_import, functions=model.functions
    )
    light.graph.CopyFrom(
        onnx.GraphProto(
            node=graph.node,
            input=[*graph.input, *weights],
            output=graph.output,
            value_info=graph.value_info,
            initializer=small,
            sparse_initializer=graph.sparse_initializer,
        )
    )
    return light


def _size_dims(inputs: Iterable[onnx.ValueInfoProto], dims: Mapping[str, int]) -> None:
    """Give the symbolic dimensions of the graph inputs ``inputs`` the sizes ``dims``
    names (in place); a size below 1 or a name no input has is an ``InputError``."""
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"dimension {name!r} must be a whole number >= 1, got {size!r}")
    named: set[str] = set()
    for value in inputs:
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                named.add(dim.dim_param)
                if dim.dim_param in dims:
                    dim.dim_value = dims[dim.dim_param]
    unknown = sorted(dims.keys() - named)
    if unknown:
        have = ", ".join(sorted(named)) or "none"
        raise InputError(
            f"no graph input has a dimension named {', '.join(map(repr, unknown))} "
            f"(symbolic dimensions of the inputs: {have})"
        )


@dataclass(frozen=True)
class _Sized:
    """Names of the node outputs sized by onnxruntime's symbolic inference and by a run."""

    symbolic: frozenset[str] = frozenset()
    run: frozenset[str] = frozenset()


def _inferred_types(
    light: onnx.ModelProto, model: onnx.ModelProto | None
) -> tuple[dict[str, onnx.TypeProto], _Sized]:
    """The types of the values of ``light``'s main graph (``_without_weights``) by strict
    ONNX shape inference, where a node output left without a static size takes the type
    onnxruntime's symbolic shape inference gives it if that one is static, and then, if
    ``model`` (the full model) is given, the type it has in an onnxruntime run of it; and
    the names of the outputs each sized."""
    try:
        graph = onnx.shape_inference.infer_shapes(
            light, check_type=True, strict_mode=True, data_prop=True
        ).graph
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, ValueError) as exc:
        raise InputError(f"shape inference failed: {_one_line(exc)}") from None
    types = {v.name: v.type for v in (*graph.input, *graph.value_info, *graph.output)}
    unresolved = {
        name
        for node in graph.node
        for name in node.output
        if name and (name not in types or _static_bytes(types[name]) is None)
    }
    if not unresolved:
        return types, _Sized()
    symbolic = _adopt(types, _symbolic_values(light), unresolved)
    unresolved -= symbolic
    run = frozenset()
    if model is not None and unresolved:
        run = _adopt(
            types, _run_values(model, unresolved, _run_feeds(model.graph, types)), unresolved
        )
    return types, _Sized(symbolic, run)


def _adopt(
    types: dict[str, onnx.TypeProto], values: Iterable[onnx.ValueInfoProto], names: set[str]
) -> frozenset[str]:
    """Set ``types`` of ``names`` to the static types ``values`` has for them; the names
    it set."""
    static = {
        v.name: v.type for v in values if v.name in names and _static_bytes(v.type) is not None
    }
    types.update(static)
    return frozenset(static)


def _symbolic_values(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The value types onnxruntime's symbolic shape inference gives ``model``'s main
    graph, as far as it gets; none where it cannot run on the model (an op it has no
    rule for, say: its failures are of many kinds, and the sizes it cannot give stay
    unknown). The loop of ``SymbolicShapeInference.infer_shapes``, which on an
    incomplete inference saves the model to ``sym_shape_infer_temp.onnx`` (and its
    weights beside it) in the working directory and keeps its partial result to itself."""
    from onnxruntime.tools import symbolic_shape_infer

    logger = logging.getLogger(symbolic_shape_infer.__name__)
    level = logger.level
    logger.setLevel(logging.ERROR)  # its warnings name dims it leaves symbolic: we report those
    try:
        inference = symbolic_shape_infer.SymbolicShapeInference(
            int_max=2**31 - 1, auto_merge=False, guess_output_rank=False, verbose=0
        )
        inference._preprocess(model)
        while inference.run_:
            inference._infer_impl()
        inference._update_output_from_vi()
    except Exception:  # see the docstring: the sizes stay unknown
        return []
    finally:
        logger.setLevel(level)
    return [*inference.out_mp_.graph.value_info, *inference.out_mp_.graph.output]


def declared_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """The types ONNX's shape inference gives the values of ``model``'s main graph as
    written (symbolic dimensions kept, unknown ones unknown): what a runtime that plans
    from the file knows of them. An inference that fails leaves only the declared ones."""
    light = _without_weights(model)
    try:
        graph = onnx.shape_inference.infer_shapes(light).graph
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, ValueError):
        graph = light.graph
    return {v.name: v.type for v in (*graph.input, *graph.value_info, *graph.output)}


def example_inputs(model: onnx.ModelProto, dims: Mapping[str, int] | None = None) -> dict:
    """Inputs to run ``model`` on, one array per graph input without an initializer, its
    symbolic dimensions sized by ``dims``: floats drawn from a normal distribution (seed
    0), zeros of every other element type (valid token ids and indices). A graph input
    without a static numeric shape is an ``InputError``."""
    inputs = [copy.deepcopy(value) for value in model.graph.input]
    _size_dims(inputs, dims or {})
    return _run_feeds(model.graph, {value.name: value.type for value in inputs})


def _run_values(
    model: onnx.ModelProto, names: set[str], feeds: Mapping[str, np.ndarray]
) -> list[onnx.ValueInfoProto]:
    """The types the node outputs ``names`` have in one onnxruntime run of ``model`` (CPU,
    graph optimizations off, ``names`` added to the graph outputs) on ``feeds``
    (``_run_feeds``). A size that depends on the data (``NonZero``) is the one of that
    input. A run that fails is an ``InputError``."""
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {value.name for value in probe.graph.output}
    wanted = sorted(names)
    probe.graph.output.extend(
        onnx.helper.make_empty_tensor_value_info(name) for name in wanted if name not in outputs
    )
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(
            probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        arrays = session.run(wanted, dict(feeds))
    except Exception as exc:  # onnxruntime's errors have no common base class
        raise InputError(f"onnxruntime could not run the model: {_one_line(exc)}") from None
    return [
        onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape
        )
        for name, array in zip(wanted, arrays, strict=True)
        if isinstance(array, np.ndarray)
    ]


def _run_feeds(
    graph: onnx.GraphProto, types: Mapping[str, onnx.TypeProto]
) -> dict[str, np.ndarray]:
    """Inputs for ``_run_values``, one array per graph input of ``graph`` without an
    initializer, of its type in ``types`` (its dimensions sized): floats drawn from a
    normal distribution (seed 0), zeros of every other element type; a graph input
    without a static numeric shape is an ``InputError``."""
    rng = np.random.default_rng(0)
    initialized = {tensor.name for tensor in graph.initializer}
    feeds = {}
    for value in graph.input:
        if value.name in initialized:
            continue
        type_proto = types.get(value.name, value.type)
        elem_type = type_proto.tensor_type.elem_type
        dims = _static_dims(type_proto)
        if dims is None or _element_bits(elem_type) is None or elem_type in PACKED_BITS:
            raise InputError(
                f"graph input {value.name!r} has {_describe(type_proto)}: a run to size "
                "tensors needs static numeric inputs (give --dim NAME=SIZE)"
            )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
        draws = rng.standard_normal(dims) if dtype.kind == "f" else np.zeros(dims)
        feeds[value.name] = draws.astype(dtype)
    return feeds


# ------------------------------------------------------------------------- tensor sizes
def _element_bits(elem_type: int) -> int | None:
    """Bits per element of an ONNX element type; ``None`` for types without a fixed size."""
    if elem_type in PACKED_BITS:
        return PACKED_BITS[elem_type]
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except KeyError:  # UNDEFINED or a type this onnx does not know
        return None
    return None if dtype.kind == "O" else dtype.itemsize * 8


def _packed_bytes(elem_type: int, dims: Iterable[int]) -> int | None:
    bits = _element_bits(elem_type)
    return None if bits is None else math.ceil(math.prod(dims) * bits / 8)


def _static_bytes(type_proto: onnx.TypeProto) -> int | None:
    """Bytes of a tensor of this type, ``None`` unless its element type and shape are static."""
    dims = _static_dims(type_proto)
    return None if dims is None else _packed_bytes(type_proto.tensor_type.elem_type, dims)


def _describe(type_proto: onnx.TypeProto | None) -> str:
    """Why a type has no static size, for the error message."""
    if type_proto is None:
        return "no type from shape inference"
    kind = type_proto.WhichOneof("value")
    if kind != "tensor_type":
        return f"a non-tensor type ({kind or 'unknown'})"
    tensor = type_proto.tensor_type
    if _element_bits(tensor.elem_type) is None:
        element = onnx.helper.tensor_dtype_to_string(tensor.elem_type).removeprefix("TensorProto.")
        return f"element type {element} without a fixed size"
    if not tensor.HasField("shape"):
        return "an unknown shape (rank unknown)"
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
        for d in tensor.shape.dim
    ]
    return f"a non-static shape [{', '.join(dims)}]"


def _initializer_bytes(tensor: TensorProto) -> int:
    if tensor.data_type == TensorProto.STRING:
        return sum(len(s) for s in tensor.string_data)
    return _packed_bytes(tensor.data_type, tensor.dims) or 0


def _parameters(graph: onnx.GraphProto) -> dict[str, int]:
    """Initializers (dense and sparse) of a graph -> their bytes."""
    params = {t.name: _initializer_bytes(t) for t in graph.initializer}
    for sparse in graph.sparse_initializer:
        stored = _initializer_bytes(sparse.values) + _initializer_bytes(sparse.indices)
        params[sparse.values.name] = stored
    return params


# ---------------------------------------------------------------------------- subgraphs
def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            yield from attribute.graphs


def _outer_names(graph: onnx.GraphProto) -> set[str]:
    """Names a subgraph (and the subgraphs nested in it) reads from enclosing scopes."""
    defined = {v.name for v in graph.input} | set(_parameters(graph))
    used = {v.name for v in graph.output}
    for node in graph.node:
        defined.update(node.output)
        used.update(node.input)
        for inner in _subgraphs(node):
            used |= _outer_names(inner)
    return used - defined - {""}


def _inner_param_bytes(node: onnx.NodeProto) -> int:
    """Bytes of the initializers of a node's subgraphs, nested ones included."""
    total = 0
    for graph in _subgraphs(node):
        total += sum(_parameters(graph).values())
        total += sum(_inner_param_bytes(child) for child in graph.node)
    return total


# -------------------------------------------------------------------------------- flops
def _static_dims(type_proto: onnx.TypeProto | None) -> tuple[int, ...] | None:
    """The static shape of a tensor type, ``None`` unless every dimension is known."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = tensor.shape.dim
    if not all(d.HasField("dim_value") and d.dim_value >= 0 for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def node_flops(node: onnx.NodeProto, shape: Callable[[str], tuple[int, ...] | None]) -> float:
    """FLOPs of an ONNX node (a multiply-add is 2) given the static shape of each tensor.

    - ``MatMul`` (numpy broadcasting): ``2 * numel(Y) * K``, ``K = A.shape[-1]``: every
      output element of every broadcast batch is a length-``K`` dot product;
    - ``Gemm``: ``2 * M * N * K`` (``K`` from ``A`` and ``transA``); ``alpha``, ``beta``
      and ``C`` are not counted, as torch's ``addmm`` formula does not count them;
    - ``Conv``: ``2 * numel(Y) * (C_in / group) * kernel elements``
      (``= 2 * numel(Y) * prod(W.shape[1:])``); bias not counted;
    - ``ConvTranspose``: ``2 * numel(X) * (C_out / group) * kernel elements``
      (``= 2 * numel(X) * prod(W.shape[1:])``): each input element is scattered through
      the kernel, as torch counts a transposed convolution;
    - any other op, an op outside the default domain, or unknown shapes: 0.
    """
    if node.domain not in DEFAULT_DOMAINS or node.op_type not in FLOP_OPS:
        return 0.0
    first, second = (shape(x) if x else None for x in (*node.input, "", "")[:2])
    out = shape(node.output[0]) if node.output and node.output[0] else None
    if not first or second is None:
        return 0.0
    if node.op_type == "ConvTranspose":
        return 2.0 * math.prod(first) * math.prod(second[1:])
    if out is None:
        return 0.0
    if node.op_type == "MatMul":
        return 2.0 * math.prod(out) * first[-1]
    if node.op_type == "Gemm":
        trans_a = next((a.i for a in node.attribute if a.name == "transA"), 0)
        return 2.0 * math.prod(out) * first[0 if trans_a else -1] if len(first) == 2 else 0.0
    return 2.0 * math.prod(out) * math.prod(second[1:])  # Conv


# -------------------------------------------------------------------------------- graph
def _is_constant(node: onnx.NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS


def _is_identity(node: onnx.NodeProto) -> bool:
    return node.op_type == "Identity" and node.domain in DEFAULT_DOMAINS and len(node.input) == 1


def _op_name(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}::{node.op_type}"


def _unique(names: Iterable[str]) -> list[str]:
    """Names made unique in order: a repeated name gets the first free ``name#k``, k >= 1."""
    taken: set[str] = set()
    result = []
    for name in names:
        unique, k = name, 0
        while unique in taken:
            k += 1
            unique = f"{name}#{k}"
        taken.add(unique)
        result.append(unique)
    return result


class _Builder:
    """Nodes, sizes and edges of the ``Graph``, added in file order (rules in the module doc)."""

    def __init__(
        self, graph: onnx.GraphProto, types: dict[str, onnx.TypeProto], assume_size: float | None
    ) -> None:
        self.types = types
        self.dims = {t.name: tuple(t.dims) for t in graph.initializer}
        self.assume_size = assume_size
        self.params: dict[str, float] = dict(_parameters(graph))
        self.aliases: dict[str, str] = {}  # Identity outputs of parameters -> the parameter
        self.alias_nodes: set[int] = set()
        self.inner_params = 0.0
        self.producer: dict[str, int] = {}
        self.labels: list[str] = []
        self.ops: list[str] = []
        self.mem: list[float] = []
        self.param_mem: list[float] = []
        self.flops: list[float] = []
        self.origin: list[int | str | None] = []
        self.src: list[int] = []
        self.dst: list[int] = []

    def base(self, name: str) -> str:
        """The parameter tensor ``name`` is an ``Identity`` of, else ``name``."""
        return self.aliases.get(name, name)

    def size(self, name: str, owner: str) -> float:
        """Bytes of tensor ``name``; unknown sizes are an error unless ``assume_size`` is set."""
        type_proto = self.types.get(name)
        size = None if type_proto is None else _static_bytes(type_proto)
        if size is not None:
            return float(size)
        if self.assume_size is not None:
            return float(self.assume_size)
        raise InputError(
            f"tensor {name!r} ({owner}) has {_describe(type_proto)}; give the graph "
            "inputs' symbolic dimensions sizes with --dim NAME=SIZE (dims), take the "
            "sizes of an onnxruntime run with --run-shapes (run_shapes), or give "
            "--assume-size BYTES (assume_size) to assume a size for such tensors"
        )

    def shape(self, name: str) -> tuple[int, ...] | None:
        """Static shape of tensor ``name`` (initializers included), ``None`` if not static."""
        if name in self.dims:
            return self.dims[name]
        return _static_dims(self.types.get(name))

    def add(
        self,
        label: str,
        op: str,
        origin: int | str | None,
        reads: Iterable[str],
        mem: float,
        extra_params: float = 0.0,
        flops: float = 0.0,
    ) -> int:
        """Append a node that reads tensors ``reads``; return its index."""
        v = len(self.labels)
        reads = set(reads)
        self.labels.append(label)
        self.ops.append(op)
        self.flops.append(flops)
        self.origin.append(origin)
        self.mem.append(mem)
        bases = {self.base(x) for x in reads}
        self.param_mem.append(sum(self.params[x] for x in bases if x in self.params) + extra_params)
        for u in sorted({self.producer[x] for x in reads if x in self.producer}):
            self.src.append(u)
            self.dst.append(v)
        return v

    def add_input(self, value: onnx.ValueInfoProto) -> None:
        size = self.size(value.name, "graph input")
        self.producer[value.name] = self.add(value.name, "input", value.name, (), size)

    def add_node(self, index: int, node: onnx.NodeProto) -> None:
        label = node.name or next((x for x in node.output if x), node.op_type)
        outputs = [x for x in node.output if x]
        size = sum(self.size(x, f"output of node {label!r}") for x in outputs)
        reads = [x for x in node.input if x]
        for inner in _subgraphs(node):
            reads.extend(_outer_names(inner))
        inner_params = _inner_param_bytes(node)
        self.inner_params += inner_params
        if _is_constant(node):
            self.params.update(dict.fromkeys(outputs, size))
            size = 0.0
        alias = _is_identity(node) and self.base(node.input[0]) in self.params
        if alias:
            self.aliases[node.output[0]] = self.base(node.input[0])
            size = 0.0
        flops = node_flops(node, self.shape)
        v = self.add(label, _op_name(node), index, reads, size, inner_params, flops)
        self.producer.update(dict.fromkeys(outputs, v))
        if alias:
            self.alias_nodes.add(v)

    def add_output(self, graph_outputs: Iterable[str]) -> None:
        v = self.add("output", "output", None, graph_outputs, 0.0)
        read = set(self.src)
        for u in range(v):
            if u not in read:
                self.src.append(u)
                self.dst.append(v)

    def to_graph(self, name: str) -> Graph:
        return Graph(
            len(self.labels),
            self.src,
            self.dst,
            mem=self.mem,
            param_mem=self.param_mem,
            op=self.ops,
            names=_unique(self.labels),
            name=name,
            node_data={"flops": np.asarray(self.flops, dtype=np.float64)},
        )


def _build(
    model: onnx.ModelProto,
    types: dict[str, onnx.TypeProto],
    name: str,
    assume_size: float | None,
    sized: _Sized,
) -> OnnxGraph:
    graph = model.graph
    builder = _Builder(graph, types, assume_size)
    for value in graph.input:
        if value.name not in builder.params:  # an input with an initializer is a parameter
            builder.add_input(value)
    for index, node in enumerate(graph.node):
        builder.add_node(index, node)
    builder.add_output(v.name for v in graph.output)
    return OnnxGraph(
        graph=builder.to_graph(name),
        model=model,
        origin=tuple(builder.origin),
        param_bytes=float(sum(builder.params.values()) + builder.inner_params),
        symbolic_sized=sized.symbolic,
        run_sized=sized.run,
        param_aliases=frozenset(builder.alias_nodes),
    )
