"""What Inductor's extern kernels allocate inside themselves while they run, measured.

Inductor's peak estimate (``estimate_peak_memory``) counts the buffers its scheduler
nodes allocate. An extern kernel (an ATen call the generated code makes: a
convolution, its backward, ``mm``) may also allocate temporaries inside itself and free
them before it returns (a copy of an input in the memory format the kernel wants,
column buffers), which the estimate leaves out. ``extern_workspaces(kernels)``
measures them: each extern kernel's ATen call is rebuilt from its arguments as the
generated code passes them and run once on fresh tensors of Inductor's layouts of its
inputs (and of its output buffer, for a kernel that writes into one): sizes at
Inductor's size hints, strides, dtypes and device, random floats and zero integers (so
indices stay in range), the global random state restored afterwards. Its workspace is
``transient_bytes`` (``dagopt.integrations.torch_compile``) of the call: the most bytes
live during it beyond those live before, less those its results hold when it returns.
How much a kernel allocates can depend on the process's thread settings and caches; it
is measured in the process that compiles, and so runs, the code. Calls of the same
signature run once. A kernel whose call cannot be rebuilt or raises, or that runs on a
device other than the CPU (the measurement reads the CPU allocator), is listed in
``ExternWorkspaces.unmeasured`` with the reason; so is every extern kernel of a graph
compiled while a PyTorch profiler session runs (a code's first call measured by
``measured_peak``, say), which a measurement would end.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dagopt.integrations.torch_compile import profiler_running, transient_bytes

#: Why nothing is measured while a profiler session runs.
PROFILER_RUNNING = "a PyTorch profiler session is running, which a measurement would end"


@dataclass(frozen=True)
class ExternWorkspaces:
    """``bytes``: kernel name -> its measured workspace (bytes), for every extern kernel
    measured; ``unmeasured``: ``(kernel name, reason)`` for the others."""

    bytes: dict[str, int]
    unmeasured: tuple[tuple[str, str], ...]


def extern_workspaces(kernels: Sequence[Any]) -> ExternWorkspaces:
    """The workspaces of the extern kernels among Inductor's scheduler nodes ``kernels``
    (module docstring); runs while Inductor compiles them (it reads ``V.graph``'s size
    hints)."""
    import torch
    from torch._inductor.scheduler import ExternKernelSchedulerNode
    from torch.utils._pytree import tree_flatten

    calls: dict[tuple, Callable[[], Callable[[], Any]]] = {}
    failures: dict[tuple, str] = {}
    signature_of: dict[str, tuple] = {}
    unmeasured: list[tuple[str, str]] = []
    # not a generated kernel, nor an extern node that calls nothing (MultiOutput)
    externs = [
        kernel
        for kernel in kernels
        if isinstance(kernel, ExternKernelSchedulerNode) and kernel.node.op_overload is not None
    ]
    if profiler_running():
        unmeasured = [(kernel.get_name(), PROFILER_RUNNING) for kernel in externs]
        return ExternWorkspaces(bytes={}, unmeasured=tuple(unmeasured))
    for kernel in externs:
        name = kernel.get_name()
        try:
            op, args, kwargs = _aten_call(kernel.node)
        except _Unmeasurable as reason:
            unmeasured.append((name, str(reason)))
            continue
        leaves, structure = tree_flatten((args, kwargs))
        signature = (str(op), str(structure), tuple(map(_hashable, leaves)))
        signature_of[name] = signature
        if signature not in calls:
            calls[signature] = _prepared_call(op, args, kwargs, failures, signature)
    with torch.random.fork_rng(devices=[]):
        measured = dict(zip(calls, transient_bytes(list(calls.values())), strict=True))
    workspaces = {}
    for name, signature in signature_of.items():
        if signature in failures:
            unmeasured.append((name, failures[signature]))
        else:
            workspaces[name] = measured[signature]
    return ExternWorkspaces(bytes=workspaces, unmeasured=tuple(unmeasured))


class _Unmeasurable(Exception):
    """Why an extern kernel's workspace cannot be measured."""


@dataclass(frozen=True)
class _TensorSpec:
    """A tensor argument: what a fresh tensor for it needs."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: Any
    device: Any


def _aten_call(node: Any) -> tuple[Any, Any, dict[str, Any]]:
    """``(op, args, kwargs)`` of an extern kernel's ATen call as the generated code makes
    it, tensors as ``_TensorSpec`` of Inductor's own layouts: a fallback kernel's
    arguments unflattened as it unflattens them; any other's inputs, then its constant
    arguments and keyword arguments, and for one that writes into a buffer it was given
    (``ExternKernelOut``), that buffer as ``out``."""
    import torch
    from torch._inductor.ir import ExternKernelAlloc, ExternKernelOut, FallbackKernel
    from torch.utils._pytree import tree_leaves

    op = node.op_overload
    if not isinstance(op, torch._ops.OpOverload):
        raise _Unmeasurable(f"calls no ATen operator ({type(node).__name__})")
    specs = [_spec_of_buffer(inp) for inp in node.inputs]
    if isinstance(node, FallbackKernel):
        args, kwargs = node.unflatten_args(specs, node.constant_args)
        call = (op, args, dict(kwargs))
    elif isinstance(node, (ExternKernelOut, ExternKernelAlloc)):
        kwargs = dict(node.kwargs)
        if isinstance(node, ExternKernelOut):
            kwargs["out"] = _spec_of_buffer(node)
        call = (op, [*specs, *node.constant_args], kwargs)
    else:
        raise _Unmeasurable(f"an extern kernel of kind {type(node).__name__}")
    tensors = [leaf for leaf in tree_leaves(call[1:]) if isinstance(leaf, _TensorSpec)]
    devices = {tensor.device.type for tensor in tensors} - {"cpu"}
    if devices:
        raise _Unmeasurable(f"runs on {', '.join(sorted(devices))}, not the CPU")
    return call


def _hints(sizes: Sequence[Any]) -> tuple[int, ...]:
    """Inductor's size hints of ``sizes`` (ints, sympy expressions or SymInts)."""
    import torch
    from torch._inductor.virtualized import V

    exprs = [s.node.expr if isinstance(s, torch.SymInt) else s for s in sizes]
    return tuple(V.graph.sizevars.optimization_hints(exprs))


def _spec_of_buffer(buffer: Any) -> _TensorSpec:
    return _TensorSpec(
        _hints(buffer.get_size()),
        _hints(buffer.get_stride()),
        buffer.get_dtype(),
        buffer.get_device(),
    )


def _prepared_call(
    op: Any, args: Any, kwargs: dict[str, Any], failures: dict[tuple, str], signature: tuple
) -> Callable[[], Callable[[], Any]]:
    """What ``transient_bytes`` runs: makes fresh tensors for ``args`` and ``kwargs`` and
    returns ``op``'s call on them, which records in ``failures`` why it raised, if it
    does."""

    def prepare() -> Callable[[], Any]:
        from torch.utils._pytree import tree_map

        real_args, real_kwargs = tree_map(_fresh, (args, kwargs))

        def call() -> Any:
            try:
                return op(*real_args, **real_kwargs)
            except RuntimeError as error:
                failures[signature] = f"{op} raised {str(error).splitlines()[0]}"
                return None

        return call

    return prepare


def _hashable(leaf: Any) -> Any:
    return leaf if isinstance(leaf, _TensorSpec) else repr(leaf)


def _fresh(leaf: Any) -> Any:
    """A fresh tensor for a ``_TensorSpec`` (random floats, zero integers, as Inductor's
    own benchmark harness makes them); any other argument as it is."""
    from torch._dynamo.testing import rand_strided

    if not isinstance(leaf, _TensorSpec):
        return leaf
    return rand_strided(leaf.shape, leaf.stride, leaf.dtype, leaf.device)
