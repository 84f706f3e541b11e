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

The neighbour means run over the edge list and the pools read one row and one column
of the closure per step, ``O((n + m) h)`` work per step and ``n^2`` bytes in all (the
closure's booleans): five dense ``(n, n)`` float32 matrices took 5.6 GB at 16,711 groups,
and ``O(n^2 h)`` work per step.
"""

import numpy as np
import torch
from torch import nn

from dagopt.graph import Graph
from dagopt.nn.layers.mlp import mlp


class NeighbourMean(nn.Module):
    """``h -> mean_{u -> v} h_u`` for every ``v`` over the edges ``src -> dst`` given
    (each edge once), 0 for a node without any, on a batch ``(B, n, h)``."""

    def __init__(self, num_nodes: int, src: np.ndarray, dst: np.ndarray) -> None:
        super().__init__()
        self.src = torch.from_numpy(np.asarray(src, dtype=np.int64))
        self.dst = torch.from_numpy(np.asarray(dst, dtype=np.int64))
        counts = np.bincount(dst, minlength=num_nodes)
        self.scale = torch.from_numpy((1.0 / np.maximum(counts, 1)).astype(np.float32))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        total = torch.zeros_like(h).index_add_(1, self.dst, h[:, self.src])
        return total * self.scale[:, None]


def relation_pools(reach: np.ndarray, node: int) -> torch.Tensor:
    """``(3, n)`` float32 weights averaging over ``node``'s ancestors, descendants and
    parallel nodes (neither, nor ``node``) under the closure ``reach`` (``[u, v]``: a
    path ``u -> v``); a row with no such node is 0."""
    ancestors, descendants = reach[:, node], reach[node]
    parallel = ~(ancestors | descendants)
    parallel[node] = False
    members = np.stack([ancestors, descendants, parallel]).astype(np.float32)
    return torch.from_numpy(members / np.maximum(members.sum(axis=1, keepdims=True), 1))


class PlacetoPolicy(nn.Module):
    """Device logits for one node of a batch of placements (module docstring)."""

    def __init__(
        self, graph: Graph, in_features: int, hidden: int, num_devices: int, rounds: int = 2
    ) -> None:
        super().__init__()
        n = graph.num_nodes
        src, dst = np.unique(np.stack(graph.edges), axis=1)
        self.parent_mean = NeighbourMean(n, src, dst)  # node v: the mean of its parents
        self.child_mean = NeighbourMean(n, dst, src)
        self.reach = graph.closure_matrix
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
            h = torch.relu(layer(torch.cat([h, self.parent_mean(h), self.child_mean(h)], dim=2)))
        pools = relation_pools(self.reach, node)
        pooled = torch.einsum("kn,bnh->bkh", pools, h).reshape(batch, -1)
        return self.place(torch.cat([h[:, node], pooled], dim=1))
