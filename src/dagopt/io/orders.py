"""Order files: ``{"graph", "method", "order": [node ids], "peak_memory", "keep_outputs",
"seconds", "proved_optimal"}`` with node ids exactly as in the graph file;
``keep_outputs`` is whether ``peak_memory`` keeps the graph outputs alive to the end."""

import json
import math
import os
import reprlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file
from dagopt.io.records import is_node_id


@dataclass(frozen=True)
class OrderFile:
    """The content of an order file, with the order as node indices of its graph."""

    graph: str
    method: str
    order: np.ndarray
    peak_memory: float | None
    keep_outputs: bool | None
    seconds: float | None
    proved_optimal: bool | None


def write_order(
    path: str | os.PathLike,
    graph: Graph,
    order: np.ndarray,
    *,
    method: str,
    peak_memory: float,
    keep_outputs: bool,
    seconds: float,
    proved_optimal: bool | None,
) -> Path:
    """Write an order (node indices of ``graph``) as an order file, atomically; its
    ``peak_memory`` was computed with ``keep_outputs``."""
    document = {
        "graph": graph.name,
        "method": method,
        "order": [graph.names[v] for v in np.asarray(order).tolist()],
        "peak_memory": float(peak_memory),
        "keep_outputs": bool(keep_outputs),
        "seconds": float(seconds),
        "proved_optimal": proved_optimal,
    }
    return write_text_atomic(path, json.dumps(document, indent=1))


def node_indices(file: Path, graph: Graph, node_ids: list) -> np.ndarray:
    """Indices in ``graph`` of the node ids listed in ``file``; an entry that is not an
    id (a list, an object, a number with a fraction...) or an unknown id is an error."""
    index = graph.index_of
    indices = []
    for node_id in node_ids:
        if not is_node_id(node_id):
            raise InputError(
                f"{file}: order entry {reprlib.repr(node_id)} is not a node id "
                "(an integer or a string)"
            )
        if node_id not in index:
            raise InputError(f"{file}: node {reprlib.repr(node_id)} is not in graph {graph.name!r}")
        indices.append(index[node_id])
    return np.asarray(indices, dtype=np.int64)


def _finite(file: Path, data: dict, key: str) -> float | None:
    """``data[key]`` as a float: absent or null is None, a finite number (not a bool) its
    value, anything else an ``InputError``."""
    value = data.get(key)
    if value is None:
        return None
    number = None
    if not isinstance(value, bool) and isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = None
    if number is None or not math.isfinite(number):
        raise InputError(
            f"{file}: {key!r} must be a finite number or null, got {reprlib.repr(value)}"
        )
    return number


def _flag(file: Path, data: dict, key: str) -> bool | None:
    """``data[key]``: absent or null is None, true or false itself, anything else an
    ``InputError``."""
    value = data.get(key)
    if value is not None and not isinstance(value, bool):
        raise InputError(f"{file}: {key!r} must be true, false or null, got {reprlib.repr(value)}")
    return value


def read_order(path: str | os.PathLike, graph: Graph) -> OrderFile:
    """Read an order file and map its node ids to indices of ``graph``.

    Unknown ids are an ``InputError``; whether the order is a valid topological
    order is checked by the objective that evaluates it. Only ``order`` is required;
    ``peak_memory`` and ``seconds`` must be finite numbers, ``keep_outputs`` and
    ``proved_optimal`` booleans (each may be null or absent), else an ``InputError``.
    """
    file = Path(path)
    data = read_json_file(file)
    if not isinstance(data, dict) or not isinstance(data.get("order"), list):
        raise InputError(f"{file}: not an order file (expected an object with an 'order' list)")
    order = node_indices(file, graph, data["order"])
    return OrderFile(
        graph=str(data.get("graph", "")),
        method=str(data.get("method", "")),
        order=order,
        peak_memory=_finite(file, data, "peak_memory"),
        keep_outputs=_flag(file, data, "keep_outputs"),
        seconds=_finite(file, data, "seconds"),
        proved_optimal=_flag(file, data, "proved_optimal"),
    )
