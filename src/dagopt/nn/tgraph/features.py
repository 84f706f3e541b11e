"""TpuGraphs records as the tensors the ranking models read (paper 002, section 2.2.5).

The caller passes a pre-processed record (``dagopt.rank.tgraph.prepare``: pruned, layout
columns -1 padded). ``GraphTensors`` holds what every configuration shares;
``layout_configs`` / ``tile_configs`` turn a batch of configurations into the model's
configuration input. Configurations are the batch axis of every model.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from dagopt.errors import InputError
from dagopt.io.tpugraphs import (
    HLO_OPCODES,
    IS_ROOT,
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
LAYOUT_SLOTS = 3
"""Layouts per configurable node: output, first operand, kernel (second operand)."""
KERNEL_OPCODES = torch.tensor(
    [code for code, name in HLO_OPCODES.items() if name in ("convolution", "dot")]
)
"""Opcode ids of the ops whose second operand is a kernel (a tile's ``kernel_bounds``)."""


def operand_producers(edge_index: torch.Tensor, ids: torch.Tensor, count: int) -> torch.Tensor:
    """``(len(ids), count)`` long: the producers of nodes ``ids``' first ``count``
    operands, -1 where a node has fewer. Operands come in edge order: TpuGraphs lists a
    node's operand edges in operand order, which pruning keeps."""
    producers = torch.full((ids.numel(), count), -1, dtype=torch.long)
    producer, consumer = edge_index
    order = torch.argsort(consumer, stable=True)  # a node's edges together, in edge order
    consumers, ordered = consumer[order], producer[order]
    first = torch.searchsorted(consumers, ids)
    edges = torch.searchsorted(consumers, ids, right=True) - first
    for operand in range(count):
        has = edges > operand
        producers[has, operand] = ordered[first[has] + operand]
    return producers


@dataclass(frozen=True, eq=False)
class GraphTensors:
    """A graph's shared inputs: ``node_feat`` (n, 140) float32 (not yet normalised),
    ``opcode`` (n,) long, ``edge_index`` (2, m) long producer -> consumer, and for
    layout graphs ``config_ids`` (nc,) long, the configurable nodes."""

    node_feat: torch.Tensor
    opcode: torch.Tensor
    edge_index: torch.Tensor
    config_ids: torch.Tensor | None

    @property
    def num_nodes(self) -> int:
        return int(self.node_feat.shape[0])

    @cached_property
    def owners(self) -> torch.Tensor:
        """``(nc, LAYOUT_SLOTS)`` long (layout graphs, computed once): per configurable
        node, the node whose output each layout slot lays out (itself, its first
        operand's producer, its second's), -1 where it has none (``operand_producers``)."""
        ids = self.config_ids
        operands = operand_producers(self.edge_index, ids, LAYOUT_SLOTS - 1)
        return torch.cat([ids.unsqueeze(1), operands], dim=1)

    @cached_property
    def tile_extents(self) -> torch.Tensor:
        """``(12,)`` float32 (tile graphs, computed once): the extents a tile's
        ``kernel_bounds`` and ``output_bounds`` split, the shape dimensions of the first
        convolution's or dot's kernel operand (zeros without one) and of the root's
        output (``dagopt.nn.tgraph.tile_extents``)."""
        dims = self.node_feat[:, SHAPE_DIMS]
        roots = torch.nonzero(self.node_feat[:, IS_ROOT] > 0).flatten()
        if not roots.numel():
            raise InputError("a tile graph needs a root node (node_feat is_root column)")
        kernels = torch.nonzero(torch.isin(self.opcode, KERNEL_OPCODES)).flatten()
        weight = operand_producers(self.edge_index, kernels[:1], 2)[:, 1]
        kernel = dims[weight[0]] if weight.numel() and weight[0] >= 0 else torch.zeros_like(dims[0])
        return torch.cat([kernel, dims[roots[0]]])


def graph_tensors(record: TileRecord | LayoutRecord) -> GraphTensors:
    """The shared tensors of a (pre-processed) record."""
    opcode = torch.as_tensor(np.array(record.node_opcode, dtype=np.int64))
    opcode = torch.where((opcode > 0) & (opcode <= max(HLO_OPCODES)), opcode, 0)
    edges = np.asarray(record.edge_index, dtype=np.int64)[:, ::-1].T.copy()  # producer first
    ids = None
    if isinstance(record, LayoutRecord):
        ids = torch.as_tensor(np.array(record.node_config_ids, dtype=np.int64))
    return GraphTensors(
        node_feat=torch.as_tensor(np.array(record.node_feat, dtype=np.float32)),
        opcode=opcode,
        edge_index=torch.as_tensor(edges),
        config_ids=ids,
    )


def scaled(values: torch.Tensor, how: str) -> torch.Tensor:
    """Numeric inputs as the model standardises them (``TGraphConfig.numeric_features``):
    ``raw`` (section 2.2.5) or ``log``, ``sign(x) log(1 + |x|)``."""
    return values if how == "raw" else values.sign() * values.abs().log1p()


def numeric_features(node_feat: torch.Tensor, how: str) -> torch.Tensor:
    """``node_feat[:, :134]`` as the model standardises it (``scaled``)."""
    return scaled(node_feat[:, : LAYOUT_COLUMNS.start], how)


def layout_configs(node_config_feat: np.ndarray) -> torch.Tensor:
    """``(b, nc, 18)`` layouts (values -1..5) as long embedding indices 0..6."""
    return torch.as_tensor(np.array(node_config_feat, dtype=np.int64) - LAYOUT_MIN)


def tile_configs(config_feat: np.ndarray) -> torch.Tensor:
    """``(b, 24)`` tile sizes as float32 (normalised inside the model)."""
    return torch.as_tensor(np.array(config_feat, dtype=np.float32))
