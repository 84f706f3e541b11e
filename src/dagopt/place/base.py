"""The placement-solver interface (paper 003, section 2.1): a device per op and an order.

A placer is ``fn(problem, *, seed, time_limit, **options) -> PlacerResult``. It is
registered by name; ``place`` times it and re-evaluates what it returns with the cost
model (``dagopt.objectives.placement``), so every method is judged by the same
simulation. ``PlacementProblem`` bundles what every placer needs: the graph, the
devices, the objective, the op runtimes, and a batch evaluator that counts cost-model
calls (the paper fixes that budget at 5,000 evaluations, section 3.2).
"""

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagopt.graph import Graph
from dagopt.objectives.placement import (
    Devices,
    batch_costs,
    check_objective,
    meets_bound,
    placement_cost,
    placement_lower_bound,
    resolve_runtimes,
    simulate,
    simulate_batch,
)
from dagopt.registry import Registry


@dataclass
class PlacementProblem:
    """A graph to place on ``devices`` minimising ``objective``, with its op runtimes.

    ``runtimes`` default to the graph's ``runtime`` node attribute (seconds on a
    speed-1 device). ``evaluations`` counts the solutions scored by ``evaluate``.
    """

    graph: Graph
    devices: Devices = field(default_factory=Devices)
    objective: str = "runtime"
    runtimes: np.ndarray | None = None
    evaluations: int = 0

    def __post_init__(self) -> None:
        check_objective(self.objective)
        self.runtimes = resolve_runtimes(self.graph, self.runtimes)

    @property
    def num_devices(self) -> int:
        return self.devices.count

    def evaluate(self, device_of: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lexicographic costs ``(infeasible, value)`` of ``(B, n)`` placements and orders."""
        batch = simulate_batch(self.graph, self.devices, device_of, orders, runtimes=self.runtimes)
        self.evaluations += len(orders)
        return batch_costs(batch, self.objective)


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
    peak_memory: np.ndarray
    feasible: bool
    cost: tuple[int, float]
    method: str
    seconds: float
    evaluations: int
    proved_optimal: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


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
    ),
)
#: Decorator adding a placer: ``@register_placer(name, summary, options)``.
register_placer = PLACERS.register
#: The ``MethodSpec`` of a placer name (``InputError`` if unknown).
get_placer = PLACERS.lookup


def place(
    graph: Graph,
    method: str,
    *,
    devices: Devices | None = None,
    objective: str = "runtime",
    runtimes: np.ndarray | None = None,
    seed: int | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Placement:
    """Run placer ``method`` on ``graph`` and return its re-simulated ``Placement``.

    ``proved_optimal`` is the placer's claim (an exact solver's proof), or True for any
    method when the feasible result meets ``placement_lower_bound``.
    """
    spec = get_placer(method)
    spec.check_options(options)
    problem = PlacementProblem(graph, devices or Devices(), objective, runtimes)
    start = time.perf_counter()
    result = spec.fn(problem, seed=seed, time_limit=time_limit, **options)
    seconds = time.perf_counter() - start
    device_of = np.asarray(result.device_of, dtype=np.int64)
    order = np.asarray(result.order, dtype=np.int64)
    simulated = simulate(graph, problem.devices, device_of, order, runtimes=problem.runtimes)
    cost = placement_cost(simulated, objective)
    bound = placement_lower_bound(graph, problem.devices, objective, runtimes=problem.runtimes)
    proved = not cost[0] and meets_bound(cost[1], bound)
    return Placement(
        device_of=device_of,
        order=order,
        objective=objective,
        makespan=simulated.makespan,
        peak_memory=simulated.peak_memory,
        feasible=simulated.feasible,
        cost=cost,
        method=method,
        seconds=seconds,
        evaluations=problem.evaluations,
        proved_optimal=True if proved else result.proved_optimal,
        info=dict(result.info),
    )
