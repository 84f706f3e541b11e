"""Measured peak memory of ``torch.compile``d code on the CPU.

Inductor's generated code allocates its buffers outside the dispatcher
(``empty_strided_cpu``), where a ``TorchDispatchMode`` (``dagopt.integrations.torch``'s
``measure_peak``) does not see them; the CPU allocator reports every allocation and
free to the PyTorch profiler, though. ``measured_peak(run)`` runs ``run()`` under the
profiler with ``profile_memory=True`` and returns the largest number of bytes of CPU
memory live during the run beyond what was live before it: the allocator's own
account, every tensor of the run included (Inductor's buffers, extern kernels' outputs,
autograd's saved tensors and gradients).

``training_step(module, inputs)`` is the step ``graph_from_module(mode="training")``
traces (``eager_training_step``: ``TrainingLoss``, the sum of the outputs, then
``backward``), its loss compiled.
"""

from collections.abc import Callable, Sequence
from typing import Any

from dagopt.integrations.torch import eager_training_step
from dagopt.io.torch import TrainingLoss


def measured_peak(run: Callable[[], Any]) -> int:
    """Peak bytes of CPU memory live during ``run()`` above what was live before it, by
    the allocator's reports to the PyTorch profiler (module docstring)."""
    import torch
    from torch.autograd import DeviceType

    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
    ) as profiler:
        run()
    events = sorted(
        (
            (event.start_ns(), position, event.nbytes())
            for position, event in enumerate(profiler.profiler.kineto_results.events())
            if event.name() == "[memory]" and event.device_type() == DeviceType.CPU
        ),
    )
    live = peak = 0
    for _, _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def training_step(module: Any, inputs: Sequence[Any], **compile_options: Any) -> Callable[[], Any]:
    """A compiled training step of ``module`` on ``inputs``: ``step()`` is
    ``eager_training_step`` with the ``TrainingLoss`` forward compiled by
    ``torch.compile(**compile_options)`` (gradients accumulate into ``.grad`` as
    ``loss.backward()`` leaves them) and returns the loss. The first call compiles."""
    import torch

    compiled = torch.compile(TrainingLoss(module), **compile_options)
    return lambda: eager_training_step(module, inputs, compiled)
