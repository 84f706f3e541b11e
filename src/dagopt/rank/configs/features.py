"""HLO-like node features (the 140 ``node_feat`` columns of TpuGraphs) for the measured
kernels and programs.

The columns follow the official description (google-research-datasets/tpu_graphs,
``featurizers.h``; ``../shared/papers/tpugraphs-format.md``) as far as a node of our
kernels has the field: 0 ``is_root``, 2-20 the element type (all float32: column 13),
21-28 the output shape (dims 0-5, sum, product; product 1 for a scalar),
30 ``parameter_number``, 31-38 ``dimensions`` (a broadcast's operand dimensions),
37-92 the convolution window (size, stride, low / high padding, window and base
dilation 1, no reversal), 93-106 the convolution dimension numbers (NCHW data, OIHW
kernel, NCHW output), 107-108 the group counts (1), 134-139 the default row-major
``layout_minor_to_major`` (0-padded as published). Opcodes are HLO ids
(``dagopt.io.tpugraphs.HLO_OPCODES``).
"""

from dataclasses import dataclass

import numpy as np

from dagopt.io.tpugraphs import HLO_OPCODES, IS_ROOT, LAYOUT_COLUMNS, NODE_FEATURES

OPCODE_IDS = {name: code for code, name in HLO_OPCODES.items()}
F32_COLUMN = 13


@dataclass
class HloNode:
    """One node: ``opcode`` name, output ``shape``, operand node indices and the fields
    some opcodes carry (``parameter``, broadcast ``dimensions``, conv ``window`` /
    ``stride`` / ``pad``)."""

    opcode: str
    shape: tuple[int, ...]
    operands: tuple[int, ...] = ()
    parameter: int = 0
    dimensions: tuple[int, ...] = ()
    window: int = 0
    stride: int = 1
    pad: int = 0


def _put(row: np.ndarray, start: int, values, *, product_of_empty: float = 0.0) -> None:
    """Columns ``start..start+5`` = values (0-padded), ``start+6`` the sum, ``+7`` the product."""
    values = list(values)
    row[start : start + len(values)] = values
    row[start + 6] = sum(values)
    row[start + 7] = float(np.prod(values)) if values else product_of_empty


def node_row(node: HloNode, is_root: bool) -> np.ndarray:
    """The 140 features of one node (float32)."""
    row = np.zeros(NODE_FEATURES, dtype=np.float32)
    row[IS_ROOT] = float(is_root)
    row[F32_COLUMN] = 1.0
    _put(row, 21, node.shape, product_of_empty=1.0)
    if node.opcode == "parameter":
        row[30] = node.parameter
    if node.dimensions:
        _put(row, 31, node.dimensions)
    if node.opcode == "convolution":
        spatial = 2
        _put(row, 37, [node.window] * spatial)
        _put(row, 45, [node.stride] * spatial)
        _put(row, 53, [node.pad] * spatial)
        _put(row, 61, [node.pad] * spatial)
        _put(row, 69, [1] * spatial)
        _put(row, 77, [1] * spatial)
        row[91], row[92] = 0, spatial  # window reversal: true / false counts
        row[93:99] = [0, 1, 2, 3, 0, 0]  # input batch, feature, spatial dims
        row[99:105] = [1, 0, 2, 3, 0, 0]  # kernel input / output feature, spatial dims
        row[105:109] = [0, 1, 1, 1]  # output batch, feature; feature / batch group count
    rank = len(node.shape)
    row[LAYOUT_COLUMNS.start : LAYOUT_COLUMNS.start + rank] = range(rank - 1, -1, -1)
    return row


def graph_arrays(nodes: list[HloNode]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``node_feat`` (n, 140) float32, ``node_opcode`` (n,) int32 and ``edge_index``
    (m, 2) int32 rows ``[consumer, producer]`` as the dataset stores them; the last node
    is the root."""
    feat = np.stack([node_row(node, i == len(nodes) - 1) for i, node in enumerate(nodes)])
    opcode = np.array([OPCODE_IDS[node.opcode] for node in nodes], dtype=np.int32)
    edges = [(i, j) for i, node in enumerate(nodes) for j in node.operands]
    return feat, opcode, np.array(edges, dtype=np.int32).reshape(-1, 2)
