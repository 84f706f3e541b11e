"""The REGAL training run (paper 003, section 2.3): REINFORCE on BRKGA's final objective.

Each update takes a batch of training graphs, samples ``samples_per_graph`` actions per
graph from the policy (a ``beta(alpha, beta)`` pair per gene), scores each with
``BrkgaEnv`` (``-H(G, D) / H(G, U)``) and takes a policy-gradient step against the
configured baseline (the paper's learned critic ``b(G)``, leave-one-out, a moving
average or none), with an optional entropy bonus. The first ``imitation_epochs``
epochs are the imitation warm start of ``dagopt.train.regal.imitation`` instead.

The run directory holds ``config.json``, ``reference.json`` (``H(G, U)`` per graph
seed), ``imitation.json`` (the imitated keys, if any), ``state.pt``, ``model.pt`` (the
policy with the best validation ratio so far), ``metrics.csv`` and
``learning_curve.png``. Each epoch's randomness derives from ``(seed, epoch)``, so a
resumed run matches an uninterrupted one. ``fit`` (``dagopt.train.loop``) owns epochs,
files and resume. The BRKGA runs (references, rewards, validation) go through an
optional ``dagopt.executor.Executor`` (local processes or Ray workers); the policy and
its updates stay in this process, and the results are the serial run's.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dagopt.errors import InputError
from dagopt.executor import Executor
from dagopt.generate.placement import placement_graph
from dagopt.generate.seeds import validation_seeds
from dagopt.nn.checkpoint import save_model
from dagopt.nn.regal import (
    RegalBaseline,
    RegalPolicy,
    action_entropy,
    action_log_prob,
    batch_inputs,
    check_policy_fits,
    sample_actions,
    split_action,
)
from dagopt.rl.baselines import (
    Baseline,
    CriticBaseline,
    ExponentialBaseline,
    LeaveOneOutBaseline,
    NoBaseline,
)
from dagopt.rl.reinforce import policy_gradient_loss
from dagopt.train import rundir
from dagopt.train.loop import Progress, Trainer, batch_slices, fit
from dagopt.train.regal.config import RegalTrainConfig
from dagopt.train.regal.episodes import BrkgaEnv, TrainingGraph, graph_set, references
from dagopt.train.regal.imitation import ImitationTarget, imitation_step, imitation_targets


@dataclass(frozen=True)
class RegalEpoch:
    epoch: int
    train_ratio: float
    baseline_loss: float
    entropy: float
    validation_ratio: float
    best_validation_ratio: float
    improved: bool
    seconds: float


def make_baseline(config: RegalTrainConfig) -> Baseline:
    """The run's ``dagopt.rl.baselines`` object (``RegalTrainConfig.baseline``)."""
    if config.baseline == "critic":
        return CriticBaseline(RegalBaseline(config.policy), lambda inputs: inputs)
    if config.baseline == "leave-one-out":
        return LeaveOneOutBaseline(config.samples_per_graph)
    return ExponentialBaseline() if config.baseline == "exponential" else NoBaseline()


class RegalTrainer(Trainer):
    """``fit``'s model-specific part for the REGAL policy."""

    row_type = RegalEpoch
    ylabel = "H(G, D) / H(G, U)"

    def __init__(
        self,
        run_dir: Path,
        config: RegalTrainConfig,
        progress: Progress | None,
        executor: Executor | None = None,
    ) -> None:
        self.run_dir, self.config = run_dir, config
        self.title = f"REGAL training ({config.objective})"
        train_seeds = list(range(config.train_graphs))
        valid_seeds = validation_seeds(config.validation_graphs)
        graphs = {
            s: placement_graph(s, topologies=config.topologies, noise_sigma=config.noise_sigma)
            for s in train_seeds + valid_seeds
        }
        reference_of = references(run_dir, config, graphs, progress, executor)
        self.training = graph_set(config, train_seeds, graphs, reference_of, progress)
        self.validation = graph_set(config, valid_seeds, graphs, reference_of, progress)
        for name, kept, seeds in (
            ("training", self.training, train_seeds),
            ("validation", self.validation, valid_seeds),
        ):
            if not kept:
                raise InputError(
                    f"standard BRKGA placed none of the {len(seeds)} {name} graphs within "
                    f"the devices' memory (memory_gib {config.memory_gib:g}): nothing to "
                    "learn from; give more memory_gib"
                )
        self.env = BrkgaEnv(config, executor)
        torch.manual_seed(config.seed)
        self.policy = RegalPolicy(config.policy)
        self.baseline = make_baseline(config)
        self.optimizer = torch.optim.Adam(
            [*self.policy.parameters(), *self.baseline.parameters()], lr=config.lr
        )
        self.targets: dict[int, ImitationTarget] | None = None

    def _save_model(self, epochs: int) -> None:
        meta = {
            "objective": self.config.objective,
            "config": self.config.to_dict(),
            "trained_epochs": epochs,
            "validation_ratio": self.best,
        }
        save_model(self.run_dir / rundir.MODEL_FILE, self.policy, meta)

    def start(self, progress: Progress | None) -> None:
        self.best = self.env.greedy_ratio(self.policy, self.validation)
        self._save_model(0)

    def _reinforce_step(
        self, batch: list[TrainingGraph], generator: torch.Generator
    ) -> tuple[list[float], float, float]:
        """One REINFORCE step; returns the ratios, the baseline's loss and the entropy."""
        c = self.config
        self.policy.train()
        episodes = [item for item in batch for _ in range(c.samples_per_graph)]
        inputs = batch_inputs([item.inputs for item in episodes])
        logits = self.policy(inputs)
        action = sample_actions(*logits, generator=generator)
        rewards = self.env.rewards(
            list(zip(episodes, split_action(action, inputs.ptr), strict=True))
        )
        reward = torch.tensor(rewards, dtype=torch.float32)
        value, baseline_loss = self.baseline.evaluate(inputs, reward)
        log_prob = action_log_prob(*logits, action, ptr=inputs.ptr)
        entropy = action_entropy(*logits)
        loss = (
            policy_gradient_loss(log_prob, reward, value)
            + baseline_loss
            - c.entropy_weight * entropy
        )
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), c.grad_clip)
        if self.baseline.parameters():
            torch.nn.utils.clip_grad_norm_(self.baseline.parameters(), c.grad_clip)
        self.optimizer.step()
        return [-r for r in rewards], baseline_loss.item(), entropy.item()

    def run_epoch(self, epoch: int, progress: Progress | None) -> RegalEpoch:
        c = self.config
        imitating = epoch < c.imitation_epochs
        if imitating and self.targets is None:
            self.targets = imitation_targets(self.run_dir, c, self.training, progress)
        rng = np.random.default_rng([c.seed, epoch])
        generator = torch.Generator().manual_seed(c.seed * 1_000_003 + epoch)
        shuffled = rng.permutation(len(self.training))
        ratios, baseline_losses, entropies = [], [], []
        slices = list(batch_slices(len(self.training), c.batch_size))
        for b, part in enumerate(slices):
            batch = [self.training[i] for i in shuffled[part]]
            if imitating:
                batch_ratios, entropy = imitation_step(
                    self.policy, self.optimizer, c.grad_clip, batch, self.targets
                )
                baseline_loss = float("nan")
            else:
                batch_ratios, baseline_loss, entropy = self._reinforce_step(batch, generator)
            ratios += batch_ratios
            baseline_losses.append(baseline_loss)
            entropies.append(entropy)
            if progress is not None:
                stage = "imitation" if imitating else "REINFORCE"
                label = f"epoch {epoch} ({stage}): cost/H(G,U) {np.mean(ratios):.4f}"
                progress(label, b + 1, len(slices))
        valid = self.env.greedy_ratio(self.policy, self.validation)
        improved = valid < self.best
        if improved:
            self.best = valid
            self._save_model(epoch + 1)
        self.baseline.epoch_end(self.policy, valid)
        return RegalEpoch(
            epoch=epoch,
            train_ratio=float(np.mean(ratios)),
            baseline_loss=float(np.mean(baseline_losses)),
            entropy=float(np.mean(entropies)),
            validation_ratio=valid,
            best_validation_ratio=self.best,
            improved=improved,
            seconds=0.0,
        )

    def parts(self) -> dict[str, Any]:
        return {"policy": self.policy, "baseline": self.baseline, "optimizer": self.optimizer}

    def curves(self, history: Sequence[RegalEpoch]) -> dict[str, list[float]]:
        return {
            "train (imitated, then sampled)": [m.train_ratio for m in history],
            "modal action (validation)": [m.validation_ratio for m in history],
            "standard BRKGA": [1.0] * len(history),
        }


def train_regal(
    run_dir: str | Path,
    config: RegalTrainConfig | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    on_epoch: Callable[[RegalEpoch], None] | None = None,
    executor: Executor | None = None,
) -> list[RegalEpoch]:
    """Train (or, with ``resume``, continue) a REGAL policy in ``run_dir``; returns the
    history. ``progress(stage, done, total)`` reports the reference runs and batches;
    ``executor`` runs the BRKGA runs (default: in this process)."""
    run_dir = Path(run_dir)
    if config is not None:
        check_policy_fits(config.policy)  # before open_run and the reference runs
    config = rundir.open_run(run_dir, config, resume=resume, config_type=RegalTrainConfig)
    trainer = RegalTrainer(run_dir, config, progress, executor)
    return fit(run_dir, trainer, config.epochs, resume=resume, progress=progress, on_epoch=on_epoch)
