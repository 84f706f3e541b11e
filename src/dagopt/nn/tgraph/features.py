"""TpuGraphs records as the tensors the ranking models read (paper 002, section 2.2.5).

The caller passes a pre-processed record (``dagopt.rank.tgraph.prepare``: pruned, layout
columns -1 padded). ``GraphTensors`` holds what every configuration shares;
``layout_configs`` / ``tile_configs`` turn a batch of configurations into the model's
configuration input. Configurations are the batch axis of every model.
"""

from dataclasses import dataclass

import numpy as np
import torch

from dagopt.io.tpugraphs import (
    HLO_OPCODES,
    LAYOUT_COLUMNS,
    LAYOUT_MIN,
    SHAPE_DIMS,
    LayoutRecord,
    TileRecord,
)

NUM_OPCODES = 128
"""Opcode embedding rows: the dataset's ids are 1..120; others map to 0 (unknown)."""
LAYOUT_VALUES = 7
"""Layout values -1..5, embedded as indices 0..6 (``value - LAYOUT_MIN``)."""


@dataclass(frozen=True, eq=False)
class GraphTensors:
    """A graph's shared inputs: ``node_feat`` (n, 140) float32 (not yet normalised),
    ``opcode`` (n,) long, ``edge_index`` (2, m) long producer -> consumer, and for
    layout graphs ``config_ids`` (nc,) long, the configurable nodes, and
    ``operand_shapes`` (nc, 3, 6) float32, ``layout_operand_shapes``."""

    node_feat: torch.Tensor
    opcode: torch.Tensor
    edge_index: torch.Tensor
    config_ids: torch.Tensor | None
    operand_shapes: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.node_feat.shape[0])


def graph_tensors(record: TileRecord | LayoutRecord) -> GraphTensors:
    """The shared tensors of a (pre-processed) record."""
    opcode = torch.as_tensor(np.array(record.node_opcode, dtype=np.int64))
    opcode = torch.where((opcode > 0) & (opcode <= max(HLO_OPCODES)), opcode, 0)
    edges = np.asarray(record.edge_index, dtype=np.int64)[:, ::-1].T.copy()  # producer first
    ids = shapes = None
    if isinstance(record, LayoutRecord):
        ids = torch.as_tensor(np.array(record.node_config_ids, dtype=np.int64))
        shapes = torch.as_tensor(layout_operand_shapes(record))
    return GraphTensors(
        node_feat=torch.as_tensor(np.array(record.node_feat, dtype=np.float32)),
        opcode=opcode,
        edge_index=torch.as_tensor(edges),
        config_ids=ids,
        operand_shapes=shapes,
    )


def layout_operand_shapes(record: LayoutRecord) -> np.ndarray:
    """``(nc, 3, 6)`` float32: the logical shape (``node_feat`` columns 21-26) of the
    three tensors whose layouts a configuration gives each configurable node (paper 002,
    2.2.1): its output, its first operand and its second operand (a convolution's
    kernel), operands in the order of the file's edges; zeros where a node has no such
    operand. ``physical_extents`` reads them in a configuration's minor-to-major order."""
    feat = np.asarray(record.node_feat, dtype=np.float32)
    consumer, producer = np.asarray(record.edge_index, dtype=np.int64).T.reshape(2, -1)
    shapes = np.zeros((len(record.node_config_ids), 3, 6), dtype=np.float32)
    for row, node in enumerate(np.asarray(record.node_config_ids)):
        shapes[row, 0] = feat[node, SHAPE_DIMS]
        for slot, operand in enumerate(producer[consumer == node][:2], start=1):
            shapes[row, slot] = feat[operand, SHAPE_DIMS]
    return shapes


def physical_extents(operand_shapes: torch.Tensor, configs: torch.Tensor) -> torch.Tensor:
    """``(b, nc, 18)``: ``log(1 + extent)`` of the dimension each layout position of
    ``configs`` (``layout_configs`` indices) names, for the output, first and second
    operand (0 where a position is unused): a tensor's extents in its physical
    minor-to-major order, which is what decides contiguous, vectorisable access
    (``TGraphConfig.physical_shapes``)."""
    batch, nc = configs.shape[:2]
    dims = (configs + LAYOUT_MIN).view(batch, nc, 3, 6)
    shapes = operand_shapes.unsqueeze(0).expand(batch, -1, -1, -1)
    extents = shapes.gather(3, dims.clamp(min=0)) * (dims >= 0)
    return extents.log1p().view(batch, nc, 18)


def numeric_features(node_feat: torch.Tensor, how: str) -> torch.Tensor:
    """``node_feat[:, :134]`` as the model standardises it: ``raw`` (section 2.2.5) or
    ``log``, ``sign(x) log(1 + |x|)`` (``TGraphConfig.numeric_features``)."""
    numeric = node_feat[:, : LAYOUT_COLUMNS.start]
    return numeric if how == "raw" else numeric.sign() * numeric.abs().log1p()


def layout_configs(node_config_feat: np.ndarray) -> torch.Tensor:
    """``(b, nc, 18)`` layouts (values -1..5) as long embedding indices 0..6."""
    return torch.as_tensor(np.array(node_config_feat, dtype=np.int64) - LAYOUT_MIN)


def tile_configs(config_feat: np.ndarray) -> torch.Tensor:
    """``(b, 24)`` tile sizes as float32 (normalised inside the model)."""
    return torch.as_tensor(np.array(config_feat, dtype=np.float32))
