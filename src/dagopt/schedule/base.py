"""The ordering-solver interface: ``solve(graph, *, seed, time_limit, **options) -> Schedule``.

Every solver is registered by name; ``solve`` times it and recomputes the peak it
reports with ``dagopt.objectives`` (never trusting the solver's own bookkeeping), so
every method is judged by the same objective.

``Schedule.seconds`` is the solve alone. The first call of a method in a process first
runs it on a four-node graph, so that one-time work (numba compiling or loading its
kernels, torch importing, a model file loading) happens then; its time is
``Schedule.setup_seconds``.
"""

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagopt.graph import Graph
from dagopt.objectives import peak_memory
from dagopt.progress import report
from dagopt.registry import Registry, check_run_arguments, warm_up_key


@dataclass(frozen=True)
class Schedule:
    """An execution order (node indices) and how it was found."""

    order: np.ndarray
    peak_memory: float
    method: str
    seconds: float
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)
    setup_seconds: float = 0.0


@dataclass(frozen=True)
class SolverResult:
    """What a solver function returns before ``run_solver`` recomputes and times it."""

    order: np.ndarray
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


SOLVERS = Registry(
    "method",
    providers=(
        "dagopt.schedule.inductor",
        "dagopt.schedule.classic",
        "dagopt.schedule.dp",
        "dagopt.schedule.dfs_dp",
        "dagopt.schedule.anytime",
        "dagopt.schedule.neural",
        "dagopt.schedule.neural_ar",
    ),
)
#: Decorator adding an ordering solver: ``@register(name, summary, options)``.
register = SOLVERS.register
#: The ``MethodSpec`` of a solver name (``InputError`` if unknown).
get_solver = SOLVERS.lookup

#: The graph of the warm-up run: a diamond, so every kernel sees a fork and a join.
_WARM_UP_GRAPH = Graph(4, [0, 0, 1, 2], [1, 2, 3, 3], mem=np.ones(4), name="warm-up")
#: Methods warmed up, with the model files they loaded (``warm_up_key``).
_warmed_up: set[tuple[str, ...]] = set()
#: Options the warm-up run leaves at the method's default: they size the search, not
#: the kernels it compiles (``--samples 1000000`` would otherwise cost its time twice).
_WARM_UP_DEFAULTS = frozenset({"samples", "beam_width", "max_states", "windows"})


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
    setup = 0.0
    key = warm_up_key(method, options)
    if key not in _warmed_up:
        report(f"{method}: compiling or loading kernels and models (first call only)")
        began = time.perf_counter()
        budget_free = {k: v for k, v in options.items() if k not in _WARM_UP_DEFAULTS}
        spec.fn(
            _WARM_UP_GRAPH, seed=0, time_limit=time_limit, keep_outputs=keep_outputs, **budget_free
        )
        setup = time.perf_counter() - began
        _warmed_up.add(key)
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
        setup_seconds=setup,
    )
