"""Tests of the baseline placers of paper 003, section 3.2 (single device, GP + DFS,
local search): valid solutions, evaluation counts, and what each one promises."""

from itertools import pairwise

import numpy as np
import pytest

import dagopt.place.baselines  # noqa: F401  (registers the placers)
from dagopt.errors import InputError
from dagopt.generate.placement import generate_placement
from dagopt.objectives import peak_memory
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.place import place
from dagopt.place.baselines import cut_bytes, partition, perturb
from dagopt.place.decode import decode
from dagopt.schedule import solve

PLACERS = ("single-device", "gp-dfs", "local-search")


@pytest.fixture(scope="module")
def graph():
    return generate_placement(60, seed=3)


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("method", PLACERS)
def test_placers_return_valid_solutions(graph, method, d, objective):
    options = {"evaluations": 300} if method == "local-search" else {}
    result = place(
        graph, method, devices=Devices.homogeneous(d), objective=objective, seed=1, **options
    )
    assert result.device_of.shape == (graph.num_nodes,)
    assert result.device_of.min() >= 0 and result.device_of.max() < d
    assert graph.is_topological(result.order)
    assert result.evaluations == (300 if method == "local-search" else 1)
    assert result.info["cost"] == result.cost  # the placer's own evaluation agrees


@pytest.mark.parametrize("d", [1, 2])
def test_single_device_peak_is_the_single_device_peak_memory(graph, d):
    result = place(graph, "single-device", devices=Devices.homogeneous(d), objective="peak-memory")
    assert np.all(result.device_of == 0)
    np.testing.assert_array_equal(result.order, solve(graph, "inductor").order)
    assert result.peak_memory.max() == pytest.approx(peak_memory(graph, result.order), rel=1e-12)


def test_single_device_picks_the_fastest_device(graph):
    devices = Devices((DeviceSpec(speed=1.0), DeviceSpec(speed=2.0), DeviceSpec(speed=2.0)))
    result = place(graph, "single-device", devices=devices, order_method="dfs")
    assert np.all(result.device_of == 1)
    np.testing.assert_array_equal(result.order, solve(graph, "dfs").order)


@pytest.mark.parametrize("d", [2, 3])
def test_gp_dfs_cuts_fewer_bytes_than_random_balanced_splits(d):
    for seed in range(4):
        graph = generate_placement(80, seed=seed)
        result = place(graph, "gp-dfs", devices=Devices.homogeneous(d), seed=seed)
        sizes = np.bincount(result.device_of, minlength=d)
        assert sizes.max() - sizes.min() <= 1  # balanced
        assert result.info["cut_bytes"] == cut_bytes(graph, result.device_of)
        rng = np.random.default_rng(seed)
        random_cuts = [cut_bytes(graph, rng.permutation(result.device_of)) for _ in range(10)]
        assert result.info["cut_bytes"] <= min(random_cuts)
        np.testing.assert_array_equal(result.order, solve(graph, "dfs").order)


def test_gp_dfs_is_seeded_and_sizes_parts_by_speed(graph):
    speeds = np.array([1.0, 3.0])
    first = partition(graph, speeds, np.random.default_rng(5))
    again = partition(graph, speeds, np.random.default_rng(5))
    np.testing.assert_array_equal(first, again)
    assert np.bincount(first).tolist() == [15, 45]


def test_cut_bytes_counts_each_cut_edge_by_its_source():
    graph = generate_placement(30, seed=0)
    src, dst = graph.edges
    device_of = np.arange(graph.num_nodes) % 2
    expected = sum(graph.mem[u] for u, v in zip(src, dst, strict=True) if (u - v) % 2)
    assert cut_bytes(graph, device_of) == pytest.approx(expected)
    assert cut_bytes(graph, np.zeros(graph.num_nodes, dtype=np.int64)) == 0


@pytest.mark.parametrize("d", [1, 3])
def test_perturb_changes_the_given_number_of_ops(d):
    rng = np.random.default_rng(0)
    keys = rng.random((40, d + 1))
    batch = perturb(keys, 30, 2, rng)
    assert batch.shape == (30, 40, d + 1)
    assert np.all((batch >= 0) & (batch <= 1))
    changed = np.any(batch != keys, axis=2).sum(axis=1)
    assert np.all(changed == 2)
    # a device move lands the op on another device; a priority move keeps the device
    device_of = np.argmax(keys[:, :d], axis=1)
    moved = np.argmax(batch[:, :, :d], axis=2) != device_of
    same_priority = batch[:, :, d] == keys[:, d]
    assert np.all(moved == (np.any(batch != keys, axis=2) & same_priority))


def test_local_search_improves_on_its_start_and_is_deterministic(graph):
    devices = Devices.homogeneous(3)
    runs = [place(graph, "local-search", devices=devices, seed=7, evaluations=800) for _ in "ab"]
    first, second = runs
    np.testing.assert_array_equal(first.device_of, second.device_of)
    np.testing.assert_array_equal(first.order, second.order)
    assert first.info["best_by_evaluation"] == second.info["best_by_evaluation"]
    assert first.cost <= first.info["start_cost"]
    assert first.cost < first.info["start_cost"]  # 800 evaluations do find better
    trace = first.info["best_by_evaluation"]
    assert trace[0][0] == 1 and trace[-1][1:] == first.cost
    assert all(a[1:] > b[1:] for a, b in pairwise(trace))
    # the start is the decoded uniform chromosome of the seed
    keys = np.random.default_rng(7).random((graph.num_nodes, 4))
    device_of, orders = decode(graph, keys[None])
    start = place(graph, "local-search", devices=devices, seed=7, evaluations=1)
    np.testing.assert_array_equal(start.device_of, device_of[0])
    np.testing.assert_array_equal(start.order, orders[0])
    assert start.cost == first.info["start_cost"]


def test_local_search_budget_and_time_limit(graph):
    result = place(graph, "local-search", seed=0, evaluations=123, neighbours=50)
    assert result.evaluations == 123
    assert result.info["generations"] == 4  # the start, then 50 + 50 + 22
    assert place(graph, "local-search", seed=0).evaluations == 5000  # 003's budget
    limited = place(graph, "local-search", seed=0, time_limit=0.0)
    assert limited.evaluations == 1
    assert graph.is_topological(limited.order)


@pytest.mark.parametrize("option", ["evaluations", "neighbours", "patience"])
def test_local_search_rejects_bad_options(graph, option):
    with pytest.raises(InputError, match=option):
        place(graph, "local-search", seed=0, **{option: 0})
