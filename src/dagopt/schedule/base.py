"""The ordering-solver interface: ``solve(graph, *, seed, time_limit, **options) -> Schedule``.

Every solver is registered by name; ``run_solver`` times it and recomputes the
peak it reports with ``dagopt.objectives`` (never trusting the solver's own
bookkeeping), so every method is judged by the same objective.
"""

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagopt.graph import Graph
from dagopt.objectives import peak_memory
from dagopt.registry import Registry, check_run_arguments


@dataclass(frozen=True)
class Schedule:
    """An execution order (node indices) and how it was found."""

    order: np.ndarray
    peak_memory: float
    method: str
    seconds: float
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SolverResult:
    """What a solver function returns before ``run_solver`` recomputes and times it."""

    order: np.ndarray
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


SOLVERS = Registry("method")
#: Decorator adding an ordering solver: ``@register(name, summary, options)``.
register = SOLVERS.register
#: The ``MethodSpec`` of a solver name (``InputError`` if unknown).
get_solver = SOLVERS.lookup


def solve(
    graph: Graph,
    method: str,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    **options: Any,
) -> Schedule:
    """Run solver ``method`` on ``graph`` and return its validated, re-evaluated ``Schedule``."""
    spec = get_solver(method)
    spec.check_options(options)
    check_run_arguments(seed, time_limit)
    start = time.perf_counter()
    result = spec.fn(graph, seed=seed, time_limit=time_limit, keep_outputs=keep_outputs, **options)
    seconds = time.perf_counter() - start
    order = np.asarray(result.order, dtype=np.int64)
    return Schedule(
        order=order,
        peak_memory=peak_memory(graph, order, keep_outputs=keep_outputs),
        method=method,
        seconds=seconds,
        proved_optimal=result.proved_optimal,
        info=dict(result.info),
    )
