"""REGAL's message-passing round (paper 003, appendix A.3, eq. 1)."""

import torch
from torch import nn
from torch_geometric.nn import MessagePassing

from dagopt.nn.layers.mlp import mlp


class BidirectionalEdgeConv(MessagePassing):
    """One round ``t`` of eq. 1 (003 A.3), messages in both edge directions::

        m_e  = MLP_msg ([h_{e_s}, h_{e_t}, h_e])    summed at the target e_t
        m'_e = MLP'_msg([h_{e_s}, h_{e_t}, h_e])    summed at the source e_s
        h_v <- LayerNorm(h_v + MLP_node([h_v, sum_{e_t = v} m_e + sum_{e_s = v} m'_e]))

    The residual connection and LayerNorm around eq. 1's ``MLP_node`` keep embeddings
    at one scale over the rounds. Both sums are one ``propagate`` over the edges and
    their reverses (``aggr="add"``).
    """

    def __init__(self, hidden: int, mlp_layers: int) -> None:
        super().__init__(aggr="add")
        self.forward_message = mlp(3 * hidden, hidden, hidden, mlp_layers)
        self.backward_message = mlp(3 * hidden, hidden, hidden, mlp_layers)
        self.update_node = mlp(2 * hidden, hidden, hidden, mlp_layers)
        self.norm = nn.LayerNorm(hidden)

    def forward(
        self, h: torch.Tensor, edge_index: torch.Tensor, h_edge: torch.Tensor
    ) -> torch.Tensor:
        both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        summed = self.propagate(both, x=h, h_edge=h_edge)
        return self.norm(h + self.update_node(torch.cat([h, summed], dim=-1)))

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, h_edge: torch.Tensor) -> torch.Tensor:
        # Columns 0..E-1 are the edges (j = e_s, i = e_t), E..2E-1 their reverses
        # (j = e_t, i = e_s): both MLPs read [h_{e_s}, h_{e_t}, h_e].
        e = h_edge.shape[0]
        forward = self.forward_message(torch.cat([x_j[:e], x_i[:e], h_edge], dim=-1))
        backward = self.backward_message(torch.cat([x_i[e:], x_j[e:], h_edge], dim=-1))
        return torch.cat([forward, backward])
