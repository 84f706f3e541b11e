"""HSDAG's policy (paper 004, sections 2.4-2.5, eq. 6-11): embed, parse, pool, place.

- ``Z = ReLU(GCN(X^(0), A))`` (eq. 6, PyG's ``GCNConv`` on the edges taken both ways,
  with self-loops and symmetric normalisation);
- ``S_e = sigmoid(MLP(z_u * z_v))`` on every existing edge (eq. 7);
- graph parsing (eq. 9-10, Graph Parsing Networks, ref. [26]): every node keeps its
  highest-scoring incident edge; the connected components of the kept edges are the
  groups, ``X`` the ``(|V|, |V'|)`` assignment of nodes to groups;
- pooling: a group's embedding is the mean of its members' embeddings, each weighted by
  its kept edge's score (1 for a node without edges), so that the scores get gradients
  as in GPN; the pooled adjacency is ``A' = X^T A X`` (eq. 11);
- an MLP gives each group a softmax over the devices (section 2.5); an op gets its
  group's device.

``HsdagConfig.parsing_levels`` is 1 by default (the equations: one parsing of ``G``).
``None`` repeats parsing on the pooled graph until the group count stops changing, as
the authors' released code does; on a connected graph that ends in a single group
(every op on one device), which ``docs/hsdag.md`` shows.
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from torch import nn
from torch_geometric.nn import GCNConv
from torch_geometric.utils import scatter

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.nn.layers.mlp import mlp


@dataclass(frozen=True)
class HsdagConfig(Config):
    """``in_features``: width of ``X^(0)``; ``hidden``: ``d'`` of eq. 6 and the MLPs;
    ``num_devices``: the softmax's width; ``parsing_levels``: parsings of the graph
    (``None``: until the group count stops changing)."""

    in_features: int
    hidden: int = 64
    num_devices: int = 2
    parsing_levels: int | None = 1

    def __post_init__(self) -> None:
        if min(self.in_features, self.hidden, self.num_devices) < 1:
            raise InputError(
                f"HSDAG sizes must be >= 1: in_features={self.in_features}, "
                f"hidden={self.hidden}, num_devices={self.num_devices}"
            )
        if self.parsing_levels is not None and self.parsing_levels < 1:
            raise InputError(f"parsing_levels must be >= 1 or null, got {self.parsing_levels}")


@dataclass(frozen=True)
class Parsing:
    """One policy pass: ``group[v]`` of every op, the groups' pooled embeddings
    ``(groups, hidden)``, their device logits ``(groups, num_devices)``, the edge scores
    of eq. 7 (of the last parsing) and the graph's edges (``adjacency`` gives eq. 11)."""

    group: np.ndarray
    pooled: torch.Tensor
    logits: torch.Tensor
    edge_scores: torch.Tensor
    edge_index: torch.Tensor

    @property
    def num_groups(self) -> int:
        return int(self.logits.shape[0])

    @property
    def adjacency(self) -> torch.Tensor:
        """``A' = X^T A X`` (eq. 11), ``(groups, groups)``: edges between and inside groups."""
        group = torch.from_numpy(self.group)
        pooled = torch.zeros(self.num_groups, self.num_groups)
        ends = group[self.edge_index]
        return pooled.index_put_((ends[0], ends[1]), torch.ones(ends.shape[1]), accumulate=True)

    def state(self) -> torch.Tensor:
        """The next step's ``memory`` (section 2.5, ``Z_v = Z_v + Z_v'``): every op's
        group embedding of this step, without gradient. The next step adds it to the
        op's fresh GCN embedding; adding it to the previous sum instead would feed each
        step's groups back into the next (``Z'`` averages ``Z``) and grow without bound."""
        return self.pooled.detach()[torch.from_numpy(self.group)]


def parse_groups(num_nodes: int, edge_index: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Eq. 9-10: every node keeps its highest-scoring incident edge (either direction;
    ties to the first edge); the kept edges' connected components, numbered by their
    lowest node, are the groups."""
    src, dst = edge_index
    if src.size == 0:
        return np.arange(num_nodes)
    ends = np.concatenate([src, dst])
    order = np.lexsort((np.tile(np.arange(src.size), 2), -np.tile(scores, 2), ends))
    first = np.ones(order.size, dtype=bool)
    first[1:] = ends[order][1:] != ends[order][:-1]
    kept = order[first] % src.size
    graph = coo_matrix((np.ones(kept.size), (src[kept], dst[kept])), (num_nodes, num_nodes))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


class HsdagPolicy(nn.Module):
    """The placement policy of paper 004 (module docstring)."""

    def __init__(self, config: HsdagConfig) -> None:
        super().__init__()
        self.config = config
        self.gcn = GCNConv(config.in_features, config.hidden)
        self.edge_score = mlp(config.hidden, config.hidden, 1, 2)
        self.place = mlp(config.hidden, config.hidden, config.num_devices, 2)

    def embed(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Eq. 6: ``Z = ReLU(GCN(X^(0), A))`` on ``x`` ``(n, in_features)`` and
        ``edge_index`` ``(2, E)`` taken both ways. It does not change between the steps
        of an episode, so a placer computes it once per episode."""
        both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        return torch.relu(self.gcn(x, both))

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, memory: torch.Tensor | None = None
    ) -> Parsing:
        """``parse(embed(x, edge_index), edge_index, memory)``."""
        return self.parse(self.embed(x, edge_index), edge_index, memory)

    def parse(
        self, z: torch.Tensor, edge_index: torch.Tensor, memory: torch.Tensor | None = None
    ) -> Parsing:
        """Parse the graph of embeddings ``z`` ``(n, hidden)`` and score devices per
        group (eq. 7-11). ``memory`` ``(n, hidden)`` is added to ``z``: the state update
        ``Z_v = Z_v + Z_v'`` of section 2.5, which carries the previous steps' group
        embeddings (``Parsing.state``)."""
        if memory is not None:
            z = z + memory
        group = np.arange(z.shape[0])
        levels = self.config.parsing_levels
        level, edges = 0, edge_index
        scores = torch.zeros(0)
        while levels is None or level < levels:
            scores = torch.sigmoid(self.edge_score(z[edges[0]] * z[edges[1]])).squeeze(-1)
            labels = parse_groups(z.shape[0], edges.numpy(), scores.detach().numpy())
            ends = torch.cat([edges[0], edges[1]])
            best = scatter(scores.repeat(2), ends, 0, z.shape[0], reduce="max")
            touched = torch.zeros(z.shape[0], dtype=torch.bool)
            touched[ends] = True
            weight = torch.where(touched, best, torch.ones_like(best))
            count = int(labels.max(initial=-1)) + 1
            assign = torch.from_numpy(labels)
            size = torch.bincount(assign, minlength=count).clamp_min(1)[:, None]
            z = torch.zeros(count, z.shape[1]).index_add(0, assign, z * weight[:, None]) / size
            group = labels[group]
            merged = assign[edges]
            edges = torch.unique(merged[:, merged[0] != merged[1]], dim=1)
            level += 1
            if count == len(weight) or edges.shape[1] == 0:
                break
        return Parsing(
            group=group,
            pooled=z,
            logits=self.place(z),
            edge_scores=scores,
            edge_index=edge_index,
        )
