"""Tests of the multi-device cost model (paper 003, A.1), runtime estimates and the
placement-graph generator.

Hand-computed cases check each rule; a plain-Python reference simulator (events sorted
by time, not the kernel's binary-search insertion) checks random DAGs exactly.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.errors import GraphError, InputError, OrderError
from dagopt.generate.placement import (
    PlacementParams,
    generate_placement,
    noisy_copy,
    placement_graph,
    synthetic_runtimes,
)
from dagopt.objectives import lower_bound, peak_memory
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.objectives.placement import batch_costs, placement_cost, simulate, simulate_batch
from dagopt.objectives.placement_bounds import placement_lower_bound
from dagopt.objectives.runtime import estimate_runtimes
from dags import dags, priority_topological


def reference_simulate(graph, devices, device_of, order, runtimes):
    """The rules of ``docs/placement.md`` written plainly: ``(makespan, start, finish, peaks)``.

    Every memory event gets a key ``(time, step, sub)``: ``step`` is the position of the op
    being processed, ``sub`` numbers its transfers, then its start and its end. A copy is
    released just after the latest key among its uses; each device sweeps its events in
    key order. ``runtimes`` are ``(n,)`` on a speed-1 device or ``(n, d)`` per device.
    """
    n, d = graph.num_nodes, devices.count
    speed = devices.speeds
    cost = 0.0 if math.isinf(devices.bandwidth) else 1.0 / devices.bandwidth
    start, finish = np.zeros(n), np.zeros(n)
    device_free = [0.0] * d
    events = [[] for _ in range(d)]  # (key, delta)
    last_use = {}  # (u, device) -> latest key
    for step, v in enumerate(order):
        k = int(device_of[v])
        t = device_free[k]
        remote = [int(u) for u in graph.predecessors(v) if device_of[u] != k]
        pulled = sorted(
            (u for u in remote if (u, k) not in last_use),
            key=lambda u: (finish[u], list(order).index(u)),
        )
        for sub, u in enumerate(pulled):
            t = max(t, finish[u])
            events[k].append(((t, step, sub), graph.mem[u]))
            t += devices.latency + graph.mem[u] * cost
            home = (u, int(device_of[u]))
            last_use[home] = max(last_use[home], (t, step, sub))
            last_use[(u, k)] = (t, step, sub)
        duration = runtimes[v, k] if runtimes.ndim == 2 else runtimes[v] / speed[k]
        start[v], finish[v] = t, t + duration
        m = len(pulled)
        events[k].append(((t, step, m), graph.mem[v] + graph.param_mem[v]))
        end = (finish[v], step, m + 1)
        events[k].append((end, -graph.param_mem[v]))
        for u in graph.predecessors(v).tolist():
            last_use[(u, k)] = max(last_use[(u, k)], end)
        last_use[(int(v), k)] = end
        device_free[k] = finish[v]
    for (u, k), key in last_use.items():
        events[k].append(((*key, math.inf), -graph.mem[u]))  # just after its last use
    peaks = np.zeros(d)
    for k in range(d):
        live = 0.0
        for _, delta in sorted(events[k], key=lambda event: event[0]):
            live += delta
            peaks[k] = max(peaks[k], live)
    return max(finish, default=0.0), start, finish, peaks


def simple_graph(n, edges, mem, runtime, param=None):
    src = [s for s, _ in edges]
    dst = [t for _, t in edges]
    return Graph(n, src, dst, mem=mem, param_mem=param, node_data={"runtime": runtime})


# ------------------------------------------------------------------------ hand-computed cases
def test_transfer_blocks_the_destination_and_holds_the_source_copy():
    # a (dev 0) -> b (dev 1); d runs on dev 0 while a's output moves to dev 1.
    g = simple_graph(3, [(0, 1)], mem=[100, 10, 5], runtime=[2, 3, 1])
    devices = Devices.homogeneous(2, latency=0.5, bandwidth=100.0)
    r = simulate(g, devices, [0, 1, 0], [0, 1, 2])
    assert r.num_transfers == 1
    np.testing.assert_allclose(r.start, [0, 3.5, 2])  # transfer: 0.5 + 100 / 100 s after a
    np.testing.assert_allclose(r.finish, [2, 6.5, 3])
    assert r.makespan == 6.5
    # dev 0: a's copy lives until the transfer ends (3.5), so it overlaps d (2..3).
    # dev 1: the copy (100) arrives, b adds 10.
    np.testing.assert_allclose(r.peak_memory, [105, 110])
    assert r.feasible and r.overflow == 0


def test_free_transfers_by_default():
    g = simple_graph(2, [(0, 1)], mem=[100, 10], runtime=[2, 3])
    r = simulate(g, Devices(), [0, 1], [0, 1])
    np.testing.assert_allclose(r.start, [0, 2])
    assert r.makespan == 5


def test_copy_freed_after_its_last_local_consumer():
    # a (dev 0) -> b (dev 1) -> c (dev 1): a's copy on dev 1 goes when b ends.
    g = simple_graph(3, [(0, 1), (1, 2)], mem=[100, 10, 50], runtime=[1, 1, 1])
    r = simulate(g, Devices(), [0, 1, 1], [0, 1, 2])
    np.testing.assert_allclose(r.peak_memory, [100, 110])  # not 100 + 10 + 50
    # One device: a is freed after b, so c needs b + c only.
    one = simulate(g, Devices.homogeneous(1), [0, 0, 0], [0, 1, 2])
    np.testing.assert_allclose(one.peak_memory, [110])


def test_parameters_count_only_while_the_op_runs():
    g = simple_graph(2, [], mem=[1, 1], runtime=[1, 1], param=[50, 20])
    r = simulate(g, Devices.homogeneous(1), [0, 0], [0, 1])
    np.testing.assert_allclose(r.peak_memory, [51])


def test_inputs_move_in_the_order_they_become_available():
    # p1 (index 0) finishes after p2 (index 1) on dev 0; q on dev 1 pulls p2 first.
    g = simple_graph(3, [(0, 2), (1, 2)], mem=[1, 1, 1], runtime=[1, 4, 1])
    devices = Devices.homogeneous(2, latency=1.0)
    r = simulate(g, devices, [0, 0, 1], [1, 0, 2])
    np.testing.assert_allclose(r.finish[:2], [5, 4])
    assert r.start[2] == 6  # p2 moves 4..5, p1 moves 5..6 (the other way round: 7)


def test_infeasible_memory_limit():
    g = simple_graph(3, [(0, 1), (1, 2)], mem=[100, 10, 50], runtime=[1, 1, 1])
    devices = Devices((DeviceSpec(memory=1000), DeviceSpec(memory=105)))
    r = simulate(g, devices, [0, 1, 1], [0, 1, 2])
    assert list(r.device_feasible) == [True, False]
    assert not r.feasible
    assert r.overflow == 5
    assert placement_cost(r, "runtime") == (1, 5.0)
    assert placement_cost(r, "peak-memory") == (1, 5.0)


def test_speed_factors():
    g = simple_graph(3, [(0, 2), (1, 2)], mem=[1, 1, 1], runtime=[4, 4, 2])
    devices = Devices((DeviceSpec(speed=1.0), DeviceSpec(speed=2.0)))
    r = simulate(g, devices, [0, 1, 1], [0, 1, 2])
    np.testing.assert_allclose(r.finish, [4, 2, 5])  # c waits for a, then runs 2 / 2 s
    assert r.makespan == 5


def test_default_devices_are_section_3_1():
    devices = Devices()
    assert devices.count == 2
    np.testing.assert_array_equal(devices.memory_limits, [16 * GIB] * 2)
    np.testing.assert_array_equal(devices.speeds, [1, 1])
    assert devices.latency == 0 and math.isinf(devices.bandwidth)


# ------------------------------------------------------------------------ properties
@settings(max_examples=150, deadline=None)
@given(dags(max_nodes=10, integer_sizes=False), st.integers(0, 2**32 - 1))
def test_one_device_zero_runtimes_matches_peak_memory(graph, seed):
    rng = np.random.default_rng(seed)
    order = priority_topological(graph, rng.permutation(graph.num_nodes))
    r = simulate(
        graph,
        Devices.homogeneous(1),
        np.zeros(graph.num_nodes, dtype=int),
        order,
        runtimes=np.zeros(graph.num_nodes),
    )
    assert r.peak_memory[0] == pytest.approx(peak_memory(graph, order), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=8), st.integers(0, 2**32 - 1))
def test_one_device_zero_runtimes_matches_peak_memory_exactly(graph, seed):
    order = priority_topological(graph, np.random.default_rng(seed).permutation(graph.num_nodes))
    zeros = np.zeros(graph.num_nodes)
    r = simulate(graph, Devices.homogeneous(1), zeros.astype(int), order, runtimes=zeros)
    assert r.peak_memory[0] == peak_memory(graph, order)


@settings(max_examples=200, deadline=None)
@given(
    dags(max_nodes=10),
    st.integers(1, 3),
    st.sampled_from([0.0, 1.0]),
    st.sampled_from([math.inf, 2.0]),
    st.integers(0, 2**32 - 1),
)
def test_matches_reference_simulator(graph, d, latency, bandwidth, seed):
    rng = np.random.default_rng(seed)
    n = graph.num_nodes
    speeds = rng.choice([1.0, 2.0], size=d)
    devices = Devices(tuple(DeviceSpec(speed=s) for s in speeds), latency, bandwidth)
    device_of = rng.integers(0, d, size=n)
    order = priority_topological(graph, rng.permutation(n))
    runtimes = rng.integers(0, 3, size=n).astype(float)  # small integers: many ties
    r = simulate(graph, devices, device_of, order, runtimes=runtimes)
    makespan, start, finish, peaks = reference_simulate(graph, devices, device_of, order, runtimes)
    assert r.makespan == makespan
    np.testing.assert_array_equal(r.start, start)
    np.testing.assert_array_equal(r.finish, finish)
    np.testing.assert_array_equal(r.peak_memory, peaks)


@settings(max_examples=150, deadline=None)
@given(
    dags(max_nodes=10),
    st.integers(1, 3),
    st.sampled_from([0.0, 1.0]),
    st.sampled_from([math.inf, 2.0]),
    st.integers(0, 2**32 - 1),
)
def test_per_device_runtimes_match_reference_simulator(graph, d, latency, bandwidth, seed):
    """``(n, d)`` runtimes: op ``v`` takes ``runtimes[v, k]`` on device ``k``, speeds unused."""
    rng = np.random.default_rng(seed)
    n = graph.num_nodes
    devices = Devices(
        tuple(DeviceSpec(speed=s) for s in rng.choice([1.0, 2.0], size=d)), latency, bandwidth
    )
    device_of = rng.integers(0, d, size=n)
    order = priority_topological(graph, rng.permutation(n))
    runtimes = rng.integers(0, 4, size=(n, d)).astype(float)
    r = simulate(graph, devices, device_of, order, runtimes=runtimes)
    makespan, start, finish, peaks = reference_simulate(graph, devices, device_of, order, runtimes)
    assert r.makespan == makespan
    np.testing.assert_array_equal(r.start, start)
    np.testing.assert_array_equal(r.finish, finish)
    np.testing.assert_array_equal(r.peak_memory, peaks)


def test_lower_bounds_by_hand():
    # 0 -> 2 <- 1: op 2 holds both inputs and its output; two devices run 0 and 1 at once.
    graph = Graph(3, [0, 1], [2, 2], mem=[4.0, 5.0, 1.0], param_mem=[0.0, 0.0, 2.0])
    runtimes = np.array([3.0, 3.0, 1.0])
    two = Devices.homogeneous(2)
    assert placement_lower_bound(graph, two, "peak-memory") == 12.0 == lower_bound(graph)
    assert placement_lower_bound(graph, two, "runtime", runtimes=runtimes) == 4.0
    # Four independent ops of 3 s: the critical path is 3 s, the work 12 s over 2 devices.
    spread = Graph(4, [], [], mem=[1.0] * 4)
    assert placement_lower_bound(spread, two, "runtime", runtimes=np.full(4, 3.0)) == 6.0
    fast = Devices((DeviceSpec(speed=2.0), DeviceSpec(speed=1.0)))
    assert placement_lower_bound(graph, fast, "runtime", runtimes=runtimes) == 7.0 / 3.0
    # Both bounds are met: 0 and 1 in parallel, then 2.
    met = simulate(graph, two, [0, 1, 0], [0, 1, 2], runtimes=runtimes)
    assert met.makespan == 4.0 and met.peak_memory.max() == 12.0
    with pytest.raises(InputError, match="objective"):
        placement_lower_bound(graph, two, "energy")


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=9, integer_sizes=False), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_no_placement_beats_the_lower_bounds(graph, d, seed):
    rng = np.random.default_rng(seed)
    runtimes = rng.uniform(0.0, 2.0, graph.num_nodes)
    devices = Devices(
        tuple(DeviceSpec(speed=float(s)) for s in rng.uniform(0.5, 2.0, d)), latency=0.1
    )
    for _ in range(5):
        device_of = rng.integers(0, d, graph.num_nodes)
        order = priority_topological(graph, rng.random(graph.num_nodes))
        result = simulate(graph, devices, device_of, order, runtimes=runtimes)
        runtime_bound = placement_lower_bound(graph, devices, "runtime", runtimes=runtimes)
        memory_bound = placement_lower_bound(graph, devices, "peak-memory")
        # Sums in another order: equal up to rounding.
        assert result.makespan >= runtime_bound * (1 - 1e-12)
        assert result.peak_memory.max() >= memory_bound * (1 - 1e-12)


def test_infeasible_ranks_after_feasible_under_both_objectives():
    g = simple_graph(2, [(0, 1)], mem=[8, 8], runtime=[1, 1])
    tight = Devices.homogeneous(2, memory=10)
    split = simulate(g, tight, [0, 1], [0, 1])  # dev 1 holds a's copy and b: 16 > 10
    assert not split.feasible
    slow = simulate(g, Devices.homogeneous(2, memory=100), [0, 0], [0, 1])
    assert slow.feasible
    for objective in ("runtime", "peak-memory"):
        assert placement_cost(slow, objective) < placement_cost(split, objective)
    assert placement_cost(slow, "runtime") == (0, 2.0)
    assert placement_cost(slow, "peak-memory") == (0, 16.0)


def test_batch_equals_single_evaluations():
    graph = generate_placement(60, seed=3)
    rng = np.random.default_rng(0)
    rows = 40
    devices = Devices(
        (DeviceSpec(memory=12 * GIB), DeviceSpec(speed=1.5, memory=13 * GIB), DeviceSpec()),
        latency=1e-4,
        bandwidth=16 * GIB,
    )
    device_of = rng.integers(0, devices.count, size=(rows, graph.num_nodes))
    orders = np.array(
        [priority_topological(graph, rng.random(graph.num_nodes)) for _ in range(rows)]
    )
    batch = simulate_batch(graph, devices, device_of, orders)
    singles = [simulate(graph, devices, device_of[b], orders[b]) for b in range(rows)]
    np.testing.assert_array_equal(batch.makespan, [s.makespan for s in singles])
    np.testing.assert_array_equal(batch.peak_memory, [s.peak_memory for s in singles])
    np.testing.assert_array_equal(batch.feasible, [s.feasible for s in singles])
    np.testing.assert_array_equal(batch.overflow, [s.overflow for s in singles])
    for objective in ("runtime", "peak-memory"):
        infeasible, value = batch_costs(batch, objective)
        expected = [placement_cost(s, objective) for s in singles]
        assert list(zip(infeasible.tolist(), value.tolist(), strict=True)) == expected
    assert 0 < batch.feasible.sum() < rows  # both kinds present, so ranking is exercised
    ranked = np.lexsort((value, infeasible))
    assert not infeasible[ranked[: batch.feasible.sum()]].any()


def test_empty_graph():
    g = Graph(0, [], [], mem=[], node_data={"runtime": []})
    r = simulate(g, Devices(), [], [])
    assert r.makespan == 0 and list(r.peak_memory) == [0, 0] and r.feasible


def test_empty_graph_needs_no_runtime_attribute():
    """A node-link file without nodes has no attributes at all, so no ``runtime`` either."""
    assert simulate(Graph(0, [], [], mem=[]), Devices(), [], []).makespan == 0


@pytest.mark.parametrize(
    ("runtime", "devices"),
    [
        ([1e308, 1e308], Devices()),  # the ops' total overflows
        ([1.0, 1.0], Devices.homogeneous(2, speed=1e-310)),  # runtime / speed overflows
        ([1.0, 1.0], Devices.homogeneous(2, bandwidth=1e-320)),  # 1 / bandwidth overflows
    ],
    ids=["huge-runtimes", "tiny-speed", "tiny-bandwidth"],
)
def test_makespan_that_could_be_infinite_is_an_input_error(runtime, devices):
    g = simple_graph(2, [(0, 1)], mem=[1, 1], runtime=runtime)
    with pytest.raises(InputError, match="the makespan could be infinite"):
        simulate(g, devices, [0, 1], [0, 1])


# ------------------------------------------------------------------------ bad inputs
@pytest.fixture
def chain():
    return simple_graph(3, [(0, 1), (1, 2)], mem=[1, 1, 1], runtime=[1, 1, 1])


@pytest.mark.parametrize(
    ("device_of", "order", "error", "words"),
    [
        ([0, 1], [0, 1, 2], InputError, "shape"),
        ([0, 2, 1], [0, 1, 2], InputError, "device 2"),
        ([0, -1, 1], [0, 1, 2], InputError, "device -1"),
        ([0.0, 1.0, 1.0], [0, 1, 2], InputError, "integer"),
        ([0, 1, 1], [0, 1], OrderError, "misses"),
        ([0, 1, 1], [0, 1, 1], OrderError, "repeats"),
        ([0, 1, 1], [0, 1, 5], OrderError, "unknown"),
        ([0, 1, 1], [1, 0, 2], OrderError, "before its predecessor"),
    ],
)
def test_bad_inputs_raise_one_line_errors(chain, device_of, order, error, words):
    with pytest.raises(error, match=words) as caught:
        simulate(chain, Devices(), device_of, order)
    assert "\n" not in str(caught.value)


def test_bad_batch_rows(chain):
    good = np.array([[0, 1, 2], [0, 1, 2]])
    with pytest.raises(OrderError, match=r"priority order 1: .*before its predecessor"):
        simulate_batch(chain, Devices(), np.zeros((2, 3), int), [[0, 1, 2], [0, 2, 1]])
    with pytest.raises(OrderError, match=r"priority order 0: .*repeats"):
        simulate_batch(chain, Devices(), np.zeros((2, 3), int), [[0, 0, 2], [0, 1, 2]])
    with pytest.raises(OrderError, match="shape"):
        simulate_batch(chain, Devices(), np.zeros((2, 3), int), [0, 1, 2])
    with pytest.raises(InputError, match="shape"):
        simulate_batch(chain, Devices(), np.zeros((3, 3), int), good)
    with pytest.raises(InputError, match="placement 1: node 1 is placed on device 7"):
        simulate_batch(chain, Devices(), [[0, 0, 0], [0, 7, 0]], good)


def test_missing_or_bad_runtimes(chain):
    bare = Graph(2, [0], [1], mem=[1, 1])
    with pytest.raises(
        InputError, match=r"give every node a numeric 'runtime' attribute.*estimate_runtimes"
    ):
        simulate(bare, Devices(), [0, 0], [0, 1])
    with pytest.raises(InputError, match="invalid runtime"):
        simulate(chain, Devices(), [0, 0, 0], [0, 1, 2], runtimes=[1, -1, 1])
    with pytest.raises(InputError, match="shape"):
        simulate(chain, Devices(), [0, 0, 0], [0, 1, 2], runtimes=[1, 1])


def test_bad_devices_and_objective(chain):
    for make in (
        lambda: DeviceSpec(speed=0),
        lambda: DeviceSpec(memory=0),
        lambda: Devices(()),
        lambda: Devices(latency=-1),
        lambda: Devices(bandwidth=0),
        lambda: Devices.homogeneous(0),
    ):
        with pytest.raises(InputError):
            make()
    r = simulate(chain, Devices(), [0, 0, 0], [0, 1, 2])
    with pytest.raises(InputError, match="unknown objective 'latency'"):
        placement_cost(r, "latency")


# ------------------------------------------------------------------------ runtime estimates
def test_roofline_estimate():
    # a -> c, b -> c; c reads 2 + 3 bytes, writes 4, holds 1 byte of parameters.
    g = Graph(3, [0, 1], [2, 2], mem=[2, 3, 4], param_mem=[0, 0, 1])
    np.testing.assert_allclose(estimate_runtimes(g, peak_flops=10, bandwidth=2), [1, 1.5, 5])
    with_flops = Graph(
        3, [0, 1], [2, 2], mem=[2, 3, 4], param_mem=[0, 0, 1], node_data={"flops": [0, 100, 20]}
    )
    # b: max(100 / 10, 3 / 2) = 10 (compute-bound); c: max(2, 5) = 5 (memory-bound).
    np.testing.assert_allclose(
        estimate_runtimes(with_flops, peak_flops=10, bandwidth=2), [1, 10, 5]
    )
    r = simulate(
        g, Devices(), [0, 1, 0], [0, 1, 2], runtimes=estimate_runtimes(g, peak_flops=1, bandwidth=1)
    )
    assert r.makespan == 3 + 10  # c waits for b (3 s on device 1), then runs 10 s
    rows = Graph(2, [0], [1], mem=[1, 1], node_data={"flops": [[1, 2], [3, 4]]})
    with pytest.raises(InputError, match="'flops' has shape"):
        estimate_runtimes(rows, peak_flops=1, bandwidth=1)


def test_roofline_rejects_bad_rates():
    g = Graph(1, [], [], mem=[1])
    for kwargs in ({"peak_flops": 0, "bandwidth": 1}, {"peak_flops": 1, "bandwidth": math.inf}):
        with pytest.raises(InputError):
            estimate_runtimes(g, **kwargs)


# ------------------------------------------------------------------------ generator
def test_generator_is_deterministic():
    a, b = generate_placement(seed=11), generate_placement(seed=11)
    assert a.name == b.name == f"placement-{a.num_nodes}-s11"
    np.testing.assert_array_equal(a.edges[0], b.edges[0])
    np.testing.assert_array_equal(a.edges[1], b.edges[1])
    for key in ("runtime", "layer"):
        np.testing.assert_array_equal(a.node_data[key], b.node_data[key])
    np.testing.assert_array_equal(a.mem, b.mem)
    np.testing.assert_array_equal(a.param_mem, b.param_mem)
    assert not np.array_equal(
        a.node_data["runtime"], generate_placement(a.num_nodes, seed=12).node_data["runtime"]
    )


def test_generator_sizes_and_costs():
    params = PlacementParams()
    sizes = []
    for seed in range(25):
        g = generate_placement(seed=seed)
        sizes.append(g.num_nodes)
        assert params.size_range[0] <= g.num_nodes <= params.size_range[1]
        assert np.all(g.node_data["runtime"] > 0)
        assert g.is_topological(np.arange(g.num_nodes))  # numbered layer by layer
        src, dst = g.edges
        working = g.mem + g.param_mem + np.bincount(dst, weights=g.mem[src], minlength=g.num_nodes)
        assert working.max() <= params.max_working_set
        assert g.mem.sum() + g.param_mem.sum() <= params.footprint_range[1]
    assert min(sizes) < 60 and max(sizes) > 150  # log-uniform over 30..300
    assert generate_placement(7, seed=0).num_nodes == 7


def test_generator_and_runtime_errors():
    with pytest.raises(GraphError):
        generate_placement(0, seed=0)
    with pytest.raises(InputError):
        PlacementParams(size_range=(50, 10))
    with pytest.raises(InputError):
        PlacementParams(footprint_range=(0, 1))
    with pytest.raises(InputError):
        PlacementParams(param_share=2)
    runtimes = synthetic_runtimes(1000, seed=0, median=2.0, sigma=0.5)
    assert np.median(runtimes) == pytest.approx(2.0, rel=0.1)
    np.testing.assert_array_equal(runtimes, synthetic_runtimes(1000, seed=0, median=2.0, sigma=0.5))


def test_noisy_copy_keeps_the_topology_and_scales_each_op():
    base = generate_placement(200, seed=3)
    copy = noisy_copy(base, seed=11, sigma=0.2)
    np.testing.assert_array_equal(copy.edges[0], base.edges[0])
    np.testing.assert_array_equal(copy.edges[1], base.edges[1])
    ratio = copy.node_data["runtime"] / base.node_data["runtime"]
    assert np.std(np.log(ratio)) == pytest.approx(0.2, rel=0.25)
    assert not np.allclose(copy.mem, base.mem)
    assert lower_bound(copy) <= PlacementParams().max_working_set
    assert copy.name == f"{base.name}-noise-s11"
    same = noisy_copy(base, seed=11, sigma=0.2)
    np.testing.assert_array_equal(same.mem, copy.mem)
    unchanged = noisy_copy(base, seed=11, sigma=0.0)
    np.testing.assert_array_equal(unchanged.mem, base.mem)
    tight = noisy_copy(base, seed=11, sigma=1.0, max_working_set=lower_bound(base))
    assert lower_bound(tight) <= lower_bound(base)


def test_placement_graph_shares_topologies_across_seed_ranges():
    assert placement_graph(5).name == generate_placement(seed=5).name
    first, second = placement_graph(3, topologies=10), placement_graph(2_000_003, topologies=10)
    np.testing.assert_array_equal(first.edges[0], second.edges[0])
    assert not np.array_equal(first.mem, second.mem)
    other = placement_graph(4, topologies=10)
    assert other.num_nodes != first.num_nodes or not np.array_equal(other.edges[0], first.edges[0])
    with pytest.raises(InputError, match="topologies"):
        placement_graph(0, topologies=-1)
    with pytest.raises(InputError, match="sigma"):
        noisy_copy(first, seed=0, sigma=-1.0)
    with pytest.raises(InputError, match="runtime"):
        noisy_copy(Graph(2, [0], [1], mem=[1, 1]), seed=0, sigma=0.1)
