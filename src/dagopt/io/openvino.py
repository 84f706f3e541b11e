"""OpenVINO models in (paper 004 places OpenVINO computation graphs).

``read_openvino`` reads an IR (``.xml`` with its ``.bin``) and ``convert_openvino``
converts what ``openvino.convert_model`` takes (an ONNX file, a PyTorch module with an
example input); ``graph_from_openvino`` turns the ``openvino.Model`` into a ``Graph``:

- one node per op, in OpenVINO's topological order (``get_ordered_ops``), ``op`` its
  type (``Convolution``, ``MatMul``, ``Parameter``, ``Result``...);
- constant ops (``Constant``, and any op all of whose inputs are constant, such as the
  ``Convert`` that decompresses f16 weights) are no nodes: their output bytes become
  ``param_mem`` of each op that reads them, like a weight held while the op runs;
- ``mem`` is the bytes of the op's outputs (static shapes times element sizes);
  ``node_data["output_shape"]`` the first output's shape, zero-padded to the longest
  rank (paper 004's node-specific feature), ``node_data["flops"]`` the FLOPs of
  ``Convolution``, ``GroupConvolution``, ``MatMul`` and ``ScaledDotProductAttention``
  (multiply-adds counted as 2), 0 for other ops;
- an edge for every tensor one kept op reads from another (once per pair).

OpenVINO is the optional extra ``dagopt[openvino]``; it is imported on first use. A
dynamic dimension, an unreadable file or a missing package is a one-line ``InputError``.
"""

import logging
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.core import BEYOND_FLOAT_RANGE

#: Node data key of the zero-padded output shape (read by ``dagopt.nn.hsdag.features``).
SHAPE_KEY = "output_shape"


def _openvino() -> Any:
    try:
        import openvino
    except ImportError:
        raise InputError(
            "reading OpenVINO models needs the openvino package: pip install 'dagopt[openvino]'"
        ) from None
    return openvino


def read_openvino(path: str | os.PathLike) -> Graph:
    """The ``Graph`` of the OpenVINO IR ``path`` (``.xml``; its ``.bin`` beside it)."""
    model = read_openvino_model(path)
    try:
        return graph_from_openvino(model, name=Path(path).stem)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def read_openvino_model(path: str | os.PathLike) -> Any:
    """The ``openvino.Model`` of the IR ``path``: an ``InputError`` if it is missing, not
    well-formed XML, not an IR (root ``<net>``) or refused by OpenVINO. Only an IR reaches
    OpenVINO: other files would make its frontends probe them and log natively to stderr."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    try:
        root = ElementTree.parse(file).getroot()
    except ElementTree.ParseError as exc:
        raise InputError(f"{file}: not an OpenVINO IR (malformed XML: {exc})") from None
    if root.tag != "net":
        raise InputError(f"{file}: not an OpenVINO IR (root element <{root.tag}>, not <net>)")
    ov = _openvino()
    try:
        return ov.Core().read_model(str(file))
    except RuntimeError as exc:
        raise InputError(f"{file}: not a readable OpenVINO model ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
    """OpenVINO's message without its ``Exception from FILE:LINE:`` chain, on one line,
    cut at a word near 240 characters."""
    text = " ".join(re.sub(r"Exception from \S+:\d+:", " ", str(exc)).split())
    return text if len(text) <= 240 else text[:240].rsplit(" ", 1)[0] + " ..."


def convert_openvino(source: Any, **options: Any) -> Any:
    """``openvino.convert_model(source, **options)``: an ``openvino.Model`` from an ONNX
    file, a PyTorch module (with ``example_input=``) or what else OpenVINO converts.
    Given ``example_input`` (a tensor or a tuple of them) and no ``input``, the inputs
    get the example's static shapes (OpenVINO would leave them dynamic). The warnings
    and log lines of the tracing inside (torch.jit's, transformers') are not shown: a
    user can act on none of them."""
    ov = _openvino()
    example = options.get("example_input")
    if example is not None and "input" not in options:
        tensors = example if isinstance(example, tuple | list) else (example,)
        options["input"] = [ov.PartialShape(list(t.shape)) for t in tensors]
    library_log = logging.getLogger("transformers")  # it logs while a model is traced
    level = library_log.level
    try:
        library_log.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ov.convert_model(source, **options)
    except (RuntimeError, ValueError, TypeError, OSError) as exc:
        if "KeyboardInterrupt" in str(exc):  # Ctrl-C, passed through OpenVINO's C++ as text
            raise KeyboardInterrupt from None
        raise InputError(f"OpenVINO cannot convert {source!r:.80}: {_reason(exc)}") from None
    finally:
        library_log.setLevel(level)


def _shape(output: Any, op: Any) -> list[int]:
    shape = output.get_partial_shape()
    if shape.is_dynamic:
        raise InputError(
            f"op {op.get_friendly_name()!r} ({op.get_type_name()}) has the dynamic shape "
            f"{shape}; reshape the model to static shapes first"
        )
    return [int(d) for d in shape.to_shape()]


def _bytes(output: Any, op: Any) -> float:
    return float(math.prod(_shape(output, op))) * output.get_element_type().size


def _flops(op: Any) -> float:
    """Multiply-adds (x 2) of the ops whose cost is dominated by them."""
    kind = op.get_type_name()
    out = _shape(op.output(0), op)
    if kind in ("Convolution", "GroupConvolution"):
        weights = _shape(op.input(1).get_source_output(), op)
        # Convolution weights: (C_out, C_in, k...); GroupConvolution: (G, C_out/G, C_in/G, k...)
        per_output = math.prod(weights[2:] if kind == "GroupConvolution" else weights[1:])
        return 2.0 * math.prod(out) * per_output
    if kind == "MatMul":
        a = _shape(op.input(0).get_source_output(), op)
        attributes = op.get_attributes()
        inner = a[-2] if attributes.get("transpose_a") and len(a) > 1 else a[-1]
        return 2.0 * math.prod(out) * inner
    if kind == "ScaledDotProductAttention":
        query = _shape(op.input(0).get_source_output(), op)
        key = _shape(op.input(1).get_source_output(), op)
        # Q K^T and (softmax) V: 2 * (..., L, S, E) multiply-adds each.
        return 4.0 * math.prod(query) * key[-2]
    return 0.0


def placeable_ops(model: Any) -> tuple[list[Any], list[Any]]:
    """The ops of ``model`` that become graph nodes, in the graph's node order, and its
    constant ops (module docstring), both in OpenVINO's topological order."""
    constant: set[int] = set()
    kept, folded = [], []
    for op in model.get_ordered_ops():
        sources = [i.get_source_output().get_node() for i in op.inputs()]
        is_constant = op.get_type_name() == "Constant" or (
            sources and all(id(s) in constant for s in sources)
        )
        if is_constant and op.get_type_name() not in ("Parameter", "Result"):
            constant.add(id(op))
            folded.append(op)
        else:
            kept.append(op)
    return kept, folded


def graph_from_openvino(model: Any, *, name: str | None = None) -> Graph:
    """The ``Graph`` of an ``openvino.Model`` (module docstring)."""
    try:
        return _graph(model, name)
    except OverflowError:  # a size or FLOP count of dimensions beyond the float range
        raise InputError(BEYOND_FLOAT_RANGE) from None


def _graph(model: Any, name: str | None) -> Graph:
    kept, folded = placeable_ops(model)
    constant = {id(op) for op in folded}
    index = {id(op): v for v, op in enumerate(kept)}
    n = len(kept)
    mem, param, flops = np.zeros(n), np.zeros(n), np.zeros(n)
    shapes: list[list[int]] = []
    edges: set[tuple[int, int]] = set()
    for v, op in enumerate(kept):
        mem[v] = sum(_bytes(output, op) for output in op.outputs())
        shapes.append(_shape(op.output(0), op) if op.get_output_size() else [])
        flops[v] = _flops(op)
        for port in op.inputs():
            source = port.get_source_output()
            producer = source.get_node()
            if id(producer) in constant:
                param[v] += _bytes(source, producer)
            else:
                edges.add((index[id(producer)], v))
    rank = max((len(s) for s in shapes), default=0)
    output_shape = np.zeros((n, rank))
    for v, shape in enumerate(shapes):
        output_shape[v, : len(shape)] = shape
    names, seen = [], {}
    for op in kept:  # friendly names are not always unique: later copies get "#k"
        base = op.get_friendly_name()
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base] - 1}")
    pairs = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
    return Graph(
        n,
        pairs[:, 0],
        pairs[:, 1],
        mem=mem,
        param_mem=param,
        op=[op.get_type_name() for op in kept],
        names=names,
        name=name or model.get_friendly_name(),
        node_data={"flops": flops, SHAPE_KEY: output_shape},
    )
