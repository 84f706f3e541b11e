"""Configuration of a REGAL training run (``dagopt train placement``, paper 003, 2.3)."""

from dataclasses import dataclass, field

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.generate.seeds import VALIDATION_SEED_BASE
from dagopt.nn.regal import RegalConfig
from dagopt.objectives.costmodel import check_objective
from dagopt.place.prior import check_order_prior

#: The baselines a REGAL run can use (``dagopt.rl.baselines``).
REGAL_BASELINES = ("critic", "leave-one-out", "exponential", "none")


@dataclass(frozen=True)
class RegalTrainConfig(Config):
    """Every knob of ``dagopt train placement`` (REGAL, paper 003 section 2.3).

    A fixed set of ``train_graphs`` placement graphs (section 3.1 trains on a fixed
    dataset) is visited in a fresh order every epoch, ``batch_size`` graphs per update.
    Each graph's reward is ``-H(G, D) / H(G, U)`` with BRKGA run for
    ``brkga_evaluations`` (5,000 in the paper). ``memory_gib`` is every device's memory.
    ``entropy_weight`` adds an entropy bonus (0: the paper's plain REINFORCE).
    ``baseline`` is one of ``REGAL_BASELINES``: ``"critic"`` is the paper's learned
    ``b(G)``; ``"leave-one-out"`` the mean reward of the other ``samples_per_graph``
    samples of the same graph (``dagopt.rl.baselines``).
    The first ``imitation_epochs`` epochs are a warm start instead of REINFORCE (beyond
    the paper; 0 turns it off): the policy's priority distributions learn to reproduce
    the orders of the best solutions of ``imitation_runs`` BRKGA runs per training graph,
    each of ``imitation_evaluations`` evaluations. With ``imitation_prior_concentration``
    ``c > 0`` those teachers search near the policy's ``order_prior`` order: their
    priority mutants are ``beta(c k, c (1 - k))`` around its keys ``k``
    (``MutantDistributions.centred``). ``topologies`` > 0 draws the graphs
    as noisy copies of that many base topologies, ``noise_sigma`` the log-normal shape
    of the noise (``dagopt.generate.placement.placement_graph``; 0: every graph its own
    topology).
    """

    objective: str = "runtime"
    policy: RegalConfig = field(default_factory=RegalConfig)
    memory_gib: float = 16.0
    train_graphs: int = 1000
    validation_graphs: int = 50
    batch_size: int = 8
    epochs: int = 20
    lr: float = 1e-3
    grad_clip: float = 1.0
    entropy_weight: float = 0.0
    baseline: str = "critic"
    samples_per_graph: int = 1
    brkga_evaluations: int = 5000
    imitation_epochs: int = 0
    imitation_runs: int = 3
    imitation_evaluations: int = 5000
    imitation_prior_concentration: float = 0.0
    topologies: int = 0
    noise_sigma: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        check_objective(self.objective)
        if self.policy.order_prior is not None:
            check_order_prior(self.policy.order_prior)
        positive = (
            "train_graphs",
            "validation_graphs",
            "batch_size",
            "epochs",
            "brkga_evaluations",
            "imitation_runs",
            "imitation_evaluations",
        )
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise InputError(f"training option {name!r} must be >= 1")
        if self.seed < 0:
            raise InputError(f"training option 'seed' must be >= 0, got {self.seed}")
        if not (self.lr > 0 and self.memory_gib > 0 and self.grad_clip > 0):
            raise InputError("training options need lr > 0, memory_gib > 0, grad_clip > 0")
        if not self.entropy_weight >= 0:
            raise InputError("training option 'entropy_weight' must be >= 0")
        if self.topologies < 0 or not self.noise_sigma >= 0:
            raise InputError("training options need topologies >= 0 and noise_sigma >= 0")
        if self.baseline not in REGAL_BASELINES:
            raise InputError(
                f"baseline must be one of {', '.join(REGAL_BASELINES)}, got {self.baseline!r}"
            )
        if self.samples_per_graph < 1 or (
            self.baseline == "leave-one-out" and self.samples_per_graph < 2
        ):
            raise InputError("samples_per_graph must be >= 1 (>= 2 with a leave-one-out baseline)")
        if self.imitation_epochs < 0:
            raise InputError("training option 'imitation_epochs' must be >= 0")
        if not self.imitation_prior_concentration >= 0:
            raise InputError("training option 'imitation_prior_concentration' must be >= 0")
        if self.imitation_prior_concentration > 0 and self.policy.order_prior is None:
            raise InputError("imitation_prior_concentration > 0 needs a policy order_prior")
        if self.train_graphs >= VALIDATION_SEED_BASE:
            raise InputError(f"train_graphs must be < {VALIDATION_SEED_BASE}")
