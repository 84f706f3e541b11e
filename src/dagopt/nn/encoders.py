"""Encoders and the priority model of paper 000 (section 4.1, 4.2, 5.3, appendix C.2).

``Encoder`` turns ``GraphInputs`` into node embeddings: ``h0 = W x + b`` (section 4.1),
``layers`` blocks of the chosen kind, a final LayerNorm. The kinds are Topoformer and
the ablation baselines of section 5.3 / Table 3:

- ``"topoformer"``: the seven masked head groups of section 4.1;
- ``"topoformer-sparse"``: the four sparse groups of section 4.1 (TR, G-TR and their
  reverses, ``heads_per_group[0, 1, 3, 4]`` heads) attending along edge lists
  (``sparse_groups``), ``O(m)`` per head instead of ``O(n^2)``; the dense groups TC-G,
  its reverse and the incomparable pairs (``heads_per_group[2, 5, 6]``) are left out,
  as they hold up to ``n^2`` pairs by nature, so a node only sees past its neighbours
  through the layers (receptive field ``layers`` hops along ``G``);
- ``"topoformer-dag"``: two groups, the DAG's edges forward and backward
  ("Topoformer with MP on DAG"); ``heads_per_group[0]`` heads attend along ``G``,
  ``heads_per_group[3]`` along ``G`` reversed;
- ``"transformer"``: one unmasked group of ``sum(heads_per_group)`` heads, so that it
  has the attention width of the full Topoformer;
- ``"mlp"``: no message passing, residual MLP blocks only;
- ``"gat-forward"`` / ``"gat-bidirectional"``: PyG ``GATConv`` on the DAG's edges, or
  on the edges and their reverses.

``PriorityModel`` adds the priority head of eq. (7) and the normalisation of eq. (17).
"""

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import GATConv

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.nn.attention import MLPBlock, TopoformerLayer, attention_bias, bias_bytes_per_pair
from dagopt.nn.checkpoint import model_format
from dagopt.nn.features import PE_KINDS, GraphInputs, graph_inputs
from dagopt.nn.masks import (
    DENSE_ALTERNATIVE,
    MASK_BYTES_PER_PAIR,
    NO_NETWORK_ALTERNATIVE,
    SPARSE_GROUPS,
)
from dagopt.resources import check_fits, check_pairs_fit

ATTENTION_KINDS = ("topoformer", "topoformer-sparse", "topoformer-dag", "transformer")
KINDS = (*ATTENTION_KINDS, "mlp", "gat-forward", "gat-bidirectional")


@dataclass(frozen=True)
class EncoderConfig(Config):
    """Encoder hyper-parameters; the defaults are the paper's (appendix C.2, C.5).

    ``heads_per_group``: heads for each of the seven masks of ``dagopt.nn.masks`` (0
    drops that group); ``head_dim``: size of one head; ``pe_dim``: Laplacian encodings
    appended to the ``in_features`` node features; ``pe``: their eigensolver
    (``dagopt.nn.features.PE_KINDS``; model files without the key get ``"laplacian"``,
    the one they were trained with).
    """

    kind: str = "topoformer"
    layers: int = 4
    dim: int = 256
    heads_per_group: tuple[int, ...] = (10,) * 7
    head_dim: int = 64
    pe_dim: int = 20
    in_features: int = 8
    pe: str = "laplacian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads_per_group", tuple(int(h) for h in self.heads_per_group))
        if self.kind not in KINDS:
            raise InputError(f"unknown encoder kind {self.kind!r} (choose from {', '.join(KINDS)})")
        if self.pe not in PE_KINDS:
            raise InputError(f"unknown positional encoding {self.pe!r} (choose from {PE_KINDS})")
        if len(self.heads_per_group) != 7 or min(self.heads_per_group) < 0:
            raise InputError(f"heads_per_group needs 7 counts >= 0, got {self.heads_per_group}")
        if self.kind in ATTENTION_KINDS and sum(self.group_heads) == 0:
            raise InputError(f"encoder {self.kind!r} has no attention head: {self.heads_per_group}")
        sizes = [self.layers, self.dim, self.head_dim, self.in_features, self.pe_dim + 1]
        if min(sizes) < 1:
            raise InputError(
                f"encoder sizes must be positive (pe_dim >= 0): layers={self.layers}, "
                f"dim={self.dim}, head_dim={self.head_dim}, in_features={self.in_features}, "
                f"pe_dim={self.pe_dim}"
            )

    @property
    def group_heads(self) -> tuple[int, ...]:
        """Heads per attention group of the layers of this kind (empty without attention)."""
        h = self.heads_per_group
        return {
            "topoformer": h,
            "topoformer-sparse": tuple(h[k] for k in SPARSE_GROUPS),
            "topoformer-dag": (h[0], h[3]),
            "transformer": (sum(h),),
        }.get(self.kind, ())

    @property
    def weight_count(self) -> int:
        """About the number of weights of a ``PriorityModel`` of this config (within a few
        percent, an MLP encoder's less), known before building it for its memory guard:
        per layer the query, key, value and output projections (``4 dim width``, ``width``
        the heads times ``head_dim``) and three ``dim x dim`` matrices (the MLP block has
        two, a GAT layer three), plus the embedding and the priority head; biases and
        norms are the ``8 dim`` terms."""
        width = sum(self.group_heads) * self.head_dim
        per_layer = 4 * self.dim * width + 3 * self.dim**2 + 8 * self.dim
        embed_and_head = (self.in_features + self.pe_dim + self.dim + 8) * self.dim
        return self.layers * per_layer + embed_and_head

    def check_weights_fit(self) -> None:
        """Raise a one-line ``SolverError`` if the float32 weights of a model of this
        config would not fit in the available memory: before building one, or before a
        training run writes its first file."""
        check_fits(
            4.0 * self.weight_count,
            f"the weights of a {self.kind} encoder of {self.layers} layers of width {self.dim}",
            "choose fewer or narrower layers",
        )

    @property
    def gat_heads(self) -> int:
        """GAT heads: the largest divisor of ``dim`` up to ``max(1, heads_per_group[0])``."""
        return max(h for h in range(1, max(1, self.heads_per_group[0]) + 1) if self.dim % h == 0)


class GATBlock(nn.Module):
    """``h + GAT(LN(h), edges)``, then ``h + MLP(LN(h))``: the GAT baseline of section 5.3.

    ``GATConv(dim, dim // heads, heads)`` concatenates its heads back to ``dim``; it adds
    self loops, so every node keeps its own message.
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gat = GATConv(dim, dim // heads, heads=heads)
        self.block = MLPBlock(dim)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.block(h + self.gat(self.norm(h), edge_index))


class Encoder(nn.Module):
    """Node embeddings ``(n, dim)`` from ``GraphInputs`` (section 4.1, eq. 4-5)."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        c.check_weights_fit()
        self.embed = nn.Linear(c.in_features + c.pe_dim, c.dim)
        if c.kind.startswith("gat"):
            blocks = [GATBlock(c.dim, c.gat_heads) for _ in range(c.layers)]
        elif c.kind == "mlp":
            blocks = [MLPBlock(c.dim) for _ in range(c.layers)]
        else:
            blocks = [TopoformerLayer(c.dim, c.group_heads, c.head_dim) for _ in range(c.layers)]
        self.blocks = nn.ModuleList(blocks)
        self.norm = nn.LayerNorm(c.dim)

    def check_fits(self, num_nodes: int, num_edges: int = 0) -> None:
        """Raise a one-line ``SolverError`` if featurising a graph of ``num_nodes`` nodes
        and ``num_edges`` edges and running this encoder on it would not fit in the
        available memory; called before ``graph_inputs``, so that a graph too large
        fails at once. The dense ``(n, n)`` arrays dominate: the masks ``graph_inputs``
        builds (``MASK_BYTES_PER_PAIR`` while built, seven one-byte masks kept) and, for
        the masked attention kinds, the bias of ``_context``. ``topoformer-sparse`` has
        none: its edge lists (``2 m + 4 n`` pairs of int64), per edge and head a score
        and its softmax (float32, three buffers), and the activations."""
        dtype = self.embed.weight.dtype
        kind = self.config.kind
        if kind == "topoformer-sparse":
            pairs = 2.0 * num_edges + 4.0 * num_nodes
            heads = max(self.config.group_heads)
            activations = 16.0 * num_nodes * (self.config.dim + sum(self.config.group_heads))
            check_fits(
                pairs * (16 + 12 * heads) + activations * dtype.itemsize,
                f"a {kind} forward pass on {num_nodes:,} nodes and {num_edges:,} edges",
                NO_NETWORK_ALTERNATIVE,
            )
            return
        extra = {
            "topoformer": bias_bytes_per_pair(7, dtype),
            "topoformer-dag": 2 + bias_bytes_per_pair(2, dtype),  # + the two merged masks
        }.get(kind, 0)
        check_pairs_fit(
            num_nodes,
            max(MASK_BYTES_PER_PAIR, 7 + extra),
            f"a {kind} forward pass on {num_nodes:,} nodes",
            DENSE_ALTERNATIVE,
        )

    def _context(self, inputs: GraphInputs) -> torch.Tensor | None:
        """What the blocks of this kind read: attention bias, an edge list or nothing."""
        kind, masks, edges = self.config.kind, inputs.masks, inputs.edge_index
        if kind == "topoformer":
            return attention_bias(masks, self.embed.weight.dtype)
        if kind == "topoformer-sparse":
            if inputs.groups is None:
                raise InputError("topoformer-sparse reads sparse inputs: use encoder_inputs")
            heads = self.config.group_heads
            return tuple(g for g, c in zip(inputs.groups, heads, strict=True) if c > 0)
        if kind == "topoformer-dag":
            dag = torch.stack([masks[0] | masks[1], masks[3] | masks[4]])
            return attention_bias(dag, self.embed.weight.dtype)
        if kind == "gat-forward":
            return edges
        if kind == "gat-bidirectional":
            return torch.cat([edges, edges.flip(0)], dim=1)
        return None  # transformer (unmasked) and mlp

    def forward(self, inputs: GraphInputs) -> torch.Tensor:
        h = self.embed(inputs.x.to(self.embed.weight.dtype))
        context = self._context(inputs)
        for block in self.blocks:
            h = block(h, context)
        return self.norm(h)


def encoder_inputs(
    graph: Graph, config: EncoderConfig, *, sign_flip: np.random.Generator | None = None
) -> GraphInputs:
    """``graph_inputs`` for an encoder of ``config``: its ``pe_dim`` and ``pe``, and
    sparse edge lists instead of dense masks for ``topoformer-sparse``."""
    attention = "sparse" if config.kind == "topoformer-sparse" else "dense"
    return graph_inputs(
        graph, pe_dim=config.pe_dim, pe=config.pe, attention=attention, sign_flip=sign_flip
    )


@model_format("dagopt-priority-model", EncoderConfig, extras=("alpha",))
class PriorityModel(nn.Module):
    """Encoder plus the priority head: eq. (7) then the normalisation of eq. (17).

    ``y = MLP(h_L)`` with ``MLP = Linear(d, d), ReLU, Linear(d, 1)`` (appendix C.2), then
    ``y = alpha * (y - mean(y)) / std(y)`` over the nodes of the graph; a graph of one
    node, or with all priorities equal, gets zeros.
    """

    def __init__(self, config: EncoderConfig, alpha: float = 5.0) -> None:
        super().__init__()
        self.config = config
        self.alpha = float(alpha)
        if not math.isfinite(self.alpha):
            raise InputError(f"the priority scale alpha must be finite, got {alpha}")
        self.encoder = Encoder(config)
        self.head = nn.Sequential(
            nn.Linear(config.dim, config.dim), nn.ReLU(), nn.Linear(config.dim, 1)
        )

    def forward(self, inputs: GraphInputs) -> torch.Tensor:
        """Normalised priorities ``(n,)`` (eq. 17)."""
        y = self.head(self.encoder(inputs)).squeeze(-1)
        return normalise_priorities(y, self.alpha)


def normalise_priorities(y: torch.Tensor, alpha: float) -> torch.Tensor:
    """Eq. (17): ``alpha * (y - mean) / std`` (population std); zeros when std is ~0."""
    if y.numel() < 2:
        return torch.zeros_like(y)
    centred = y - y.mean()
    std = centred.square().mean().clamp_min(torch.finfo(y.dtype).tiny).sqrt()
    flat = std <= torch.finfo(y.dtype).eps * (1 + y.abs().max())
    return torch.where(flat, torch.zeros_like(y), alpha * centred / std)
