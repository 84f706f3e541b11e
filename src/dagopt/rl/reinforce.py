"""REINFORCE, shared by every policy dagopt trains (paper 000 4.3 eq. 9; paper 003 2.3).

``grad J = E[(r - b) grad log p(a | G)]``: ``policy_gradient_loss`` is its surrogate
for a batch of episodes, whatever the policy and the action. The reward comes from an
``Environment`` (peak memory of an order, BRKGA's result with a policy's mutant
distributions, a placement's latency); the baseline ``b`` from a
``dagopt.rl.baselines.Baseline`` object.
"""

from abc import ABC, abstractmethod
from typing import Any

import torch


class Environment(ABC):
    """What scores an action taken on an instance: ``reward`` (higher is better)."""

    @abstractmethod
    def reward(self, instance: Any, action: Any) -> float:
        """The reward of ``action`` on ``instance``."""


def policy_gradient_loss(
    log_prob: torch.Tensor, reward: torch.Tensor, baseline: torch.Tensor
) -> torch.Tensor:
    """``-mean((r - b) log p)`` over a batch's episodes (eq. 9 of paper 000).

    ``reward`` and ``baseline`` carry no gradient; the advantage is computed in their
    dtype and then cast to ``log_prob``'s.
    """
    advantage = (reward - baseline).detach().to(log_prob.dtype)
    return -(advantage * log_prob).mean()
