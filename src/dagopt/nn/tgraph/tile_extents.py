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

The extents (``GraphTensors.tile_extents``, once per graph) are shape dimensions
(``node_feat[21:27]``): ``output_bounds`` against the root's output (``is_root``),
``kernel_bounds`` against the second operand of the first convolution or dot (its
kernel; operands come in edge order). An axis whose extent or tile is 0 (unused, or a
graph with no convolution or dot) gets zeros.
"""

import torch

from dagopt.io.tpugraphs import KERNEL_BOUNDS, OUTPUT_BOUNDS
from dagopt.nn.tgraph.features import GraphTensors

TILE_EXTENT_FEATURES = 24
"""Tile counts and tails of the 6 kernel and 6 output tile sizes."""


def tile_extent_features(graph: GraphTensors, configs: torch.Tensor) -> torch.Tensor:
    """``(b, TILE_EXTENT_FEATURES)`` float32 of raw ``config_feat`` rows ``configs``
    ``(b, 24)`` on a tile ``graph``: the tile counts, then the tails (module docstring)."""
    extents = graph.tile_extents.unsqueeze(0)
    tiles = torch.cat([configs[:, KERNEL_BOUNDS], configs[:, OUTPUT_BOUNDS]], dim=1)
    valid = (extents > 0) & (tiles > 0)
    tiles = torch.where(valid, tiles, 1.0)
    count = torch.ceil(extents / tiles)
    tail = 1.0 - extents / (tiles * count.clamp(min=1.0))
    zero = torch.zeros_like(tiles)
    return torch.cat([torch.where(valid, count.log1p(), zero), torch.where(valid, tail, zero)], 1)
