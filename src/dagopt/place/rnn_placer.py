"""The RNN placer (Mirhoseini et al., ICML 2017) as a per-graph baseline of paper 004.

A seq2seq LSTM with attention (``dagopt.nn.rnn_placer.RnnPlacer``) emits a device per
co-location group (Mirhoseini et al. co-locate ops the same way before placing).
``episodes`` updates of ``steps`` sampled placements each give HSDAG's budget. The
reward is ``-sqrt(l / l_ref)`` (their ``-sqrt(runtime)``, scaled like HSDAG's), a
failed placement counting ``FAILED_RATIO`` (they give out-of-memory placements a large
runtime); REINFORCE with a moving-average baseline (``dagopt.rl``), Adam.
"""

import numpy as np

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
    "rnn-placer",
    "seq2seq LSTM with attention over co-located groups, REINFORCE per graph (004 baseline)",
    ("episodes", "steps", "lr", "hidden"),
)
def rnn_placer(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    episodes: int = 100,
    steps: int = 20,
    lr: float = 1e-3,
    hidden: int = 64,
) -> PlacerResult:
    import torch

    from dagopt.nn.rnn_placer import RnnPlacer
    from dagopt.rl.baselines import ExponentialBaseline

    check_budget(episodes, steps, lr, hidden)
    search = PerGraphSearch.start(problem, time_limit)
    order = search.coarse.quotient.topological_order
    x = torch.from_numpy(group_features(search.coarse)[order])
    torch.manual_seed(torch_seed(seed))
    policy = RnnPlacer(x.shape[1], hidden, problem.num_devices)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    critic = ExponentialBaseline()
    with one_thread():
        for _ in search.episodes("rnn-placer", episodes):
            sampled = policy(x, int(steps), stop=search.cut_short)
            if sampled is None:
                break
            actions, log_prob = sampled
            devices = np.empty((int(steps), search.groups), dtype=np.int64)
            devices[:, order] = actions.numpy()
            reward = torch.from_numpy(-np.sqrt(search.measure(devices)))
            if search.cut_short():  # no episode follows: an update would change nothing
                break
            reinforce_step(optimizer, critic, log_prob, reward)
    return search.result()
