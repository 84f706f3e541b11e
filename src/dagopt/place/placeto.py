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
"""

from dagopt.place.base import PlacementProblem, PlacerResult, register_placer
from dagopt.place.pergraph import (
    PerGraphSearch,
    check_budget,
    group_features,
    one_thread,
    reinforce_step,
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
            devices = torch.zeros(int(steps), search.groups, dtype=torch.long)
            placed = torch.zeros(search.groups, dtype=torch.bool)
            log_prob = torch.zeros(int(steps))
            for node in quotient.topological_order.tolist():
                if search.cut_short():
                    break
                sampler = torch.distributions.Categorical(logits=policy(x, devices, placed, node))
                action = sampler.sample()
                log_prob = log_prob + sampler.log_prob(action)
                devices = devices.clone()
                devices[:, node] = action
                placed = placed.clone()
                placed[node] = True
            if search.stopped_by_time_limit:
                break
            reward = torch.from_numpy(-search.measure(devices.numpy()))
            reinforce_step(optimizer, critic, log_prob, reward)
    return search.result()
