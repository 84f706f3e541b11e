"""Order files: ``{"graph", "method", "order": [node ids], "peak_memory", "keep_outputs",
"seconds", "proved_optimal"}`` with node ids exactly as in the graph file;
``keep_outputs`` is whether ``peak_memory`` keeps the graph outputs alive to the end."""

import json
import math
import os
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _finite(value: Any) -> float | None:
    """``value`` as a float if it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return number if math.isfinite(number) else None


def read_order(path: str | os.PathLike, graph: Graph) -> OrderFile:
    """Read an order file and map its node ids to indices of ``graph``.

    Unknown ids are an ``InputError``; whether the order is a valid topological
    order is checked by the objective that evaluates it. The recorded ``peak_memory``
    and ``seconds`` are informative only: anything but a finite number reads as None,
    and ``keep_outputs`` and ``proved_optimal`` anything but a boolean.
    """
    file = Path(path)
    data = read_json_file(file)
    if not isinstance(data, dict) or not isinstance(data.get("order"), list):
        raise InputError(f"{file}: not an order file (expected an object with an 'order' list)")
    order = node_indices(file, graph, data["order"])
    keep, proved = data.get("keep_outputs"), data.get("proved_optimal")
    return OrderFile(
        graph=str(data.get("graph", "")),
        method=str(data.get("method", "")),
        order=order,
        peak_memory=_finite(data.get("peak_memory")),
        keep_outputs=keep if isinstance(keep, bool) else None,
        seconds=_finite(data.get("seconds")),
        proved_optimal=proved if isinstance(proved, bool) else None,
    )
