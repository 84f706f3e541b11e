"""Placeto (Addanki et al., NeurIPS 2019) as a per-graph baseline of paper 004 (3.3).

The policy (``dagopt.nn.placeto.PlacetoPolicy``) places the co-location groups one at
a time in topological order, each pass starting from every group on device 0; a pass
ends in one placement. ``episodes`` updates of ``steps`` passes each give HSDAG's
budget (Table 4: 100 x 20 measured placements). The reward of a pass is
``-l / l_ref`` (Placeto's negative runtime, scaled like HSDAG's), a failed placement
counting ``FAILED_RATIO``; REINFORCE with a moving-average baseline (``dagopt.rl``).

Difference from Placeto: Placeto measures after every node's move and rewards the
improvement; with the measurement budget fixed at HSDAG's, one measurement per pass
(the terminal reward) keeps the number of measured placements equal.

Memory: every step embeds the whole graph, so a pass that kept each step's autograd
graph for one backward at its end held ``O(groups^2 B h)`` activations (7.6 GB for
passes over 400 groups, docs/hsdag.md, "Placeto's memory"). A pass samples without
gradients instead; once it is measured, ``replay_update`` runs each step again from its
recorded state and back-propagates that step's share of the REINFORCE loss at once
(the loss is a sum over steps, so the gradient is the same), one step's graph at a
time, for one extra forward pass per step.
"""

from dagopt.place.base import PlacementProblem, PlacerResult, register_placer
from dagopt.place.pergraph import (
    PerGraphSearch,
    check_budget,
    group_features,
    one_thread,
    torch_seed,
)


@register_placer(
    "placeto",
    "Placeto: node-by-node GNN placement MDP, REINFORCE per graph (004 baseline)",
    ("episodes", "steps", "lr", "hidden"),
)
def placeto(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    episodes: int = 100,
    steps: int = 20,
    lr: float = 1e-3,
    hidden: int = 32,
) -> PlacerResult:
    import torch

    from dagopt.nn.placeto import PlacetoPolicy
    from dagopt.rl.baselines import ExponentialBaseline

    check_budget(episodes, steps, lr, hidden)
    search = PerGraphSearch.start(problem, time_limit)
    quotient = search.coarse.quotient
    x = torch.from_numpy(group_features(search.coarse))
    torch.manual_seed(torch_seed(seed))
    policy = PlacetoPolicy(quotient, x.shape[1], hidden, problem.num_devices)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    critic = ExponentialBaseline()
    with one_thread():
        for _ in search.episodes("placeto", episodes):
            devices = sample_pass(policy, x, int(steps), quotient.topological_order, search)
            if devices is None:
                break
            reward = torch.from_numpy(-search.measure(devices.numpy()))
            if search.cut_short():  # no episode follows: an update would change nothing
                break
            value, _ = critic.evaluate(None, reward)
            replay_update(policy, optimizer, x, devices, quotient.topological_order, reward, value)
    return search.result()


def sample_pass(policy, x, steps: int, order, search: PerGraphSearch):
    """``(steps, groups)`` devices from one pass of ``steps`` placements in parallel,
    every group from device 0 in ``order`` (no gradients); None when the time limit cut
    it short (``PerGraphSearch.cut_short``)."""
    import torch

    devices = torch.zeros(steps, len(order), dtype=torch.long)
    placed = torch.zeros(len(order), dtype=torch.bool)
    with torch.no_grad():
        for node in order.tolist():
            if search.cut_short():
                return None
            logits = policy(x, devices, placed, node)
            devices[:, node] = torch.distributions.Categorical(logits=logits).sample()
            placed[node] = True
    return devices


def replay_update(policy, optimizer, x, devices, order, reward, value) -> None:
    """One REINFORCE step (``dagopt.rl.reinforce.policy_gradient_loss``) for a pass that
    ended in ``devices``: each step's state rebuilt from ``devices`` in ``order``, its
    log-probability's share of the loss back-propagated at once (module docstring)."""
    import torch

    from dagopt.rl.reinforce import policy_gradient_loss

    state = torch.zeros_like(devices)
    placed = torch.zeros(len(order), dtype=torch.bool)
    optimizer.zero_grad()
    for node in order.tolist():
        logits = policy(x, state, placed, node)
        log_prob = torch.distributions.Categorical(logits=logits).log_prob(devices[:, node])
        policy_gradient_loss(log_prob, reward, value).backward()
        state[:, node] = devices[:, node]
        placed[node] = True
    optimizer.step()
