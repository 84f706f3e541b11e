"""Ranking losses: TGraph's pairwise hinge loss (paper 002, section 2.4.1, eq. 8) and the
TpuGraphs baselines' ListMLE with an optional squared error (``tpu_graphs/baselines``:
layout ``ListMLELoss()``; tile ``ListMLELoss(temperature=10):1, MSE:0.02``).

Every loss takes ``scores`` that rank like ``runtimes`` (lower = predicted faster)."""

import torch

from dagopt.errors import InputError

PAIR_WEIGHTS = ("uniform", "log-ratio")


def check_pair_weights(weights: str) -> None:
    """An ``InputError`` unless ``weights`` is one of ``PAIR_WEIGHTS``."""
    if weights not in PAIR_WEIGHTS:
        raise InputError(f"unknown pair weights {weights!r} ({', '.join(PAIR_WEIGHTS)})")


def pairwise_hinge_loss(
    scores: torch.Tensor, runtimes: torch.Tensor, weights: str = "uniform"
) -> torch.Tensor:
    """``mean over pairs with r_i > r_j of max(0, 1 - (s_i - s_j))``.

    Eq. 8 sums ``I[r_i > r_j] max(0, 1 - (s_i - s_j))``; dividing by the number of such
    pairs keeps the scale independent of the batch size. A slower configuration should
    score at least 1 higher (scores rank like runtimes: lower = predicted faster). 0 when
    every runtime is equal.

    ``weights="log-ratio"`` (beyond the paper) weighs each pair by ``log(r_i / r_j)``
    and divides by the weights' sum: pairs a few per cent apart, within the measurement's
    noise, count little; an order that puts a configuration twice as slow first counts
    most (eq. 10 and a tuner pay for exactly those). Runtimes must then be > 0.
    """
    check_pair_weights(weights)
    slower = runtimes[:, None] > runtimes[None, :]
    margins = torch.relu(1.0 - (scores[:, None] - scores[None, :]))
    if weights == "uniform":
        weight = slower.to(margins.dtype)
    else:
        if bool((runtimes <= 0).any()):
            raise InputError("log-ratio pair weights need runtimes > 0")
        log_runtime = runtimes.log()
        weight = torch.where(slower, log_runtime[:, None] - log_runtime[None, :], 0.0)
    total = weight.sum()
    return (margins * weight).sum() / torch.where(total > 0, total, 1.0)


def list_mle_loss(
    scores: torch.Tensor, runtimes: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """ListMLE (Xia et al. 2008): the negative log Plackett-Luce likelihood of the list
    ordered slowest first, ``sum_i [log sum_{j >= i} exp(s_j / T) - s_i / T]``.

    As TensorFlow Ranking's ``ListMLELoss`` with runtimes as the relevance labels (what
    the TpuGraphs baselines train on): the slowest configuration should score highest.
    Equal runtimes keep their index order (TF Ranking shuffles ties).
    """
    order = torch.argsort(runtimes, descending=True, stable=True)
    ordered = scores[order] / temperature
    tails = torch.logcumsumexp(ordered.flip(0), dim=0).flip(0)
    return (tails - ordered).sum()


def tpugraphs_loss(
    scores: torch.Tensor, runtimes: torch.Tensor, temperature: float, mse_weight: float
) -> torch.Tensor:
    """The baselines' weighted average ``(ListMLE_T + w MSE) / (1 + w)``, the squared
    error between scores and runtimes (tile: runtimes over their normaliser)."""
    mse = torch.mean((scores - runtimes) ** 2) if mse_weight else scores.new_zeros(())
    return (list_mle_loss(scores, runtimes, temperature) + mse_weight * mse) / (1 + mse_weight)
