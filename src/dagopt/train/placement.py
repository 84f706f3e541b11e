"""REGAL training (paper 003, section 2.3): REINFORCE on BRKGA's final objective.

Each update takes a batch of training graphs, samples one action per graph from the
policy (a ``beta(alpha, beta)`` pair per gene), runs BRKGA with those mutant
distributions, and rewards ``r = -H(G, D) / H(G, U)``, where ``H(G, U)`` is standard
BRKGA's result on the same graph. A separate network predicts the scalar baseline
``b(G)``; the policy loss is ``-(r - b(G)) log p(D | G)`` and the baseline's
``(r - b(G))^2``. With ``baseline="leave-one-out"`` each graph is sampled
``samples_per_graph`` times and an episode's baseline is the mean reward of the other
samples of its graph (a variance reduction beyond the paper, Kool et al. 2019); the
network is still trained and logged. A solution over the memory limit gets reward
``-2`` (worse than any feasible one, A.2); graphs on which standard BRKGA finds nothing
feasible are left out.
Every BRKGA run on a graph uses the graph's seed, the one ``H(G, U)`` was computed with
(common random numbers): the reward then differs from -1 only through ``D``.

Beyond the paper, the first ``imitation_epochs`` epochs can be a warm start by
imitation of search: BRKGA is run ``imitation_runs`` times on each training graph (seeds
other than the reward's), the order of each run's best solution becomes priority keys
(``dagopt.place.decode.order_keys``), and the policy maximises their likelihood under
its priority distributions, read as one mixture density over keys
(``key_log_likelihood``). The GNN thus learns from graph features where a good
schedule puts each op, a per-op signal that one noisy BRKGA result per action does not
give REINFORCE. The device genes are left alone: which device an op uses in one
solution says nothing about a device's label, as the devices are interchangeable.
REINFORCE then continues from the warm-started policy.

The run directory holds ``config.json``, ``reference.json`` (``H(G, U)`` per graph
seed, computed once), ``imitation.json`` (the imitated keys, if any), ``state.pt``
(everything needed to resume after any epoch), ``model.pt`` (the policy with the best
validation ratio so far), ``metrics.csv`` and ``learning_curve.png``. Each epoch's
randomness derives from ``(seed, epoch)``, so a resumed run matches an uninterrupted
one.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dagopt.generate.placement import placement_graph
from dagopt.generate.seeds import validation_seeds
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.nn.checkpoint import save_regal_policy
from dagopt.nn.regal import (
    RegalAction,
    RegalBaseline,
    RegalInputs,
    RegalPolicy,
    action_distributions,
    action_entropy,
    action_log_prob,
    batch_inputs,
    beta_grid,
    key_log_likelihood,
    regal_inputs,
    sample_actions,
    split_action,
)
from dagopt.objectives.devices import GIB, Devices
from dagopt.place.base import PlacementProblem, cost_ratio
from dagopt.place.brkga import BrkgaParams, MutantDistributions, SearchOutcome, run_brkga
from dagopt.place.decode import order_keys
from dagopt.place.prior import order_prior_keys
from dagopt.train import rundir
from dagopt.train.config import PlacementTrainConfig
from dagopt.train.rundir import MODEL_FILE

REFERENCE_FILE = "reference.json"
IMITATION_FILE = "imitation.json"


@dataclass(frozen=True)
class PlacementEpoch:
    epoch: int
    train_ratio: float
    baseline_loss: float
    entropy: float
    validation_ratio: float
    best_validation_ratio: float
    improved: bool
    seconds: float


@dataclass(frozen=True)
class ImitationTarget:
    """The imitated solutions of one training graph: their priority keys
    ``(runs, n, 1)`` (the priority gene of a chromosome) and ``cost / H(G, U)`` ratios."""

    keys: np.ndarray
    ratios: list[float]


@dataclass(frozen=True)
class TrainingGraph:
    """A graph with its features, standard BRKGA's cost ``H(G, U)`` on it, and the
    priority keys of the policy's ``order_prior`` (``None`` without one)."""

    seed: int
    graph: Graph
    inputs: RegalInputs
    reference: float
    prior_keys: np.ndarray | None = None


Progress = Callable[[str, int, int], None]


def _devices(config: PlacementTrainConfig) -> Devices:
    return Devices.homogeneous(config.policy.num_devices, memory=config.memory_gib * GIB)


def _brkga_outcome(
    config: PlacementTrainConfig,
    graph: Graph,
    seed,
    distributions=None,
    evaluations: int | None = None,
) -> SearchOutcome:
    problem = PlacementProblem(graph, _devices(config), config.objective)
    params = BrkgaParams(evaluations=evaluations or config.brkga_evaluations)
    return run_brkga(problem, seed=seed, params=params, distributions=distributions)


def _episode_ratio(config: PlacementTrainConfig, item: TrainingGraph, action: RegalAction) -> float:
    """``H(G, D) / H(G, U)`` of BRKGA with the mutant distributions ``action`` picks."""
    grid = beta_grid(config.policy, item.inputs)
    distributions = MutantDistributions(*action_distributions(action, grid))
    outcome = _brkga_outcome(config, item.graph, item.seed, distributions)
    return cost_ratio(outcome.cost, item.reference)


def _cached_per_seed(
    path: Path,
    seeds: list[int],
    compute: Callable[[int], Any],
    stage: str,
    progress: Progress | None,
) -> dict[int, Any]:
    """``compute(seed)`` for every seed, kept in the JSON file ``path`` across runs.

    Saved every 50 seeds, so an interrupted run recomputes at most that many.
    """
    known = {int(k): v for k, v in json.loads(path.read_text()).items()} if path.exists() else {}
    missing = [s for s in seeds if s not in known]
    for i, seed in enumerate(missing):
        known[seed] = compute(seed)
        if (i + 1) % 50 == 0 or i + 1 == len(missing):
            write_text_atomic(path, json.dumps({str(k): v for k, v in sorted(known.items())}))
        if progress is not None:
            progress(stage, i + 1, len(missing))
    return known


def _references(
    run_dir: Path,
    config: PlacementTrainConfig,
    graphs: dict[int, Graph],
    progress: Progress | None,
) -> dict[int, float | None]:
    """``H(G, U)`` per graph seed (``None``: nothing feasible), in ``reference.json``."""

    def reference(seed: int) -> float | None:
        infeasible, value = _brkga_outcome(config, graphs[seed], seed).cost
        return None if infeasible else value

    return _cached_per_seed(
        run_dir / REFERENCE_FILE, list(graphs), reference, "reference BRKGA runs", progress
    )


def _imitation_targets(
    run_dir: Path,
    config: PlacementTrainConfig,
    training: list[TrainingGraph],
    progress: Progress | None,
) -> dict[int, ImitationTarget]:
    """Per training graph seed, the priority keys of its BRKGA runs' best feasible
    solutions, kept in ``imitation.json`` as ``{"keys": [[...] per run], "ratios": [...]}``.
    Run ``r`` uses the seed ``(graph seed, 1, r)``, never the reward's."""
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
            outcome = _brkga_outcome(
                config, item.graph, rng, guide, evaluations=config.imitation_evaluations
            )
            if not outcome.cost[0]:
                keys.append(order_keys(outcome.order).tolist())
                ratios.append(cost_ratio(outcome.cost, item.reference))
        return {"keys": keys, "ratios": ratios}

    stored = _cached_per_seed(
        run_dir / IMITATION_FILE, list(items), targets, "imitation BRKGA runs", progress
    )
    return {
        seed: ImitationTarget(
            np.asarray(stored[seed]["keys"], dtype=np.float64).reshape(-1, item.graph.num_nodes, 1),
            stored[seed]["ratios"],
        )
        for seed, item in items.items()
    }


def _graph_set(
    config: PlacementTrainConfig,
    seeds: list[int],
    graphs: dict[int, Graph],
    references: dict[int, float | None],
    progress: Progress | None,
) -> list[TrainingGraph]:
    """The graphs of ``seeds`` with a feasible reference, featurised (running the
    policy's ``order_prior`` scheduler on each, with progress, if it has one)."""
    devices, prior = _devices(config), config.policy.order_prior
    items = []
    for i, s in enumerate(seeds):
        if references[s] is not None:
            keys = None if prior is None else order_prior_keys(graphs[s], prior)
            inputs = regal_inputs(graphs[s], None, devices, keys)
            items.append(TrainingGraph(s, graphs[s], inputs, references[s], keys))
        if prior is not None and progress is not None:
            progress(f"order prior ({prior['method']})", i + 1, len(seeds))
    return items


def validation_ratio(
    policy: RegalPolicy, config: PlacementTrainConfig, graphs: list[TrainingGraph]
) -> float:
    """Mean ``H(G, D) / H(G, U)`` over ``graphs`` with the policy's modal action."""
    policy.eval()
    ratios = []
    with torch.inference_mode():
        for item in graphs:
            action = sample_actions(*policy(item.inputs), greedy=True)
            ratios.append(_episode_ratio(config, item, action))
    return float(np.mean(ratios))


def _update(
    policy: RegalPolicy,
    baseline: RegalBaseline,
    optimizer: torch.optim.Optimizer,
    config: PlacementTrainConfig,
    batch: list[TrainingGraph],
    generator: torch.Generator,
) -> tuple[list[float], float, float]:
    """One REINFORCE step on ``batch``; returns the ratios, the baseline loss, the entropy."""
    policy.train()
    baseline.train()
    samples = config.samples_per_graph
    episodes = [item for item in batch for _ in range(samples)]
    inputs, ptr = batch_inputs([item.inputs for item in episodes])
    logits = policy(inputs)
    action = sample_actions(*logits, generator=generator)
    ratios = [
        _episode_ratio(config, item, graph_action)
        for item, graph_action in zip(episodes, split_action(action, ptr), strict=True)
    ]
    reward = -torch.tensor(ratios, dtype=torch.float32)
    value = baseline(inputs)
    if config.baseline == "leave-one-out":
        grouped = reward.view(-1, samples)
        others = (grouped.sum(1, keepdim=True) - grouped) / (samples - 1)
        advantage = (grouped - others).view(-1)
    else:
        advantage = (reward - value).detach()
    log_prob = action_log_prob(*logits, action, ptr=ptr)
    entropy = action_entropy(*logits)
    baseline_loss = ((reward - value) ** 2).mean()
    loss = -(advantage * log_prob).mean() + baseline_loss - config.entropy_weight * entropy
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip)
    torch.nn.utils.clip_grad_norm_(baseline.parameters(), config.grad_clip)
    optimizer.step()
    return ratios, baseline_loss.item(), entropy.item()


def _imitation_update(
    policy: RegalPolicy,
    optimizer: torch.optim.Optimizer,
    config: PlacementTrainConfig,
    batch: list[TrainingGraph],
    targets: dict[int, ImitationTarget],
) -> tuple[list[float], float]:
    """One imitation step on ``batch``: maximise the likelihood of the imitated
    priority keys under the priority gene's distributions. Returns the imitated
    solutions' ``cost / H(G, U)`` and the entropy."""
    policy.train()
    inputs, ptr = batch_inputs([item.inputs for item in batch])
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
        torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip)
        optimizer.step()
    return ratios, action_entropy(logits_first, logits_second).item()


def train_placement(
    run_dir: str | Path,
    config: PlacementTrainConfig | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    on_epoch: Callable[[PlacementEpoch], None] | None = None,
) -> list[PlacementEpoch]:
    """Train (or, with ``resume``, continue) a REGAL policy in ``run_dir``; returns the history.

    ``progress(stage, done, total)`` reports the reference runs and each epoch's batches.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    config = rundir.open_run(
        run_dir,
        config,
        resume=resume,
        from_dict=PlacementTrainConfig.from_dict,
        to_dict=PlacementTrainConfig.to_dict,
    )
    train_seeds = list(range(config.train_graphs))
    valid_seeds = validation_seeds(config.validation_graphs)
    graphs = {
        s: placement_graph(s, topologies=config.topologies, noise_sigma=config.noise_sigma)
        for s in train_seeds + valid_seeds
    }
    references = _references(run_dir, config, graphs, progress)
    training = _graph_set(config, train_seeds, graphs, references, progress)
    validation = _graph_set(config, valid_seeds, graphs, references, progress)

    torch.manual_seed(config.seed)
    policy = RegalPolicy(config.policy)
    baseline = RegalBaseline(config.policy)
    optimizer = torch.optim.Adam([*policy.parameters(), *baseline.parameters()], lr=config.lr)
    meta_base = {"objective": config.objective, "config": config.to_dict()}

    def save_model(epochs: int, ratio: float) -> None:
        meta = {**meta_base, "trained_epochs": epochs, "validation_ratio": ratio}
        save_regal_policy(run_dir / MODEL_FILE, policy, meta)

    if resume:
        state = rundir.load_state(run_dir)
        policy.load_state_dict(state["policy"])
        baseline.load_state_dict(state["baseline"])
        optimizer.load_state_dict(state["optimizer"])
        start, best = state["epoch"] + 1, state["best_validation_ratio"]
        history = rundir.read_metrics(run_dir, PlacementEpoch)[:start]
    else:
        start, history = 0, []
        best = validation_ratio(policy, config, validation)
        save_model(0, best)
    targets = (
        _imitation_targets(run_dir, config, training, progress)
        if start < config.imitation_epochs
        else {}
    )
    batches = -(-len(training) // config.batch_size)
    for epoch in range(start, config.epochs):
        began = time.perf_counter()
        rng = np.random.default_rng([config.seed, epoch])
        generator = torch.Generator().manual_seed(config.seed * 1_000_003 + epoch)
        shuffled = rng.permutation(len(training))
        ratios, baseline_losses, entropies = [], [], []
        for b in range(batches):
            batch = [training[i] for i in shuffled[b * config.batch_size :][: config.batch_size]]
            if epoch < config.imitation_epochs:
                batch_ratios, entropy = _imitation_update(policy, optimizer, config, batch, targets)
                baseline_loss = float("nan")
            else:
                batch_ratios, baseline_loss, entropy = _update(
                    policy, baseline, optimizer, config, batch, generator
                )
            ratios += batch_ratios
            baseline_losses.append(baseline_loss)
            entropies.append(entropy)
            if progress is not None:
                stage = "imitation" if epoch < config.imitation_epochs else "REINFORCE"
                label = f"epoch {epoch} ({stage}): cost/H(G,U) {np.mean(ratios):.4f}"
                progress(label, b + 1, batches)
        valid = validation_ratio(policy, config, validation)
        improved = valid < best
        if improved:
            best = valid
            save_model(epoch + 1, valid)
        metrics = PlacementEpoch(
            epoch=epoch,
            train_ratio=float(np.mean(ratios)),
            baseline_loss=float(np.mean(baseline_losses)),
            entropy=float(np.mean(entropies)),
            validation_ratio=valid,
            best_validation_ratio=best,
            improved=improved,
            seconds=time.perf_counter() - began,
        )
        history.append(metrics)
        state = {
            "policy": policy.state_dict(),
            "baseline": baseline.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "best_validation_ratio": best,
        }
        rundir.end_epoch(
            run_dir,
            state,
            history,
            PlacementEpoch,
            {
                "train (imitated, then sampled)": [m.train_ratio for m in history],
                "modal action (validation)": [m.validation_ratio for m in history],
                "standard BRKGA": [1.0] * len(history),
            },
            ylabel="H(G, D) / H(G, U)",
            title=f"REGAL training ({config.objective})",
        )
        if on_epoch is not None:
            on_epoch(metrics)
    return history
