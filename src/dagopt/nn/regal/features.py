"""REGAL's op and tensor features (paper 003, section 2.1) as PyG ``Data``.

``regal_inputs`` featurises one graph into ``torch_geometric.data.Data`` with ``x``
(op features, the columns of ``RegalConfig.node_features``), ``edge_index`` (``src ->
dst``) and ``edge_attr`` (``REGAL_EDGE_FEATURES``); ``batch_inputs`` stacks several into
one disjoint ``Batch`` (``ptr``, ``batch``, ``num_graphs``).
"""

import math

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.paths import longest_paths
from dagopt.nn.regal.config import REGAL_EDGE_FEATURES
from dagopt.objectives.devices import Devices
from dagopt.objectives.op_runtimes import op_runtimes


def _ratio(a, b) -> np.ndarray:
    """``a / b``, 0 where ``b <= 0`` (zero runtimes, zero sizes, an empty graph)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return np.divide(a, b, out=np.zeros(a.shape), where=b > 0)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0


def regal_inputs(
    graph: Graph,
    runtimes: np.ndarray | None,
    devices: Devices,
    prior_keys: np.ndarray | None = None,
) -> Data:
    """Featurise ``graph`` for REGAL: op and tensor attributes (003 section 2.1).

    Node columns are ``REGAL_NODE_FEATURES``, then ``ORDER_PRIOR_FEATURE`` when
    ``prior_keys`` (``dagopt.place.prior.order_prior_keys``, one per op) are given;
    edge columns are ``REGAL_EDGE_FEATURES``.
    Sizes are taken relative to the smallest device memory limit (what decides
    feasibility) and, as ``log1p``, to the graph's mean; runtimes relative to the mean
    and to one device's fair share ``total / d``; depth, height and the critical-path
    start times are normalised by the graph's longest path. Any ratio with a zero
    denominator is 0, so every graph (one op, zero runtimes, zero sizes) gives finite
    features. ``runtimes`` are seconds per op on a speed-1 device, or per op and device
    (``None``: the graph's ``runtime`` attribute), read through ``op_runtimes``.
    """
    n = graph.num_nodes
    d = devices.count
    runtime = op_runtimes(graph, runtimes, devices)  # (n, d): each op's fastest device
    src, dst = (np.asarray(a, dtype=np.int64) for a in graph.edges)
    mem, param = graph.mem, graph.param_mem
    inputs = np.bincount(dst, weights=mem[src], minlength=n)
    limit = float(devices.memory_limits.min())

    depth, earliest = longest_paths(graph.succ_ptr, graph.succ_idx, graph.in_degree, runtime)
    height, after = longest_paths(graph.pred_ptr, graph.pred_idx, graph.out_degree, runtime)
    critical = float((earliest + runtime).max(initial=0.0))
    longest = float(depth.max(initial=0))
    total_runtime = float(runtime.sum())
    fair_share = total_runtime / d

    node = [
        np.log1p(_ratio(runtime, _mean(runtime))),
        _ratio(runtime, fair_share),
        mem / limit,
        param / limit,
        inputs / limit,
        np.log1p(_ratio(mem, _mean(mem))),
        np.log1p(_ratio(param, _mean(param))),
        np.log1p(_ratio(inputs, _mean(inputs))),
        np.log1p(graph.in_degree),
        np.log1p(graph.out_degree),
        _ratio(depth, longest),
        _ratio(height, longest),
        _ratio(earliest, critical),
        _ratio(np.maximum(critical - after - runtime, 0.0), critical),
        np.full(n, math.log10(max(n, 1))),
        np.full(n, (mem.sum() + param.sum()) / devices.memory_limits.sum()),
        np.full(n, float(_ratio(critical, fair_share))),
    ]
    if prior_keys is not None:
        prior_keys = np.asarray(prior_keys, dtype=np.float64)
        if prior_keys.shape != (n,):
            raise InputError(f"prior_keys need shape ({n},), got {prior_keys.shape}")
        node.append(prior_keys)
    edge = [mem[src] / limit, np.log1p(_ratio(mem[src], _mean(mem)))]
    x = np.stack(node, axis=1).reshape(n, len(node))
    edge_attr = np.stack(edge, axis=1).reshape(src.size, len(REGAL_EDGE_FEATURES))
    return Data(
        x=torch.from_numpy(x.astype(np.float32)),
        edge_index=torch.from_numpy(np.stack([src, dst]).reshape(2, -1)),
        edge_attr=torch.from_numpy(edge_attr.astype(np.float32)),
        num_nodes=n,
    )


def batch_inputs(items: list[Data]) -> Batch:
    """Several featurised graphs as one disjoint graph (PyG ``Batch``): node ``i`` of
    graph ``g`` is row ``ptr[g] + i``; policy logits of the batch are the graphs'
    logits stacked over nodes, and ``RegalBaseline`` pools per graph."""
    if not items:
        raise InputError("batch_inputs needs at least one graph")
    return Batch.from_data_list(items)
