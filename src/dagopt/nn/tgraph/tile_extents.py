"""How a tiling covers its kernel's extents (tile models, an extension of paper 002, 2.2.5).

Paper 002 standardises ``config_feat`` on its own and fuses it with the pooled graph
late, so a tile model has to learn from the data how a tile size relates to the extent
it splits. On a CPU that relation is most of a tiling's cost: a tile that does not
divide its extent leaves a partial last tile (a loop with a bounds check the compiler
cannot vectorise), and the number of tiles sets the loop overhead. An MLP on
``log(tile)`` and a pooled graph state cannot compute ``ceil(extent / tile)``. With
``TGraphConfig.tile_extents`` the model also gets, for each of the twelve tile sizes
of ``config_feat``'s ``kernel_bounds`` (columns 0-5) and ``output_bounds`` (8-13):

- ``log(1 + ceil(extent / tile))``, the number of tiles along the axis;
- the tail, ``1 - extent / (tile * ceil(extent / tile))`` in [0, 1): the share of the
  tiled iteration space past the extent (0 when the tile divides it).

The extents are shape dimensions (``node_feat[21:27]``): ``output_bounds`` against the
root's output (``is_root``, column 0), ``kernel_bounds`` against the second operand of
the first convolution or dot (its kernel; operands come in edge order). An axis whose
extent or tile is 0 (unused, or a graph with no convolution or dot) gets zeros.
"""

import torch

from dagopt.io.tpugraphs import HLO_OPCODES, SHAPE_DIMS
from dagopt.nn.tgraph.features import GraphTensors

IS_ROOT = 0
"""``node_feat`` column of ``is_root``."""
KERNEL_BOUNDS = slice(0, 6)
OUTPUT_BOUNDS = slice(8, 14)
"""``config_feat`` columns of the kernel's and the output's tile sizes."""
KERNEL_OPCODES = tuple(code for code, name in HLO_OPCODES.items() if name in ("convolution", "dot"))
TILE_EXTENT_FEATURES = 24
"""Tile counts and tails of the 6 kernel and 6 output tile sizes."""


def _root(node_feat: torch.Tensor) -> int:
    roots = torch.nonzero(node_feat[:, IS_ROOT] > 0).flatten()
    return int(roots[0]) if roots.numel() else node_feat.shape[0] - 1


def _kernel_operand(graph: GraphTensors) -> int | None:
    """The second operand's producer of the graph's first convolution or dot, if any."""
    kernels = torch.nonzero(torch.isin(graph.opcode, torch.tensor(KERNEL_OPCODES))).flatten()
    if not kernels.numel():
        return None
    producer, consumer = graph.edge_index
    operands = producer[consumer == kernels[0]]
    return int(operands[1]) if operands.numel() > 1 else None


def kernel_extents(graph: GraphTensors) -> torch.Tensor:
    """``(12,)`` the extents ``kernel_bounds`` and ``output_bounds`` split (module
    docstring); 0 where there is none."""
    dims = graph.node_feat[:, SHAPE_DIMS]
    weight = _kernel_operand(graph)
    kernel = dims[weight] if weight is not None else torch.zeros(dims.shape[1])
    return torch.cat([kernel, dims[_root(graph.node_feat)]])


def tile_extent_features(graph: GraphTensors, configs: torch.Tensor) -> torch.Tensor:
    """``(b, TILE_EXTENT_FEATURES)`` float32 of raw ``config_feat`` rows ``configs``
    ``(b, 24)`` on a tile ``graph``: the tile counts, then the tails (module docstring)."""
    extents = kernel_extents(graph).unsqueeze(0)
    tiles = torch.cat([configs[:, KERNEL_BOUNDS], configs[:, OUTPUT_BOUNDS]], dim=1)
    valid = (extents > 0) & (tiles > 0)
    tiles = torch.where(valid, tiles, 1.0)
    count = torch.ceil(extents / tiles)
    tail = 1.0 - extents / (tiles * count.clamp(min=1.0))
    zero = torch.zeros_like(tiles)
    return torch.cat([torch.where(valid, count.log1p(), zero), torch.where(valid, tail, zero)], 1)
