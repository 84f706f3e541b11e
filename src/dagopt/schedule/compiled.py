"""dagopt orders the kernels of ``torch.compile``: a scheduler pass for PyTorch Inductor.

``KernelOrderPass`` is a callable for Inductor's scheduler-pass hook
(``torch._inductor.config._post_fusion_custom_pass``): given the fused kernels of one
graph, it builds their ``SchedulerGraph`` (``dagopt.io.inductor``: the peak of an order
is Inductor's own ``estimate_peak_memory``), orders it with a dagopt method (default
``anytime``, which starts from the kernels' given order and Inductor's heuristics on
that graph) and returns the kernels in that order. Inductor's own peak-memory pass
runs after it and keeps the order of least estimated peak among this one and its own
heuristics' (least-peak-memory-first, BFS, DFS), earlier candidates first on ties, so
the result is never worse than Inductor's choice by Inductor's estimate.

That estimate counts the buffers Inductor allocates, not what an extern kernel (a
convolution's backward, say) allocates inside itself while it runs, so on graphs where
dagopt's order is better by a sliver the real peak can be worse: MobileNetV2's
compiled training step measured +3.8 % from an order 0.03 % better by the estimate
(``docs/real_models.md``, "torch.compile"). The pass therefore hands Inductor dagopt's
order only when it is at least ``min_gain`` (default 1 %) below the best of Inductor's
heuristics by the estimate, and otherwise the kernels as it got them (Inductor then
picks as it does without the pass). Each graph compiled gets a ``KernelOrderReport``:
Inductor's estimate of the given order, of the best of its heuristics and of dagopt's
order, and whether dagopt's order was handed on.

``kernel_order(...)`` is the context manager that installs a pass for the compiles in
it (and turns off Inductor's FX graph cache there, whose hits would skip the pass).
The measured peak of a compiled run is ``dagopt.integrations.torch_compile.measured_peak``.
"""

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagopt.errors import InputError
from dagopt.io.inductor import current_scheduler_graph
from dagopt.progress import report
from dagopt.schedule.base import get_solver, solve


@dataclass(frozen=True)
class KernelOrderReport:
    """One compiled graph: its kernels and graph nodes, and Inductor's peak estimate
    (bytes) of the order it was given, of the best order of its own heuristics
    (the given order included) and of dagopt's order; ``seconds`` is dagopt's search."""

    graph: str
    kernels: int
    nodes: int
    given_peak: int
    inductor_peak: int
    dagopt_peak: int
    seconds: float
    applied: bool

    @property
    def chosen_peak(self) -> int:
        """The estimate of the order Inductor keeps: dagopt's when it was handed on."""
        return self.dagopt_peak if self.applied else self.inductor_peak


@dataclass
class KernelOrderPass:
    """Order Inductor's fused kernels with dagopt ``method`` (module docstring): its order
    when at least ``min_gain`` (a fraction) below Inductor's best by Inductor's estimate;
    every compiled graph appends a ``KernelOrderReport`` to ``reports``."""

    method: str = "anytime"
    time_limit: float | None = 10.0
    seed: int | None = 0
    options: dict[str, Any] = field(default_factory=dict)
    min_gain: float = 0.01
    reports: list[KernelOrderReport] = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        get_solver(self.method).check_options(self.options)
        if not 0.0 <= self.min_gain < 1.0:
            raise InputError(f"min_gain must be in [0, 1), got {self.min_gain}")

    def __call__(self, kernels: Sequence[Any]) -> list[Any]:
        from torch._inductor.virtualized import V

        label = _graph_label(V.graph)
        sched = current_scheduler_graph(kernels, name=label)
        report(f"dagopt {self.method}: {label}, {len(kernels)} kernels")
        began = time.perf_counter()
        schedule = solve(
            sched.graph, self.method, seed=self.seed, time_limit=self.time_limit, **self.options
        )
        seconds = time.perf_counter() - began
        ordered = sched.kernels_in_order(schedule.order)
        inductor_peak = min(
            sched.given_peak,
            *(sched.estimate_peak(order) for order in _inductor_heuristic_orders(kernels, sched)),
        )
        dagopt_peak = sched.estimate_peak(ordered)
        applied = dagopt_peak <= (1.0 - self.min_gain) * inductor_peak
        self.reports.append(
            KernelOrderReport(
                graph=label,
                kernels=len(kernels),
                nodes=sched.graph.num_nodes,
                given_peak=sched.given_peak,
                inductor_peak=inductor_peak,
                dagopt_peak=dagopt_peak,
                seconds=seconds,
                applied=applied,
            )
        )
        return ordered if applied else list(kernels)


@contextlib.contextmanager
def kernel_order(
    method: str = "anytime",
    *,
    time_limit: float | None = 10.0,
    seed: int | None = 0,
    min_gain: float = 0.01,
    **options: Any,
) -> Iterator[KernelOrderPass]:
    """Install a ``KernelOrderPass`` for the ``torch.compile`` compiles inside the
    ``with`` block, Inductor's FX graph cache off there; yields the pass (its
    ``reports``). Compiles happen on a compiled function's first call: call it inside."""
    import torch._inductor.config as inductor_config

    order_pass = KernelOrderPass(method, time_limit, seed, dict(options), min_gain)
    with inductor_config.patch(_post_fusion_custom_pass=order_pass, fx_graph_cache=False):
        yield order_pass


def _graph_label(graph: Any) -> str:
    kind = "backward" if graph.is_backward else "inference" if graph.is_inference else "forward"
    return f"graph {graph.graph_id} ({kind})" if graph.graph_id is not None else kind


def _inductor_heuristic_orders(kernels: Sequence[Any], sched: Any) -> list[list[Any]]:
    """The orders of the three heuristics Inductor's ``reorder_for_peak_memory`` picks
    from, beside the given one."""
    from torch._inductor import memory
    from torch._inductor.virtualized import V

    given = list(kernels)
    lpmf = memory.topological_sort_lpmf(
        given, sched.freeable_inputs, V.graph.scheduler.name_to_buf, sched.graph_outputs
    )
    return [lpmf, memory.topological_sort_bfs(given), memory.topological_sort_dfs(given)]
