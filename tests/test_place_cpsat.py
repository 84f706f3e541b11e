"""Tests of the CP-SAT placer (paper 003, section 3.2 (7)): its proved optima are the
optima of the cost model (A.1), checked against brute force over every placement and
every topological order, and its model evaluates any fixed solution as ``simulate``."""

import itertools

import numpy as np
import pytest
from ortools.sat.python import cp_model

from dagopt import Graph
from dagopt.errors import InputError, SolverError
from dagopt.generate.placement import generate_placement
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.objectives.placement import batch_costs, simulate, simulate_batch
from dagopt.objectives.placement_bounds import meets_bound, placement_lower_bound
from dagopt.place import PlacementProblem, place
from dagopt.place.base import best_index
from dagopt.place.cpsat import _Builder
from interrupts import ctrl_c_after


def small_graph(seed: int, n: int, density: float) -> Graph:
    """A random DAG with small integer sizes and runtimes (zeros included: many ties)."""
    rng = np.random.default_rng(seed)
    src, dst = zip(
        *[(u, v) for v in range(n) for u in range(v) if rng.random() < density] or [(0, 1)],
        strict=True,
    )
    mem = rng.integers(1, 6, n).astype(float)
    param = np.where(rng.random(n) < 0.4, rng.integers(1, 4, n), 0).astype(float)
    runtime = rng.integers(0, 4, n).astype(float)
    return Graph(n, src, dst, mem=mem, param_mem=param, node_data={"runtime": runtime})


def topological_orders(graph: Graph) -> np.ndarray:
    n = graph.num_nodes
    preds = [set(graph.predecessors(v).tolist()) for v in range(n)]
    orders: list[list[int]] = []

    def extend(order: list[int], done: set[int]) -> None:
        if len(order) == n:
            orders.append(list(order))
        for v in range(n):
            if v not in done and preds[v] <= done:
                extend([*order, v], done | {v})

    extend([], set())
    return np.array(orders)


def brute_force(graph: Graph, devices: Devices, objective: str, runtimes=None) -> tuple[tuple, int]:
    """The least lexicographic cost over all placements and orders, and how many rows
    were memory-infeasible."""
    orders = topological_orders(graph)
    placements = np.array(list(itertools.product(range(devices.count), repeat=graph.num_nodes)))
    device_of = np.repeat(placements, len(orders), axis=0)
    orders = np.tile(orders, (len(placements), 1))
    batch = simulate_batch(graph, devices, device_of, orders, runtimes=runtimes)
    infeasible, value = batch_costs(batch, objective)
    best = best_index(infeasible, value)
    return (int(infeasible[best]), float(value[best])), int(infeasible.sum())


# (graph seed, ops, edge density, device speeds, memory limits)
CASES = [
    (0, 6, 0.4, (1.0, 1.0), (13.0, 13.0)),
    (1, 6, 0.3, (1.0, 2.0), (20.0, 3.0)),
    (2, 5, 0.4, (1.0, 0.5, 2.0), (12.0, 9.0, 12.0)),
    (3, 6, 0.5, (1.0, 1.0), (10.0, 10.0)),
    (4, 7, 0.5, (2.0, 1.0), (8.0, 20.0)),
    (5, 5, 0.3, (1.0, 1.0, 1.0), (10.0, 10.0, 10.0)),
    (6, 5, 0.5, (1.0,), (14.0,)),
]


def devices_of(speeds, limits) -> Devices:
    return Devices(tuple(DeviceSpec(s, m) for s, m in zip(speeds, limits, strict=True)))


def test_brute_force_cases_exercise_the_memory_limits():
    """Some solutions are infeasible, some optima too, and memory slows some runtimes."""
    infeasible_rows, infeasible_optima, slowed = 0, 0, 0
    for seed, n, density, speeds, limits in CASES:
        graph = small_graph(seed, n, density)
        best, infeasible = brute_force(graph, devices_of(speeds, limits), "runtime")
        unlimited, _ = brute_force(graph, devices_of(speeds, [1e9] * len(speeds)), "runtime")
        infeasible_rows += infeasible
        infeasible_optima += best[0]
        slowed += best[0] == 0 and best[1] > unlimited[1]
    assert infeasible_rows > 0 and infeasible_optima > 0 and slowed > 0


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
@pytest.mark.parametrize(("seed", "n", "density", "speeds", "limits"), CASES)
def test_cp_sat_proves_the_brute_force_optimum(seed, n, density, speeds, limits, objective):
    graph = small_graph(seed, n, density)
    devices = devices_of(speeds, limits)
    best, _ = brute_force(graph, devices, objective)
    result = place(graph, "cp-sat", objective=objective, devices=devices, seed=0)
    assert result.cost == best
    assert result.proved_optimal
    assert result.info["status"] == "OPTIMAL" and result.info["exact"]
    assert result.info["model_cost"] == best == result.info["objective_bound"]


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cp_sat_proves_the_optimum_with_per_device_runtimes(seed, objective):
    """Equal speeds and memories but different ``(n, d)`` columns: the devices are not
    interchangeable, so the symmetry breaking must leave them apart."""
    graph = small_graph(seed, 6, 0.4)
    rng = np.random.default_rng(seed)
    runtimes = rng.integers(0, 5, (graph.num_nodes, 2)).astype(float)
    runtimes[0] = [8.0, 1.0]  # op 0 belongs on device 1
    devices = devices_of((1.0, 1.0), (13.0, 13.0))
    best, _ = brute_force(graph, devices, objective, runtimes)
    result = place(graph, "cp-sat", objective=objective, devices=devices, runtimes=runtimes)
    assert result.cost == best and result.proved_optimal and result.info["exact"]


def random_topological_order(graph: Graph, rng: np.random.Generator) -> np.ndarray:
    waiting = graph.in_degree.astype(int).copy()
    order: list[int] = []
    while len(order) < graph.num_nodes:
        ready = [v for v in np.flatnonzero(waiting == 0).tolist() if v not in order]
        v = int(rng.choice(ready))
        order.append(v)
        waiting[graph.successors(v)] -= 1
    return np.array(order)


def canonical(device_of: np.ndarray) -> np.ndarray:
    """Identical devices renumbered by first use (the model's symmetry breaking)."""
    labels = {int(k): i for i, k in enumerate(dict.fromkeys(device_of.tolist()))}
    return np.array([labels[int(k)] for k in device_of])


@pytest.mark.parametrize("seed", range(40))
def test_model_evaluates_any_fixed_solution_like_the_simulator(seed):
    """Fix a random placement and order: the model's times and minimal peaks are exact."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    graph = small_graph(seed, n, rng.uniform(0.15, 0.6))
    devices = Devices.homogeneous(int(rng.integers(1, 4)))
    order = random_topological_order(graph, rng)
    device_of = canonical(rng.integers(0, devices.count, n))
    builder = _Builder(PlacementProblem(graph, devices, "peak-memory"))
    for v in range(n):
        builder.model.add(builder.x[v][int(device_of[v])] == 1)
    for i, v in enumerate(order.tolist()):
        builder.model.add(builder.pos[v] == i)
    builder.model.minimize(sum(builder.peak))
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False  # CP-SAT's handler would outlive the solve
    assert solver.solve(builder.model) == cp_model.OPTIMAL
    expected = simulate(graph, devices, device_of, order)
    start = [solver.value(s) * builder.time_unit for s in builder.start]
    peaks = [solver.value(p) * builder.mem_unit for p in builder.peak]
    np.testing.assert_array_equal(start, expected.start)
    np.testing.assert_array_equal(peaks, expected.peak_memory)


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
@pytest.mark.parametrize(("n", "seed"), [(10, 0), (12, 1)])
def test_cp_sat_is_no_worse_than_brkga_on_generated_graphs(n, seed, objective):
    graph = generate_placement(n, seed=seed)
    exact = place(graph, "cp-sat", objective=objective, seed=0, time_limit=20)
    heuristic = place(graph, "brkga", objective=objective, seed=0, evaluations=500)
    assert exact.info["status"] == "OPTIMAL"
    # Log-normal runtimes are rounded to integers: CP-SAT proves nothing, equal up to
    # rounding; only meeting the lower bound proves the result optimal.
    bound = placement_lower_bound(graph, Devices(), objective)
    assert not exact.info["exact"]
    assert exact.proved_optimal is meets_bound(exact.cost[1], bound)
    assert exact.cost[0] <= heuristic.cost[0]
    if exact.cost[0] == heuristic.cost[0]:
        assert exact.cost[1] <= heuristic.cost[1] * (1 + 1e-9)


def test_hint_is_a_starting_point():
    graph = generate_placement(20, seed=5)
    graph = Graph(
        graph.num_nodes,
        *graph.edges,
        mem=graph.mem,
        param_mem=graph.param_mem,
        node_data={"runtime": np.arange(graph.num_nodes) % 4 + 1.0},
    )
    heuristic = place(graph, "brkga", seed=0, evaluations=200)
    hint = (1 - heuristic.device_of, heuristic.order)  # relabelled by the placer
    result = place(graph, "cp-sat", hint=hint, time_limit=1)
    assert result.info["exact"]
    assert result.cost <= heuristic.cost
    with pytest.raises(InputError, match="hint"):
        place(graph, "cp-sat", hint=(np.full(graph.num_nodes, 2), heuristic.order))


@pytest.mark.parametrize("devices", [Devices(latency=1e-3), Devices(bandwidth=1e9)])
def test_costly_transfers_are_rejected(devices):
    with pytest.raises(InputError, match="free transfers"):
        place(small_graph(0, 4, 0.5), "cp-sat", devices=devices)


def test_a_model_not_built_in_time_raises_solver_error():
    with pytest.raises(SolverError, match="could not build its model of 60 ops"):
        place(generate_placement(60, seed=3), "cp-sat", time_limit=0)


def test_empty_graph():
    graph = Graph(0, [], [], mem=[], node_data={"runtime": []})
    result = place(graph, "cp-sat")
    assert result.proved_optimal and result.cost == (0, 0.0)


def test_warm_start_from_another_placer_is_never_worse():
    graph = generate_placement(14, seed=8)
    warm = place(graph, "cp-sat", seed=0, time_limit=2, warm_start="brkga")
    brkga = place(graph, "brkga", seed=0)
    assert warm.cost <= brkga.cost
    with pytest.raises(InputError, match="not both"):
        place(graph, "cp-sat", warm_start="brkga", hint=(brkga.device_of, brkga.order))


def test_ctrl_c_stops_the_search_as_an_interrupt():
    """Not CP-SAT's own SIGINT handling, which would return its best placement so far."""
    graph = generate_placement(36, seed=3)
    with ctrl_c_after(1.0), pytest.raises(KeyboardInterrupt):
        place(graph, "cp-sat", time_limit=60)
