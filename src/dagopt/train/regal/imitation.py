"""Imitation warm start of a REGAL policy (beyond paper 003).

BRKGA is run ``imitation_runs`` times on each training graph (seeds other than the
reward's), the order of each run's best solution becomes priority keys
(``dagopt.place.decode.order_keys``), and the policy maximises their likelihood under
its priority distributions, read as one mixture density over keys
(``dagopt.nn.regal.key_log_likelihood``). The GNN thus learns from graph features where
a good schedule puts each op, a per-op signal that one noisy BRKGA result per action
does not give REINFORCE. The device genes are left alone: which device an op uses in
one solution says nothing about a device's label, as the devices are interchangeable.
The imitated keys are kept in the run's ``imitation.json``.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from dagopt.nn.regal import (
    RegalPolicy,
    action_entropy,
    batch_inputs,
    beta_grid,
    key_log_likelihood,
)
from dagopt.place.base import cost_ratio
from dagopt.place.brkga import MutantDistributions
from dagopt.place.decode import order_keys
from dagopt.train.loop import Progress
from dagopt.train.regal.config import RegalTrainConfig
from dagopt.train.regal.episodes import TrainingGraph, brkga_outcome, cached_per_seed

IMITATION_FILE = "imitation.json"


@dataclass(frozen=True)
class ImitationTarget:
    """The imitated solutions of one training graph: their priority keys
    ``(runs, n, 1)`` (the priority gene of a chromosome) and ``cost / H(G, U)`` ratios."""

    keys: np.ndarray
    ratios: list[float]


def imitation_targets(
    run_dir: Path,
    config: RegalTrainConfig,
    training: list[TrainingGraph],
    progress: Progress | None,
) -> dict[int, ImitationTarget]:
    """Per training graph seed, the priority keys of its BRKGA runs' best feasible
    solutions, kept in ``imitation.json`` as ``{"keys": [[...] per run], "ratios": [...]}``.
    Run ``r`` uses the seed ``(graph seed, 1, r)``, never the reward's. With
    ``imitation_prior_concentration`` the teachers search near the order prior."""
    items = {item.seed: item for item in training}

    def targets(seed: int) -> dict:
        item, keys, ratios = items[seed], [], []
        guide = None
        if config.imitation_prior_concentration > 0:
            guide = MutantDistributions.centred(
                item.graph.num_nodes,
                config.policy.num_devices,
                config.imitation_prior_concentration,
                priority_keys=item.prior_keys,
            )
        for r in range(config.imitation_runs):
            rng = np.random.default_rng([seed, 1, r])
            outcome = brkga_outcome(
                config, item.graph, rng, guide, evaluations=config.imitation_evaluations
            )
            if not outcome.cost[0]:
                keys.append(order_keys(outcome.order).tolist())
                ratios.append(cost_ratio(outcome.cost, item.reference))
        return {"keys": keys, "ratios": ratios}

    stored = cached_per_seed(
        run_dir / IMITATION_FILE, config, list(items), targets, "imitation BRKGA runs", progress
    )
    return {
        seed: ImitationTarget(
            np.asarray(stored[seed]["keys"], dtype=np.float64).reshape(-1, item.graph.num_nodes, 1),
            stored[seed]["ratios"],
        )
        for seed, item in items.items()
    }


def imitation_step(
    policy: RegalPolicy,
    optimizer: torch.optim.Optimizer,
    grad_clip: float,
    batch: list[TrainingGraph],
    targets: dict[int, ImitationTarget],
) -> tuple[list[float], float]:
    """One step on ``batch``: maximise the likelihood of the imitated priority keys under
    the priority gene's distributions. Returns the imitated solutions'
    ``cost / H(G, U)`` and the policy's mean entropy."""
    policy.train()
    inputs = batch_inputs([item.inputs for item in batch])
    ptr = inputs.ptr
    logits_first, logits_second = policy(inputs)
    grid_alpha, grid_beta = beta_grid(policy.config, inputs)
    ratios, loss = [], 0.0
    for g, item in enumerate(batch):
        target = targets[item.seed]
        if not target.ratios:
            continue
        rows = slice(int(ptr[g]), int(ptr[g + 1]))
        logits = logits_first[rows, -1:], logits_second[rows, -1:]
        grid = grid_alpha[rows, -1:], grid_beta[rows, -1:]
        likelihood = key_log_likelihood(*logits, target.keys, grid)
        loss = loss - likelihood / len(batch)
        ratios += target.ratios
    if torch.is_tensor(loss):
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), grad_clip)
        optimizer.step()
    return ratios, action_entropy(logits_first, logits_second).item()
