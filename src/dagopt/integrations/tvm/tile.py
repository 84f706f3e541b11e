"""Fused conv2d / dense + bias + activation kernels under a tiling, compiled by TVM.

A ``TileKernel`` is one kernel of the tile collection (shapes from the zoo); a ``Tiling``
is one configuration, applied with TVM's schedule primitives (``split``, ``reorder``,
``reverse_compute_at``, ``vectorize``, ``unroll``) to the same tensor expression. The
default configuration (``tiling=None``) is TVM's plain loop nest, the normaliser of the
TpuGraphs tile files (``config_runtime_normalizers``).

Dense: ``out[i, j] = act(sum_k x[i, k] w[j, k] + b[j])``; conv2d (NCHW, OIHW, batch 1):
``out[0, o, y, x] = act(sum_{c, r, s} in[0, c, y*st + r - p, x*st + s - p] w[o, c, r, s] + b[o])``.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dagopt.errors import InputError
from dagopt.integrations.tvm import cpu_target, require_tvm

ACTIVATIONS = ("relu", "gelu")
LOOP_ORDERS = 3
"""Loop orders of a ``Tiling`` (``schedule`` lists them)."""


@dataclass(frozen=True)
class TileKernel:
    """A fused kernel: ``op`` ``"dense"`` (``m`` rows, ``k`` -> ``n`` features) or
    ``"conv2d"`` (``cin`` x ``size`` x ``size`` -> ``cout``, ``kernel`` x ``kernel`` window,
    ``stride``, ``pad``), then bias and ``activation``."""

    op: str
    activation: str
    m: int = 1
    n: int = 1
    k: int = 1
    cin: int = 1
    cout: int = 1
    size: int = 1
    kernel: int = 1
    stride: int = 1
    pad: int = 0

    def __post_init__(self) -> None:
        if self.op not in ("dense", "conv2d"):
            raise InputError(f"unknown kernel op {self.op!r} (dense, conv2d)")
        if self.activation not in ACTIVATIONS:
            raise InputError(f"unknown activation {self.activation!r} ({', '.join(ACTIVATIONS)})")

    @property
    def out_size(self) -> int:
        """Output side of a conv2d."""
        return (self.size + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def output_shape(self) -> tuple[int, ...]:
        if self.op == "dense":
            return (self.m, self.n)
        return (1, self.cout, self.out_size, self.out_size)

    @property
    def reduction_shape(self) -> tuple[int, ...]:
        """Extents of the reduction axes (``k``; or ``cin, kernel, kernel``)."""
        if self.op == "dense":
            return (self.k,)
        return (self.cin, self.kernel, self.kernel)

    @property
    def input_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Shapes of data, weight and bias."""
        if self.op == "dense":
            return (self.m, self.k), (self.n, self.k), (self.n,)
        return (
            (1, self.cin, self.size, self.size),
            (self.cout, self.cin, self.kernel, self.kernel),
            (self.cout,),
        )

    @property
    def macs(self) -> int:
        return int(np.prod(self.output_shape)) * int(np.prod(self.reduction_shape))

    def name(self) -> str:
        if self.op == "dense":
            return f"dense-m{self.m}-n{self.n}-k{self.k}-{self.activation}"
        return (
            f"conv2d-c{self.cin}-o{self.cout}-s{self.size}-k{self.kernel}"
            f"-st{self.stride}-p{self.pad}-{self.activation}"
        )


_KERNEL_NAME = re.compile(
    r"(?:.*\.)?(?:dense-m(?P<m>\d+)-n(?P<n>\d+)-k(?P<k>\d+)"
    r"|conv2d-c(?P<cin>\d+)-o(?P<cout>\d+)-s(?P<size>\d+)-k(?P<kernel>\d+)"
    r"-st(?P<stride>\d+)-p(?P<pad>\d+))-(?P<activation>\w+)$"
)


def kernel_from_name(name: str) -> TileKernel:
    """The kernel named ``name`` (``TileKernel.name``, optionally after ``model.``, as the
    tile collection names its files): the inverse of ``TileKernel.name``."""
    match = _KERNEL_NAME.fullmatch(name)
    if match is None:
        raise InputError(f"{name!r} does not name a tile kernel (dense-m..-n..-k..-act, conv2d-..)")
    sizes = {k: int(v) for k, v in match.groupdict().items() if v and k != "activation"}
    op = "dense" if "m" in sizes else "conv2d"
    return TileKernel(op, match["activation"], **sizes)


@dataclass(frozen=True)
class Tiling:
    """One configuration: tile sizes of the output axes (``output``, one per output axis,
    the batch axis of conv2d included) and of the first reduction axis (``reduction``),
    a loop ``order`` (0..2, ``LOOP_ORDERS``), vectorising the innermost output axis and
    unrolling the innermost reduction axis."""

    output: tuple[int, ...]
    reduction: int
    order: int
    vectorize: bool
    unroll: bool


def _activation(te, value, activation: str):
    if activation == "relu":
        return te.max(value, 0.0)
    # GELU, tanh approximation (GPT-2's gelu_new)
    return 0.5 * value * (1.0 + te.tanh(0.7978845608 * (value + 0.044715 * value * value * value)))


def kernel_function(kernel: TileKernel):
    """The kernel's ``PrimFunc`` (blocks ``"main"`` and ``"epilogue"``)."""
    tvm = require_tvm()
    te = tvm.te
    data_shape, weight_shape, bias_shape = kernel.input_shapes
    data = te.placeholder(data_shape, name="data")
    weight = te.placeholder(weight_shape, name="weight")
    bias = te.placeholder(bias_shape, name="bias")
    if kernel.op == "dense":
        k = te.reduce_axis((0, kernel.k), name="k")
        main = te.compute(
            kernel.output_shape,
            lambda i, j: te.sum(data[i, k] * weight[j, k], axis=k),
            name="main",
        )
        out = te.compute(
            kernel.output_shape,
            lambda i, j: _activation(te, main[i, j] + bias[j], kernel.activation),
            name="epilogue",
        )
    else:
        c = te.reduce_axis((0, kernel.cin), name="c")
        r = te.reduce_axis((0, kernel.kernel), name="r")
        s = te.reduce_axis((0, kernel.kernel), name="s")
        st, pad, size = kernel.stride, kernel.pad, kernel.size

        def conv(n, o, y, x):
            yy, xx = y * st + r - pad, x * st + s - pad
            inside = te.all(yy >= 0, yy < size, xx >= 0, xx < size)
            value = te.if_then_else(inside, data[n, c, yy, xx], 0.0)
            return te.sum(value * weight[o, c, r, s], axis=[c, r, s])

        main = te.compute(kernel.output_shape, conv, name="main")
        out = te.compute(
            kernel.output_shape,
            lambda n, o, y, x: _activation(te, main[n, o, y, x] + bias[o], kernel.activation),
            name="epilogue",
        )
    return te.create_prim_func([data, weight, bias, out])


def check_tiling(kernel: TileKernel, tiling: Tiling) -> None:
    """Raise ``InputError`` unless ``tiling`` fits ``kernel``."""
    shape = kernel.output_shape
    if len(tiling.output) != len(shape) or any(
        not 1 <= t <= d for t, d in zip(tiling.output, shape, strict=True)
    ):
        raise InputError(f"output tile {tiling.output} does not fit the output {shape}")
    if not 1 <= tiling.reduction <= kernel.reduction_shape[0]:
        raise InputError(f"reduction tile {tiling.reduction} exceeds {kernel.reduction_shape[0]}")
    if tiling.order not in range(LOOP_ORDERS):
        raise InputError(f"loop order {tiling.order} outside 0..{LOOP_ORDERS - 1}")


def schedule(kernel: TileKernel, tiling: Tiling | None):
    """The kernel's ``IRModule`` under ``tiling`` (``None``: TVM's default loop nest).

    Output axes split into outer / inner by ``tiling.output``, the first reduction axis
    into outer / inner by ``tiling.reduction``; loops ordered by ``tiling.order``:
    0 ``outer.. reduction_outer inner.. reduction_inner..`` (the inner output tile inside
    each reduction tile), 1 ``outer.. reduction.. inner..`` (the inner output tile
    innermost: it can be vectorised), 2 ``outer.. inner.. reduction..`` (one output
    element's whole reduction at a time). The innermost loop is unrolled on request. The
    epilogue (bias, activation) is fused under the outer output loops.
    """
    tvm = require_tvm()
    mod = tvm.IRModule({"main": kernel_function(kernel)})
    if tiling is None:
        return mod
    check_tiling(kernel, tiling)
    sch = tvm.s_tir.Schedule(mod)
    block = sch.get_sblock("main")
    loops = sch.get_loops(block)
    rank = len(kernel.output_shape)
    outer, inner = [], []
    for loop, tile in zip(loops[:rank], tiling.output, strict=True):
        o, i = sch.split(loop, [None, tile])
        outer.append(o)
        inner.append(i)
    r_outer, r_inner = sch.split(loops[rank], [None, tiling.reduction])
    rest = list(loops[rank + 1 :])
    if tiling.order == 0:
        order = [*outer, r_outer, *inner, r_inner, *rest]
    elif tiling.order == 1:
        order = [*outer, r_outer, r_inner, *rest, *inner]
    else:
        order = [*outer, *inner, r_outer, r_inner, *rest]
    sch.reorder(*order)
    if tiling.vectorize and tiling.order == 1:
        sch.vectorize(inner[-1])
    if tiling.unroll:
        sch.unroll(order[-1] if tiling.order != 1 else (rest or [r_inner])[-1])
    sch.reverse_compute_at(sch.get_sblock("epilogue"), outer[-1])
    return sch.mod


def compile_kernel(kernel: TileKernel, tiling: Tiling | None):
    """The compiled kernel (``tvm.compile`` on the one-core LLVM target); call ``["main"]``."""
    tvm = require_tvm()
    return tvm.compile(schedule(kernel, tiling), target=cpu_target())


def random_inputs(kernel: TileKernel, seed: int = 0) -> list[np.ndarray]:
    """Data, weight and bias (float32, uniform in [-1, 1]) and a zero output."""
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in kernel.input_shapes]
    return [*arrays, np.zeros(kernel.output_shape, dtype=np.float32)]


def reference(kernel: TileKernel, data, weight, bias) -> np.ndarray:
    """The kernel's output computed by numpy (float64), for checks."""
    data, weight, bias = (np.asarray(a, dtype=np.float64) for a in (data, weight, bias))
    if kernel.op == "dense":
        value = data @ weight.T + bias
    else:
        p, st, kk = kernel.pad, kernel.stride, kernel.kernel
        padded = np.pad(data, ((0, 0), (0, 0), (p, p), (p, p)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (kk, kk), axis=(2, 3))
        windows = windows[:, :, ::st, ::st]
        value = np.einsum("ncyxrs,ocrs->noyx", windows, weight) + bias[None, :, None, None]
    if kernel.activation == "relu":
        return np.maximum(value, 0.0)
    return 0.5 * value * (1.0 + np.tanh(0.7978845608 * (value + 0.044715 * value**3)))


def bound_program(executable, arrays: list[np.ndarray]) -> tuple[Callable[[], object], list]:
    """A zero-argument call of ``executable["main"]`` on device copies of ``arrays``;
    returns it and the device tensors (the last one is the output)."""
    tvm = require_tvm()
    device = tvm.cpu(0)
    tensors = [tvm.runtime.tensor(a, device) for a in arrays]
    function = executable["main"]
    return (lambda: function(*tensors)), tensors
