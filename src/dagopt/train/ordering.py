"""The Topoformer ordering training run: epochs of fresh layered graphs, REINFORCE
updates, greedy-rollout baseline refreshed on a fixed validation set (paper 000, C.1,
C.4), with a checkpoint after every epoch.

A run directory holds ``config.json``, ``state.pt`` (everything needed to resume:
policy, baseline, optimizer, schedule, epoch), ``model.pt`` (the baseline policy,
i.e. the best one on validation so far, as a priority-model file), ``metrics.csv``
and ``learning_curve.png``. Killing the process loses at most the current epoch.
Each epoch's randomness derives from ``(seed, epoch)``, so a resumed run draws the
same graphs and samples as an uninterrupted one.
"""

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from dagopt.generate import generate_layered
from dagopt.generate.seeds import training_seed, validation_seeds
from dagopt.graph import Graph
from dagopt.nn.checkpoint import save_model
from dagopt.nn.encoders import PriorityModel
from dagopt.nn.features import GraphInputs, graph_inputs
from dagopt.train import rundir
from dagopt.train.config import OrderingTrainConfig
from dagopt.train.reinforce import greedy_cost, reinforce_loss
from dagopt.train.rundir import MODEL_FILE


@dataclass(frozen=True)
class EpochMetrics:
    epoch: int
    train_cost: float
    train_baseline_cost: float
    validation_cost: float
    baseline_validation_cost: float
    baseline_updated: bool
    lr: float
    seconds: float


BatchCallback = Callable[[int, int, int, float], None]


def _mean_greedy_cost(model: PriorityModel, graphs: list[tuple[Graph, GraphInputs]]) -> float:
    """Mean greedy peak over featurized graphs (``(graph, inputs)`` pairs)."""
    model.eval()
    return float(np.mean([greedy_cost(model, g, inputs) for g, inputs in graphs]))


def read_metrics(run_dir: str | Path) -> list[EpochMetrics]:
    """The epochs recorded in ``run_dir/metrics.csv``."""
    return rundir.read_metrics(run_dir, EpochMetrics)


def train_ordering(
    run_dir: str | Path,
    config: OrderingTrainConfig | None = None,
    *,
    resume: bool = False,
    on_batch: BatchCallback | None = None,
    on_epoch: Callable[[EpochMetrics], None] | None = None,
) -> list[EpochMetrics]:
    """Train (or, with ``resume``, continue training) in ``run_dir``; returns the history."""
    run_dir = Path(run_dir)
    config = rundir.open_run(
        run_dir,
        config,
        resume=resume,
        from_dict=OrderingTrainConfig.from_dict,
        to_dict=OrderingTrainConfig.to_dict,
    )
    torch.manual_seed(config.seed)
    policy = PriorityModel(config.encoder, alpha=config.alpha)
    baseline = copy.deepcopy(policy)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_decay)
    validation = []  # featurized once: the set is fixed and featurization is deterministic
    for s in validation_seeds(config.validation_graphs):
        graph = generate_layered(config.graph_nodes, seed=s)
        validation.append((graph, graph_inputs(graph, pe_dim=config.encoder.pe_dim)))
    if resume:
        state = rundir.load_state(run_dir)
        policy.load_state_dict(state["policy"])
        baseline.load_state_dict(state["baseline"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        start, baseline_validation = state["epoch"] + 1, state["baseline_validation_cost"]
        history = read_metrics(run_dir)[:start]
    else:
        start, history = 0, []
        baseline_validation = _mean_greedy_cost(baseline, validation)

    batches = -(-config.epoch_graphs // config.batch_size)
    for epoch in range(start, config.epochs):
        began = time.perf_counter()
        rng = np.random.default_rng([config.seed, epoch])
        torch.manual_seed(config.seed * 1_000_003 + epoch)
        costs, base_costs = [], []
        baseline.eval()
        for b in range(batches):
            first = b * config.batch_size
            count = min(config.batch_size, config.epoch_graphs - first)
            graphs = [
                generate_layered(
                    config.graph_nodes,
                    seed=training_seed(0, epoch, config.epoch_graphs, first + i),
                )
                for i in range(count)
            ]
            policy.train()
            loss, cost, base = reinforce_loss(policy, baseline, graphs, rng)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip)
            optimizer.step()
            costs.append(cost)
            base_costs.append(base)
            if on_batch is not None:
                on_batch(epoch, b + 1, batches, float(np.mean(costs)))
        lr = optimizer.param_groups[0]["lr"]
        schedule.step()
        validation_cost = _mean_greedy_cost(policy, validation)
        updated = validation_cost < baseline_validation
        if updated:
            baseline.load_state_dict(policy.state_dict())
            baseline_validation = validation_cost
        metrics = EpochMetrics(
            epoch=epoch,
            train_cost=float(np.mean(costs)),
            train_baseline_cost=float(np.mean(base_costs)),
            validation_cost=validation_cost,
            baseline_validation_cost=baseline_validation,
            baseline_updated=updated,
            lr=lr,
            seconds=time.perf_counter() - began,
        )
        history.append(metrics)
        state = {
            "policy": policy.state_dict(),
            "baseline": baseline.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "epoch": epoch,
            "baseline_validation_cost": baseline_validation,
        }
        meta = {
            "trained_epochs": epoch + 1,
            "validation_cost": baseline_validation,
            "config": config.to_dict(),
        }
        save_model(run_dir / MODEL_FILE, baseline, meta)
        rundir.end_epoch(
            run_dir,
            state,
            history,
            EpochMetrics,
            {
                "sampled order (train)": [m.train_cost for m in history],
                "greedy (validation)": [m.validation_cost for m in history],
                "baseline (validation)": [m.baseline_validation_cost for m in history],
            },
            ylabel="mean peak memory",
            title="Topoformer REINFORCE training",
        )
        if on_epoch is not None:
            on_epoch(metrics)
    return history
