"""TGraph, the configuration-ranking network of paper 002 (sections 2.2.5 and 2.3, eq. 2-7).

Node states are ``(b, n, channels)``: ``b`` configurations of one graph are the batch
axis, so cross-configuration attention (eq. 6) is a softmax over axis 0 and PyG's
``SAGEConv`` runs on all configurations at once (its node axis is -2).

- input (2.2.5): ``[normalised node_feat[:134], 4-channel embedding of node_feat[134:]
  (-1 padded layouts), 4-channel embedding of node_config_feat, 16-channel opcode
  embedding]`` -> ``f_in``, a 2-layer MLP {256, 256} with GELU. The first linear layer is
  split into a per-node part (shared by every configuration) and a per-configuration
  part on the configurable nodes (zero elsewhere): the same map as one linear layer on
  the concatenation, without copying the shared part ``b`` times. With
  ``physical_layout`` (beyond the paper) a linear map of each configurable node's
  physical-layout features (``dagopt.nn.tgraph.physical``) joins the per-configuration
  part.
- block (eq. 3-4): ``B(x) = x + GELU(concat(eta, A_cross(eta)))``,
  ``eta = A_self(SAGE(InstanceNorm(x)))``; SAGE outputs half the channels so the
  concatenation keeps the width (without cross-attention it outputs all of them and
  ``B(x) = x + GELU(eta)``).
- SAGE (eq. 2): ``N_L2(f_2(concat(x_i, sum_j f_1(x_j))))`` over the neighbours in both
  edge directions (``aggregation="paper"``), or PyG's default ``SAGEConv`` (``"pyg"``).
- readout (eq. 7): global mean pooling over nodes, then ``f_out``, a linear layer to one
  score per configuration. Tile (2.2.5, late fusion): the pooled graph state joins an
  embedding of ``config_feat`` (linear + GELU), a linear + GELU layer fuses them, and
  with cross-attention on, eq. 6 is applied across the configurations there. With
  ``tile_extents`` (beyond the paper) the embedding also reads each tile size's count
  and tail against the extent it splits (``dagopt.nn.tgraph.tile_extents``).
- readout ``logsumexp`` (layout, beyond the paper): ``f_out`` scores every node and the
  configuration's score is ``log sum_i exp(f_out(h_i))``. A program's runtime is the sum
  of its ops' times and each op's time is a product (elements x cost per element x a
  layout's penalty), so a node's score can be the log of its time, a sum of log terms
  (with ``numeric_features="log"``, of log sizes); mean pooling then a linear layer has
  to build each op's time on a linear scale instead.
"""

import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.nn import SAGEConv

from dagopt.io.tpugraphs import (
    LAYOUT_COLUMNS,
    LAYOUT_CONFIG_FEATURES,
    LAYOUT_MIN,
    NODE_FEATURES,
    TILE_CONFIG_FEATURES,
)
from dagopt.nn.layers.cross_config_attention import CrossConfigAttention
from dagopt.nn.layers.squeeze_excitation import SqueezeExcitation
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.nn.tgraph.features import LAYOUT_VALUES, NUM_OPCODES, GraphTensors
from dagopt.nn.tgraph.physical import PHYSICAL_FEATURES, physical_features
from dagopt.nn.tgraph.tile_extents import TILE_EXTENT_FEATURES

CROSS_TEMPERATURE = 0.5  # eq. 6's T at initialisation (the paper gives none; see docs)
NUMERIC = LAYOUT_COLUMNS.start  # node_feat[:134] is numeric, node_feat[134:] layouts
LAYOUT_WIDTH = NODE_FEATURES - NUMERIC


def undirected(edge_index: torch.Tensor) -> torch.Tensor:
    """Both directions of every edge: eq. 2's neighbours are inputs and outputs."""
    return torch.cat([edge_index, edge_index.flip(0)], dim=1)


def instance_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``N_instance`` of eq. 4: each configuration's channels standardised over its nodes
    (biased variance, eps 1e-5), then an affine map; a one-node graph gives ``bias``."""
    mean = x.mean(dim=-2, keepdim=True)
    var = x.var(dim=-2, keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + 1e-5) * weight + bias


def with_cross(eta: torch.Tensor, cross: CrossConfigAttention | None) -> torch.Tensor:
    """``concat(eta, A_cross(eta))`` (eq. 3), or ``eta`` when cross-attention is off."""
    return eta if cross is None else torch.cat([eta, cross(eta)], dim=-1)


class TGraphBlock(nn.Module):
    """One graph convolutional block, eq. 3-4."""

    def __init__(self, config: TGraphConfig) -> None:
        super().__init__()
        width = config.hidden
        out = width // 2 if config.cross_attention else width
        self.norm_weight = nn.Parameter(torch.ones(width))
        self.norm_bias = nn.Parameter(torch.zeros(width))
        if config.aggregation == "paper":
            self.sage = SAGEConv(width, out, aggr="sum", project=True, normalize=True)
        else:
            self.sage = SAGEConv(width, out)
        self.attention = SqueezeExcitation(out, config.se_reduction)
        self.cross = CrossConfigAttention(CROSS_TEMPERATURE) if config.cross_attention else None

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        eta = self.sage(instance_norm(x, self.norm_weight, self.norm_bias), edge_index)
        eta = self.attention(eta)
        return x + F.gelu(with_cross(eta, self.cross))


class TGraphNet(nn.Module):
    """Eq. 7: ``f_out(Pool(B_2(B_1(f_in(X)))))``, one score per configuration."""

    def __init__(self, config: TGraphConfig) -> None:
        super().__init__()
        self.config = config
        width, layout = config.hidden, config.layout_embedding
        self.opcode = nn.Embedding(NUM_OPCODES, config.opcode_embedding)
        self.layout = nn.Embedding(LAYOUT_VALUES, layout)
        self.node_in = nn.Linear(NUMERIC + LAYOUT_WIDTH * layout + config.opcode_embedding, width)
        self.config_in = (
            nn.Linear(LAYOUT_CONFIG_FEATURES * layout, width, bias=False)
            if config.kind == "layout"
            else None
        )
        self.physical_in = (
            nn.Linear(PHYSICAL_FEATURES, width, bias=False) if config.physical_layout else None
        )
        self.hidden_in = nn.Linear(width, width)
        self.blocks = nn.ModuleList(TGraphBlock(config) for _ in range(config.blocks))
        if config.kind == "tile":
            fused = width // 2 if config.cross_attention else width
            extents = TILE_EXTENT_FEATURES if config.tile_extents else 0
            self.tile_in = nn.Linear(TILE_CONFIG_FEATURES + extents, width)
            self.fuse = nn.Linear(2 * width, fused)
            self.tile_cross = (
                CrossConfigAttention(CROSS_TEMPERATURE) if config.cross_attention else None
            )
        self.out = nn.Linear(width, 1)

    def _node_input(self, graph: GraphTensors, node_feat: torch.Tensor) -> torch.Tensor:
        layouts = (node_feat[:, NUMERIC:].long() - LAYOUT_MIN).clamp(0, LAYOUT_VALUES - 1)
        parts = [node_feat[:, :NUMERIC], self.layout(layouts).flatten(1), self.opcode(graph.opcode)]
        return self.node_in(torch.cat(parts, dim=1))

    def forward(
        self, graph: GraphTensors, node_feat: torch.Tensor, configs: torch.Tensor
    ) -> torch.Tensor:
        """Scores ``(b,)`` of ``configs`` (layout: ``(b, nc, 18)`` indices; tile:
        ``(b, 24)`` normalised sizes); ``node_feat`` has its numeric columns normalised."""
        h = self._node_input(graph, node_feat).unsqueeze(0)  # (1, n, width)
        if self.config_in is not None:
            per_config = self.config_in(self.layout(configs).flatten(2))  # (b, nc, width)
            if self.physical_in is not None:
                per_config = per_config + self.physical_in(physical_features(graph, configs))
            h = h.expand(configs.shape[0], -1, -1).index_add(1, graph.config_ids, per_config)
        h = self.hidden_in(F.gelu(h))
        edges = undirected(graph.edge_index)
        for block in self.blocks:
            h = block(h, edges)
        if self.config.readout == "logsumexp":
            return torch.logsumexp(self.out(h).squeeze(-1), dim=1)
        pooled = h.mean(dim=1)  # (b or 1, width)
        if self.config_in is None:
            tiles = F.gelu(self.tile_in(configs))
            joined = torch.cat([pooled.expand(tiles.shape[0], -1), tiles], dim=1)
            pooled = with_cross(F.gelu(self.fuse(joined)), self.tile_cross)
        return self.out(pooled).squeeze(-1)
