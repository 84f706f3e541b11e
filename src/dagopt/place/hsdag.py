"""HSDAG placer (paper 004, section 2.5, eq. 12-14): REINFORCE on one graph's latency.

As in the paper, the policy learns per graph: the graph is coarsened by co-location
(appendix G, ``dagopt.graph.coarsen``), featurised (section 2.3) and placed by
``HsdagPolicy`` (eq. 6-11). An episode is ``steps`` placements (``update_timestep`` of
Table 4); at each step every op's embedding adds its group's embedding of the step
before (``Z_v = Z_v + Z_v'``, the state of section 2.5; ``Parsing.state``).

The ``steps`` placements of an episode are measured together at its end (one call of
the problem's cost model, e.g. a latency environment of ``dagopt.objectives.latency``)
with reward ``r = l_ref / l``: eq. 12's ``1 / l`` scaled by the latency ``l_ref`` of
every op on device 0, so that the learning rate does not depend on the model's speed.
A placement that fails (over a memory limit, or a run that raised) gets reward 0 and
is counted in ``info["failed"]``. The GCN's embeddings (eq. 6) depend on the features
only, so they are computed once per episode. ``ablate`` switches feature groups off
(Table 3; ``dagopt.place.pergraph.FEATURE_GROUPS``). After an episode the policy takes
one gradient step on eq. 14 with discounted returns
``R_i = sum_{j >= i} gamma^(j - i) r_j`` against the ``baseline``
(``dagopt.rl.baselines``; ``"none"`` is the paper's). The best placement measured is
the result.

Differences from the paper (``docs/hsdag.md``): one update per episode instead of
Table 4's ``K_epochs = 4`` (a re-parsed graph can have other groups than the ones the
placements were sampled for, so their log-probabilities cannot be re-scored), and the
scaled reward. Ops run in the graph's topological order; with a measured model the
framework orders them itself.
"""

import numpy as np

from dagopt.errors import InputError
from dagopt.place.base import PlacementProblem, PlacerResult, register_placer
from dagopt.place.pergraph import (
    FAILED_RATIO,
    PerGraphSearch,
    check_budget,
    discounted_returns,
    group_features,
    one_thread,
    parse_ablate,
    reinforce_step,
    torch_seed,
)

HSDAG_BASELINES = ("none", "exponential")


@register_placer(
    "hsdag",
    "REINFORCE on the graph's latency with coarsening and graph parsing (paper 004)",
    ("episodes", "steps", "lr", "hidden", "parsing_levels", "discount", "baseline", "ablate"),
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
    ablate: str | None = None,
) -> PlacerResult:
    import torch

    from dagopt.nn.hsdag.model import HsdagConfig, HsdagPolicy
    from dagopt.rl.baselines import ExponentialBaseline, NoBaseline

    if baseline not in HSDAG_BASELINES:
        raise InputError(f"baseline must be one of {', '.join(HSDAG_BASELINES)}, got {baseline!r}")
    check_budget(episodes, steps, lr, hidden)
    if not 0 < discount <= 1:
        raise InputError(f"hsdag needs 0 < discount <= 1, got {discount}")
    search = PerGraphSearch.start(problem, time_limit)
    coarse = search.coarse
    x = torch.from_numpy(group_features(coarse, parse_ablate(ablate)))
    edges = torch.from_numpy(np.stack(coarse.quotient.edges).astype(np.int64))
    torch.manual_seed(torch_seed(seed))
    policy = HsdagPolicy(HsdagConfig(x.shape[1], hidden, problem.num_devices, parsing_levels))
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    critic = ExponentialBaseline() if baseline == "exponential" else NoBaseline()
    with one_thread():
        for _ in search.episodes("hsdag", episodes):
            z = policy.embed(x, edges)  # eq. 6: the same for every step of the episode
            memory = torch.zeros(search.groups, hidden)
            log_probs, placements = [], []
            for _ in range(int(steps)):
                if search.cut_short():
                    break
                parsing = policy.parse(z, edges, memory)
                sampler = torch.distributions.Categorical(logits=parsing.logits)
                action = sampler.sample()
                log_probs.append(sampler.log_prob(action).sum())
                placements.append(action.numpy()[parsing.group])
                memory = parsing.state()
            if placements:  # all of them, or those sampled before the limit
                ratio = search.measure(np.stack(placements))
            if search.cut_short():  # no episode follows: an update would change nothing
                break
            rewards = np.where(ratio < FAILED_RATIO, 1.0 / ratio, 0.0)
            reward = torch.from_numpy(discounted_returns(rewards, discount))
            reinforce_step(optimizer, critic, torch.stack(log_probs), reward)
    return search.result()
