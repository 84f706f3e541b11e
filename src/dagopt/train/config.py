"""Configuration of a Topoformer ordering training run, read from a JSON file.

Defaults follow paper 000, appendix C.1 (Adam, lr 1e-4, decay 0.996 per epoch, batch
8, a fresh set of 1000 graphs per epoch) except the model and graph size, which a
2-core CPU cannot train at the paper's scale (see ``checkpoints/README.md``).
"""

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagopt.errors import InputError, reject_unknown_keys
from dagopt.generate.seeds import VALIDATION_SEED_BASE
from dagopt.nn.encoders import EncoderConfig
from dagopt.nn.regal import RegalConfig
from dagopt.objectives.placement import check_objective


def _small_encoder() -> EncoderConfig:
    return EncoderConfig(dim=64, layers=3, heads_per_group=(2,) * 7, head_dim=16)


@dataclass(frozen=True)
class OrderingTrainConfig:
    """Every knob of ``dagopt train ordering``; JSON keys are the field names."""

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
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OrderingTrainConfig":
        reject_unknown_keys(data, cls, "training option")
        values = dict(data)
        if "encoder" in values:
            values["encoder"] = EncoderConfig.from_dict(dict(values["encoder"]))
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        positive = ("graph_nodes", "epoch_graphs", "batch_size", "epochs", "validation_graphs")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise InputError(f"training option {name!r} must be >= 1")
        if not (self.lr > 0 and 0 < self.lr_decay <= 1 and self.alpha > 0):
            raise InputError("training options need lr > 0, 0 < lr_decay <= 1, alpha > 0")


@dataclass(frozen=True)
class PlacementTrainConfig:
    """Every knob of ``dagopt train placement`` (REGAL, paper 003 section 2.3).

    A fixed set of ``train_graphs`` placement graphs (section 3.1 trains on a fixed
    dataset) is visited in a fresh order every epoch, ``batch_size`` graphs per update.
    Each graph's reward is ``-H(G, D) / H(G, U)`` with BRKGA run for
    ``brkga_evaluations`` (5,000 in the paper). ``memory_gib`` is every device's memory.
    ``entropy_weight`` adds an entropy bonus (0: the paper's plain REINFORCE).
    ``baseline`` is ``"network"`` (the paper's learned ``b(G)``) or ``"leave-one-out"``
    (the mean reward of the other ``samples_per_graph`` samples of the same graph).
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
    baseline: str = "network"
    samples_per_graph: int = 1
    brkga_evaluations: int = 5000
    imitation_epochs: int = 0
    imitation_runs: int = 3
    imitation_evaluations: int = 5000
    imitation_prior_concentration: float = 0.0
    topologies: int = 0
    noise_sigma: float = 0.2
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "policy": self.policy.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PlacementTrainConfig":
        reject_unknown_keys(data, cls, "training option")
        values = dict(data)
        if "policy" in values:
            values["policy"] = RegalConfig.from_dict(dict(values["policy"]))
        return cls(**values)

    def __post_init__(self) -> None:
        check_objective(self.objective)
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
        if not (self.lr > 0 and self.memory_gib > 0 and self.entropy_weight >= 0):
            raise InputError("training options need lr > 0, memory_gib > 0, entropy_weight >= 0")
        if self.topologies < 0 or not self.noise_sigma >= 0:
            raise InputError("training options need topologies >= 0 and noise_sigma >= 0")
        if self.baseline not in ("network", "leave-one-out"):
            raise InputError(
                f"baseline must be 'network' or 'leave-one-out', got {self.baseline!r}"
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


def load_config(path: str | os.PathLike, config_type: type = OrderingTrainConfig):
    """Read a JSON training configuration of ``config_type`` (missing keys take the
    defaults): ``OrderingTrainConfig`` or ``PlacementTrainConfig``."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{file}: cannot read training config ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{file}: training config must be a JSON object")
    try:
        return config_type.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{file}: {exc}") from None
