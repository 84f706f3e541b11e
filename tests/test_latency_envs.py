"""Paper 004's latency environments (dagopt.objectives.latency, ...integrations.torch_latency)
and the per-graph learned placers that use them (hsdag, placeto, rnn-placer)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from dagopt import InputError
from dagopt.bench.latency_envs import PAPER_MODELS, default_profile
from dagopt.generate.placement import generate_placement
from dagopt.graph.coarsen import colocate
from dagopt.integrations.torch_latency import TorchLatency, check_torch_devices, profile_torch
from dagopt.io import load
from dagopt.io.torch import graph_from_module
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.objectives.latency import (
    Profile,
    ProfiledLatency,
    SimulatedLatency,
    fit_transfer,
    roofline_latency,
)
from dagopt.objectives.placement import SimulatedCostModel
from dagopt.place import place
from dagopt.place.pergraph import group_features, parse_ablate


class SmallNet(torch.nn.Module):
    """Two branches that meet, a pool and a linear layer: a graph worth splitting."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.left = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.right = torch.nn.Conv2d(8, 8, 1)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.norm(self.stem(x)))
        x = torch.relu(self.left(x)) + self.right(x)
        return self.head(x.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def small_net():
    torch.manual_seed(0)
    module, inputs = SmallNet().eval(), (torch.randn(1, 3, 16, 16),)
    return graph_from_module(module, inputs, name="small-net"), inputs


def cpu_gpu(graph):
    runtime = graph.node_data["runtime"]
    runtimes = np.stack([runtime, np.maximum(runtime / 5, 2e-4)], axis=1)
    devices = Devices((DeviceSpec(memory=1e4 * GIB),) * 2, latency=1e-5, bandwidth=1e9)
    return devices, runtimes


def test_simulated_latency_is_the_simulator_with_noise_on_top():
    graph = generate_placement(40, seed=2)
    devices, runtimes = cpu_gpu(graph)
    exact = SimulatedLatency(graph, devices, runtimes)
    simulator = SimulatedCostModel(graph, devices, runtimes)
    device_of = np.arange(graph.num_nodes) % 2
    makespan = simulator.simulate(device_of, graph.topological_order).makespan
    evaluation = exact.evaluate(device_of, None, "runtime")
    assert evaluation.makespan == pytest.approx(makespan) and evaluation.samples.shape == (10,)
    noisy = SimulatedLatency(graph, devices, runtimes, noise=0.1, seed=3)
    samples = noisy.measure(device_of)
    assert samples.std() > 0 and noisy.latency(samples) == pytest.approx(samples[5:].mean())
    batch = noisy.costs(np.stack([device_of, 1 - device_of]), None, "runtime")
    assert batch[0].tolist() == [0, 0] and batch[1][0] != batch[1][1]
    for noise in (-1, float("nan"), float("inf"), 1e6):  # 1e6: exp(noise z) overflows
        with pytest.raises(InputError, match=r"noise .* must lie in 0\.\.10"):
            SimulatedLatency(graph, devices, runtimes, noise=noise)


def test_a_placement_over_memory_fails_is_counted_and_penalised():
    graph = generate_placement(60, seed=5)
    limit = float(graph.mem.sum() + graph.param_mem.sum()) / 3
    env = SimulatedLatency(graph, Devices.homogeneous(2, memory=limit), graph.node_data["runtime"])
    evaluation = env.evaluate(np.zeros(graph.num_nodes, dtype=np.int64), None, "runtime")
    assert not evaluation.feasible and evaluation.cost[0] == 1 and env.failures == 1
    result = place(graph, "hsdag", cost_model=env, seed=0, episodes=2, steps=4, hidden=8)
    assert result.info["failed"] >= 1 and env.failures >= result.info["failed"]


def cpu_gpu_profile(graph, runtimes: np.ndarray, whole=()) -> Profile:
    """A ``Profile`` holding ``runtimes`` (``(n, 2)``) for a CPU and a GPU."""
    return Profile(
        label="test", model="g", devices=("cpu", "cuda:0"), names=tuple(graph.names),
        seconds=tuple(map(tuple, runtimes)), latency=1e-5, bandwidth=1e9, whole=whole,
    )  # fmt: skip


def test_a_profile_round_trips_and_predicts_with_its_own_times(tmp_path):
    graph = generate_placement(30, seed=1)
    devices, runtimes = cpu_gpu(graph)
    profile = cpu_gpu_profile(graph, runtimes)
    read = Profile.read(profile.write(tmp_path / "p.json"))
    assert read == profile
    predicted = ProfiledLatency(graph, read)
    reference = SimulatedLatency(graph, devices, runtimes)
    device_of = (np.arange(graph.num_nodes) // 7) % 2
    assert predicted.evaluate(device_of, None, "runtime").makespan == pytest.approx(
        reference.evaluate(device_of, None, "runtime").makespan
    )
    shorter = Profile(**{**profile.__dict__, "names": profile.names[1:],
                         "seconds": profile.seconds[1:]})  # fmt: skip
    with pytest.raises(InputError, match="has no time for op"):
        ProfiledLatency(graph, shorter)
    other_torch = Profile(**{**shorter.__dict__, "meta": {"torch": "2.11.0+cu130"}})
    with pytest.raises(InputError, match=r"measured with PyTorch 2\.11\.0"):
        ProfiledLatency(graph, other_torch)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match=r"cannot read the latency profile .*: no field 'label'"):
        Profile.read(tmp_path / "bad.json")
    one_whole = Profile(**{**profile.__dict__, "whole": (1e-3,)})
    with pytest.raises(InputError, match="one positive latency per device"):
        Profile.read(one_whole.write(tmp_path / "one.json"))
    cut = Profile(**{**profile.__dict__, "seconds": profile.seconds[:-3]})
    with pytest.raises(InputError, match="30 op names but 27 rows of times"):
        Profile.read(cut.write(tmp_path / "cut.json"))


def test_a_profile_with_whole_graph_latencies_calibrates_each_device_to_them(tmp_path):
    graph = generate_placement(30, seed=1)
    _, runtimes = cpu_gpu(graph)
    whole = (0.5 * runtimes[:, 0].sum(), 0.25 * runtimes[:, 1].sum())
    profile = cpu_gpu_profile(graph, runtimes, whole)
    assert Profile.read(profile.write(tmp_path / "p.json")) == profile
    calibrated = ProfiledLatency(graph, profile, calibrate=True)
    as_timed = ProfiledLatency(graph, profile)
    for k in range(2):
        alone = np.full(graph.num_nodes, k)
        assert calibrated.evaluate(alone, None, "runtime").makespan == pytest.approx(
            profile.whole[k]
        )
        assert as_timed.evaluate(alone, None, "runtime").makespan == pytest.approx(
            runtimes[:, k].sum()
        )


@pytest.mark.parametrize("devices", [["cpu", "cpu"], ["cpu", "cuda:0"]])
@pytest.mark.parametrize("model", list(PAPER_MODELS))
def test_the_shipped_profiles_cover_their_model_on_two_devices(model, devices):
    profile = Profile.read(default_profile(model, devices))
    assert (profile.model, list(profile.devices)) == (model, devices)
    assert len(profile.names) == len(profile.seconds) > 100
    assert all(len(row) == 2 and min(row) >= 0 for row in profile.seconds)
    assert profile.meta["measured"] and profile.meta["torch"]
    if devices[1] == "cuda:0":  # measured on a GPU machine: the GPU is the faster device
        assert profile.meta["cuda"]
        assert sum(r[1] for r in profile.seconds) < sum(r[0] for r in profile.seconds)


MEASURED = Path(__file__).resolve().parents[1] / "benchmarks/measured"


@pytest.mark.parametrize(
    ("record", "profile", "calibrate", "rho"),
    [  # printed by call 2 (profile as measured) and call 4 (calibrated); docs/hsdag.md
        ("h100-2026-11-26/spearman-resnet-50.json",
         "h100-2026-11-26/profiles-as-measured/hsdag-profile-resnet-50-cpu-cuda0.json",
         False, 0.825),
        ("h100-2026-11-27/spearman-bert-base-seed2.json",
         "h100-2026-11-27/call4-profiles/hsdag-profile-bert-base-cpu-cuda0.json", True, 0.714),
        ("h100-2026-11-27/spearman-bert-base-seed2.json",
         "h100-2026-11-27/call4-profiles/hsdag-profile-bert-base-cpu-cuda0.json", False, 0.759),
    ],
)  # fmt: skip
def test_the_h100_records_rescore_to_the_rho_their_call_printed(record, profile, calibrate, rho):
    saved = json.loads((MEASURED / record).read_text())
    graph = load(MEASURED / record.replace(".json", ".graph.json"))
    assert list(graph.names) == saved["names"]
    env = ProfiledLatency(graph, Profile.read(MEASURED / profile), calibrate=calibrate)
    predicted = [env.evaluate(np.array(row), None, "runtime").makespan
                 for row in saved["placements"]]  # fmt: skip
    assert spearmanr(predicted, saved["measured"]).statistic == pytest.approx(rho, abs=5e-4)


def test_fit_transfer_recovers_latency_and_bandwidth():
    sizes = np.array([1e3, 1e5, 1e7, 1e8])
    latency, bandwidth = fit_transfer(np.stack([sizes, 2e-5 + sizes / 5e9], axis=1))
    assert latency == pytest.approx(2e-5, rel=1e-6) and bandwidth == pytest.approx(5e9)
    assert fit_transfer(np.array([[1e3, 2e-6], [1e6, 1e-6]]))[1] == math.inf


def test_fit_transfer_keeps_the_latency_of_small_copies():
    # copies measured on an H100 machine: 1 KiB to 64 MiB, 17-35 us for the smallest;
    # an absolute least-squares fit, ruled by the 64 MiB copies, gave 0 us
    copies = np.array(Profile.read(default_profile("bert-base", ["cpu", "cuda:0"])).copies)
    latency, _ = fit_transfer(copies)
    assert 1e-5 < latency < 4e-5


def test_roofline_kinds_and_unknown_kind():
    graph = generate_placement(20, seed=3)
    env = roofline_latency(graph, ["cpu", "gpu"])
    assert env.runtimes.shape == (20, 2) and (env.runtimes[:, 1] <= env.runtimes[:, 0] + 1e-5).all()
    with pytest.raises(InputError, match="no simulated device kind"):
        roofline_latency(graph, ["tpu"])


def test_torch_placements_on_two_cpu_devices_give_the_single_device_outputs(small_net):
    torch_graph, inputs = small_net
    env = TorchLatency(torch_graph, ["cpu", "cpu"], inputs)
    n = torch_graph.graph.num_nodes
    whole = env.outputs(np.zeros(n, dtype=np.int64))
    with torch.no_grad():
        direct = torch_graph.graph_module(*inputs)
    assert torch.allclose(whole[0], direct[0], atol=1e-4)
    rng = np.random.default_rng(0)
    for device_of in (np.arange(n) % 2, np.ones(n, dtype=np.int64), rng.integers(0, 2, n)):
        split = env.outputs(device_of)
        assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(whole, split, strict=True))
    module = env.module(np.arange(n) % 2)
    moves = [node for node in module.graph.nodes if node.op == "call_method"]
    assert moves and all(node.target == "to" and node.kwargs["non_blocking"] for node in moves)
    keys = [(node.args[0].name, str(node.args[1])) for node in moves]
    assert len(keys) == len(set(keys))  # one copy per tensor and destination
    evaluation = env.evaluate(np.arange(n) % 2, None, "runtime")
    assert evaluation.feasible and 10 <= evaluation.samples.size <= env.max_runs
    assert evaluation.makespan == pytest.approx(evaluation.samples[5:].mean())


def test_a_failing_torch_placement_is_penalised_not_fatal(small_net):
    torch_graph, inputs = small_net
    env = TorchLatency(torch_graph, ["cpu", "meta"], inputs)  # meta tensors hold no data
    n = torch_graph.graph.num_nodes
    assert env.measure(np.arange(n) % 2) is None and env.failures == 1
    evaluation = env.evaluate(np.arange(n) % 2, None, "runtime")
    assert not evaluation.feasible and evaluation.cost[0] == 1 and env.failures == 2
    result = place(torch_graph.graph, "hsdag", cost_model=env, seed=0, episodes=1, steps=3)
    assert result.feasible and result.info["placements"] == 4


def test_torch_devices_are_checked():
    with pytest.raises(InputError, match="not a PyTorch device"):
        check_torch_devices(["cpu", "tpu:9"])
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no such GPU"):
            check_torch_devices(["cpu", "cuda:0"])


def test_a_torch_profile_covers_every_op_and_predicts(small_net):
    torch_graph, inputs = small_net
    profile = profile_torch(torch_graph, ["cpu", "cpu"], inputs, model="small-net",
                            label="test", repeats=2)  # fmt: skip
    seconds = np.asarray(profile.seconds)
    assert seconds.shape == (torch_graph.graph.num_nodes, 2) and (seconds >= 0).all()
    assert seconds.sum() > 0 and profile.latency >= 0 and len(profile.copies) > 0
    assert len(profile.whole) == 2 and min(profile.whole) > 0
    env = ProfiledLatency(torch_graph.graph, profile, calibrate=True)
    alone = env.evaluate(np.zeros(torch_graph.graph.num_nodes, int), None, "runtime")
    assert alone.feasible and alone.makespan == pytest.approx(profile.whole[0])


@pytest.mark.parametrize("method", ["hsdag", "placeto", "rnn-placer"])
def test_learned_placers_use_the_budget_and_never_lose_to_device_zero(method):
    graph = generate_placement(50, seed=4)
    devices, runtimes = cpu_gpu(graph)
    env = SimulatedLatency(graph, devices, runtimes)
    result = place(graph, method, cost_model=env, seed=0, episodes=3, steps=4, hidden=8)
    assert result.evaluations == 1 + 3 * 4 == result.info["placements"]
    device_zero = env.evaluate(np.zeros(graph.num_nodes, dtype=np.int64), None, "runtime")
    assert result.makespan <= device_zero.makespan
    again = place(graph, method, cost_model=env, seed=0, episodes=3, steps=4, hidden=8)
    assert np.array_equal(again.device_of, result.device_of)


def test_feature_groups_can_be_ablated():
    coarse = colocate(generate_placement(40, seed=6))
    full = group_features(coarse)
    assert group_features(coarse, ("positional",)).shape[1] == full.shape[1] - 16
    assert group_features(coarse, ("fractal",)).shape[1] == full.shape[1] - 1
    assert group_features(coarse, ("op_type",)).shape[1] == full.shape[1] - coarse.op_mix.shape[1]
    assert parse_ablate("fractal, degrees") == ("fractal", "degrees")
    with pytest.raises(InputError, match="cannot ablate"):
        parse_ablate("colour")
