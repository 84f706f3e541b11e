"""Tests of the cost-model interface (paper 003, A.1) and per-device runtimes.

``(n, d)`` runtimes equal to ``runtime / speed`` reproduce ``(n,)`` results exactly; a
heterogeneous CPU/GPU case is computed by hand; lower bounds hold on random placements;
bad runtimes are one-line errors; and a placer searches against a custom cost model.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.errors import InputError
from dagopt.generate.placement import generate_placement, noisy_copy
from dagopt.io import read_graph_json, write_graph_json, write_placement
from dagopt.objectives.costmodel import CostModel, Evaluation
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.objectives.op_runtimes import op_runtimes, relative_speeds, resolve_runtimes
from dagopt.objectives.placement import SimulatedCostModel, simulate, simulate_batch
from dagopt.objectives.placement_bounds import placement_lower_bound
from dagopt.place import PlacementProblem, place
from dagopt.place.brkga import BrkgaParams, run_brkga
from dags import dags, priority_topological

HETEROGENEOUS = Devices(
    (DeviceSpec(speed=1.0), DeviceSpec(speed=2.0, memory=4 * 2**30), DeviceSpec(speed=1.5)),
    latency=1e-4,
    bandwidth=1e10,
)


def random_order(graph: Graph, rng: np.random.Generator) -> np.ndarray:
    """A random topological order (Kahn's algorithm with random priorities)."""
    return priority_topological(graph, rng.random(graph.num_nodes))


# ------------------------------------------------------------------------ (n, d) runtimes
def test_per_device_runtimes_equal_to_runtime_over_speed_reproduce_exactly():
    graph = generate_placement(90, seed=4)
    runtime = graph.node_data["runtime"]
    matrix = runtime[:, None] / HETEROGENEOUS.speeds[None, :]
    rng = np.random.default_rng(0)
    rows = 30
    device_of = rng.integers(0, HETEROGENEOUS.count, size=(rows, graph.num_nodes))
    orders = np.array([random_order(graph, rng) for _ in range(rows)])
    for b in range(3):
        one = simulate(graph, HETEROGENEOUS, device_of[b], orders[b])
        two = simulate(graph, HETEROGENEOUS, device_of[b], orders[b], runtimes=matrix)
        assert one.makespan == two.makespan and one.num_transfers == two.num_transfers
        np.testing.assert_array_equal(one.start, two.start)
        np.testing.assert_array_equal(one.finish, two.finish)
        np.testing.assert_array_equal(one.peak_memory, two.peak_memory)
    one = simulate_batch(graph, HETEROGENEOUS, device_of, orders)
    two = simulate_batch(graph, HETEROGENEOUS, device_of, orders, runtimes=matrix)
    np.testing.assert_array_equal(one.makespan, two.makespan)
    np.testing.assert_array_equal(one.peak_memory, two.peak_memory)
    for method in ("brkga", "local-search"):
        a = place(graph, method, devices=HETEROGENEOUS, seed=3, evaluations=400)
        b = place(graph, method, devices=HETEROGENEOUS, runtimes=matrix, seed=3, evaluations=400)
        np.testing.assert_array_equal(a.device_of, b.device_of)
        np.testing.assert_array_equal(a.order, b.order)
        assert a.cost == b.cost and a.makespan == b.makespan
        np.testing.assert_array_equal(a.peak_memory, b.peak_memory)


def cpu_gpu_graph() -> tuple[Graph, Devices, np.ndarray]:
    """a -> c <- b on a CPU (device 0) and a GPU (device 1): a is faster on the CPU."""
    graph = Graph(3, [0, 1], [2, 2], mem=[100.0, 50.0, 10.0], names=["a", "b", "c"])
    runtimes = np.array([[1.0, 4.0], [5.0, 2.0], [10.0, 1.0]])
    return graph, Devices.homogeneous(2), runtimes


def test_heterogeneous_runtimes_by_hand():
    graph, devices, runtimes = cpu_gpu_graph()
    # a on the CPU (0..1), b on the GPU (0..2), then c on the GPU pulls a's copy: 2..3.
    r = simulate(graph, devices, [0, 1, 1], [0, 1, 2], runtimes=runtimes)
    np.testing.assert_array_equal(r.start, [0.0, 0.0, 2.0])
    np.testing.assert_array_equal(r.finish, [1.0, 2.0, 3.0])
    assert r.makespan == 3.0 and r.num_transfers == 1
    assert simulate(graph, devices, [0, 0, 0], [0, 1, 2], runtimes=runtimes).makespan == 16.0
    assert simulate(graph, devices, [1, 1, 1], [0, 1, 2], runtimes=runtimes).makespan == 7.0
    # A transfer of a's 100 bytes at 100 B/s after 0.5 s latency: c starts at 2 + 1.5.
    slow_link = Devices.homogeneous(2, latency=0.5, bandwidth=100.0)
    r = simulate(graph, slow_link, [0, 1, 1], [0, 1, 2], runtimes=runtimes)
    assert r.start[2] == 3.5 and r.makespan == 4.5
    # No speed factor gives this: a is 4x faster on the CPU, c 10x faster on the GPU.
    # The critical path with each op's fastest device is max(1, 2) + 1 = 3: met, so proved.
    assert placement_lower_bound(graph, devices, "runtime", runtimes=runtimes) == 3.0
    result = place(graph, "brkga", devices=devices, runtimes=runtimes, seed=0, evaluations=300)
    assert result.makespan == 3.0 and result.proved_optimal
    assert result.device_of.tolist() == [0, 1, 1]


def test_work_bound_for_per_device_runtimes_by_hand():
    # Four independent ops: 2 s on the CPU, 1 s on the GPU. Any y gives a bound
    # sum_v min_k y_k t[v, k]; y = (1/3, 2/3) (1 / column totals) gives 4 * 2/3 = 8/3,
    # which a 1 + 3 split meets up to the indivisible ops: CPU 2 s, GPU 3 s.
    graph = Graph(4, [], [], mem=[1.0] * 4)
    runtimes = np.tile([2.0, 1.0], (4, 1))
    bound = placement_lower_bound(graph, Devices.homogeneous(2), "runtime", runtimes=runtimes)
    assert bound == pytest.approx(8.0 / 3.0, rel=1e-15)
    best = simulate(graph, Devices.homogeneous(2), [0, 1, 1, 1], [0, 1, 2, 3], runtimes=runtimes)
    assert best.makespan == 3.0 >= bound


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=9, integer_sizes=False), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_no_placement_beats_the_lower_bound_with_per_device_runtimes(graph, d, seed):
    rng = np.random.default_rng(seed)
    runtimes = rng.uniform(0.0, 2.0, (graph.num_nodes, d)) * rng.uniform(0.1, 10.0, d)
    devices = Devices.homogeneous(d, latency=float(rng.choice([0.0, 0.1])))
    bound = placement_lower_bound(graph, devices, "runtime", runtimes=runtimes)
    model = SimulatedCostModel(graph, devices, runtimes)
    assert model.lower_bound("runtime") == bound
    device_of = rng.integers(0, d, (8, graph.num_nodes))
    orders = np.array([random_order(graph, rng) for _ in range(8)])
    makespan = model.simulate_batch(device_of, orders).makespan
    assert (makespan >= bound * (1 - 1e-12)).all()  # sums in another order: rounding


@pytest.mark.parametrize(
    ("runtimes", "words"),
    [
        (np.ones((3, 3)), r"shape \(3, 3\), expected \(3,\) or \(3, 2\)"),
        (np.ones((3, 2, 1)), "shape"),
        (np.ones(4), "shape"),
        (np.ones((2, 2)), "shape"),
        ([[1.0, 2.0], [math.nan, 1.0], [1.0, 1.0]], "node 1 has invalid runtime nan on device 0"),
        ([[1.0, 2.0], [1.0, -1.0], [1.0, 1.0]], "node 1 has invalid runtime -1.0 on device 1"),
        ([[1.0, 2.0], [1.0, 1.0], [1.0, math.inf]], "node 2 has invalid runtime inf on device 1"),
        ([1.0, math.nan, 1.0], "node 1 has invalid runtime nan"),
        (["a", "b", "c"], "runtimes must be numbers"),
    ],
)
def test_bad_runtimes_are_one_line_errors(runtimes, words):
    chain = Graph(3, [0, 1], [1, 2], mem=[1.0, 1.0, 1.0])
    with pytest.raises(InputError, match=words) as caught:
        simulate(chain, Devices(), [0, 0, 0], [0, 1, 2], runtimes=runtimes)
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match=words):
        PlacementProblem(chain, Devices(), "runtime", runtimes=runtimes)
    with pytest.raises(InputError):
        placement_lower_bound(chain, Devices(), "runtime", runtimes=runtimes)


def test_helpers_of_per_device_runtimes():
    graph, devices, runtimes = cpu_gpu_graph()
    assert resolve_runtimes(graph, runtimes, devices).shape == (3, 2)
    assert op_runtimes(graph, runtimes, devices).tolist() == [1.0, 2.0, 1.0]
    flat = np.array([1.0, 2.0, 3.0])
    assert op_runtimes(graph, flat, devices).tolist() == flat.tolist()
    # Totals 16 s and 7 s: the GPU runs the graph 16/7 times faster.
    np.testing.assert_allclose(relative_speeds(runtimes, devices), [7.0 / 16.0, 1.0])
    np.testing.assert_array_equal(relative_speeds(np.zeros((3, 2)), devices), [1.0, 1.0])
    np.testing.assert_array_equal(relative_speeds(flat, HETEROGENEOUS), HETEROGENEOUS.speeds)
    problem = PlacementProblem(graph, devices, runtimes=runtimes)
    assert np.argmax(problem.speeds) == 1
    single = place(graph, "single-device", devices=devices, runtimes=runtimes)
    assert single.device_of.tolist() == [1, 1, 1] and single.makespan == 7.0
    gp = place(graph, "gp-dfs", devices=devices, runtimes=runtimes, seed=0)
    assert gp.feasible


def test_regal_features_read_the_fastest_device():
    pytest.importorskip("torch")
    from dagopt.nn.regal import regal_inputs

    graph = generate_placement(40, seed=2)
    runtime = graph.node_data["runtime"]
    same = regal_inputs(graph, None, Devices()).x
    assert (regal_inputs(graph, np.stack([runtime, runtime], axis=1), Devices()).x == same).all()
    faster = np.stack([runtime, runtime * 3.0], axis=1)  # device 0 is always fastest
    assert (regal_inputs(graph, faster, Devices()).x == same).all()


# ------------------------------------------------------------------------ custom cost models
class BusiestDevice:
    """A measured-like cost model: the time of the busiest device (no order, no memory).

    It scores only ``runtime``, ignores the order, knows no peak and no lower bound, and
    counts its calls; the time of device ``k`` is the sum of ``times[v, k]`` of its ops.
    """

    objectives = ("runtime",)
    uses_order = False

    def __init__(self, times: np.ndarray, devices: Devices) -> None:
        self.times = times
        self.devices = devices
        self.rows = 0
        self.evaluations = 0

    def _makespan(self, device_of: np.ndarray) -> np.ndarray:
        device_of = np.atleast_2d(device_of)
        loads = np.zeros((len(device_of), self.devices.count))
        for k in range(self.devices.count):
            loads[:, k] = (self.times[:, k][None, :] * (device_of == k)).sum(axis=1)
        return loads.max(axis=1)

    def costs(self, device_of, orders, objective):
        self.rows += len(device_of)
        makespan = self._makespan(device_of)
        return np.zeros(len(makespan), dtype=np.int64), makespan

    def evaluate(self, device_of, order, objective):
        self.evaluations += 1
        makespan = float(self._makespan(device_of)[0])
        return Evaluation(cost=(0, makespan), makespan=makespan, feasible=True)

    def lower_bound(self, objective):
        return None


def test_a_placer_searches_against_a_custom_cost_model(tmp_path):
    graph = generate_placement(50, seed=1)
    rng = np.random.default_rng(0)
    devices = Devices.homogeneous(2)
    model = BusiestDevice(rng.uniform(0.5, 1.5, (graph.num_nodes, 2)), devices)
    assert isinstance(model, CostModel)
    problem = PlacementProblem(graph, objective="runtime", cost_model=model)
    assert problem.devices is devices
    outcome = run_brkga(problem, params=BrkgaParams(evaluations=500), seed=0)
    assert model.rows == problem.evaluations == outcome.evaluations == 500
    assert outcome.cost[1] == float(model._makespan(outcome.device_of)[0])

    result = place(graph, "brkga", cost_model=model, seed=0, evaluations=500)
    assert model.evaluations == 1  # place() scores the answer once, with the same model
    assert result.evaluations == 500 and model.rows == 1000
    assert result.peak_memory is None and result.feasible
    assert result.cost == (0, result.makespan) == outcome.cost
    assert result.proved_optimal is None  # no lower bound, no claim
    path = write_placement(tmp_path / "p.json", graph, result)
    assert json.loads(path.read_text())["peak_memory"] is None
    # BRKGA beats a random placement on the model it searched against.
    assert result.makespan < float(model._makespan(rng.integers(0, 2, graph.num_nodes))[0])


def test_problems_reject_mismatched_cost_models():
    graph = generate_placement(20, seed=0)
    model = BusiestDevice(np.ones((graph.num_nodes, 2)), Devices.homogeneous(2))
    with pytest.raises(InputError, match="scores runtime, not 'peak-memory'"):
        PlacementProblem(graph, objective="peak-memory", cost_model=model)
    with pytest.raises(InputError, match="devices differ"):
        PlacementProblem(graph, Devices.homogeneous(3), cost_model=model)
    with pytest.raises(InputError, match="not both"):
        PlacementProblem(graph, cost_model=model, runtimes=np.ones(graph.num_nodes))
    with pytest.raises(InputError, match="is not a cost model"):
        PlacementProblem(graph, cost_model=object())
    with pytest.raises(InputError, match="has no op runtimes"):
        _ = PlacementProblem(graph, cost_model=model).runtimes
    with pytest.raises(InputError, match="cp-sat models the simulated cost model"):
        place(graph, "cp-sat", cost_model=model)
    # The default simulator is a CostModel too, with its runtimes and devices.
    problem = PlacementProblem(graph, Devices.homogeneous(2))
    assert isinstance(problem.cost_model, SimulatedCostModel)
    assert isinstance(problem.cost_model, CostModel)
    np.testing.assert_array_equal(problem.runtimes, graph.node_data["runtime"])
    assert not problem.runtimes.flags.writeable


def test_per_device_runtimes_as_a_graph_attribute(tmp_path):
    """A ``runtime`` node attribute of shape ``(n, d)`` (a list per op in the file)."""
    graph, devices, runtimes = cpu_gpu_graph()
    stored = Graph(
        3, *graph.edges, mem=graph.mem, names=graph.names, node_data={"runtime": runtimes}
    )
    path = write_graph_json(stored, tmp_path / "g.json")
    assert json.loads(path.read_text())["nodes"][0]["runtime"] == [1, 4]
    loaded = read_graph_json(path)
    result = place(loaded, "brkga", devices=devices, seed=0, evaluations=300)
    assert result.makespan == 3.0 and result.proved_optimal
    with pytest.raises(InputError, match=r"expected \(3,\) or \(3, 3\)"):
        place(loaded, "brkga", devices=Devices.homogeneous(3))
    copy = noisy_copy(loaded, seed=1, sigma=0.5)
    ratio = copy.node_data["runtime"] / runtimes
    np.testing.assert_allclose(ratio[:, 0], ratio[:, 1])  # one noise factor per op
