"""REINFORCE baselines ``b``, one object each, as RL4CO separates them.

Each ``Baseline`` gives per-episode values for a batch's rewards (``evaluate``, which
also returns the baseline's own training loss, 0 when it has none) and may change at
the end of an epoch (``epoch_end``). ``BASELINES`` names them for configs:

- ``"none"``: ``b = 0``, plain REINFORCE;
- ``"exponential"``: an exponential moving average of past batches' mean reward;
- ``"critic"``: a learned value network ``b(G)``, trained by squared error on the
  rewards (paper 003, section 2.3);
- ``"leave-one-out"``: with ``k`` samples per instance, the mean reward of the other
  ``k - 1`` samples (Kool et al. 2019);
- ``"greedy-rollout"``: the reward of a frozen copy of the policy's greedy decoding,
  replaced by the policy when it does better on validation (paper 000, 4.3, eq. 10).
"""

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

BASELINES = ("none", "exponential", "critic", "leave-one-out", "greedy-rollout")


class Baseline(ABC):
    """``b`` of ``grad J = E[(r - b) grad log p]``."""

    @abstractmethod
    def evaluate(self, batch: Any, reward: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-episode values ``b`` (no gradient) for ``batch``'s ``reward`` ``(B,)``,
        and the baseline's own loss (a 0-dim tensor; 0 when it learns nothing)."""

    def epoch_end(self, policy: nn.Module, validation_score: float) -> bool:
        """After an epoch's updates; returns whether the baseline changed."""
        return False

    def parameters(self) -> list[nn.Parameter]:
        """Trainable parameters (for the run's optimizer)."""
        return []

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output (nothing for a stateless baseline)."""
        return None


class NoBaseline(Baseline):
    """``b = 0``."""

    def evaluate(self, batch, reward):
        return torch.zeros_like(reward), reward.new_zeros(())


class ExponentialBaseline(Baseline):
    """``b`` = an exponential moving average ``m <- beta m + (1 - beta) mean(r)`` of the
    batches' mean rewards, started at the first batch's mean."""

    def __init__(self, beta: float = 0.8) -> None:
        self.beta = beta
        self.mean: float | None = None

    def evaluate(self, batch, reward):
        batch_mean = float(reward.mean())
        value = batch_mean if self.mean is None else self.mean
        self.mean = (
            batch_mean
            if self.mean is None
            else self.beta * self.mean + (1 - self.beta) * batch_mean
        )
        return torch.full_like(reward, value), reward.new_zeros(())

    def state_dict(self):
        return {} if self.mean is None else {"mean": self.mean}

    def load_state_dict(self, state):
        self.mean = state.get("mean")


class CriticBaseline(Baseline):
    """``b = critic(inputs(batch))``, trained on ``mean((r - b)^2)`` (003 section 2.3)."""

    def __init__(self, critic: nn.Module, inputs: Callable[[Any], Any]) -> None:
        self.critic = critic
        self.inputs = inputs

    def evaluate(self, batch, reward):
        self.critic.train()
        value = self.critic(self.inputs(batch))
        return value.detach(), ((reward - value) ** 2).mean()

    def parameters(self):
        return list(self.critic.parameters())

    def state_dict(self):
        return {"critic": self.critic.state_dict()}

    def load_state_dict(self, state):
        self.critic.load_state_dict(state["critic"])


class LeaveOneOutBaseline(Baseline):
    """With ``samples`` consecutive episodes per instance, each episode's ``b`` is the
    mean reward of the instance's other samples (Kool et al. 2019)."""

    def __init__(self, samples: int) -> None:
        if samples < 2:
            raise ValueError("a leave-one-out baseline needs >= 2 samples per instance")
        self.samples = samples

    def evaluate(self, batch, reward):
        grouped = reward.view(-1, self.samples)
        others = (grouped.sum(1, keepdim=True) - grouped) / (self.samples - 1)
        return others.view(-1), reward.new_zeros(())


class GreedyRolloutBaseline(Baseline):
    """``b(G)``: the reward of a frozen copy of the policy decoded greedily, computed by
    ``rollout(frozen_policy, batch)``; the copy is replaced by the policy after an epoch
    whose validation score (lower is better) beats the copy's (paper 000, eq. 10)."""

    def __init__(
        self, policy: nn.Module, rollout: Callable[[nn.Module, Any], torch.Tensor]
    ) -> None:
        self.policy = copy.deepcopy(policy)
        self.rollout = rollout
        self.score = float("inf")

    def evaluate(self, batch, reward):
        self.policy.eval()
        with torch.no_grad():
            value = self.rollout(self.policy, batch)
        return value.to(reward.dtype), reward.new_zeros(())

    def epoch_end(self, policy, validation_score):
        if validation_score >= self.score:
            return False
        self.policy.load_state_dict(policy.state_dict())
        self.score = validation_score
        return True

    def state_dict(self):
        return {"policy": self.policy.state_dict(), "score": self.score}

    def load_state_dict(self, state):
        self.policy.load_state_dict(state["policy"])
        self.score = state["score"]
