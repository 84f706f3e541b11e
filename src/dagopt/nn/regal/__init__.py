"""REGAL's contextual bandit (paper 003, section 2.3 and appendix A.3, eq. 1).

A GNN reads a computation graph with op and tensor attributes (section 2.1) and gives,
for every op ``v`` and chromosome gene ``j`` (``0..d-1`` device affinities, ``d`` the
scheduling priority, as in ``dagopt.place.decode``), two categorical distributions that
together pick the gene's ``beta(alpha, beta)`` mutant distribution. That is
``k = 2 (d + 1) |V|`` actions per graph (section 2.3). How a pair of choices becomes
``(alpha, beta)`` is the config's ``parameterisation``:

- ``"alpha-beta"`` (the paper): the first categorical picks ``alpha`` from ``choices``,
  the second ``beta``;
- ``"centred"`` (beyond the paper): the first picks a concentration ``c`` from
  ``choices``, the second a shift ``s`` from ``shifts`` of the mean away from the gene's
  centre ``m0`` (0.5, or for the priority gene the ``order_prior`` key of the op);
  the gene gets ``beta(c m, c (1 - m))`` with ``m = clip(m0 + s)``.

A separate GNN gives the REINFORCE baseline ``b(G)``. One job per module:

- ``config``: ``RegalConfig`` and the feature and choice constants;
- ``features``: ``regal_inputs`` (a graph as PyG ``Data``), ``batch_inputs`` (``Batch``);
- ``model``: ``RegalEncoder`` (eq. 1's message passing,
  ``dagopt.nn.layers.bidirectional_edge_conv``), ``RegalPolicy`` (the ``2 (d + 1)``
  logit heads; ``check_policy_fits``, its memory guard), ``RegalBaseline`` (the
  mean-pooled value head);
- ``actions``: logits to actions, log-probabilities, entropies and mutant distributions.

Modules and featurisation only: the search and the training loop live elsewhere.
"""

from dagopt.nn.regal.actions import (
    MEAN_CLIP,
    RegalAction,
    action_distributions,
    action_entropy,
    action_log_prob,
    beta_grid,
    gene_centres,
    key_log_likelihood,
    sample_actions,
    split_action,
)
from dagopt.nn.regal.config import (
    BETA_CHOICES,
    CENTRE_SHIFTS,
    ORDER_PRIOR_FEATURE,
    PARAMETERISATIONS,
    REGAL_EDGE_FEATURES,
    REGAL_NODE_FEATURES,
    RegalConfig,
)
from dagopt.nn.regal.features import batch_inputs, regal_inputs
from dagopt.nn.regal.model import (
    NEUTRAL_CHOICES,
    RegalBaseline,
    RegalEncoder,
    RegalPolicy,
    check_policy_fits,
)

__all__ = [
    "BETA_CHOICES",
    "CENTRE_SHIFTS",
    "MEAN_CLIP",
    "NEUTRAL_CHOICES",
    "ORDER_PRIOR_FEATURE",
    "PARAMETERISATIONS",
    "REGAL_EDGE_FEATURES",
    "REGAL_NODE_FEATURES",
    "RegalAction",
    "RegalBaseline",
    "RegalConfig",
    "RegalEncoder",
    "RegalPolicy",
    "action_distributions",
    "action_entropy",
    "action_log_prob",
    "batch_inputs",
    "beta_grid",
    "check_policy_fits",
    "gene_centres",
    "key_log_likelihood",
    "regal_inputs",
    "sample_actions",
    "split_action",
]
