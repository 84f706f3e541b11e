"""REINFORCE with a greedy-rollout baseline for Topoformer ordering (paper 000, 4.3, C.4).

``grad J = E[(C(sigma) - b(G)) grad log p(sigma | G)]`` (eq. 9) with ``b(G)`` the peak
of the greedy order of a frozen baseline policy (eq. 10). ``log p`` sums eq. (8)
over the steps: the run node's priority minus the log-sum-exp over the ready set.
"""

import numpy as np
import torch

from dagopt.graph import Graph
from dagopt.nn.encoders import PriorityModel
from dagopt.nn.features import GraphInputs, graph_inputs
from dagopt.objectives import peak_memory
from dagopt.schedule.priority import greedy_order, ready_masks, sample_orders


def order_log_prob(graph: Graph, priorities: torch.Tensor, order: np.ndarray) -> torch.Tensor:
    """Differentiable ``log p(order | G)`` under eq. (8)."""
    mask = torch.from_numpy(ready_masks(graph, order))
    masked = priorities.unsqueeze(0).masked_fill(~mask, float("-inf"))
    run = torch.from_numpy(np.asarray(order, dtype=np.int64))
    return (priorities[run] - torch.logsumexp(masked, dim=1)).sum()


@torch.no_grad()
def greedy_cost(model: PriorityModel, graph: Graph, inputs: GraphInputs | None = None) -> float:
    """Peak memory of the greedy order of ``model`` on ``graph`` (eq. 10)."""
    y = model(inputs if inputs is not None else graph_inputs(graph, pe_dim=model.config.pe_dim))
    return peak_memory(graph, greedy_order(graph, y.double().numpy()))


def reinforce_loss(
    policy: PriorityModel,
    baseline: PriorityModel,
    graphs: list[Graph],
    rng: np.random.Generator,
) -> tuple[torch.Tensor, float, float]:
    """Surrogate loss of one batch: ``mean((C - b) * log p)``, one sampled order per graph.

    The baseline sees the same inputs as the policy (same positional-encoding sign
    flips), so the advantage compares the two policies on one input. Returns the loss
    and the batch's mean sampled cost and mean baseline cost.
    """
    terms, costs, baselines = [], [], []
    for graph in graphs:
        inputs = graph_inputs(graph, pe_dim=policy.config.pe_dim, sign_flip=rng)
        y = policy(inputs)
        orders, _ = sample_orders(graph, y.detach().double().numpy(), 1, rng)
        cost = peak_memory(graph, orders[0])
        base = greedy_cost(baseline, graph, inputs)
        terms.append((cost - base) * order_log_prob(graph, y, orders[0]))
        costs.append(cost)
        baselines.append(base)
    return torch.stack(terms).mean(), float(np.mean(costs)), float(np.mean(baselines))
