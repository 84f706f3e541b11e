"""How each operand is read under a layout configuration (an extension of paper 002,
section 2.2.5, beside ``dagopt.nn.tgraph.physical``).

An emitter loops over a node's output in its physical order and vectorises the minor
dimension (``dagopt.integrations.tvm.layout``; XLA's emitters likewise tile the minor
dimensions). What one step of that loop costs depends on a relation between layout
slots that the per-slot embeddings of section 2.2.5 leave the network to discover: does
the output's minor dimension walk the operand's minor dimension (contiguous vector
loads), another of its dimensions (a gather), or none (the operand is broadcast)? With
``TGraphConfig.access_pattern`` the model gets, per configurable node and per operand
slot (first operand; kernel, the second operand):

- the operand's access along the vectorised loop, one-hot: contiguous, gathered,
  broadcast (all 0 where the op's dimension mapping is unknown);
- 1 where the operand's minor dimension is the one the innermost reduction loop walks
  (the last spatial window dimension, or the input features for a 1 x 1 window);
- whether a copy converts the operand (its slot's layout differs from its producer's)
  and, if so, whether the copy reads contiguously (the two layouts share their minor
  dimension) or gathers;

and 1 where the node is the graph's root and its output layout differs from its
default, so the result is converted back.

The dimension mapping comes from the TpuGraphs node features alone: a convolution's
dimension numbers and window strides (``node_feat[93:107]``, ``[45:51]``; a strided
spatial dimension is gathered even when minor), and for a reshape the row-major
flattening of the shapes (the operand dimension whose minor-side extent product equals
the output dimension's). TpuGraphs lists no dot dimension numbers, so a dot's access
classes stay 0 (its copy flags do not).
"""

import weakref

import numpy as np
import torch

from dagopt.io.tpugraphs import HLO_OPCODES, LAYOUT_COLUMNS, LAYOUT_MIN, SHAPE_DIMS
from dagopt.nn.tgraph.features import LAYOUT_SLOTS, GraphTensors
from dagopt.nn.tgraph.physical import SLOT_WIDTH, written_layouts

OPERANDS = LAYOUT_SLOTS - 1
PER_OPERAND = 6
"""Contiguous / gathered / broadcast, reduction-minor, copy contiguous, copy gathered."""
ACCESS_FEATURES = OPERANDS * PER_OPERAND + 1
"""The operand features of both operand slots and the root's result-copy flag."""
MAX_RANK = 6
UNKNOWN, BROADCAST, GATHER = -2, -1, -3
"""Vector-loop map entries other than an operand dimension."""
_OPCODE = {name: code for code, name in HLO_OPCODES.items()}
_CONVOLUTION, _RESHAPE = _OPCODE["convolution"], _OPCODE["reshape"]
WINDOW_SIZES, WINDOW_STRIDES = slice(37, 43), slice(45, 51)
INPUT_FEATURE, INPUT_SPATIAL, KERNEL_INPUT_FEATURE, KERNEL_OUTPUT_FEATURE = 94, 95, 99, 100
INPUT_BATCH, KERNEL_SPATIAL, OUTPUT_BATCH, OUTPUT_FEATURE = 93, 101, 105, 106

_TABLES: "weakref.WeakKeyDictionary[GraphTensors, tuple]" = weakref.WeakKeyDictionary()


def _rank(row: np.ndarray) -> int:
    return int((row[LAYOUT_COLUMNS] >= 0).sum())


def _convolution_maps(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(MAX_RANK, 2)`` operand dimension walked by each output minor dimension (data,
    kernel) and ``(2,)`` the innermost reduction's dimension in each."""
    spatial = int((row[WINDOW_SIZES] > 0).sum())
    data_spatial = row[INPUT_SPATIAL : INPUT_SPATIAL + spatial].astype(int)
    kernel_spatial = row[KERNEL_SPATIAL : KERNEL_SPATIAL + spatial].astype(int)
    batch, feature = int(row[OUTPUT_BATCH]), int(row[OUTPUT_FEATURE])
    out_spatial = [d for d in range(_rank(row)) if d not in (batch, feature)]
    vector = np.full((MAX_RANK, OPERANDS), UNKNOWN)
    vector[: _rank(row)] = BROADCAST
    vector[batch, 0] = int(row[INPUT_BATCH])
    vector[feature, 1] = int(row[KERNEL_OUTPUT_FEATURE])
    for k, d in enumerate(out_spatial[:spatial]):
        vector[d, 0] = GATHER if row[WINDOW_STRIDES][k] > 1 else data_spatial[k]
    if spatial and row[WINDOW_SIZES][spatial - 1] > 1:
        reduction = np.array([data_spatial[-1], kernel_spatial[-1]])
    else:
        reduction = np.array([int(row[INPUT_FEATURE]), int(row[KERNEL_INPUT_FEATURE])])
    return vector, reduction


def _reshape_map(row: np.ndarray, operand: np.ndarray) -> np.ndarray:
    """``(MAX_RANK, 2)``: the operand dimension each output dimension steps (row-major)."""
    out = row[SHAPE_DIMS][: _rank(row)].astype(np.int64)
    source = operand[SHAPE_DIMS][: _rank(operand)].astype(np.int64)
    vector = np.full((MAX_RANK, OPERANDS), UNKNOWN)
    for v in range(out.size):
        inner = int(np.prod(out[v + 1 :]))
        match = [u for u in range(source.size) if int(np.prod(source[u + 1 :])) == inner]
        vector[v, 0] = match[-1] if match and source[match[-1]] > 1 else GATHER
    return vector


def _tables(graph: GraphTensors) -> tuple[torch.Tensor, torch.Tensor]:
    """Per configurable node (computed once per graph): ``(nc, MAX_RANK, 2)`` the vector
    map and ``(nc, 2)`` the reduction dimension (``UNKNOWN`` where none)."""
    if graph not in _TABLES:
        feat = graph.node_feat.numpy()
        owners = graph.owners.numpy()
        nc = graph.config_ids.numel()
        vector = np.full((nc, MAX_RANK, OPERANDS), UNKNOWN)
        reduction = np.full((nc, OPERANDS), UNKNOWN)
        for k, node in enumerate(graph.config_ids.tolist()):
            code = int(graph.opcode[node])
            if code == _CONVOLUTION:
                vector[k], reduction[k] = _convolution_maps(feat[node])
            elif code == _RESHAPE and owners[k, 1] >= 0:
                vector[k] = _reshape_map(feat[node], feat[owners[k, 1]])
        _TABLES[graph] = (torch.as_tensor(vector), torch.as_tensor(reduction))
    return _TABLES[graph]


def access_features(graph: GraphTensors, configs: torch.Tensor) -> torch.Tensor:
    """``(b, nc, ACCESS_FEATURES)`` float32 (module docstring) of ``configs``, ``(b, nc,
    18)`` embedding indices (layout value - ``LAYOUT_MIN``), on a layout ``graph`` (its
    ``node_feat`` un-normalised and -1 padded, as ``GraphTensors`` holds it)."""
    vector, reduction = _tables(graph)
    node_feat, config_ids, owners = graph.node_feat, graph.config_ids, graph.owners
    layouts = configs + LAYOUT_MIN  # (b, nc, 18) values -1..5
    out = layouts[..., :SLOT_WIDTH]
    out_minor = out[..., 0]  # (b, nc)
    nodes = torch.arange(config_ids.numel())
    walked = vector[nodes, out_minor.clamp(min=0)]  # (b, nc, 2)
    walked = torch.where((out_minor >= 0).unsqueeze(-1), walked, UNKNOWN)
    position = torch.full((node_feat.shape[0],), -1, dtype=torch.long)
    position[config_ids] = nodes
    columns = []
    for operand in range(OPERANDS):
        slot = layouts[..., (1 + operand) * SLOT_WIDTH : (2 + operand) * SLOT_WIDTH]
        owner = owners[:, 1 + operand]
        written = written_layouts(owner, position, layouts, node_feat)  # (b, nc, 6)
        configured = slot[..., 0] >= 0
        read = torch.where(configured.unsqueeze(-1), slot, written)
        minor = read[..., 0]
        dim = walked[..., operand]
        contiguous = (dim >= 0) & (minor == dim)
        columns += [contiguous, ((dim >= 0) & ~contiguous) | (dim == GATHER), dim == BROADCAST]
        columns.append((reduction[:, operand] >= 0) & (minor == reduction[:, operand]))
        copied = configured & (owner >= 0) & (slot != written).any(dim=-1)
        columns += [
            copied & (slot[..., 0] == written[..., 0]),
            copied & (slot[..., 0] != written[..., 0]),
        ]
    default = node_feat[config_ids][:, LAYOUT_COLUMNS].long()  # (nc, 6)
    root = node_feat[config_ids, 0] > 0
    columns.append(root & (out[..., 0] >= 0) & (out != default).any(dim=-1))
    return torch.stack(columns, dim=-1).float()
