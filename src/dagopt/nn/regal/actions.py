"""REGAL's actions (paper 003, section 2.3): from the policy's logits to mutant distributions.

A gene's two categoricals pick one of ``beta_grid``'s ``(alpha, beta)`` pairs.
``sample_actions``, ``action_log_prob``, ``action_entropy`` and ``action_distributions``
turn logits into actions, their log-probability and the ``beta(alpha, beta)``
parameters BRKGA samples mutants from; ``key_log_likelihood`` reads the categoricals as
one mixture density over keys, for the imitation warm start of
``dagopt.train.regal.imitation``.
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import scatter

from dagopt.nn.regal.config import ORDER_PRIOR_FEATURE, RegalConfig

#: ``"centred"`` means are clipped to ``[MEAN_CLIP, 1 - MEAN_CLIP]`` so that both beta
#: parameters stay > 0.
MEAN_CLIP = 0.01


@dataclass(frozen=True)
class RegalAction:
    """Sampled choice indices, long ``(n, d + 1)`` each: gene ``j`` of op ``v`` takes
    the pair ``(first_index[v, j], second_index[v, j])`` of ``beta_grid``."""

    first_index: torch.Tensor
    second_index: torch.Tensor


def gene_centres(config: RegalConfig, inputs: Data) -> torch.Tensor:
    """float64 ``(n, d + 1)``: each gene's centre for ``"centred"``, 0.5 except the
    priority gene of a policy with an ``order_prior``, which is centred on the op's
    prior key (the ``ORDER_PRIOR_FEATURE`` column of ``inputs.x``)."""
    centres = torch.full((inputs.num_nodes, config.num_devices + 1), 0.5, dtype=torch.float64)
    if config.order_prior is not None:
        column = config.node_features.index(ORDER_PRIOR_FEATURE)
        centres[:, -1] = inputs.x[:, column].double().cpu()
    return centres


def beta_grid(config: RegalConfig, inputs: Data) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alpha, beta)`` of every pair of choices of every gene, float64
    ``(n, d + 1, len(first values), len(second values))`` each (module docstring)."""
    first, second = (torch.tensor(v, dtype=torch.float64) for v in config.head_choices)
    shape = (inputs.num_nodes, config.num_devices + 1, first.numel(), second.numel())
    if config.parameterisation == "alpha-beta":
        return first[:, None].expand(shape), second[None, :].expand(shape)
    mean = (gene_centres(config, inputs)[..., None, None] + second).clamp(MEAN_CLIP, 1 - MEAN_CLIP)
    concentration = first[:, None]
    return (concentration * mean).expand(shape), (concentration * (1 - mean)).expand(shape)


def _sample(logits: torch.Tensor, generator: torch.Generator | None, greedy: bool):
    if greedy:
        return logits.argmax(-1)
    probs = torch.softmax(logits.detach().reshape(-1, logits.shape[-1]), dim=-1)
    if probs.shape[0] == 0:
        return logits.new_zeros(logits.shape[:-1], dtype=torch.long)
    picks = torch.multinomial(probs, 1, generator=generator)
    return picks.reshape(logits.shape[:-1])


def sample_actions(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> RegalAction:
    """Draw every categorical of section 2.3 (or take its mode with ``greedy``)."""
    with torch.no_grad():
        return RegalAction(
            first_index=_sample(logits_first, generator, greedy),
            second_index=_sample(logits_second, generator, greedy),
        )


def action_log_prob(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    action: RegalAction,
    *,
    ptr: torch.Tensor | None = None,
) -> torch.Tensor:
    """``log p(D | G)``: the sum of the ``k = 2 (d + 1) n`` categorical log-probabilities.

    A scalar; with a ``Batch``'s ``ptr``, one sum per graph ``(G,)``.
    """
    per_node = 0
    for logits, index in ((logits_first, action.first_index), (logits_second, action.second_index)):
        chosen = torch.log_softmax(logits, -1).gather(-1, index.unsqueeze(-1)).squeeze(-1)
        per_node = per_node + chosen.sum(-1)
    if ptr is None:
        return per_node.sum()
    batch = torch.repeat_interleave(torch.arange(ptr.numel() - 1, device=ptr.device), ptr.diff())
    return scatter(per_node, batch, 0, ptr.numel() - 1, reduce="sum")


def action_entropy(logits_first: torch.Tensor, logits_second: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats) of the ``2 (d + 1) n`` categoricals, for an entropy bonus."""
    entropies = []
    for logits in (logits_first, logits_second):
        log_p = torch.log_softmax(logits, -1)
        entropies.append(-(log_p.exp() * log_p).sum(-1).flatten())
    return torch.cat(entropies).mean()


def action_distributions(
    action: RegalAction, grid: tuple[torch.Tensor, torch.Tensor]
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(alpha, beta)`` an action picks from ``beta_grid``'s ``grid``, float64
    ``(n, d + 1)`` arrays for BRKGA."""
    first, second = action.first_index.cpu(), action.second_index.cpu()
    nodes = torch.arange(first.shape[0])[:, None]
    genes = torch.arange(first.shape[1])[None, :]
    alpha, beta = (values[nodes, genes, first, second].numpy() for values in grid)
    return alpha, beta


def key_log_likelihood(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    keys: torch.Tensor | np.ndarray,
    grid: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """Mean over ``keys`` ``(m, n, g)`` of ``log p(k)``, differentiable in the logits
    (``(n, g, ...)``, the same genes as ``grid``'s ``beta_grid`` slices).

    ``p(k) = sum_{i, j} pi_1(i) pi_2(j) beta(k; alpha_ij, beta_ij)`` marginalises the
    two categoricals of section 2.3 analytically; keys are clipped to
    ``[1e-6, 1 - 1e-6]`` so the density stays finite.
    """
    alpha, beta = (values.to(logits_first.device) for values in grid)
    log_norm = torch.lgamma(alpha) + torch.lgamma(beta) - torch.lgamma(alpha + beta)
    k = torch.as_tensor(keys, dtype=torch.float64, device=alpha.device).clamp(1e-6, 1 - 1e-6)
    log_k, log_1mk = k.log()[..., None, None], torch.log1p(-k)[..., None, None]
    log_density = (alpha - 1) * log_k + (beta - 1) * log_1mk - log_norm
    log_p1 = torch.log_softmax(logits_first.double(), -1)[..., :, None]
    log_p2 = torch.log_softmax(logits_second.double(), -1)[..., None, :]
    return torch.logsumexp(log_density + log_p1 + log_p2, dim=(-2, -1)).mean()


def split_action(action: RegalAction, ptr: torch.Tensor) -> list[RegalAction]:
    """A batch's action cut into one per graph (``ptr`` of its ``Batch``)."""
    sizes = ptr.diff().tolist()
    return [
        RegalAction(first, second)
        for first, second in zip(
            action.first_index.split(sizes), action.second_index.split(sizes), strict=True
        )
    ]
