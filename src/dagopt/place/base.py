"""The placement-solver interface (paper 003, section 2.1): a device per op and an order.

A placer is ``fn(problem, *, seed, time_limit, **options) -> PlacerResult``. It is
registered by name; ``place`` times it and re-evaluates what it returns with the
problem's cost model, so every method is judged by the same numbers.
``PlacementProblem`` bundles what every placer needs: the graph, the devices, the
objective, and the cost model (``dagopt.objectives.costmodel``; by default 003 A.1's
simulator built from op runtimes), with a batch evaluator that counts cost-model calls
(the paper fixes that budget at 5,000 evaluations, section 3.2).
"""

import functools
import time
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagopt.configs import check_option
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.objectives.costmodel import CostModel, check_objective
from dagopt.objectives.devices import Devices
from dagopt.objectives.op_runtimes import relative_speeds
from dagopt.objectives.placement import SimulatedCostModel
from dagopt.objectives.placement_bounds import meets_bound
from dagopt.progress import report
from dagopt.registry import MethodSpec, Registry, check_run_arguments, warm_up_key


class PlacementProblem:
    """A graph to place on ``devices`` minimising ``objective``, scored by a cost model.

    ``cost_model`` is any ``CostModel``. By default it is 003 A.1's simulator
    (``SimulatedCostModel``) built from ``runtimes``: ``(n,)`` seconds on a speed-1
    device or ``(n, d)`` seconds per device, by default the graph's ``runtime`` node
    attribute. ``devices`` default to the cost model's devices, or to section 3.1's two
    16 GiB devices; when both are given they must be equal. ``evaluations`` counts the
    solutions scored by ``evaluate``.
    """

    def __init__(
        self,
        graph: Graph,
        devices: Devices | None = None,
        objective: str = "runtime",
        cost_model: CostModel | None = None,
        *,
        runtimes: np.ndarray | None = None,
    ) -> None:
        check_objective(objective)
        if cost_model is None:
            cost_model = SimulatedCostModel(graph, devices, runtimes)
        elif runtimes is not None:
            raise InputError("give runtimes (for the default simulator) or a cost_model, not both")
        elif not isinstance(cost_model, CostModel):
            raise InputError(
                f"{type(cost_model).__name__} is not a cost model: it needs devices, "
                "objectives, uses_order, costs, evaluate and lower_bound"
            )
        elif devices is not None and devices != cost_model.devices:
            raise InputError("devices differ from the cost model's devices")
        if objective not in cost_model.objectives:
            raise InputError(
                f"the cost model {type(cost_model).__name__} scores "
                f"{', '.join(cost_model.objectives)}, not {objective!r}"
            )
        self.graph = graph
        self.devices = cost_model.devices
        self.objective = objective
        self.cost_model = cost_model
        self.evaluations = 0

    @property
    def num_devices(self) -> int:
        return self.devices.count

    @property
    def runtimes(self) -> np.ndarray:
        """The cost model's op runtimes, ``(n,)`` or ``(n, d)``, for placers whose
        features read them (REGAL). ``InputError`` when the model has none."""
        runtimes = getattr(self.cost_model, "runtimes", None)
        if runtimes is None:
            raise InputError(
                f"the cost model {type(self.cost_model).__name__} has no op runtimes, "
                "which this method needs"
            )
        return runtimes

    @property
    def speeds(self) -> np.ndarray:
        """Relative device speeds for placers that pick or balance devices by themselves:
        ``relative_speeds`` of the cost model's runtimes, or ``devices.speeds`` when it
        has none (a measured model)."""
        runtimes = getattr(self.cost_model, "runtimes", None)
        return self.devices.speeds if runtimes is None else relative_speeds(runtimes, self.devices)

    def evaluate(self, device_of: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lexicographic costs ``(infeasible, value)`` of ``(B, n)`` placements and orders."""
        costs = self.cost_model.costs(device_of, orders, self.objective)
        self.evaluations += len(orders)
        return costs


def best_index(infeasible: np.ndarray, value: np.ndarray) -> int:
    """Row of the best cost: feasible first, then the smallest value (A.2)."""
    return int(np.lexsort((value, infeasible))[0])


#: ``cost_ratio`` of a memory-infeasible solution: worse than any feasible one (A.2).
INFEASIBLE_RATIO = 2.0


def cost_ratio(cost: tuple[int, float], reference: float | None) -> float:
    """``cost``'s value over a reference value, e.g. ``H(G, D) / H(G, U)`` of REGAL's
    reward (003 section 2.3). An infeasible ``cost`` scores ``INFEASIBLE_RATIO``; a
    feasible one scores 1 when there is no feasible reference (``None``) or it is 0.
    """
    if cost[0]:
        return INFEASIBLE_RATIO
    return cost[1] / reference if reference else 1.0


@dataclass(frozen=True)
class Placement:
    """A device per op, an execution order, what the cost model says of them, and how."""

    device_of: np.ndarray
    order: np.ndarray
    objective: str
    makespan: float
    peak_memory: np.ndarray | None  # None: the cost model does not observe memory
    feasible: bool
    cost: tuple[int, float]
    method: str
    seconds: float
    evaluations: int
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)
    setup_seconds: float = 0.0


@dataclass(frozen=True)
class PlacerResult:
    """What a placer returns before ``place`` re-evaluates and times it."""

    device_of: np.ndarray
    order: np.ndarray
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


PLACERS = Registry(
    "placement method",
    providers=(
        "dagopt.place.baselines",
        "dagopt.place.brkga",
        "dagopt.place.prior",
        "dagopt.place.regal",
        "dagopt.place.tuning",
        "dagopt.place.cpsat",
        "dagopt.place.hsdag",
        "dagopt.place.placeto",
        "dagopt.place.rnn_placer",
    ),
)
#: Decorator adding a placer: ``@register_placer(name, summary, options)``.
register_placer = PLACERS.register
#: The ``MethodSpec`` of a placer name (``InputError`` if unknown).
get_placer = PLACERS.lookup

#: The graph of the warm-up run (a diamond of 1 ms ops, see ``place``).
_WARM_UP_GRAPH = Graph(
    4, [0, 0, 1, 2], [1, 2, 3, 3], mem=np.ones(4), name="warm-up",
    node_data={"runtime": np.full(4, 1e-3)},
)  # fmt: skip
#: Methods warmed up, with the model files they loaded (``warm_up_key``).
_warmed_up: set[tuple[str, ...]] = set()


def place(
    graph: Graph,
    method: str,
    *,
    devices: Devices | None = None,
    objective: str = "runtime",
    runtimes: np.ndarray | None = None,
    cost_model: CostModel | None = None,
    seed: int | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Placement:
    """Run placer ``method`` on ``graph`` and return its re-evaluated ``Placement``.

    The placer searches against ``cost_model`` (by default the simulator built from
    ``runtimes``, see ``PlacementProblem``), and the same model scores its answer.
    ``proved_optimal`` is the placer's claim (an exact solver's proof), or True for any
    method when the feasible result meets the cost model's lower bound.

    ``Placement.seconds`` is the search alone: the first call of a method in a process
    first runs it on a four-node graph with the simulator and the same devices, so that
    one-time work (numba compiling or loading kernels, a policy loading) happens there;
    its time is ``Placement.setup_seconds``. The warm-up gets the same ``time_limit``,
    so that options such as a huge episode count cannot run past the limit there.
    """
    spec = get_placer(method)
    check_placer_options(spec, options)
    check_run_arguments(seed, time_limit)
    problem = PlacementProblem(graph, devices, objective, cost_model, runtimes=runtimes)
    setup = 0.0
    key = (*warm_up_key(method, options), objective)  # the shipped policy is per objective
    if key not in _warmed_up:
        report(f"{method}: compiling or loading kernels and models (first call only)")
        began = time.perf_counter()
        warm_up = PlacementProblem(_WARM_UP_GRAPH, problem.devices, objective)
        spec.fn(warm_up, seed=0, time_limit=time_limit, **options)
        setup = time.perf_counter() - began
        _warmed_up.add(key)
    start = time.perf_counter()
    result = spec.fn(problem, seed=seed, time_limit=time_limit, **options)
    seconds = time.perf_counter() - start
    device_of = np.asarray(result.device_of, dtype=np.int64)
    order = np.asarray(result.order, dtype=np.int64)
    evaluation = problem.cost_model.evaluate(device_of, order, objective)
    cost = evaluation.cost
    bound = problem.cost_model.lower_bound(objective)
    proved = bound is not None and not cost[0] and meets_bound(cost[1], bound)
    return Placement(
        device_of=device_of,
        order=order,
        objective=objective,
        makespan=evaluation.makespan,
        peak_memory=evaluation.peak_memory,
        feasible=evaluation.feasible,
        cost=cost,
        method=method,
        seconds=seconds,
        evaluations=problem.evaluations,
        proved_optimal=True if proved else result.proved_optimal,
        info=dict(result.info),
        setup_seconds=setup,
    )


#: The annotations whose values ``check_placer_options`` checks.
_PLAIN_TYPES = (int, float, bool, str, type(None))


def _plain_hint(hint: Any) -> bool:
    """Whether ``hint`` is one of ``_PLAIN_TYPES`` or a union of them."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(arg in _PLAIN_TYPES for arg in typing.get_args(hint))
    return hint in _PLAIN_TYPES


@functools.cache
def _option_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The plain annotations (``_plain_hint``) of ``fn``'s parameters by name."""
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):  # an annotation that does not resolve: nothing to check
        return {}
    return {name: hint for name, hint in hints.items() if _plain_hint(hint)}


def check_placer_options(spec: MethodSpec, options: Mapping[str, Any]) -> None:
    """``spec.check_options``, then an ``InputError`` for the first value that does not fit
    the annotation of the placer's keyword (``int``, ``float``, ``bool``, ``str``, or a
    union of them and None), checked as ``dagopt.configs`` checks a config field: so
    ``--set lr=abc`` or ``--set episodes=2.5`` is an error for every placer. Numpy
    scalars count as the Python numbers they hold."""
    spec.check_options(options)
    hints = _option_hints(spec.fn)
    for name, value in options.items():
        if name in hints:
            plain = value.item() if isinstance(value, np.generic) else value
            check_option(name, plain, hints[name])
