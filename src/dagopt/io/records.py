"""Conversion between ``Graph`` and node-link records (lists of node / edge dicts)."""

import reprlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph, NodeId

RESERVED_NODE_KEYS = ("id", "mem", "param_mem", "op")
RESERVED_EDGE_KEYS = ("source", "target")


def is_node_id(value: Any) -> bool:
    """Whether ``value`` can name a node: an integer or a string (``True`` is not ``1``)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def _node_id(value: Any, where: str) -> NodeId:
    if not is_node_id(value):
        raise InputError(
            f"{where}: node id must be an integer or a string, got {reprlib.repr(value)}"
        )
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


TOO_LARGE = "is too large (an integer beyond 1.8e308, the float range)"


def _number(value: Any, where: str) -> float:
    if not _is_number(value):
        raise InputError(f"{where} must be a number, got {reprlib.repr(value)}")
    try:
        return float(value)
    except OverflowError:
        raise InputError(f"{where} {TOO_LARGE}") from None


def _numeric(value: Any) -> float | list[float] | None:
    """A number, or a list of numbers (from a list, tuple or 1-D array), as floats; None
    for anything else (that attribute is not graph data). NaN and infinities are kept,
    so that ``Graph`` rejects them naming the node and attribute instead of the attribute
    silently disappearing; an integer beyond the float range raises ``OverflowError``."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, list | tuple):
        if all(_is_number(item) for item in value):
            return [float(item) for item in value]
        return None
    return float(value) if _is_number(value) else None


def _shared(
    records: list[Mapping[str, Any]], reserved: tuple[str, ...], label: Callable[[int], str]
) -> dict[str, list]:
    """The numeric attributes every record has in one shape (all numbers, or all lists of
    one length), in the first record's key order: a column of values per key.
    ``label(i)`` names record ``i`` in errors."""
    if not records:
        return {}
    columns: dict[str, list] = {}
    for key in records[0]:
        if key in reserved:
            continue
        column = []
        for i, record in enumerate(records):
            try:
                column.append(_numeric(record.get(key)))
            except OverflowError:
                raise InputError(f"{label(i)}: {key!r} {TOO_LARGE}") from None
        first = column[0]
        if first is None:
            continue
        if isinstance(first, float):
            if all(isinstance(x, float) for x in column):
                columns[key] = column
        elif all(isinstance(x, list) and len(x) == len(first) for x in column):
            columns[key] = column
    return columns


def graph_from_records(
    nodes: Iterable[Mapping[str, Any]],
    edges: Iterable[Mapping[str, Any]],
    *,
    name: str = "graph",
) -> Graph:
    """Build a ``Graph`` from node-link records.

    Each node needs ``id`` and ``mem``; ``param_mem`` (default 0) and ``op`` are
    optional. Any other attribute that every node has, as a number (``runtime``,
    ``flops``...) or as a list of numbers of one length (a feature vector, runtimes per
    device), is kept in ``Graph.node_data`` (``(n,)`` or ``(n, k)``). Edge attributes
    besides ``source`` and ``target`` are kept in ``Graph.edge_data`` by the same rule.
    Node order is kept: node ``i`` of the graph is the ``i``-th record.
    """
    ids: list[NodeId] = []
    mem: list[float] = []
    param: list[float] = []
    ops: list[str | None] = []
    node_records: list[Mapping[str, Any]] = []
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
            raise InputError(f"node {node_id!r}: 'op' must be a string, got {reprlib.repr(op)}")
        ops.append(op)
        node_records.append(record)

    index = {node_id: i for i, node_id in enumerate(ids)}  # duplicates: Graph raises below
    src: list[int] = []
    dst: list[int] = []
    edge_records: list[Mapping[str, Any]] = []
    for k, edge in enumerate(edges):
        if not isinstance(edge, Mapping) or "source" not in edge or "target" not in edge:
            raise InputError(f"edge #{k} needs 'source' and 'target'")
        for end, bucket in (("source", src), ("target", dst)):
            key = _node_id(edge[end], f"edge #{k}: {end}")
            if key not in index:
                raise InputError(f"edge #{k}: {end} {reprlib.repr(key)} is not a node of the graph")
            bucket.append(index[key])
        edge_records.append(edge)

    def edge_label(k: int) -> str:
        return f"edge {edge_records[k]['source']!r} -> {edge_records[k]['target']!r}"

    return Graph(
        len(ids),
        src,
        dst,
        mem=mem,
        param_mem=param,
        op=ops,
        names=ids,
        name=name,
        node_data=_shared(node_records, RESERVED_NODE_KEYS, lambda i: f"node {ids[i]!r}"),
        edge_data=_shared(edge_records, RESERVED_EDGE_KEYS, edge_label),
    )


def graph_to_records(graph: Graph) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and edge records of ``graph`` (node order kept, ids as in the source file).

    ``(n, k)`` node data and ``(e, k)`` edge data are written as a list per record.
    """
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
    edges = []
    for e, (s, t) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        record = {"source": graph.names[s], "target": graph.names[t]}
        for key, values in graph.edge_data.items():
            record[key] = _plain(values[e])
        edges.append(record)
    return nodes, edges


def _plain(x: float | np.ndarray) -> int | float | list[int | float]:
    """Write integral sizes (bytes) as JSON integers, others as floats; a row as a list."""
    if isinstance(x, np.ndarray):
        return [_plain(item) for item in x.tolist()]
    value = float(x)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value
