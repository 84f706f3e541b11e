"""The Topoformer ordering run (paper 000, 4.3, C.1, C.4): REINFORCE on peak memory.

Every epoch draws fresh layered graphs; each update samples one order per graph from
the priority model (with random positional-encoding sign flips), rewards it with
``-peak_memory`` (``PeakMemoryEnv``) and takes a policy-gradient step against the
configured ``dagopt.rl.baselines`` baseline: by default the paper's greedy rollout
of a frozen policy, refreshed when the policy's mean greedy peak on a fixed
validation set improves. ``model.pt`` holds the best policy on validation so far
(the rollout baseline's policy). Each epoch's randomness derives from
``(seed, epoch)``, so a resumed run draws the same graphs and samples as an
uninterrupted one. ``fit`` (``dagopt.train.loop``) owns epochs, files and resume.
With ``decoder="autoregressive"`` the policy is the appendix-B ablation
(``dagopt.nn.ar_decoder.ARPolicy``) and everything else stays the same.

``mix`` (``dagopt.train.mix``) draws part of each epoch's graphs from real models'
training graphs and validates on real graphs too, with every peak divided by Inductor's
on the same graph; ``init_model`` starts the policy from a trained model's weights
(fine-tuning). Both are off by default: such a run is the paper's.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.generate import generate_layered
from dagopt.generate.seeds import training_seed, validation_seeds
from dagopt.graph import Graph
from dagopt.graph.order import ready_masks
from dagopt.nn.ar_decoder import ARConfig, ARPolicy
from dagopt.nn.checkpoint import save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel, encoder_inputs
from dagopt.nn.features import GraphInputs
from dagopt.objectives import peak_memory
from dagopt.rl.baselines import (
    Baseline,
    ExponentialBaseline,
    GreedyRolloutBaseline,
    NoBaseline,
)
from dagopt.rl.reinforce import Environment, policy_gradient_loss
from dagopt.schedule.neural import load_model
from dagopt.schedule.priority import greedy_order, sample_orders
from dagopt.train import mix as graph_mix
from dagopt.train import rundir
from dagopt.train.loop import Progress, Trainer, batch_slices, fit

#: The baselines an ordering run can use (``dagopt.rl.baselines``).
ORDERING_BASELINES = ("greedy-rollout", "exponential", "none")
#: The decoders: the priority decoder of eq. (7)-(8), or the autoregressive decoder of
#: appendix B (``dagopt.nn.ar_decoder``).
DECODERS = ("priority", "autoregressive")

#: A trainable ordering policy: Topoformer priorities or the autoregressive ablation.
Policy = PriorityModel | ARPolicy


def _small_encoder() -> EncoderConfig:
    return EncoderConfig(dim=64, layers=3, heads_per_group=(2,) * 7, head_dim=16)


@dataclass(frozen=True)
class OrderingTrainConfig(Config):
    """Every knob of ``dagopt train ordering``; JSON keys are the field names.

    Defaults follow paper 000, appendix C.1 (Adam, lr 1e-4, decay 0.996 per epoch,
    batch 8, a fresh set of 1000 graphs per epoch, greedy-rollout baseline) except the
    model and graph size, which a 2-core CPU cannot train at the paper's scale (see
    ``checkpoints/README.md``).
    """

    encoder: EncoderConfig = field(default_factory=_small_encoder)
    alpha: float = 5.0
    graph_nodes: int = 100
    epoch_graphs: int = 1000
    batch_size: int = 8
    epochs: int = 326
    lr: float = 1e-4
    lr_decay: float = 0.996
    grad_clip: float = 1.0
    validation_graphs: int = 64
    baseline: str = "greedy-rollout"
    decoder: str = "priority"
    seed: int = 0
    mix: dict[str, float] = field(default_factory=dict)
    init_model: str = ""

    def __post_init__(self) -> None:
        positive = ("graph_nodes", "epoch_graphs", "batch_size", "epochs", "validation_graphs")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise InputError(f"training option {name!r} must be >= 1")
        if self.graph_nodes < 2:
            raise InputError("training option 'graph_nodes' must be >= 2: one node has one order")
        if self.seed < 0:
            raise InputError(f"training option 'seed' must be >= 0, got {self.seed}")
        if not (self.lr > 0 and 0 < self.lr_decay <= 1 and self.alpha > 0 and self.grad_clip > 0):
            raise InputError(
                "training options need lr > 0, 0 < lr_decay <= 1, alpha > 0, grad_clip > 0"
            )
        if self.baseline not in ORDERING_BASELINES:
            raise InputError(
                f"baseline must be one of {', '.join(ORDERING_BASELINES)}, got {self.baseline!r}"
            )
        if self.decoder not in DECODERS:
            raise InputError(f"decoder must be one of {', '.join(DECODERS)}, got {self.decoder!r}")
        if self.decoder == "autoregressive":
            ARConfig(encoder=self.encoder)  # its glimpse heads must divide the width
        graph_mix.check_mix(self.mix)
        if self.init_model and self.decoder != "priority":
            raise InputError("init_model needs the priority decoder")

    def make_policy(self) -> Policy:
        """A fresh policy of this run's encoder and decoder: randomly initialised, or with
        the weights of ``init_model`` (a priority model file or shipped model name)."""
        if self.decoder == "autoregressive":
            return ARPolicy(ARConfig(encoder=self.encoder))
        policy = PriorityModel(self.encoder, alpha=self.alpha)
        if self.init_model:
            start = load_model(self.init_model)
            if start.config != self.encoder:
                raise InputError(f"init_model {self.init_model!r} has another encoder config")
            policy.load_state_dict(start.state_dict())
        return policy


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


def order_log_prob(graph: Graph, priorities: torch.Tensor, order: np.ndarray) -> torch.Tensor:
    """Differentiable ``log p(order | G)`` under eq. (8): at each step the run node's
    priority minus the log-sum-exp over the ready set."""
    mask = torch.from_numpy(ready_masks(graph, order))
    masked = priorities.unsqueeze(0).masked_fill(~mask, float("-inf"))
    run = torch.from_numpy(np.asarray(order, dtype=np.int64))
    return (priorities[run] - torch.logsumexp(masked, dim=1)).sum()


def sampled_order(
    policy: Policy, graph: Graph, inputs: GraphInputs, rng: np.random.Generator
) -> tuple[np.ndarray, torch.Tensor]:
    """One order drawn from ``policy`` and its differentiable log-probability: eq. (8)
    for priorities, eq. (6) (decoded without gradient, then scored teacher-forced in
    one pass) for the autoregressive decoder."""
    if isinstance(policy, ARPolicy):
        order = policy.rollout(graph, inputs, rng.random((1, graph.num_nodes)))[0][0]
        return order, policy.order_log_prob(graph, inputs, order)
    y = policy(inputs)
    order = sample_orders(graph, y.detach().double().numpy(), 1, rng)[0][0]
    return order, order_log_prob(graph, y, order)


@torch.no_grad()
def greedy_cost(model: Policy, graph: Graph, inputs: GraphInputs | None = None) -> float:
    """Peak memory of the greedy order of ``model`` on ``graph`` (eq. 10)."""
    inputs = inputs if inputs is not None else encoder_inputs(graph, model.encoder.config)
    if isinstance(model, ARPolicy):
        return peak_memory(graph, model.rollout(graph, inputs)[0][0])
    return peak_memory(graph, greedy_order(graph, model(inputs).double().numpy()))


class PeakMemoryEnv(Environment):
    """The ordering environment: an order's reward is ``-peak_memory`` (eq. 1-3), divided
    by ``scale(graph)`` when a scale is given (a mixed run: ``dagopt.train.mix``)."""

    def __init__(self, scale: Callable[[Graph], float] | None = None) -> None:
        self.scale = scale

    def cost(self, graph: Graph, peak: float) -> float:
        return peak / self.scale(graph) if self.scale is not None else peak

    def reward(self, instance: Graph, action: np.ndarray) -> float:
        return -self.cost(instance, peak_memory(instance, action))

    def greedy_rewards(
        self, policy: Policy, batch: Sequence[tuple[Graph, GraphInputs]]
    ) -> torch.Tensor:
        """Rewards of ``policy``'s greedy orders on ``(graph, inputs)`` pairs."""
        costs = [self.cost(graph, greedy_cost(policy, graph, inputs)) for graph, inputs in batch]
        return -torch.tensor(costs, dtype=torch.float64)


def reinforce_loss(
    policy: Policy,
    baseline: Baseline,
    graphs: list[Graph],
    rng: np.random.Generator,
    env: PeakMemoryEnv | None = None,
) -> tuple[torch.Tensor, float, float]:
    """The policy-gradient loss of one batch, one sampled order per graph (eq. 9).

    Each graph's positional encodings get random sign flips; a greedy-rollout baseline
    sees the same inputs as the policy, so the advantage compares the two policies on
    one input. Returns the loss, the mean sampled peak and the mean baseline peak (both
    divided by ``env``'s scale when it has one).
    """
    env = env if env is not None else PeakMemoryEnv()
    log_probs, rewards, batch = [], [], []
    for graph in graphs:
        inputs = encoder_inputs(graph, policy.encoder.config, sign_flip=rng)
        order, log_prob = sampled_order(policy, graph, inputs, rng)
        rewards.append(env.reward(graph, order))
        log_probs.append(log_prob)
        batch.append((graph, inputs))
    reward = torch.tensor(rewards, dtype=torch.float64)
    value, _ = baseline.evaluate(batch, reward)
    loss = policy_gradient_loss(torch.stack(log_probs), reward, value)
    return loss, -float(reward.mean()), -float(value.mean())


def mean_greedy_cost(
    model: Policy, graphs: list[tuple[Graph, GraphInputs]], env: PeakMemoryEnv | None = None
) -> float:
    """Mean greedy peak over featurised graphs (``(graph, inputs)`` pairs), each divided
    by ``env``'s scale when it has one."""
    model.eval()
    env = env if env is not None else PeakMemoryEnv()
    return float(np.mean([env.cost(g, greedy_cost(model, g, inputs)) for g, inputs in graphs]))


class OrderingTrainer(Trainer):
    """``fit``'s model-specific part for the Topoformer priority model."""

    row_type = EpochMetrics
    ylabel = "mean peak memory"
    title = "Topoformer REINFORCE training"

    def __init__(self, run_dir: Path, config: OrderingTrainConfig) -> None:
        self.run_dir, self.config = run_dir, config
        torch.manual_seed(config.seed)
        self.policy = config.make_policy()
        self.scales: dict[int, float] = {}  # the real graphs' reference peaks, by id
        self.env = PeakMemoryEnv(self._scale if config.mix else None)
        self.baseline: Baseline = {
            "greedy-rollout": lambda: GreedyRolloutBaseline(self.policy, self.env.greedy_rewards),
            "exponential": ExponentialBaseline,
            "none": NoBaseline,
        }[config.baseline]()
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.lr)
        self.schedule = torch.optim.lr_scheduler.ExponentialLR(self.optimizer, config.lr_decay)
        self.validation = []  # featurised once: the set is fixed and featurisation deterministic
        for s in validation_seeds(config.validation_graphs):
            graph = generate_layered(config.graph_nodes, seed=s)
            self.validation.append((graph, encoder_inputs(graph, config.encoder)))
        self.real: dict[str, list[Graph]] = {}
        self.real_validation: list[tuple[Graph, GraphInputs]] = []
        if config.mix:
            for source in graph_mix.source_counts(config.mix, config.epoch_graphs):
                if source != "layered":
                    self.real[source] = graph_mix.load_graphs(graph_mix.TRAINING_GRAPHS[source])
            for graph in graph_mix.load_graphs(graph_mix.VALIDATION_GRAPHS):
                self.real_validation.append((graph, encoder_inputs(graph, config.encoder)))
            for graph in [g for pool in self.real.values() for g in pool] + [
                g for g, _ in self.real_validation
            ]:
                self.scales[id(graph)] = graph_mix.reference_peak(graph)

    def _scale(self, graph: Graph) -> float:
        """Inductor's peak on ``graph``: cached for the run's real graphs (alive all run,
        so their ids are never reused), computed for fresh layered ones."""
        scale = self.scales.get(id(graph))
        return scale if scale is not None else graph_mix.reference_peak(graph)

    def validation_cost(self, model: Policy) -> float:
        """The mean greedy peak on the validation graphs; in a mixed run the mean of the
        layered and the real graphs' means of peak over Inductor's."""
        cost = mean_greedy_cost(model, self.validation, self.env)
        if self.real_validation:
            cost = (cost + mean_greedy_cost(model, self.real_validation, self.env)) / 2
        return cost

    @property
    def best_model(self) -> Policy:
        """The model ``model.pt`` holds: the rollout baseline's policy, else the policy."""
        if isinstance(self.baseline, GreedyRolloutBaseline):
            return self.baseline.policy
        return self.policy

    def start(self, progress: Progress | None) -> None:
        self.best = self.validation_cost(self.policy)
        if isinstance(self.baseline, GreedyRolloutBaseline):
            self.baseline.score = self.best

    def _update(self, graphs: list[Graph], rng: np.random.Generator) -> tuple[float, float]:
        """One policy-gradient step; returns the mean sampled and baseline peaks. A batch
        whose graphs each have one topological order (chains) has no gradient: no step."""
        self.policy.train()
        loss, cost, base = reinforce_loss(self.policy, self.baseline, graphs, rng, self.env)
        if not loss.requires_grad:
            return cost, base
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.config.grad_clip)
        self.optimizer.step()
        return cost, base

    def run_epoch(self, epoch: int, progress: Progress | None) -> EpochMetrics:
        c = self.config
        rng = np.random.default_rng([c.seed, epoch])
        torch.manual_seed(c.seed * 1_000_003 + epoch)
        costs, base_costs = [], []
        slices = list(batch_slices(c.epoch_graphs, c.batch_size))
        real = self._real_draws(epoch)
        for b, part in enumerate(slices):
            graphs = [
                real[i]
                if real[i] is not None
                else generate_layered(
                    c.graph_nodes, seed=training_seed(0, epoch, c.epoch_graphs, i)
                )
                for i in range(part.start, part.stop)
            ]
            cost, base = self._update(graphs, rng)
            costs.append(cost)
            base_costs.append(base)
            if progress is not None:
                progress(
                    f"epoch {epoch}: mean sampled peak {np.mean(costs):.4g}", b + 1, len(slices)
                )
        lr = self.optimizer.param_groups[0]["lr"]
        self.schedule.step()
        validation_cost = self.validation_cost(self.policy)
        updated = self.baseline.epoch_end(self.policy, validation_cost)
        self.best = min(self.best, validation_cost)
        meta = {"trained_epochs": epoch + 1, "validation_cost": self.best, "config": c.to_dict()}
        save_model(self.run_dir / rundir.MODEL_FILE, self.best_model, meta)
        return EpochMetrics(
            epoch=epoch,
            train_cost=float(np.mean(costs)),
            train_baseline_cost=float(np.mean(base_costs)),
            validation_cost=validation_cost,
            baseline_validation_cost=self.best,
            baseline_updated=updated,
            lr=lr,
            seconds=0.0,
        )

    def _real_draws(self, epoch: int) -> list[Graph | None]:
        """Epoch ``epoch``'s graph slots: a real graph (drawn with replacement from its
        source's training graphs) or ``None`` for a fresh layered graph, shuffled so that
        batches mix the sources; all ``None`` without a mix."""
        c = self.config
        if not c.mix:
            return [None] * c.epoch_graphs
        rng = np.random.default_rng([c.seed, epoch, len(graph_mix.MIX_SOURCES)])
        slots: list[Graph | None] = []
        for source, count in graph_mix.source_counts(c.mix, c.epoch_graphs).items():
            pool = self.real.get(source)
            slots += (
                [None] * count
                if pool is None
                else [pool[i] for i in rng.integers(0, len(pool), count)]
            )
        return [slots[i] for i in rng.permutation(len(slots))]

    def parts(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "baseline": self.baseline,
            "optimizer": self.optimizer,
            "schedule": self.schedule,
        }

    def curves(self, history: Sequence[EpochMetrics]) -> dict[str, list[float]]:
        return {
            "sampled order (train)": [m.train_cost for m in history],
            "greedy (validation)": [m.validation_cost for m in history],
            "best (validation)": [m.baseline_validation_cost for m in history],
        }


def read_metrics(run_dir: str | Path) -> list[EpochMetrics]:
    """The epochs recorded in ``run_dir/metrics.csv``."""
    return rundir.read_metrics(run_dir, EpochMetrics)


def train_ordering(
    run_dir: str | Path,
    config: OrderingTrainConfig | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    on_epoch: Callable[[EpochMetrics], None] | None = None,
) -> list[EpochMetrics]:
    """Train (or, with ``resume``, continue training) in ``run_dir``; returns the history."""
    run_dir = Path(run_dir)
    if config is not None:
        config.encoder.check_weights_fit()  # before open_run writes the run's config
    config = rundir.open_run(run_dir, config, resume=resume, config_type=OrderingTrainConfig)
    trainer = OrderingTrainer(run_dir, config)
    return fit(run_dir, trainer, config.epochs, resume=resume, progress=progress, on_epoch=on_epoch)
