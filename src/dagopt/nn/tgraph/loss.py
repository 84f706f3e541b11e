"""Pairwise hinge loss of paper 002, section 2.4.1, eq. 8."""

import torch


def pairwise_hinge_loss(scores: torch.Tensor, runtimes: torch.Tensor) -> torch.Tensor:
    """``mean over pairs with r_i > r_j of max(0, 1 - (s_i - s_j))``.

    Eq. 8 sums ``I[r_i > r_j] max(0, 1 - (s_i - s_j))``; dividing by the number of such
    pairs keeps the scale independent of the batch size. A slower configuration should
    score at least 1 higher (scores rank like runtimes: lower = predicted faster). 0 when
    every runtime is equal.
    """
    slower = runtimes[:, None] > runtimes[None, :]
    margins = torch.relu(1.0 - (scores[:, None] - scores[None, :]))
    pairs = slower.sum()
    return (margins * slower).sum() / pairs.clamp(min=1)
