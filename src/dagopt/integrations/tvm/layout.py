"""Small conv / dot / reshape programs compiled by TVM under physical tensor layouts.

A ``LayoutGraph`` lists ops in topological order: parameters, ``convolution`` (NCHW data,
OIHW kernel, batch 1), ``dot`` (an einsum ``spec`` such as ``"mk,kn->mn"`` or
``"ihd,jhd->hij"``, batch dimensions included) and ``reshape`` (row-major). A
``LayoutConfig`` gives every configurable op (conv, dot, reshape; paper 002, 2.2.1)
the physical layouts of its output, its first operand and (conv only) its kernel, as
XLA minor-to-major dimension orders. ``program`` realises a configuration as real TVM
code: each op computes over its output's physical index space and reads each operand
through that operand's layout; where a chosen operand layout differs from the layout its
producer wrote, a copy (a transpose in memory) converts it, as XLA's layout assignment
inserts copies. A reshape whose operand and output are both row-major is a bitcast (no
code); the graph's result is converted back to row-major. Parameters are row-major.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import permutations

import numpy as np

from dagopt.errors import InputError
from dagopt.integrations.tvm import compile_functions, require_tvm

Layout = tuple[int, ...]
"""Minor-to-major dimension order: ``(1, 0)`` is row-major for a matrix."""

KINDS = ("parameter", "convolution", "dot", "reshape")
CONFIGURABLE = ("convolution", "dot", "reshape")


def row_major(rank: int) -> Layout:
    """The default layout ``(rank-1, ..., 0)``."""
    return tuple(range(rank - 1, -1, -1))


def all_layouts(rank: int) -> list[Layout]:
    """Every minor-to-major order of a rank-``rank`` tensor."""
    return [tuple(p) for p in permutations(range(rank))]


def physical_shape(shape: Sequence[int], layout: Layout) -> tuple[int, ...]:
    """The buffer's shape, major to minor."""
    return tuple(shape[d] for d in reversed(layout))


@dataclass(frozen=True)
class LayoutOp:
    """One op: ``kind``, logical output ``shape``, operand op indices; ``spec`` for a dot,
    ``stride`` / ``pad`` for a convolution."""

    kind: str
    shape: tuple[int, ...]
    inputs: tuple[int, ...] = ()
    spec: str = ""
    stride: int = 1
    pad: int = 0

    @property
    def configurable(self) -> bool:
        return self.kind in CONFIGURABLE


@dataclass(frozen=True)
class LayoutGraph:
    """Ops in topological order; the last one is the result."""

    name: str
    ops: tuple[LayoutOp, ...]

    def __post_init__(self) -> None:
        for index, op in enumerate(self.ops):
            if op.kind not in KINDS:
                raise InputError(f"{self.name}: unknown op kind {op.kind!r}")
            if any(not 0 <= i < index for i in op.inputs):
                raise InputError(f"{self.name}: op {index} reads an op that is not before it")

    @property
    def configurable_ids(self) -> list[int]:
        return [i for i, op in enumerate(self.ops) if op.configurable]

    def ranks(self, index: int) -> tuple[int, int, int]:
        """Ranks of the output, first operand and kernel (0: none) of op ``index``."""
        op = self.ops[index]
        first = len(self.ops[op.inputs[0]].shape) if op.inputs else 0
        kernel = len(self.ops[op.inputs[1]].shape) if op.kind == "convolution" else 0
        return len(op.shape), first, kernel

    def default_config(self) -> "LayoutConfig":
        """Every tensor row-major."""
        return tuple(
            tuple(row_major(r) if r else () for r in self.ranks(i)) for i in self.configurable_ids
        )


LayoutConfig = tuple[tuple[Layout, Layout, Layout], ...]
"""Per configurable op (in ``configurable_ids`` order): output, first operand and kernel
layouts (``()`` where the op has no kernel)."""


def random_config(graph: LayoutGraph, rng: np.random.Generator) -> LayoutConfig:
    """Layouts drawn uniformly, independently for every tensor of every configurable op."""
    return tuple(
        tuple(tuple(int(d) for d in rng.permutation(r)) if r else () for r in graph.ranks(i))
        for i in graph.configurable_ids
    )


# ---------------------------------------------------------------- tensor expressions
def _read(tensor, layout: Layout, index: Sequence):
    return tensor[tuple(index[d] for d in reversed(layout))]


def _logical(physical: Sequence, layout: Layout) -> list:
    """Logical index from a physical (major-to-minor) one."""
    major_to_minor = list(reversed(layout))
    return [physical[major_to_minor.index(d)] for d in range(len(layout))]


DATA_PARALLEL = 0
"""``IterVar.iter_type`` of a data-parallel (not a reduction) block variable."""
VECTOR_LANES = 32
"""Most lanes of the vectorised minor loop (32 float32: four AVX2 registers, the
contiguous case unrolled; a gather gains nothing from it)."""


def _vectorized(function):
    """``function`` with its compute block's minor output loop innermost, split by the
    largest of 32, 16, 8, 4, 2 dividing it and that part vectorised: the loop nest an XLA emitter
    gives a layout, the minor dimension in the vector lanes. Operands whose minor
    dimension is the same one load contiguous vectors; the others gather."""
    tvm = require_tvm()
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": function}), enable_check=False)
    block = sch.get_sblock("compute")
    loops = sch.get_loops(block)
    rank = sum(1 for v in sch.get(block).iter_vars if v.iter_type == DATA_PARALLEL)
    extent = int(sch.get(loops[rank - 1]).extent)
    lanes = next(w for w in (VECTOR_LANES, 16, 8, 4, 2, 1) if extent % w == 0)
    outer, inner = sch.split(loops[rank - 1], [None, lanes])
    if rank < len(loops):  # reductions between the outer minor part and the lanes
        sch.reorder(outer, *loops[rank:], inner)
        sch.decompose_reduction(block, loops[rank])
    sch.vectorize(inner)
    return sch.mod["main"]


def _copy_function(shape: tuple[int, ...], source: Layout, target: Layout):
    te = require_tvm().te
    src = te.placeholder(physical_shape(shape, source), name="src")
    out = te.compute(
        physical_shape(shape, target),
        lambda *p: _read(src, source, _logical(p, target)),
        name="compute",
    )
    return _vectorized(te.create_prim_func([src, out]))


def _op_function(graph: LayoutGraph, index: int, layouts: tuple[Layout, ...], out: Layout):
    """The ``PrimFunc`` of op ``index`` reading its operands in ``layouts``, writing ``out``."""
    te = require_tvm().te
    op = graph.ops[index]
    args = [
        te.placeholder(physical_shape(graph.ops[i].shape, lay), name=f"in{k}")
        for k, (i, lay) in enumerate(zip(op.inputs, layouts, strict=True))
    ]
    if op.kind == "convolution":
        body = _convolution(te, graph, op, args, layouts)
    elif op.kind == "dot":
        body = _dot(te, graph, op, args, layouts)
    else:
        body = _reshape(te, graph, op, args[0], layouts[0])
    result = te.compute(
        physical_shape(op.shape, out), lambda *p: body(_logical(p, out)), name="compute"
    )
    return _vectorized(te.create_prim_func([*args, result]))


def _convolution(te, graph, op, args, layouts):
    data, kernel = args
    _, channels, side, _ = graph.ops[op.inputs[0]].shape
    window = graph.ops[op.inputs[1]].shape[2]
    c = te.reduce_axis((0, channels), name="c")
    r = te.reduce_axis((0, window), name="r")
    s = te.reduce_axis((0, window), name="s")

    def body(idx):
        n, o, y, x = idx
        yy, xx = y * op.stride + r - op.pad, x * op.stride + s - op.pad
        inside = te.all(yy >= 0, yy < side, xx >= 0, xx < side)
        value = te.if_then_else(inside, _read(data, layouts[0], (n, c, yy, xx)), 0.0)
        return te.sum(value * _read(kernel, layouts[1], (o, c, r, s)), axis=[c, r, s])

    return body


def _dot(te, graph, op, args, layouts):
    operands, output = op.spec.split("->")
    lhs, rhs = operands.split(",")
    extents = {}
    for letters, i in ((lhs, op.inputs[0]), (rhs, op.inputs[1])):
        extents.update(zip(letters, graph.ops[i].shape, strict=True))
    reduced = [ch for ch in dict.fromkeys(lhs + rhs) if ch not in output]
    axes = {ch: te.reduce_axis((0, extents[ch]), name=ch) for ch in reduced}

    def body(idx):
        at = dict(zip(output, idx, strict=True)) | axes
        a = _read(args[0], layouts[0], [at[ch] for ch in lhs])
        b = _read(args[1], layouts[1], [at[ch] for ch in rhs])
        return te.sum(a * b, axis=list(axes.values()))

    return body


def _reshape(te, graph, op, data, layout):
    source = graph.ops[op.inputs[0]].shape

    def body(idx):
        flat = 0
        for i, extent in zip(idx, op.shape, strict=True):
            flat = flat * extent + i
        index = []
        for extent in reversed(source):
            index.append(te.floormod(flat, extent))
            flat = te.floordiv(flat, extent)
        return _read(data, layout, index[::-1])

    return body


# ---------------------------------------------------------------- programs
Call = tuple[tuple, tuple[tuple[int, Layout], ...]]
"""A function key and its buffers, each ``(op index, layout)``; the last one is written."""


def program_calls(graph: LayoutGraph, config: LayoutConfig) -> list[Call]:
    """The calls that run ``graph`` under ``config``: copies and ops, in order."""
    chosen = dict(zip(graph.configurable_ids, config, strict=True))
    placed: dict[int, Layout] = {}
    calls: list[Call] = []

    def operand(i: int, want: Layout) -> tuple[int, Layout]:
        have = placed[i]
        if want != have:
            calls.append((("copy", graph.ops[i].shape, have, want), ((i, have), (i, want))))
        return (i, want)

    for index, op in enumerate(graph.ops):
        if op.kind == "parameter":
            placed[index] = row_major(len(op.shape))
            continue
        out_layout, first, kernel = chosen[index]
        wanted = [first] + [kernel or placed[i] for i in op.inputs[1:]]
        buffers = tuple(operand(i, w) for i, w in zip(op.inputs, wanted, strict=True))
        placed[index] = out_layout
        bitcast = (
            op.kind == "reshape"
            and first == row_major(len(first))
            and out_layout == row_major(len(out_layout))
        )
        if bitcast:
            calls.append((("bitcast",), (buffers[0], (index, out_layout))))
            continue
        key = ("op", index, tuple(b[1] for b in buffers), out_layout)
        calls.append((key, (*buffers, (index, out_layout))))
    last = len(graph.ops) - 1
    operand(last, row_major(len(graph.ops[last].shape)))
    return calls


def _function(graph: LayoutGraph, key: tuple):
    if key[0] == "copy":
        return _copy_function(*key[1:])
    return _op_function(graph, *key[1:])


class LayoutPrograms:
    """Compiled programs of one graph: ``add(configs)`` compiles the functions the new
    configurations need (one batch), ``runner(config)`` returns a zero-argument call that
    runs the whole program, ``result(config)`` its row-major output after a run."""

    def __init__(self, graph: LayoutGraph, seed: int = 0) -> None:
        self.graph = graph
        self._tvm = require_tvm()
        self._device = self._tvm.cpu(0)
        self._functions: dict[tuple, Callable] = {}
        self._buffers: dict[tuple[int, Layout], object] = {}
        rng = np.random.default_rng(seed)
        for index, op in enumerate(graph.ops):
            if op.kind == "parameter":
                value = rng.uniform(-1, 1, size=op.shape).astype(np.float32)
                self._buffers[(index, row_major(len(op.shape)))] = self._tensor(value)

    def _tensor(self, array: np.ndarray):
        return self._tvm.runtime.tensor(array, self._device)

    def parameters(self) -> list[np.ndarray]:
        """The parameters' values (row-major), in op order."""
        return [
            self._buffers[(i, row_major(len(op.shape)))].numpy()
            for i, op in enumerate(self.graph.ops)
            if op.kind == "parameter"
        ]

    def add(self, configs: Sequence[LayoutConfig]) -> None:
        """Compile (in one batch) the functions ``configs`` need that are not compiled yet."""
        keys = {
            key
            for config in configs
            for key, _ in program_calls(self.graph, config)
            if key[0] != "bitcast" and key not in self._functions
        }
        if not keys:
            return
        ordered = sorted(keys, key=repr)
        names = {f"f{len(self._functions) + k}": key for k, key in enumerate(ordered)}
        executable = compile_functions(
            {name: _function(self.graph, key) for name, key in names.items()}
        )
        for name, key in names.items():
            self._functions[key] = executable[name]

    def _buffer(self, op: int, layout: Layout):
        if (op, layout) not in self._buffers:
            shape = physical_shape(self.graph.ops[op].shape, layout)
            self._buffers[(op, layout)] = self._tensor(np.zeros(shape, dtype=np.float32))
        return self._buffers[(op, layout)]

    def runner(self, config: LayoutConfig) -> Callable[[], None]:
        """Run the whole program under ``config`` (its functions must have been added)."""
        steps = []
        for key, buffers in program_calls(self.graph, config):
            if key[0] == "bitcast":  # the output aliases the operand's bytes
                source, target = buffers
                self._buffers[target] = self._buffer(*source)._create_view(
                    physical_shape(self.graph.ops[target[0]].shape, target[1])
                )
                continue
            steps.append((self._functions[key], [self._buffer(*b) for b in buffers]))

        def run() -> None:
            for function, args in steps:
                function(*args)

        return run

    def result(self) -> np.ndarray:
        """The graph's row-major output (after a run)."""
        last = len(self.graph.ops) - 1
        return self._buffer(last, row_major(len(self.graph.ops[last].shape))).numpy()


def reference(graph: LayoutGraph, parameters: Sequence[np.ndarray]) -> np.ndarray:
    """The graph's output computed by numpy (float64), for checks."""
    values: dict[int, np.ndarray] = {}
    given = iter(parameters)
    for index, op in enumerate(graph.ops):
        if op.kind == "parameter":
            values[index] = np.asarray(next(given), dtype=np.float64)
        elif op.kind == "reshape":
            values[index] = values[op.inputs[0]].reshape(op.shape)
        elif op.kind == "dot":
            values[index] = np.einsum(op.spec, *(values[i] for i in op.inputs))
        else:
            data, kernel = (values[i] for i in op.inputs)
            p, st, kk = op.pad, op.stride, kernel.shape[2]
            padded = np.pad(data, ((0, 0), (0, 0), (p, p), (p, p)))
            windows = np.lib.stride_tricks.sliding_window_view(padded, (kk, kk), axis=(2, 3))
            values[index] = np.einsum("ncyxrs,ocrs->noyx", windows[:, :, ::st, ::st], kernel)
    return values[len(graph.ops) - 1]
