"""The ordering-solver interface: ``solve(graph, *, seed, time_limit, **options) -> Schedule``.

Every solver is registered by name; ``run_solver`` times it and recomputes the
peak it reports with ``dagopt.objectives`` (never trusting the solver's own
bookkeeping), so every method is judged by the same objective.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.objectives import peak_memory


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


class SolverFn(Protocol):
    def __call__(
        self,
        graph: Graph,
        *,
        seed: int | None = None,
        time_limit: float | None = None,
        keep_outputs: bool = False,
        **options: Any,
    ) -> SolverResult: ...


@dataclass(frozen=True)
class SolverSpec:
    name: str
    fn: SolverFn
    summary: str
    options: tuple[str, ...] = ()


SOLVERS: dict[str, SolverSpec] = {}


def register(name: str, summary: str, options: tuple[str, ...] = ()) -> Callable:
    """Decorator adding an ordering solver to the registry under ``name``."""

    def wrap(fn: SolverFn) -> SolverFn:
        if name in SOLVERS:
            raise ValueError(f"solver {name!r} registered twice")
        SOLVERS[name] = SolverSpec(name=name, fn=fn, summary=summary, options=options)
        return fn

    return wrap


def get_solver(name: str) -> SolverSpec:
    try:
        return SOLVERS[name]
    except KeyError:
        known = ", ".join(sorted(SOLVERS))
        raise InputError(f"unknown method {name!r} (known: {known})") from None


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
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        allowed = ", ".join(spec.options) or "none"
        raise InputError(f"method {method!r} has no option {unknown[0]!r} (options: {allowed})")
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
