"""What a layout configuration does physically (an extension of paper 002, section 2.2.5).

Paper 002 embeds each value of a configurable node's minor-to-major orders on its own
(4 channels per value), so the model has to learn from the data which dimension a
layout makes minor and whether a consumer reads an operand in the layout its producer
wrote. The layout collections' runtimes are made of exactly those two things: the
minor dimension is the one an emitter vectorises, and an operand read in a layout other
than its producer's costs a copy (XLA's layout assignment inserts one). With
``TGraphConfig.physical_layout`` the model also gets, per configurable node, for each of
its three layout slots (output; first operand; kernel, the second operand):

- ``log(1 + extent)`` of the slot's minor-most and second minor-most physical dimension
  (the extents are the shape dimensions, ``node_feat[21:27]``, of the slot's tensor:
  the node's own output, or the operand's producer's output);
- the vector lanes an emitter gets on the minor-most dimension, ``log2(gcd(extent, 32))
  / 5`` in [0, 1]: the loop over a minor dimension is split by the largest power of two
  up to 32 lanes dividing it (``dagopt.integrations.tvm.layout``), so a 49-token minor
  dimension runs one element at a time where a 48-token one runs 16 lanes; an extent
  alone does not tell a network that (added after the first measurements of this
  option: docs/results.md, "Drawn sequence lengths");
- for the two operand slots, 1 where the slot's layout differs from the layout its
  producer writes (the producer's configured output layout when it is configurable,
  else its ``layout_minor_to_major``, ``node_feat[134:140]``), 0 where they agree or
  the slot is unset.

Operands are told apart by edge order (``GraphTensors.owners``).
"""

import math

import torch

from dagopt.io.tpugraphs import LAYOUT_COLUMNS, LAYOUT_CONFIG_FEATURES, LAYOUT_MIN, SHAPE_DIMS
from dagopt.nn.tgraph.features import LAYOUT_SLOTS, GraphTensors

SLOT_WIDTH = LAYOUT_CONFIG_FEATURES // LAYOUT_SLOTS
"""Minor-to-major entries per slot (``node_config_feat`` columns ``6s .. 6s + 5``)."""
VECTOR_LANES = 32
"""Most vector lanes of an emitted loop (``dagopt.integrations.tvm.layout.VECTOR_LANES``,
which this layer cannot import; a test holds them equal)."""
PHYSICAL_FEATURES = 3 * LAYOUT_SLOTS + (LAYOUT_SLOTS - 1)
"""Two minor extents and the minor dimension's lanes per slot, a copy flag per operand slot."""


def physical_features(graph: GraphTensors, configs: torch.Tensor) -> torch.Tensor:
    """``(b, nc, PHYSICAL_FEATURES)`` float32 (module docstring) of ``configs``, ``(b, nc,
    18)`` embedding indices (layout value - ``LAYOUT_MIN``), on a layout ``graph``
    (its ``node_feat`` un-normalised and -1 padded, as ``GraphTensors`` holds it)."""
    node_feat, config_ids, owners = graph.node_feat, graph.config_ids, graph.owners
    layouts = configs + LAYOUT_MIN  # (b, nc, 18) back to values -1..5
    dims = node_feat[:, SHAPE_DIMS]  # (n, 6)
    position = torch.full((node_feat.shape[0],), -1, dtype=torch.long)
    position[config_ids] = torch.arange(config_ids.numel())
    columns = []
    for slot in range(LAYOUT_SLOTS):
        layout = layouts[..., slot * SLOT_WIDTH : (slot + 1) * SLOT_WIDTH]  # (b, nc, 6)
        owner = owners[:, slot]  # (nc,)
        for minor in range(2):
            dim = layout[..., minor]
            valid = (dim >= 0) & (owner >= 0)
            extent = dims[owner.clamp(min=0).unsqueeze(0), dim.clamp(min=0)]
            columns.append(torch.where(valid, extent.log1p(), 0.0))
            if minor == 0:
                lanes = torch.gcd(extent.long(), torch.tensor(VECTOR_LANES))
                scaled = lanes.float().log2() / math.log2(VECTOR_LANES)
                columns.append(torch.where(valid, scaled, 0.0))
        if slot:
            columns.append(_copy_flag(layout, owner, position, layouts, node_feat))
    return torch.stack(columns, dim=-1)


def _copy_flag(
    layout: torch.Tensor,
    owner: torch.Tensor,
    position: torch.Tensor,
    layouts: torch.Tensor,
    node_feat: torch.Tensor,
) -> torch.Tensor:
    """1.0 where an operand slot's ``layout`` (b, nc, 6) is set and differs from the
    layout its producer ``owner`` (nc,) writes."""
    producer = owner.clamp(min=0)
    written = node_feat[producer, LAYOUT_COLUMNS].long().expand_as(layout)  # default layout
    configured = position[producer]  # (nc,) the producer's configuration row, -1 if none
    from_config = layouts[:, configured.clamp(min=0), :SLOT_WIDTH]  # its output slot
    written = torch.where((configured >= 0).view(1, -1, 1), from_config, written)
    differs = (layout != written).any(dim=-1)
    return ((layout[..., 0] >= 0) & (owner >= 0) & differs).float()
