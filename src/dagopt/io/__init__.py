"""Readers and writers of graph and order files; ``load`` dispatches on the file suffix."""

import os
from collections.abc import Callable
from pathlib import Path

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.shares import join_shares
from dagopt.io.json import read_graph_json, write_graph_json
from dagopt.io.orders import OrderFile, read_order, write_order
from dagopt.io.placements import PlacementFile, read_placement, write_placement
from dagopt.io.tpugraphs import read_tpugraphs_graph


def _read_onnx_graph(path: Path) -> Graph:
    """The ``Graph`` of an ONNX model (``dagopt.io.onnx``, imported on first use)."""
    from dagopt.io.onnx import read_onnx

    return read_onnx(path).graph


def _read_openvino_graph(path: Path) -> Graph:
    """The ``Graph`` of an OpenVINO IR (``dagopt.io.openvino``, imported on first use)."""
    from dagopt.io.openvino import read_openvino

    return read_openvino(path)


def _read_torch_program_graph(path: Path) -> Graph:
    """The ``Graph`` of a saved PyTorch program as saved (``dagopt.io.torch_program``,
    imported on first use)."""
    from dagopt.io.torch_program import read_exported_program

    return read_exported_program(path).torch_graph.graph


READERS: dict[str, Callable[[Path], Graph]] = {
    ".json": read_graph_json,
    ".onnx": _read_onnx_graph,
    ".npz": read_tpugraphs_graph,
    ".pt2": _read_torch_program_graph,
    ".xml": _read_openvino_graph,
}


def load(path: str | os.PathLike) -> Graph:
    """Read a graph file of any supported format, chosen by its suffix."""
    file = Path(path)
    if file.is_dir():
        raise InputError(f"{file}: is a directory, not a graph file")
    if not file.exists():
        raise InputError(f"{file}: no such file")
    reader = READERS.get(file.suffix.lower())
    if reader is None:
        known = ", ".join(sorted(READERS))
        raise InputError(f"{file}: unsupported graph format {file.suffix!r} (supported: {known})")
    return reader(file)


def load_operators(path: str | os.PathLike) -> Graph:
    """``load``, with a PyTorch graph's share nodes (split outputs, the importers'
    default) joined to their operators (``dagopt.graph.shares.join_shares``): one node
    per operator, the graph a placement places."""
    return join_shares(load(path))


__all__ = [
    "OrderFile",
    "PlacementFile",
    "load",
    "load_operators",
    "read_graph_json",
    "read_order",
    "read_placement",
    "write_graph_json",
    "write_order",
    "write_placement",
]
