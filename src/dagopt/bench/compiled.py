"""A model compiled by ``torch.compile`` twice, by Inductor alone and with dagopt's kernel
order, each run for real on the CPU and measured (``benchmarks/compiled_training.py``,
``dagopt zoo compile``).

Each compile starts from a fresh Dynamo state with Inductor's FX graph cache off (a
cache hit would skip the scheduler, and dagopt's pass with it). A run is the training
step (``dagopt.integrations.torch_compile.training_step``) or, for inference, the
compiled module under ``torch.no_grad()``; its measured peak is ``peak_site`` of one
run after the compiling one (gradients set to ``None`` first: the peak, where the run
was then, and the gradients autograd copied into their parameters' layouts), and its
results
(gradients, or outputs) are those of a further run after ``torch.manual_seed(0)``, so
that random ops draw the same numbers; one more such run gives ``rerun_difference``:
compiled CPU code is not always bitwise reproducible run to run, so
``relative_difference`` of dagopt's results from Inductor's is read beside Inductor's
``rerun_difference``. Only one run's results are kept (a model's gradients can be
gigabytes).
"""

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dagopt.errors import InputError
from dagopt.integrations.torch_compile import PeakSite, peak_site
from dagopt.schedule.compiled import KernelOrderReport, kernel_order

MODES = ("training", "inference")


@dataclass(frozen=True)
class CompiledRun:
    """One compiled model run: the measured peak and where it was (``site``), the results
    of a seeded run (the gradients, or the outputs, as a list of tensors) and how far a
    second one differs (``relative_difference``), the seconds of the first call
    (compiling) and the median of the timed runs, and the pass's reports (none for
    Inductor alone)."""

    site: PeakSite
    results: list[Any]
    rerun_difference: float
    compile_seconds: float
    run_seconds: float
    reports: tuple[KernelOrderReport, ...]

    @property
    def peak(self) -> int:
        """The measured peak, bytes."""
        return self.site.peak


def compiled_run(
    module: Any,
    inputs: Sequence[Any],
    *,
    mode: str = "training",
    method: str | None = None,
    time_limit: float | None = 10.0,
    seed: int | None = 0,
    min_gain: float = 0.0,
    workspaces: bool = True,
    refine_limit: float = 5.0,
    repeats: int = 3,
) -> CompiledRun:
    """Compile ``module`` (``mode``: ``"training"`` or ``"inference"``) by Inductor alone
    (``method=None``) or with ``kernel_order(method, time_limit=, seed=, min_gain=,
    workspaces=, refine_limit=)`` and run it (module docstring); ``repeats`` timed runs."""
    import torch
    import torch._inductor.config as inductor_config

    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    context = (  # Inductor's patch yields None: no pass
        inductor_config.patch(fx_graph_cache=False)
        if method is None
        else kernel_order(
            method,
            time_limit=time_limit,
            seed=seed,
            min_gain=min_gain,
            workspaces=workspaces,
            refine_limit=refine_limit,
        )
    )
    torch._dynamo.reset()
    try:
        with context as order_pass:
            run = _runner(module, inputs, mode)
            began = time.perf_counter()
            run()
            compile_seconds = time.perf_counter() - began
            site = _measured(module, run)
            results = _seeded_results(module, run, mode)
            rerun_difference = relative_difference(_seeded_results(module, run, mode), results)
            seconds = [_timed(module, run) for _ in range(repeats)]
    finally:
        torch._dynamo.reset()
        module.zero_grad(set_to_none=True)
    return CompiledRun(
        site=site,
        results=results,
        rerun_difference=rerun_difference,
        compile_seconds=compile_seconds,
        run_seconds=statistics.median(seconds) if seconds else float("nan"),
        reports=tuple(order_pass.reports) if order_pass is not None else (),
    )


def relative_difference(got: Sequence[Any], expected: Sequence[Any]) -> float:
    """The largest entry of ``got - expected`` over the largest entry of ``expected``
    (0 when both are all zeros)."""
    scale = max((float(e.abs().max()) for e in expected if e.numel()), default=0.0)
    worst = max(
        (float((g - e).abs().max()) for g, e in zip(got, expected, strict=True) if e.numel()),
        default=0.0,
    )
    return worst / scale if scale else worst


def _runner(module: Any, inputs: Sequence[Any], mode: str) -> Any:
    import torch

    from dagopt.integrations.torch_compile import training_step

    if mode == "training":
        return training_step(module, inputs)
    compiled = torch.compile(module)

    def infer() -> Any:
        with torch.no_grad():
            return compiled(*inputs)

    return infer


def _measured(module: Any, run: Any) -> PeakSite:
    module.zero_grad(set_to_none=True)
    return peak_site(run)


def _seeded_results(module: Any, run: Any, mode: str) -> list[Any]:
    import torch

    module.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    out = run()
    if mode == "training":
        return [p.grad for p in module.parameters() if p.grad is not None]
    return [out] if isinstance(out, torch.Tensor) else list(out)


def _timed(module: Any, run: Any) -> float:
    module.zero_grad(set_to_none=True)
    began = time.perf_counter()
    run()
    return time.perf_counter() - began
