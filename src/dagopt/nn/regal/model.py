"""REGAL's networks (paper 003, section 2.3, appendix A.3): encoder, policy, baseline."""

import math

import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.utils import scatter

from dagopt.nn.checkpoint import model_format
from dagopt.nn.layers.bidirectional_edge_conv import BidirectionalEdgeConv
from dagopt.nn.layers.mlp import mlp, mlp_weights
from dagopt.nn.regal.config import REGAL_EDGE_FEATURES, RegalConfig
from dagopt.resources import check_fits

#: Per parameterisation, the choice of each categorical the untrained policy favours
#: (``RegalConfig.init_prob_one``): ``beta(1, 1)``, standard BRKGA's uniform mutant, or
#: the broad ``beta(2 m0, 2 (1 - m0))`` around the centre (uniform at ``m0 = 0.5``).
NEUTRAL_CHOICES = {"alpha-beta": (1.0, 1.0), "centred": (2.0, 0.0)}


def policy_weights(config: RegalConfig) -> int:
    """About the number of float32 weights of a ``RegalPolicy`` of ``config`` (its MLPs:
    the encoder's node and edge embeddings and message-passing rounds, and two heads
    per gene), known before building it for its memory guard."""
    c, h, layers = config, config.hidden, config.mlp_layers
    rounds = 1 if c.share_weights else c.rounds
    conv = 2 * mlp_weights(3 * h, h, h, layers) + mlp_weights(2 * h, h, h, layers)
    encoder = (
        mlp_weights(len(c.node_features), h, h, layers)
        + mlp_weights(len(REGAL_EDGE_FEATURES), h, h, layers)
        + rounds * conv
    )
    heads = sum(mlp_weights(h, h, len(values), layers) for values in c.head_choices)
    return encoder + (c.num_devices + 1) * heads


def check_policy_fits(config: RegalConfig) -> None:
    """Raise a one-line ``SolverError`` if the weights of a ``RegalPolicy`` of ``config``
    would not fit in the available memory: before building one, or before a training run
    writes its first file."""
    check_fits(
        4.0 * policy_weights(config),
        f"the weights of a REGAL policy of width {config.hidden} for {config.num_devices} devices",
        "choose a smaller hidden, rounds, mlp_layers or num_devices",
    )


class RegalEncoder(nn.Module):
    """Node embeddings ``h_v = h_v^(T)`` of eq. 1 (003 A.3), shape ``(n, hidden)``.

    ``h_v^(0) = MLP_n(x_v)``, ``h_e = MLP_e(x_e)``, then ``T = rounds``
    ``BidirectionalEdgeConv`` rounds, with separate weights per round unless
    ``config.share_weights``.
    """

    def __init__(self, config: RegalConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.embed_node = mlp(len(c.node_features), c.hidden, c.hidden, c.mlp_layers)
        self.embed_edge = mlp(len(REGAL_EDGE_FEATURES), c.hidden, c.hidden, c.mlp_layers)
        count = 1 if c.share_weights else c.rounds
        self.layers = nn.ModuleList(
            BidirectionalEdgeConv(c.hidden, c.mlp_layers) for _ in range(count)
        )

    def forward(self, inputs: Data) -> torch.Tensor:
        h = self.embed_node(inputs.x)
        h_edge = self.embed_edge(inputs.edge_attr)
        for t in range(self.config.rounds):
            h = self.layers[t % len(self.layers)](h, inputs.edge_index, h_edge)
        return h


@model_format("dagopt-regal-policy", RegalConfig)
class RegalPolicy(nn.Module):
    """The bandit ``B(G)`` of 003 section 2.3: logits of ``2 (d + 1) |V|`` categoricals.

    ``MLP_{a,j}`` and ``MLP_{b,j}`` (gene ``j = 0..d``, shared across nodes, eq. 1)
    map each node's embedding to logits over the gene's first and second categorical
    (``config.head_choices``; ``alpha`` and ``beta`` in the paper). The heads' last
    layers start with zero weights and a bias giving each categorical's
    ``NEUTRAL_CHOICES`` value probability ``config.init_prob_one`` (uniform if that
    value is not a choice), so the untrained policy leans towards broad mutants.
    """

    def __init__(self, config: RegalConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        check_policy_fits(c)
        self.encoder = RegalEncoder(c)
        genes = c.num_devices + 1
        self.first_heads, self.second_heads = (
            nn.ModuleList(mlp(c.hidden, c.hidden, len(values), c.mlp_layers) for _ in range(genes))
            for values in c.head_choices
        )
        neutral = NEUTRAL_CHOICES[c.parameterisation]
        for heads, values, favoured in zip(
            (self.first_heads, self.second_heads), c.head_choices, neutral, strict=True
        ):
            prior = torch.zeros(len(values))
            if favoured in values:
                prior.fill_(math.log((1 - c.init_prob_one) / (len(values) - 1)))
                prior[values.index(favoured)] = math.log(c.init_prob_one)
            for head in heads:
                nn.init.zeros_(head[-1].weight)
                with torch.no_grad():
                    head[-1].bias.copy_(prior)

    def forward(self, inputs: Data) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of the first and second categoricals, ``(n, d + 1, len(values))`` each."""
        h = self.encoder(inputs)
        logits_first = torch.stack([head(h) for head in self.first_heads], dim=1)
        logits_second = torch.stack([head(h) for head in self.second_heads], dim=1)
        return logits_first, logits_second


class RegalBaseline(nn.Module):
    """``b(G) = MLP_b(mean_v MLP_g(h_v))`` with its own encoder (003 section 2.3, A.3).

    The output bias starts at ``initial`` (default -1, the reward of BRKGA with uniform
    mutants, section 2.3), so the first advantages are small.
    """

    def __init__(self, config: RegalConfig, *, initial: float = -1.0) -> None:
        super().__init__()
        c = config
        self.config = c
        self.encoder = RegalEncoder(c)
        self.node_head = mlp(c.hidden, c.hidden, c.hidden, c.mlp_layers)
        self.graph_head = mlp(c.hidden, c.hidden, 1, c.mlp_layers)
        nn.init.constant_(self.graph_head[-1].bias, initial)

    def forward(self, inputs: Data) -> torch.Tensor:
        """A scalar for one graph (``Data``); ``(num_graphs,)`` for a ``Batch``. A graph
        of no nodes pools to zeros."""
        h = self.node_head(self.encoder(inputs))
        single = not isinstance(inputs, Batch)
        batch = h.new_zeros(len(h), dtype=torch.long) if single else inputs.batch
        count = 1 if single else inputs.num_graphs
        values = self.graph_head(scatter(h, batch, 0, count, reduce="mean")).squeeze(-1)
        return values[0] if single else values
