"""dagopt orders the kernels of ``torch.compile``: a scheduler pass for PyTorch Inductor.

``KernelOrderPass`` is a callable for Inductor's scheduler-pass hook
(``torch._inductor.config._post_fusion_custom_pass``): given the fused kernels of one
graph, it measures what its extern kernels allocate inside themselves while they run
(``dagopt.integrations.extern_kernels``; ``workspaces=False`` skips it), builds the
kernels' ``SchedulerGraph`` (``dagopt.io.inductor``: the peak of an order is
Inductor's own ``estimate_peak_memory``, plus those workspaces while their kernels
run, with every output of a multi-output kernel alive until the last of its
``MultiOutput`` nodes has run, as the generated code holds them, and, in a backward
graph, with the weight copies its forward graph saved for it alive until their last
reader (the pass remembers them per compile id), all of which the estimate misses),
orders it with a dagopt method (default ``anytime``, which starts from the kernels'
given order and Inductor's heuristics on that graph) and returns the kernels
in the order it picks. It makes the choice of Inductor's own peak-memory pass
(``reorder_for_peak_memory``: the least estimated peak among the given order and three
heuristics, least-peak-memory-first, BFS and DFS, the first on ties) by the memory the
generated code holds instead (``dagopt.io.inductor_codegen``: the graph's buffers with
the C++ backend's kernel groups, kernel-local buffers, concatenation views, in-place
updates and the wrapper's buffer pool, which neither Inductor's estimate nor the graph
models), so Inductor's pass must be off (``kernel_order`` turns it off), or it would
choose again by its own estimate. dagopt's order is the method's, or the best of those
four candidates where that is lower, refined for ``refine_limit`` seconds by a local
search on the generated code's memory (``dagopt.schedule.codegen_search``; 0 skips it);
the pass returns it when it is below the best candidate by at least ``min_gain`` (a
fraction, default 0), else that candidate.

Each graph compiled gets a ``KernelOrderReport``: the peaks (by that model) of the given
order, of the order Inductor's own pass would run (the candidate of least estimate by
Inductor's ``estimate_peak_memory``, the first on ties: what the graph runs compiled by
Inductor alone), of the best of Inductor's candidates by the generated code's memory, of
the method's order and of dagopt's (refined) order, whether dagopt's was kept, and which
extern kernels were measured.
``kernel_order(...)`` is the context manager that installs a pass for the compiles in it
(Inductor's peak-memory pass and FX graph cache off there: a cache hit would skip the
pass). The measured peak of a compiled run
is ``dagopt.integrations.torch_compile.measured_peak``.
"""

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagopt.errors import InputError
from dagopt.integrations.extern_kernels import extern_workspaces
from dagopt.io.inductor import current_scheduler_graph, returned_input_copies
from dagopt.io.inductor_codegen import codegen_memory
from dagopt.progress import report
from dagopt.schedule.base import get_solver, solve
from dagopt.schedule.codegen_search import refine_order


@dataclass(frozen=True)
class KernelOrderReport:
    """One compiled graph: its kernels and graph nodes; the peak estimate (bytes, of the
    generated code's memory, ``dagopt.io.inductor_codegen``) of the order it was given;
    of the order Inductor's own peak-memory pass runs (``inductor_choice``, one of
    ``INDUCTOR_CANDIDATES``: the least by Inductor's estimate, which can differ from the
    least by the generated code's memory); of the best of Inductor's candidates by the
    generated code's memory (``best_candidate``: the pass's fallback); of the method's
    order (``search_peak``) and of dagopt's order (refined); whether dagopt's was kept;
    how many extern kernels' workspaces were measured and which could not be, with why;
    the seconds of dagopt's search (the method's and the refinement) and of measuring."""

    graph: str
    kernels: int
    nodes: int
    given_peak: int
    inductor_choice: str
    inductor_peak: int
    best_candidate: str
    best_candidate_peak: int
    search_peak: int
    dagopt_peak: int
    applied: bool
    measured_kernels: int
    unmeasured: tuple[tuple[str, str], ...]
    seconds: float
    workspace_seconds: float

    @property
    def chosen_peak(self) -> int:
        """The estimate of the order the compiled code runs: dagopt's when it was kept,
        else the best of Inductor's candidates."""
        return self.dagopt_peak if self.applied else self.best_candidate_peak


@dataclass
class KernelOrderPass:
    """Order Inductor's fused kernels with dagopt ``method`` for ``time_limit`` seconds,
    refined for ``refine_limit`` seconds (module docstring): that order when below the
    best of Inductor's candidates by at least ``min_gain`` (a fraction), else that best;
    extern kernels' workspaces measured and counted when ``workspaces``. Every compiled
    graph appends a ``KernelOrderReport`` to ``reports``.
    Inductor's own peak-memory pass must be off (``kernel_order`` turns it off): this
    pass makes its choice."""

    method: str = "anytime"
    time_limit: float | None = 10.0
    seed: int | None = 0
    options: dict[str, Any] = field(default_factory=dict)
    min_gain: float = 0.0
    workspaces: bool = True
    refine_limit: float = 5.0
    reports: list[KernelOrderReport] = field(default_factory=list, compare=False)
    #: Per compile id, the inputs its forward graph returned as copies, which the
    #: backward graph of the same id frees (``dagopt.io.inductor.returned_input_copies``).
    saved_copies: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        get_solver(self.method).check_options(self.options)
        if not 0.0 <= self.min_gain < 1.0:
            raise InputError(f"min_gain must be in [0, 1), got {self.min_gain}")
        if self.refine_limit < 0:
            raise InputError(f"refine_limit must be at least 0 seconds, got {self.refine_limit}")

    def __call__(self, kernels: Sequence[Any]) -> list[Any]:
        import torch._inductor.config as inductor_config
        from torch._guards import CompileContext
        from torch._inductor.virtualized import V

        if inductor_config.reorder_for_peak_memory:
            raise InputError(
                "KernelOrderPass chooses the kernel order itself: turn Inductor's "
                "reorder_for_peak_memory off (kernel_order() does), or it would choose again"
            )
        label = _graph_label(V.graph)
        compile_id = str(CompileContext.current_compile_id())
        if V.graph.is_backward:
            saved_copies = self.saved_copies.get(compile_id, frozenset())
        else:
            self.saved_copies[compile_id] = returned_input_copies()
            saved_copies = frozenset()
        began = time.perf_counter()
        measured = extern_workspaces(kernels) if self.workspaces else None
        workspace_seconds = time.perf_counter() - began
        sched = current_scheduler_graph(
            kernels,
            workspaces=measured.bytes if measured else None,
            saved_copies=saved_copies,
            name=label,
        )
        report(f"dagopt {self.method}: {label}, {len(kernels)} kernels")
        began = time.perf_counter()
        schedule = solve(
            sched.graph, self.method, seed=self.seed, time_limit=self.time_limit, **self.options
        )
        searched = sched.kernel_indices(schedule.order)
        candidates = _inductor_orders(kernels, sched)
        indexed = [sched.indices(order) for order in candidates]
        memory = codegen_memory(sched)
        peaks = [memory.peak(order) for order in indexed]
        best = peaks.index(min(peaks))  # the first of the least, as Inductor's pass picks
        # the order Inductor's own pass runs: the first of the least by its estimate
        estimates = [memory.estimate.peak(order) for order in indexed]
        choice = estimates.index(min(estimates))
        search_peak = memory.peak(searched)
        start = searched if search_peak <= peaks[best] else indexed[best]
        refined, dagopt_peak = refine_order(
            memory,
            sched.kernel_predecessors,
            start,
            time_limit=self.refine_limit,
            seed=self.seed,
        )
        seconds = time.perf_counter() - began
        applied = dagopt_peak < peaks[best] and dagopt_peak <= (1.0 - self.min_gain) * peaks[best]
        self.reports.append(
            KernelOrderReport(
                graph=label,
                kernels=len(kernels),
                nodes=sched.graph.num_nodes,
                given_peak=peaks[0],
                inductor_choice=INDUCTOR_CANDIDATES[choice],
                inductor_peak=peaks[choice],
                best_candidate=INDUCTOR_CANDIDATES[best],
                best_candidate_peak=peaks[best],
                search_peak=search_peak,
                dagopt_peak=dagopt_peak,
                applied=applied,
                measured_kernels=len(measured.bytes) if measured else 0,
                unmeasured=measured.unmeasured if measured else (),
                seconds=seconds,
                workspace_seconds=workspace_seconds,
            )
        )
        return [sched.kernels[k] for k in refined] if applied else candidates[best]


@contextlib.contextmanager
def kernel_order(
    method: str = "anytime",
    *,
    time_limit: float | None = 10.0,
    seed: int | None = 0,
    min_gain: float = 0.0,
    workspaces: bool = True,
    refine_limit: float = 5.0,
    **options: Any,
) -> Iterator[KernelOrderPass]:
    """Install a ``KernelOrderPass`` for the ``torch.compile`` compiles inside the
    ``with`` block, with Inductor's own peak-memory pass and its FX graph cache off
    there; yields the pass (its ``reports``). Compiles happen on a compiled function's
    first call: call it inside."""
    import torch._inductor.config as inductor_config

    order_pass = KernelOrderPass(
        method, time_limit, seed, dict(options), min_gain, workspaces, refine_limit
    )
    with inductor_config.patch(
        _post_fusion_custom_pass=order_pass, reorder_for_peak_memory=False, fx_graph_cache=False
    ):
        yield order_pass


def _graph_label(graph: Any) -> str:
    kind = "backward" if graph.is_backward else "inference" if graph.is_inference else "forward"
    return f"graph {graph.graph_id} ({kind})" if graph.graph_id is not None else kind


#: The orders Inductor's ``reorder_for_peak_memory`` picks from, in its order.
INDUCTOR_CANDIDATES = ("given", "lpmf", "bfs", "dfs")


def _inductor_orders(kernels: Sequence[Any], sched: Any) -> list[list[Any]]:
    """The orders of ``INDUCTOR_CANDIDATES``: the given one and Inductor's three
    heuristics'."""
    from torch._inductor import memory
    from torch._inductor.virtualized import V

    given = list(kernels)
    lpmf = memory.topological_sort_lpmf(
        given, sched.freeable_inputs, V.graph.scheduler.name_to_buf, sched.graph_outputs
    )
    return [given, lpmf, memory.topological_sort_bfs(given), memory.topological_sort_dfs(given)]
