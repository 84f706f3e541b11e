"""Measured peak memory of ``torch.compile``d code on the CPU.

Inductor's generated code allocates its buffers outside the dispatcher
(``empty_strided_cpu``), where a ``TorchDispatchMode`` (``dagopt.integrations.torch``'s
``measure_peak``) does not see them; the CPU allocator reports every allocation and
free to the PyTorch profiler, though. ``measured_peak(run)`` runs ``run()`` under the
profiler with ``profile_memory=True`` and returns the largest number of bytes of CPU
memory live during the run beyond what was live before it: the allocator's own
account, every tensor of the run included (Inductor's buffers, extern kernels' outputs,
autograd's saved tensors and gradients). ``transient_bytes(prepared)`` measures, the same
way, what each of several calls allocates and frees again before it returns (what
``dagopt.integrations.extern_kernels`` reads of Inductor's extern kernels). The profiler
runs one session at a time, and a session started inside another ends both: each
measurement refuses to start while one runs (``profiler_running``) and checks that its
session saw the whole run, so a cut session is an error, never a peak of 0.

``training_step(module, inputs)`` is the step ``graph_from_module(mode="training")``
traces (``eager_training_step``: ``TrainingLoss``, the sum of the outputs, then
``backward``), its loss compiled; ``channels_last_weights(module)`` gives a model's
weights the layout in which Inductor returns their gradients.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dagopt.integrations.torch import eager_training_step
from dagopt.io.torch import TrainingLoss


def measured_peak(run: Callable[[], Any]) -> int:
    """Peak bytes of CPU memory live during ``run()`` above what was live before it, by
    the allocator's reports to the PyTorch profiler (module docstring)."""
    return peak_site(run).peak


@dataclass(frozen=True)
class PeakSite:
    """What ``peak_site`` measured of a run: its peak (``measured_peak``), where the run
    was when it reached it (one of ``REGIONS``, and ``operator``: the outermost ATen
    operator running then, such as an extern kernel's ``aten::convolution_backward``;
    empty in generated code or between calls) and the bytes autograd's gradient
    accumulation allocated, per ``AccumulateGrad`` call that allocated: a gradient
    copied into its parameter's layout (``param.grad`` must have it), made while every
    gradient the compiled backward returned is alive."""

    peak: int
    region: str
    operator: str
    gradient_copies: tuple[int, ...]


#: Where a run can reach its peak: inside ``AccumulateGrad`` (``.grad`` being set), a
#: compiled backward graph, another compiled graph (a forward or inference graph), or
#: outside them all (eager code, the loss, autograd's engine).
REGIONS = ("gradient accumulation", "backward graph", "compiled graph", "outside compiled graphs")
#: The profiler's names of those regions' calls, innermost first (a compiled graph's
#: call is named ``## Call CompiledFxGraph <key> ##``).
_ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
_REGION_CALLS = (
    (_ACCUMULATE_GRAD, REGIONS[0]),
    ("CompiledFunctionBackward", REGIONS[1]),
    ("## Call CompiledFxGraph", REGIONS[2]),
)


def peak_site(run: Callable[[], Any]) -> PeakSite:
    """Run ``run()`` under the profiler: its measured peak, the region and operator it was
    in then and the gradient copies of ``PeakSite`` (the profiler's records of the
    calls)."""
    import torch

    with _memory_profiler() as profiler, torch.profiler.record_function(_WHOLE_RUN):
        run()
    calls, memory = _recorded(profiler, [_WHOLE_RUN])
    live = peak = 0
    peak_ns = None
    for time_ns, nbytes in memory:
        live += nbytes
        if live > peak:
            peak, peak_ns = live, time_ns
    times = [time_ns for time_ns, _ in memory]
    copies = []
    for name, began, ended in calls:
        if name.startswith(_ACCUMULATE_GRAD):
            window = memory[bisect_left(times, began) : bisect_right(times, ended)]
            allocated = sum(nbytes for _, nbytes in window if nbytes > 0)
            if allocated:
                copies.append((began, allocated))
    at_peak = [call for call in calls if peak_ns is not None and call[1] <= peak_ns <= call[2]]
    region = next(
        (r for prefix, r in _REGION_CALLS if any(c[0].startswith(prefix) for c in at_peak)),
        REGIONS[-1],
    )
    outermost = min(
        ((began, -ended, name) for name, began, ended in at_peak if name.startswith("aten::")),
        default=(0, 0, ""),
    )
    return PeakSite(
        peak=peak,
        region=region,
        operator=outermost[2],
        gradient_copies=tuple(nbytes for _, nbytes in sorted(copies)),
    )


def transient_bytes(prepared: Sequence[Callable[[], Callable[[], Any]]]) -> list[int]:
    """Per item of ``prepared``, which makes what its call needs and returns the call: the
    most bytes of CPU memory live during the call beyond those live before it, less
    those live when it returns (what it returned, held until then). One profiler
    session for all, each call in its own ``record_function`` window, what it needs
    made before the window opens."""
    import torch

    names = [f"dagopt.transient.{i}" for i in range(len(prepared))]
    with _memory_profiler() as profiler:
        for name, prepare in zip(names, prepared, strict=True):
            call = prepare()
            with torch.profiler.record_function(name):
                result = call()
            del result, call
    calls, memory = _recorded(profiler, names)
    windows = {name: (began, ended) for name, began, ended in calls if name in names}
    times = [time_ns for time_ns, _ in memory]
    transients = []
    for name in names:
        began, ended = windows[name]
        live = peak = 0
        for _, nbytes in memory[bisect_left(times, began) : bisect_right(times, ended)]:
            live += nbytes
            peak = max(peak, live)
        transients.append(peak - live)
    return transients


#: The ``record_function`` window around ``measured_peak``'s run.
_WHOLE_RUN = "dagopt.measured_peak"


def profiler_running() -> bool:
    """Whether a PyTorch profiler session is running in this process (one of dagopt's
    measurements or the user's own)."""
    import torch

    return torch._C._autograd._profiler_enabled()


def _memory_profiler() -> Any:
    import torch

    if profiler_running():
        raise RuntimeError(
            "cannot measure memory: a PyTorch profiler session is already running, and "
            "a second one would end it (measure outside the profiler)"
        )
    return torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
    )


def _recorded(
    profiler: Any, windows: Sequence[str]
) -> tuple[list[tuple[str, int, int]], list[tuple[int, int]]]:
    """The profiler's results, read once: every call it recorded, ``(name, start ns, end
    ns)``, and the CPU allocator's reports, ``(time ns, bytes allocated, negative when
    freed)`` in time order. ``RuntimeError`` where a ``record_function`` window of
    ``windows`` is missing: the session ended before it closed (a profiler started and
    stopped inside it), so the memory reports are incomplete."""
    from torch.autograd import DeviceType

    calls, reports = [], []
    for position, event in enumerate(profiler.profiler.kineto_results.events()):
        if event.name() != "[memory]":
            began = event.start_ns()
            calls.append((event.name(), began, began + event.duration_ns()))
        elif event.device_type() == DeviceType.CPU:
            reports.append((event.start_ns(), position, event.nbytes()))
    seen = {name for name, _, _ in calls}
    missing = [name for name in windows if name not in seen]
    if missing:
        raise RuntimeError(
            f"the PyTorch profiler session ended during the measured call {missing[0]!r} "
            "(a profiler ran inside it): its memory is unknown"
        )
    return calls, [(time_ns, nbytes) for time_ns, _, nbytes in sorted(reports)]


def training_step(module: Any, inputs: Sequence[Any], **compile_options: Any) -> Callable[[], Any]:
    """A compiled training step of ``module`` on ``inputs``: ``step()`` is
    ``eager_training_step`` with the ``TrainingLoss`` forward compiled by
    ``torch.compile(**compile_options)`` (gradients accumulate into ``.grad`` as
    ``loss.backward()`` leaves them) and returns the loss. The first call compiles."""
    import torch

    compiled = torch.compile(TrainingLoss(module), **compile_options)
    return lambda: eager_training_step(module, inputs, compiled)


def channels_last_weights(module: Any, *, depthwise: bool = True) -> None:
    """Give ``module``'s 4-d parameters and buffers channels-last strides, in place, as
    ``module.to(memory_format=torch.channels_last)`` does (the layout in which Inductor
    returns convolution weights' gradients); with ``depthwise=False`` depthwise
    convolution weights (``(C, 1, k, k)``, ``k x k`` > 1) get contiguous strides instead.

    A depthwise weight's two layouts are the same memory, but its strides decide how
    the CPU convolution backward (oneDNN's) runs: labelled channels-last, it copies
    contiguous inputs to channels-last and, at some shapes, allocates far more inside
    (in EfficientNet-B0's compiled step, each 5 x 5 convolution over 1152 channels at
    2 x 2 pixels: 29.6 MB). Which holds less depends on the model (``docs/results.md``,
    "Depthwise weights under channels-last")."""
    import torch

    module.to(memory_format=torch.channels_last)
    if depthwise:
        return
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            if tensor.dim() == 4 and tensor.shape[1] == 1 and tensor.shape[2:].numel() > 1:
                tensor.data = tensor.data.clone(memory_format=torch.contiguous_format)
