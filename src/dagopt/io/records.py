"""Conversion between ``Graph`` and node-link records (lists of node / edge dicts)."""

import math
from collections.abc import Iterable, Mapping
from typing import Any

from dagopt.errors import InputError
from dagopt.graph import Graph, NodeId

RESERVED_NODE_KEYS = ("id", "mem", "param_mem", "op")


def _node_id(value: Any, where: str) -> NodeId:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InputError(f"{where}: node id must be an integer or a string, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where} must be a number, got {value!r}")
    return float(value)


def graph_from_records(
    nodes: Iterable[Mapping[str, Any]],
    edges: Iterable[Mapping[str, Any]],
    *,
    name: str = "graph",
) -> Graph:
    """Build a ``Graph`` from node-link records.

    Each node needs ``id`` and ``mem``; ``param_mem`` (default 0) and ``op`` are
    optional; any other numeric attribute (``runtime``, ``flops``...) is kept in
    ``Graph.node_data`` when every node has it. Node order is kept: node ``i`` of
    the graph is the ``i``-th record.
    """
    ids: list[NodeId] = []
    mem: list[float] = []
    param: list[float] = []
    ops: list[str | None] = []
    extras: list[dict[str, float]] = []
    for i, record in enumerate(nodes):
        if not isinstance(record, Mapping):
            raise InputError(f"node #{i} is not an object")
        if "id" not in record:
            raise InputError(f"node #{i} has no 'id'")
        node_id = _node_id(record["id"], f"node #{i}")
        if "mem" not in record:
            raise InputError(f"node {node_id!r} has no 'mem' (output size)")
        ids.append(node_id)
        mem.append(_number(record["mem"], f"node {node_id!r}: 'mem'"))
        param.append(_number(record.get("param_mem", 0), f"node {node_id!r}: 'param_mem'"))
        op = record.get("op")
        if op is not None and not isinstance(op, str):
            raise InputError(f"node {node_id!r}: 'op' must be a string, got {op!r}")
        ops.append(op)
        extras.append(
            {
                key: float(value)
                for key, value in record.items()
                if key not in RESERVED_NODE_KEYS
                and isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
            }
        )
    shared = set.intersection(*(set(e) for e in extras)) if extras else set()
    node_data = {key: [e[key] for e in extras] for key in extras[0] if key in shared}

    index = {node_id: i for i, node_id in enumerate(ids)}  # duplicates: Graph raises below
    src: list[int] = []
    dst: list[int] = []
    for k, edge in enumerate(edges):
        if not isinstance(edge, Mapping) or "source" not in edge or "target" not in edge:
            raise InputError(f"edge #{k} needs 'source' and 'target'")
        for end, bucket in (("source", src), ("target", dst)):
            key = edge[end]
            if isinstance(key, bool) or key not in index:
                raise InputError(f"edge #{k}: {end} {key!r} is not a node of the graph")
            bucket.append(index[key])
    return Graph(
        len(ids),
        src,
        dst,
        mem=mem,
        param_mem=param,
        op=ops,
        names=ids,
        name=name,
        node_data=node_data,
    )


def graph_to_records(graph: Graph) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and edge records of ``graph`` (node order kept, ids as in the source file)."""
    nodes: list[dict[str, Any]] = []
    for i, node_id in enumerate(graph.names):
        record: dict[str, Any] = {"id": node_id, "mem": _plain(graph.mem[i])}
        if graph.param_mem[i]:
            record["param_mem"] = _plain(graph.param_mem[i])
        if graph.op[i] is not None:
            record["op"] = graph.op[i]
        for key, values in graph.node_data.items():
            record[key] = _plain(values[i])
        nodes.append(record)
    src, dst = graph.edges
    edges = [
        {"source": graph.names[s], "target": graph.names[t]}
        for s, t in zip(src.tolist(), dst.tolist(), strict=True)
    ]
    return nodes, edges


def _plain(x: float) -> int | float:
    """Write integral sizes (bytes) as JSON integers, others as floats."""
    value = float(x)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value
