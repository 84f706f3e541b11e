"""The HSDAG placer (paper 004, section 2.5): per-graph REINFORCE on the cost model."""

import numpy as np
import pytest

from dagopt import InputError
from dagopt.generate.placement import generate_placement
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.place import PlacementProblem, place

SMALL = {"episodes": 3, "steps": 5, "hidden": 16}


def cpu_gpu(graph):
    """Two devices with per-device runtimes: the second 5x faster, with a launch cost."""
    runtime = graph.node_data["runtime"]
    runtimes = np.stack([runtime, np.maximum(runtime / 5, 2e-4)], axis=1)
    devices = Devices((DeviceSpec(memory=1e4 * GIB), DeviceSpec(memory=1e4 * GIB)))
    return devices, runtimes


def test_hsdag_places_every_op_and_is_never_worse_than_device_zero():
    graph = generate_placement(60, seed=4)
    devices, runtimes = cpu_gpu(graph)
    result = place(graph, "hsdag", devices=devices, runtimes=runtimes, seed=0, **SMALL)
    assert result.device_of.shape == (graph.num_nodes,) and set(result.device_of) <= {0, 1}
    cpu_only = PlacementProblem(graph, devices, runtimes=runtimes).evaluate(
        np.zeros((1, graph.num_nodes), dtype=np.int64), graph.topological_order[None]
    )[1][0]
    assert result.feasible and result.makespan <= cpu_only
    assert result.evaluations == 1 + 3 * 5 == result.info["placements"]
    assert result.info["groups"] <= graph.num_nodes
    again = place(graph, "hsdag", devices=devices, runtimes=runtimes, seed=0, **SMALL)
    assert np.array_equal(again.device_of, result.device_of)


def test_infeasible_placements_are_penalised_not_fatal():
    graph = generate_placement(60, seed=5)
    tight = Devices.homogeneous(2, memory=float(graph.mem.sum() + graph.param_mem.sum()) / 3)
    result = place(graph, "hsdag", devices=tight, seed=1, **SMALL)
    assert result.info["failed"] > 0
    assert result.device_of.shape == (graph.num_nodes,)


def test_bad_options_are_input_errors():
    graph = generate_placement(30, seed=1)
    with pytest.raises(InputError, match="baseline must be"):
        place(graph, "hsdag", baseline="critic", **SMALL)
    with pytest.raises(InputError, match="episodes >= 1"):
        place(graph, "hsdag", episodes=0)
