"""The TpuGraphs dataset paper's GNN baselines in PyG (paper 002's "TpuGraphs" column).

After ``tpu_graphs/baselines/{layout,tiles}/models.py`` of
google-research-datasets/tpu_graphs (re-written, not translated):

- layout, ``ResModel``: per node ``[node_feat, opcode embedding (32)]`` and the node's
  configuration (its 18 layout values, 0 on nodes that are not configurable) ->
  2-layer MLP -> ``blocks`` residual GCN layers ``x += act(MLP(A_hat [config, x]))``
  with ``A_hat`` the symmetric-normalised ``A + A^T + I`` (PyG ``GCNConv`` applies it
  with the MLP's first linear layer) -> readout ``MLP([mean_nodes(x),
  l2(sum_nodes(x)), l2(sum_configurable(x))])``, leaky ReLU throughout.
- tile, ``LateJoinSAGE``: ``blocks`` GraphSAGE layers ``l2(act(W [sum_nbrs(x), x]))``
  (PyG ``SAGEConv`` with sum aggregation), sum pooling, then the configuration's
  features joined late and an MLP {h, h, 1}.

Differences: one graph per batch, configurations as the batch axis; the layout
configuration features enter as raw values -1..5 (the original scales them by 100
after its own normalisation); no L2 activity regularisers (AdamW's weight decay instead).
"""

import itertools

import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.nn import GCNConv, SAGEConv

from dagopt.io.tpugraphs import (
    LAYOUT_CONFIG_FEATURES,
    LAYOUT_MIN,
    NODE_FEATURES,
    TILE_CONFIG_FEATURES,
)
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.nn.tgraph.features import NUM_OPCODES, GraphTensors
from dagopt.nn.tgraph.model import undirected


class TpuGraphsBaseline(nn.Module):
    """``ResModel`` (layout) or ``LateJoinSAGE`` (tile); scores ``(b,)``."""

    def __init__(self, config: TGraphConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.opcode = nn.Embedding(NUM_OPCODES, config.opcode_embedding)
        node_in = NODE_FEATURES + config.opcode_embedding
        if config.kind == "layout":
            self.pre = nn.Sequential(
                nn.Linear(node_in + LAYOUT_CONFIG_FEATURES, h), nn.LeakyReLU(), nn.Linear(h, h)
            )
            self.convs = nn.ModuleList(
                GCNConv(h + LAYOUT_CONFIG_FEATURES, h) for _ in range(config.blocks)
            )
            self.lins = nn.ModuleList(nn.Linear(h, h) for _ in range(config.blocks))
            self.post = nn.Sequential(
                nn.Linear(3 * h, h), nn.LeakyReLU(), nn.Linear(h, 1, bias=False)
            )
        else:
            dims = [node_in] + [h] * config.blocks
            self.convs = nn.ModuleList(
                SAGEConv(a, b, aggr="sum") for a, b in itertools.pairwise(dims)
            )
            self.post = nn.Sequential(
                nn.Linear(h + TILE_CONFIG_FEATURES, h),
                nn.LeakyReLU(),
                nn.Linear(h, h),
                nn.LeakyReLU(),
                nn.Linear(h, 1),
            )

    def forward(
        self, graph: GraphTensors, node_feat: torch.Tensor, configs: torch.Tensor
    ) -> torch.Tensor:
        x = torch.cat([node_feat, self.opcode(graph.opcode)], dim=1)
        edges = undirected(graph.edge_index)
        if self.config.kind == "tile":
            for conv in self.convs:
                x = F.normalize(F.leaky_relu(conv(x, edges)), dim=-1)
            pooled = x.sum(dim=0, keepdim=True).expand(configs.shape[0], -1)
            return self.post(torch.cat([pooled, configs], dim=1)).squeeze(-1)
        b, n = configs.shape[0], graph.num_nodes
        values = (configs + LAYOUT_MIN).float()  # embedding indices back to -1..5
        config = x.new_zeros(b, n, LAYOUT_CONFIG_FEATURES).index_copy(1, graph.config_ids, values)
        x = self.pre(torch.cat([x.unsqueeze(0).expand(b, -1, -1), config], dim=-1))
        x = F.leaky_relu(x)
        for conv, lin in zip(self.convs, self.lins, strict=True):
            y = lin(F.leaky_relu(conv(torch.cat([config, x], dim=-1), edges)))
            x = x + F.leaky_relu(y)
        pooled = torch.cat(
            [
                x.mean(dim=1),
                F.normalize(x.sum(dim=1), dim=-1),
                F.normalize(x[:, graph.config_ids].sum(dim=1), dim=-1),
            ],
            dim=-1,
        )
        return self.post(pooled).squeeze(-1)
