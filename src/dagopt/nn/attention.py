"""Building blocks of the encoders: topologically masked attention (paper 000, section 4.1).

All blocks are pre-LayerNorm residual blocks (Xiong et al., the paper's reference [31]):
a sub-layer reads ``LayerNorm(h)`` and its output is added to ``h``. Every block has the
same call signature ``block(h, context)`` where ``context`` is whatever the block needs
to know about the graph (attention masks, an edge list, or nothing).

``TopoformerLayer`` attends either densely (an ``(groups, n, n)`` additive bias) or
sparsely along per-group edge lists (``sparse_groups``), with a segment softmax over
each query's keys: the same eq. (4) restricted to the allowed pairs, ``O(E)`` instead
of ``O(n^2)`` per head.
"""

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.utils import softmax as segment_softmax

from dagopt.nn.masks import DENSE_ALTERNATIVE
from dagopt.resources import check_pairs_fit

#: Edges whose keys and values ``TopoformerLayer._along_edges`` gathers at once.
EDGE_CHUNK = 1 << 18


class FeedForward(nn.Sequential):
    """The node-wise MLP of eq. (5), appendix C.2: ``Linear(d, d)``, GELU, ``Linear(d, d)``."""

    def __init__(self, dim: int) -> None:
        super().__init__(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))


class MLPBlock(nn.Module):
    """``h + MLP(LN(h))``: the second half of eq. (5), alone (the "MLP" encoder of 5.3)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = FeedForward(dim)

    def forward(self, h: torch.Tensor, context: object = None) -> torch.Tensor:
        return h + self.mlp(self.norm(h))


def bias_bytes_per_pair(groups: int, dtype: torch.dtype) -> int:
    """Bytes per ordered node pair ``attention_bias`` allocates: per group the bias and
    two boolean masks (allowed, and its negation), and the identity matrix."""
    return groups * (dtype.itemsize + 2) + 1


def attention_bias(masks: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive attention mask ``(groups, n, n)`` from boolean ``masks`` (query by key).

    0 where the query may attend to the key, ``-inf`` elsewhere. The diagonal is always
    allowed: a node without keys in a group (a source in a forward group) then attends
    to itself instead of getting an empty softmax (NaN). The bias is dense: one that
    would not fit in the available memory raises a one-line ``SolverError`` first.
    """
    groups, n = masks.shape[0], masks.shape[-1]
    check_pairs_fit(
        n,
        bias_bytes_per_pair(groups, dtype),
        f"the attention bias of {n:,} nodes",
        DENSE_ALTERNATIVE,
    )
    allowed = masks | torch.eye(n, dtype=torch.bool, device=masks.device)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=masks.device)
    return bias.masked_fill_(~allowed, float("-inf"))


class TopoformerLayer(nn.Module):
    """One Topoformer layer, eq. (4)-(5) with pre-LayerNorm:

        h = h + W_o concat_k MHA_k(LN(h); M_k)
        h = h + MLP(LN(h))

    Group ``k`` has ``heads[k]`` heads of size ``head_dim`` that attend only along mask
    ``M_k`` (a group with 0 heads is dropped). The query/key/value projections of all
    heads are one ``Linear``; ``W_o`` maps all heads back to ``dim``.

    The masks come as the additive ``bias`` of ``attention_bias``, computed once per
    graph and shared by all layers; it lets every query attend to itself in every group.
    The heads of a group share one ``(n, n)`` bias, broadcast to them as a
    ``(1, 1, n, n)`` view, never copied: with 4-d inputs and this broadcast mask torch
    (2.13) runs its fused flash-attention kernel on CPU, about four times faster than
    with a mask expanded to ``(heads, n, n)``, which falls back to the plain math path.

    The context may instead be a tuple of ``(2, E_k)`` edge lists ``[query, key]``, one
    per group (``sparse_groups``, self loops included): each head then attends only
    along its group's edges (``_along_edges``), the same projections and output.
    """

    def __init__(self, dim: int, heads: Sequence[int], head_dim: int) -> None:
        super().__init__()
        self.heads = tuple(int(count) for count in heads)
        self.head_dim = head_dim
        width = sum(self.heads) * head_dim
        self.norm_attention = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * width)
        self.out = nn.Linear(width, dim)
        self.block = MLPBlock(dim)

    def forward(
        self, h: torch.Tensor, bias: torch.Tensor | tuple[torch.Tensor, ...] | None
    ) -> torch.Tensor:
        """``h``: ``(n, dim)``; ``bias``: ``attention_bias(masks)``, ``(groups, n, n)``,
        ``None`` for one unmasked group (a plain transformer layer), or a tuple of edge
        lists, one per group with heads (sparse attention)."""
        n = h.shape[0]
        qkv = self.qkv(self.norm_attention(h)).view(n, 3, -1, self.head_dim)
        if isinstance(bias, tuple):
            attended = self._along_edges(qkv, bias)
            return self.block(h + self.out(attended.reshape(n, -1)))
        q, k, v = qkv.permute(1, 2, 0, 3).unsqueeze(1)  # each (1, heads, n, head_dim)
        if bias is not None and len(set(self.heads)) == 1 and self.heads[0] > 0:
            attended = self._groups_as_batch(q, k, v, bias)
        else:
            attended = self._group_by_group(q, k, v, bias)
        return self.block(h + self.out(attended.transpose(0, 1).reshape(n, -1)))

    def _groups_as_batch(self, q, k, v, bias: torch.Tensor) -> torch.Tensor:
        """Every group has the same number of heads: one attention call with the groups
        as the batch dimension, ``(groups, heads, n, head_dim)``, each group's bias
        broadcast over its heads."""
        groups, count, n = len(self.heads), self.heads[0], q.shape[2]
        q, k, v = (t.reshape(groups, count, n, self.head_dim) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, bias.unsqueeze(1))
        return out.reshape(groups * count, n, self.head_dim)

    def _group_by_group(self, q, k, v, bias: torch.Tensor | None) -> torch.Tensor:
        """One attention call per group (groups with different head counts)."""
        n = q.shape[2]
        outputs, first = [], 0
        for group, count in enumerate(self.heads):
            if count == 0:
                continue
            heads = slice(first, first + count)
            first += count
            mask = None if bias is None else bias[group].expand(1, 1, n, n)
            outputs.append(
                F.scaled_dot_product_attention(q[:, heads], k[:, heads], v[:, heads], mask)
            )
        return torch.cat(outputs, dim=1)[0]

    def _along_edges(self, qkv: torch.Tensor, groups: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Sparse attention ``(n, heads, head_dim)``: group ``k``'s heads attend along the
        edge list ``groups[k]``, softmax over each query's keys (a segment softmax,
        ``torch_geometric.utils.softmax``), values summed with ``index_add_``. Equal to
        the dense path with the bias of the same pairs; ``O(E_k heads head_dim)`` time,
        keys and values gathered ``EDGE_CHUNK`` edges at a time."""
        n, scale = qkv.shape[0], self.head_dim**-0.5
        counts = [count for count in self.heads if count > 0]
        outputs, first = [], 0
        for (query, key), count in zip(groups, counts, strict=True):
            q, k, v = qkv[:, :, first : first + count].unbind(1)  # each (n, count, head_dim)
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
            first += count
            chunks = [slice(a, a + EDGE_CHUNK) for a in range(0, query.numel(), EDGE_CHUNK)]
            scores = torch.cat(
                [(q.index_select(0, query[c]) * k.index_select(0, key[c])).sum(-1) for c in chunks]
            )  # (E, count)
            weights = segment_softmax(scores * scale, query, num_nodes=n).unsqueeze(-1)
            out = q.new_zeros(n, count, self.head_dim)
            for c in chunks:
                out = out.index_add(0, query[c], weights[c] * v.index_select(0, key[c]))
            outputs.append(out)
        return torch.cat(outputs, dim=1)
