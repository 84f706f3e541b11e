"""The HSDAG placer (paper 004, section 2.5): per-graph REINFORCE on the cost model."""

import time

import numpy as np
import pytest

from dagopt import InputError
from dagopt.generate.placement import generate_placement
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.place import PlacementProblem, base, place

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
    with pytest.raises(InputError, match="episodes, steps and hidden >= 1"):
        place(graph, "hsdag", episodes=0)


LEARNED = ("hsdag", "placeto", "rnn-placer")


@pytest.mark.parametrize("method", LEARNED)
@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"lr": "abc"}, "option 'lr' must be a number, got str 'abc'"),
        ({"lr": float("nan")}, "option 'lr' must be a finite number, got nan"),
        ({"lr": float("inf")}, "option 'lr' must be a finite number, got inf"),
        ({"lr": 0.0}, "finite lr > 0"),
        ({"episodes": "abc"}, "option 'episodes' must be int"),
        ({"episodes": 2.5}, "option 'episodes' must be int, got float 2.5"),
        ({"hidden": -3}, "hidden >= 1, got hidden=-3"),
        ({"steps": 0}, "got steps=0"),
    ],
)
def test_learned_placers_check_their_options(method, options, fragment):
    graph = generate_placement(20, seed=1)
    with pytest.raises(InputError, match=fragment):
        place(graph, method, **{**SMALL, **options})


@pytest.mark.parametrize("method", LEARNED)
def test_a_time_limit_stops_a_huge_episode_count(method, monkeypatch):
    monkeypatch.setattr(base, "_warmed_up", set())  # the warm-up run obeys the limit too
    graph = generate_placement(30, seed=2)
    began = time.perf_counter()
    result = place(graph, method, time_limit=0.2, seed=0, episodes=20_000, steps=2, hidden=8)
    assert time.perf_counter() - began < 10  # without the limit: minutes
    assert result.info["stopped_by_time_limit"] and result.info["episodes"] < 20_000
    assert result.device_of.shape == (graph.num_nodes,) and result.feasible


@pytest.mark.parametrize("method", LEARNED)
def test_a_time_limit_cuts_a_pass_short(method):
    """A pass of Placeto or the RNN placer is a network step per group, an HSDAG episode
    ``steps`` parsings: past the limit it stops where it is, and with nothing sampled
    the all-on-device-0 placement measured first is the answer (on thousands of groups
    one pass took minutes)."""
    graph = generate_placement(400, seed=2)
    place(graph, method, time_limit=5.0, seed=0, **SMALL)  # compiled and warmed up
    result = place(graph, method, time_limit=1e-4, seed=0, episodes=3, steps=2, hidden=8)
    assert result.info["stopped_by_time_limit"] and result.info["episodes"] == 0
    assert result.info["placements"] == 1 and not result.device_of.any()


def test_placeto_s_neighbour_means_and_pools_match_their_dense_definitions():
    """Placeto's messages average over parents and children, its pools over a node's
    ancestors, descendants and parallel nodes: the edge-list and closure-row versions
    the policy runs equal the dense ``(n, n)`` matrices of the definition."""
    import torch

    from dagopt.nn.placeto import NeighbourMean, relation_pools

    graph = generate_placement(80, seed=6)
    n = graph.num_nodes
    src, dst = graph.edges
    adjacency = np.zeros((n, n))
    adjacency[dst, src] = 1.0  # row v: v's parents
    h = torch.randn(3, n, 5)
    for matrix, mean in (
        (adjacency, NeighbourMean(n, src, dst)),
        (adjacency.T, NeighbourMean(n, dst, src)),
    ):
        dense = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
        expected = torch.einsum("vu,buh->bvh", torch.from_numpy(dense).float(), h)
        assert torch.allclose(mean(h), expected, atol=1e-6)
    reach = graph.closure_matrix
    parallel = ~(reach | reach.T | np.eye(n, dtype=bool))
    for node in range(n):
        for pool, members in zip(
            relation_pools(reach, node), (reach[:, node], reach[node], parallel[node]), strict=True
        ):
            count = max(members.sum(), 1)
            assert np.allclose(pool.numpy(), members / count)


def test_placeto_s_replayed_update_has_the_whole_pass_gradient():
    """``replay_update`` back-propagates step by step; the gradient is the one of the
    whole pass's REINFORCE loss, ``-mean((r - b) sum_t log p_t)``, taken at once."""
    import torch

    from dagopt.nn.placeto import PlacetoPolicy
    from dagopt.place.pergraph import PerGraphSearch
    from dagopt.place.placeto import replay_update, sample_pass

    graph = generate_placement(40, seed=7)
    search = PerGraphSearch.start(PlacementProblem(graph, Devices()), None)
    order = graph.topological_order
    x = torch.randn(graph.num_nodes, 4)
    torch.manual_seed(0)
    policy = PlacetoPolicy(graph, 4, 8, 2)
    devices = sample_pass(policy, x, 3, order, search)
    reward, value = torch.tensor([-1.0, -2.0, -0.5]), torch.full((3,), -1.2)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.0)  # keeps the weights
    replay_update(policy, optimizer, x, devices, order, reward, value)
    replayed = [p.grad.clone() for p in policy.parameters()]
    policy.zero_grad()
    state, placed, log_prob = torch.zeros_like(devices), torch.zeros(len(order), dtype=bool), 0
    for node in order.tolist():
        logits = policy(x, state.clone(), placed.clone(), node)
        log_prob = log_prob + torch.distributions.Categorical(logits=logits).log_prob(
            devices[:, node]
        )
        state[:, node], placed[node] = devices[:, node], True
    (-((reward - value) * log_prob).mean()).backward()
    for mine, whole in zip(replayed, (p.grad for p in policy.parameters()), strict=True):
        assert torch.allclose(mine, whole, atol=1e-6)
    assert any(g.abs().sum() > 0 for g in replayed)


def test_the_rnn_placer_s_recomputed_attention_has_the_plain_gradient(monkeypatch):
    """The RNN placer recomputes each step's attention in the backward pass
    (``torch.utils.checkpoint``): the samples and the gradient are those of keeping it."""
    import torch

    import dagopt.nn.rnn_placer as rnn

    x = torch.randn(30, 5)
    torch.manual_seed(0)
    policy = rnn.RnnPlacer(5, 8, 2)

    def gradient():
        torch.manual_seed(1)
        policy.zero_grad()
        actions, log_prob = policy(x, 4)
        log_prob.sum().backward()
        return actions, [p.grad.clone() for p in policy.parameters()]

    checkpointed = []
    recompute = rnn.checkpoint
    monkeypatch.setattr(
        rnn,
        "checkpoint",
        lambda *args, **options: checkpointed.append(1) or recompute(*args, **options),
    )
    actions, recomputed = gradient()
    assert len(checkpointed) == x.shape[0]  # every step's attention
    monkeypatch.setattr(rnn, "checkpoint", lambda fn, *args, **options: fn(*args))
    kept_actions, kept = gradient()
    assert torch.equal(actions, kept_actions)
    for mine, plain in zip(recomputed, kept, strict=True):
        assert torch.allclose(mine, plain, atol=1e-6)
