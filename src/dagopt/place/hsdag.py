"""HSDAG placer (paper 004, section 2.5, eq. 12-14): REINFORCE on one graph's latency.

As in the paper, the policy learns per graph: the graph is coarsened by co-location
(appendix G, ``dagopt.graph.coarsen``), featurised (section 2.3) and placed by
``HsdagPolicy`` (eq. 6-11). An episode is ``steps`` placements (``update_timestep`` of
Table 4); at each step every op's embedding adds its group's embedding of the step
before (``Z_v = Z_v + Z_v'``, the state of section 2.5; ``Parsing.state``).

Each placement is scored by the problem's cost model (the simulator, or a measured
latency model) with reward ``r = l_ref / l``: eq. 12's ``1 / l`` scaled by the latency
``l_ref`` of every op on device 0, so that the learning rate does not depend on the
model's speed. A placement the cost model finds infeasible (over a memory limit) gets
reward 0 and is counted in ``info["failed"]``. After an episode the policy takes one
gradient step on eq. 14 with discounted returns ``R_i = sum_{j >= i} gamma^(j - i) r_j``
against the ``baseline`` (``dagopt.rl.baselines``; ``"none"`` is the paper's). The best
placement measured is the result.

Differences from the paper (``docs/hsdag.md``): one update per episode instead of
Table 4's ``K_epochs = 4`` (a re-parsed graph can have other groups than the ones the
placements were sampled for, so their log-probabilities cannot be re-scored), and the
scaled reward. Ops run in the graph's topological order; with a measured model the
framework orders them itself.
"""

import time

import numpy as np

from dagopt.errors import InputError
from dagopt.graph.coarsen import colocate
from dagopt.place.base import PlacementProblem, PlacerResult, best_index, register_placer

HSDAG_BASELINES = ("none", "exponential")


def _returns(rewards: list[float], discount: float) -> np.ndarray:
    """``R_i = sum_{j >= i} discount^(j - i) r_j`` of one episode's rewards."""
    out, running = np.zeros(len(rewards)), 0.0
    for i in range(len(rewards) - 1, -1, -1):
        running = rewards[i] + discount * running
        out[i] = running
    return out


@register_placer(
    "hsdag",
    "REINFORCE on the graph's latency with coarsening and graph parsing (paper 004)",
    ("episodes", "steps", "lr", "hidden", "parsing_levels", "discount", "baseline"),
)
def hsdag(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    episodes: int = 100,
    steps: int = 20,
    lr: float = 1e-4,
    hidden: int = 128,
    parsing_levels: int | None = 1,
    discount: float = 0.95,
    baseline: str = "none",
) -> PlacerResult:
    import torch

    from dagopt.nn.hsdag.features import FeatureGroups, FeatureSpace
    from dagopt.nn.hsdag.model import HsdagConfig, HsdagPolicy
    from dagopt.rl.baselines import ExponentialBaseline, NoBaseline
    from dagopt.rl.reinforce import policy_gradient_loss

    if baseline not in HSDAG_BASELINES:
        raise InputError(f"baseline must be one of {', '.join(HSDAG_BASELINES)}, got {baseline!r}")
    if min(int(episodes), int(steps)) < 1 or not 0 < discount <= 1 or not lr > 0:
        raise InputError("hsdag needs episodes >= 1, steps >= 1, 0 < discount <= 1, lr > 0")
    graph, d = problem.graph, problem.num_devices
    coarse = colocate(graph)
    quotient = coarse.quotient
    space = FeatureSpace.fit([quotient], FeatureGroups(op_type=False))
    x = np.concatenate([coarse.op_mix, space.features(quotient)], axis=1)
    x = torch.from_numpy(x.astype(np.float32))
    edges = torch.from_numpy(np.stack(quotient.edges).astype(np.int64))
    torch.manual_seed(int(np.random.default_rng(seed).integers(2**31)))
    config = HsdagConfig(x.shape[1], hidden, d, parsing_levels)
    policy = HsdagPolicy(config)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    critic = ExponentialBaseline() if baseline == "exponential" else NoBaseline()
    order = graph.topological_order[None, :]

    def measure(device_of: np.ndarray) -> tuple[int, float]:
        infeasible, value = problem.evaluate(device_of[None, :], order)
        return int(infeasible[0]), float(value[0])

    reference = measure(np.zeros(graph.num_nodes, dtype=np.int64))
    l_ref = reference[1] if not reference[0] and reference[1] > 0 else 1.0
    found = [(np.zeros(graph.num_nodes, dtype=np.int64), reference)]
    failed = 0
    deadline = np.inf if time_limit is None else time.perf_counter() + time_limit
    for _ in range(int(episodes)):
        memory = torch.zeros(quotient.num_nodes, hidden)
        log_probs, rewards = [], []
        for _ in range(int(steps)):
            parsing = policy(x, edges, memory)
            sampler = torch.distributions.Categorical(logits=parsing.logits)
            action = sampler.sample()
            log_probs.append(sampler.log_prob(action).sum())
            device_of = action.numpy()[parsing.group][coarse.group]
            cost = measure(device_of)
            failed += cost[0]
            rewards.append(0.0 if cost[0] or cost[1] <= 0 else l_ref / cost[1])
            found.append((device_of, cost))
            memory = parsing.state()
        reward = torch.from_numpy(_returns(rewards, discount))
        value, _ = critic.evaluate(None, reward)
        loss = policy_gradient_loss(torch.stack(log_probs), reward, value)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if time.perf_counter() > deadline:
            break
    infeasible = np.array([cost[0] for _, cost in found])
    values = np.array([cost[1] for _, cost in found])
    best = found[best_index(infeasible, values)][0]
    info = {"groups": int(quotient.num_nodes), "failed": int(failed), "placements": len(found)}
    return PlacerResult(device_of=best, order=order[0], info=info)
