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
import csv
import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch

from dagopt.errors import InputError
from dagopt.generate import generate_layered
from dagopt.generate.seeds import training_seed, validation_seeds
from dagopt.graph import Graph
from dagopt.io.atomic import write_bytes_atomic, write_text_atomic
from dagopt.nn.checkpoint import model_document
from dagopt.nn.encoders import PriorityModel
from dagopt.nn.features import GraphInputs, graph_inputs
from dagopt.train.config import OrderingTrainConfig
from dagopt.train.reinforce import greedy_cost, reinforce_loss

CONFIG_FILE, STATE_FILE, MODEL_FILE = "config.json", "state.pt", "model.pt"
METRICS_FILE, PLOT_FILE = "metrics.csv", "learning_curve.png"


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


def _torch_bytes(obj: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _mean_greedy_cost(model: PriorityModel, graphs: list[tuple[Graph, GraphInputs]]) -> float:
    """Mean greedy peak over featurized graphs (``(graph, inputs)`` pairs)."""
    model.eval()
    return float(np.mean([greedy_cost(model, g, inputs) for g, inputs in graphs]))


def _write_metrics(run_dir: Path, history: list[EpochMetrics]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(EpochMetrics)])
    writer.writeheader()
    writer.writerows(asdict(m) for m in history)
    write_text_atomic(run_dir / METRICS_FILE, buffer.getvalue())


def read_metrics(run_dir: Path) -> list[EpochMetrics]:
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    types = {f.name: f.type for f in fields(EpochMetrics)}
    rows = csv.DictReader(io.StringIO(path.read_text()))
    return [
        EpochMetrics(
            **{k: (v == "True") if types[k] is bool else types[k](v) for k, v in r.items()}
        )
        for r in rows
    ]


def _plot(run_dir: Path, history: list[EpochMetrics]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [m.epoch for m in history]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(epochs, [m.train_cost for m in history], label="sampled order (train)")
    ax.plot(epochs, [m.validation_cost for m in history], label="greedy (validation)")
    ax.plot(epochs, [m.baseline_validation_cost for m in history], label="baseline (validation)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean peak memory")
    ax.set_title("Topoformer REINFORCE training")
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    write_bytes_atomic(run_dir / PLOT_FILE, buffer.getvalue())


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
    state_path = run_dir / STATE_FILE
    if resume:
        if not state_path.exists():
            raise InputError(f"{run_dir}: nothing to resume (no {STATE_FILE})")
        saved = OrderingTrainConfig.from_dict(json.loads((run_dir / CONFIG_FILE).read_text()))
        if config is not None and config != saved:
            raise InputError(f"{run_dir}: --config differs from the run's config.json")
        config = saved
    else:
        if state_path.exists():
            raise InputError(f"{run_dir}: a run exists here; pass --resume or another --run-dir")
        if config is None:
            raise InputError("a training config is needed to start a run")
        write_text_atomic(run_dir / CONFIG_FILE, json.dumps(config.to_dict(), indent=1))

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
        state = torch.load(state_path, map_location="cpu", weights_only=False)
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
        write_bytes_atomic(state_path, _torch_bytes(state))
        meta = {
            "trained_epochs": epoch + 1,
            "validation_cost": baseline_validation,
            "config": config.to_dict(),
        }
        write_bytes_atomic(run_dir / MODEL_FILE, _torch_bytes(model_document(baseline, meta)))
        _write_metrics(run_dir, history)
        _plot(run_dir, history)
        if on_epoch is not None:
            on_epoch(metrics)
    return history
