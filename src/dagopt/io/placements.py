"""Placement files: ``{"graph", "graph_hash", "method", "objective", "devices": {node id:
device}, "order": [node ids], "makespan", "peak_memory": [per device], "feasible",
"seconds", "proved_optimal"}`` (``proved_optimal``: true, false, or null when nothing
is claimed; ``peak_memory``: null under a cost model that does not observe memory), and
from a latency environment (``dagopt place MODEL --env``) ``"environment": {"env",
"devices": [names], "latency": SIMULATED, PREDICTED from a profile, or MEASURED}``.

``graph`` is the graph's name and ``graph_hash`` its structure (``graph_hash``: node ids
and edges), so that ``read_placement`` refuses a placement made for another graph; a
file without ``graph_hash`` (written before it existed) is matched by name. A placement
file does not record the devices (count, speeds, memory): whoever evaluates it must
give the devices it was made for.

JSON object keys are strings, so ``devices`` is keyed by ``str(node id)``; ``order``
holds the node ids exactly as in the graph file. The key is unambiguous because a
``Graph`` refuses two ids that are equal as text, such as ``1`` and ``"1"``.
"""

import hashlib
import json
import os
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file
from dagopt.io.orders import node_indices


class PlacementRecord(Protocol):
    """What a placement file stores (``dagopt.place.Placement`` has it): the reader and
    writer sit below the placers and do not import them."""

    device_of: np.ndarray
    order: np.ndarray
    method: str
    objective: str
    makespan: float
    peak_memory: np.ndarray
    feasible: bool
    seconds: float
    proved_optimal: bool | None


@dataclass(frozen=True)
class PlacementFile:
    """A placement file's device per op and order, as node indices of its graph."""

    graph: str
    method: str
    objective: str
    device_of: np.ndarray
    order: np.ndarray


def graph_hash(graph: Graph) -> str:
    """A SHA-256 of ``graph``'s structure: its node ids (as text) and its edges."""
    src, dst = graph.edges
    text = json.dumps([[str(name) for name in graph.names], src.tolist(), dst.tolist()])
    return hashlib.sha256(text.encode()).hexdigest()


def _check_graph(file: Path, data: dict, graph: Graph) -> None:
    """``InputError`` unless the placement in ``data`` was made for ``graph``: the same
    ``graph_hash`` or, in a file without one, the same graph name."""
    recorded = data.get("graph_hash")
    name = data.get("graph")
    if recorded is not None:
        if recorded == graph_hash(graph):
            return
    elif name is None or name == graph.name:
        return
    if name == graph.name:
        raise InputError(
            f"{file}: the placement was made for another graph named {graph.name!r} "
            "(its graph_hash differs: other node ids or edges)"
        )
    raise InputError(
        f"{file}: the placement was made for graph {reprlib.repr(name)}, not for graph "
        f"{graph.name!r} (a different {'structure' if recorded is not None else 'name'})"
    )


def write_placement(
    path: str | os.PathLike,
    graph: Graph,
    placement: PlacementRecord,
    environment: dict | None = None,
) -> Path:
    """Write ``placement`` of ``graph`` (node-indexed arrays) as a placement file,
    atomically; ``environment`` (a latency environment's ``env``, device names and what
    its ``makespan`` is: SIMULATED, PREDICTED or MEASURED) is kept beside it."""
    document = {
        "graph": graph.name,
        "graph_hash": graph_hash(graph),
        "method": placement.method,
        "objective": placement.objective,
        "devices": {str(graph.names[v]): int(k) for v, k in enumerate(placement.device_of)},
        "order": [graph.names[v] for v in placement.order.tolist()],
        "makespan": float(placement.makespan),
        "peak_memory": None
        if placement.peak_memory is None
        else [float(p) for p in placement.peak_memory],
        "feasible": bool(placement.feasible),
        "seconds": float(placement.seconds),
        "proved_optimal": placement.proved_optimal,
    }
    if environment is not None:
        document["environment"] = environment
    return write_text_atomic(path, json.dumps(document, indent=1))


def read_placement(path: str | os.PathLike, graph: Graph, num_devices: int) -> PlacementFile:
    """Read a placement file for ``graph`` on ``num_devices`` devices.

    The file must have been made for ``graph`` (module docstring), every op needs a
    device in ``0..num_devices-1`` and the order must name every op once; anything else
    is an ``InputError`` naming the first bad entry. Whether the order is topological is
    checked by the cost model that evaluates it.
    """
    file = Path(path)
    data = read_json_file(file)
    if not (
        isinstance(data, dict)
        and isinstance(data.get("devices"), dict)
        and isinstance(data.get("order"), list)
    ):
        raise InputError(
            f"{file}: not a placement file (expected an object with a 'devices' object "
            "and an 'order' list)"
        )
    _check_graph(file, data, graph)
    key_of = {str(name): v for v, name in enumerate(graph.names)}
    device_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    for key, device in data["devices"].items():
        if key not in key_of:
            raise InputError(f"{file}: node {reprlib.repr(key)} is not in graph {graph.name!r}")
        if isinstance(device, bool) or not isinstance(device, int):
            raise InputError(
                f"{file}: node {key!r} has device {reprlib.repr(device)}, not an integer"
            )
        if not 0 <= device < num_devices:
            raise InputError(
                f"{file}: node {key!r} is placed on device {device}, "
                f"but the devices are 0..{num_devices - 1} (a placement file does not "
                "record the devices: give the --devices it was placed with)"
            )
        device_of[key_of[key]] = device
    missing = np.flatnonzero(device_of < 0)
    if missing.size:
        raise InputError(f"{file}: node {graph.names[missing[0]]!r} has no device")
    return PlacementFile(
        graph=str(data.get("graph", "")),
        method=str(data.get("method", "")),
        objective=str(data.get("objective", "")),
        device_of=device_of,
        order=node_indices(file, graph, data["order"]),
    )
