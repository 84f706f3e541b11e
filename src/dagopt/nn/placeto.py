"""Placeto's policy (Addanki et al., NeurIPS 2019), a baseline of paper 004 (section 3.3).

Placeto places a graph node by node as an MDP: the state is the graph with its current
placement; at step ``t`` the policy embeds the graph and picks a device for node
``v_t``, nodes taken in topological order. Its graph embedding (section 3.2 of
Placeto) passes messages along the edges in both directions, then pools, for the node
being placed, the embeddings of its ancestors, its descendants and the nodes parallel
to it (neither); the pools and the node's own embedding give the device softmax.

Here, for a batch of ``B`` placements at once: the input of a node is its features,
its current device (one-hot), whether it was placed already in this pass and whether
it is the node being placed; ``rounds`` message passes
``h <- ReLU(W_s h + W_p mean_{parents} h + W_c mean_{children} h)``; then
``softmax(MLP([h_v, mean_{anc} h, mean_{desc} h, mean_{par} h]))``.
"""

import numpy as np
import torch
from torch import nn

from dagopt.graph import Graph
from dagopt.nn.layers.mlp import mlp


def _row_mean(matrix: np.ndarray) -> torch.Tensor:
    """``matrix`` with each row divided by its sum (rows of zeros stay 0), float32."""
    sums = matrix.sum(axis=1, keepdims=True)
    return torch.from_numpy((matrix / np.maximum(sums, 1)).astype(np.float32))


class PlacetoPolicy(nn.Module):
    """Device logits for one node of a batch of placements (module docstring)."""

    def __init__(
        self, graph: Graph, in_features: int, hidden: int, num_devices: int, rounds: int = 2
    ) -> None:
        super().__init__()
        n = graph.num_nodes
        adjacency = np.zeros((n, n))
        src, dst = graph.edges
        adjacency[dst, src] = 1.0  # row v: v's parents
        reach = graph.closure_matrix.astype(np.float64)  # [u, v]: a path u -> v
        parallel = 1.0 - np.minimum(reach + reach.T + np.eye(n), 1.0)
        self.parents, self.children = _row_mean(adjacency), _row_mean(adjacency.T)
        self.pools = torch.stack([_row_mean(reach.T), _row_mean(reach), _row_mean(parallel)])
        self.num_devices = num_devices
        self.embed = nn.Linear(in_features + num_devices + 2, hidden)
        self.rounds = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(rounds))
        self.place = mlp(4 * hidden, hidden, num_devices, 2)

    def forward(
        self, x: torch.Tensor, devices: torch.Tensor, placed: torch.Tensor, node: int
    ) -> torch.Tensor:
        """Logits ``(B, num_devices)`` for ``node`` given features ``x`` ``(n, F)``,
        the current ``devices`` ``(B, n)`` and the ``placed`` flags ``(n,)``."""
        batch, n = devices.shape
        current = torch.zeros(n)
        current[node] = 1.0
        state = torch.cat([placed.float()[:, None], current[:, None]], dim=1)
        h = torch.cat(
            [
                x.expand(batch, -1, -1),
                nn.functional.one_hot(devices, self.num_devices).float(),
                state.expand(batch, -1, -1),
            ],
            dim=2,
        )
        h = torch.relu(self.embed(h))
        for layer in self.rounds:
            h = torch.relu(layer(torch.cat([h, self.parents @ h, self.children @ h], dim=2)))
        pooled = torch.einsum("kn,bnh->bkh", self.pools[:, node], h).reshape(batch, -1)
        return self.place(torch.cat([h[:, node], pooled], dim=1))
