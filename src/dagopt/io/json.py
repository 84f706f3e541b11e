"""The canonical graph file: networkx node-link JSON.

``{"directed": true, "multigraph": false, "graph": {"name": ...},
"nodes": [{"id", "mem", "param_mem"?, "op"?, ...}], "edges": [{"source", "target", ...}]}``;
``"links"`` is accepted as a synonym of ``"edges"``. The ``...`` are numeric node and
edge attributes (``Graph.node_data``, ``Graph.edge_data``): a number, or a list of
numbers for ``(n, k)`` data, per node or edge (``dagopt.io.records``).
"""

import json
import os
from pathlib import Path
from typing import Any

from dagopt.errors import GraphError, InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.records import graph_from_records, graph_to_records


def read_json_file(path: str | os.PathLike) -> Any:
    """Parse a JSON file, turning every failure into a one-line ``InputError``: a missing
    or unreadable file, text that is not UTF-8, invalid JSON, nesting deeper than Python's
    recursion limit, an integer longer than Python converts (4300 digits)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as exc:
        raise InputError(f"{file}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"{file}: cannot read (not UTF-8 text)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{file}: JSON nested too deeply") from None
    except ValueError as exc:  # an integer past int's digit limit
        reason = str(exc).split(":")[0]
        raise InputError(f"{file}: unreadable JSON number ({reason})") from None


def graph_from_node_link(data: Any, *, default_name: str = "graph") -> Graph:
    """Build a ``Graph`` from a parsed node-link document."""
    if not isinstance(data, dict) or "nodes" not in data:
        raise InputError("not a node-link graph: expected an object with 'nodes' and 'edges'")
    if data.get("directed") is False:
        raise InputError("graph is undirected ('directed': false); dagopt needs a DAG")
    if data.get("multigraph"):
        raise InputError("multigraphs are not supported ('multigraph': true)")
    if "edges" in data and "links" in data:
        raise InputError('a graph file names its edges once: "edges" or "links", not both')
    edges = data.get("edges", data.get("links"))
    if edges is None:
        raise InputError("node-link graph has no 'edges' (or 'links') list")
    if not isinstance(data["nodes"], list) or not isinstance(edges, list):
        raise InputError("'nodes' and 'edges' must be lists")
    meta = data.get("graph") if isinstance(data.get("graph"), dict) else {}
    name = str(meta.get("name") or default_name)
    return graph_from_records(data["nodes"], edges, name=name)


def read_graph_json(path: str | os.PathLike) -> Graph:
    """Read a node-link JSON graph file; errors name the file and the problem in one line."""
    file = Path(path)
    data = read_json_file(file)
    try:
        return graph_from_node_link(data, default_name=file.stem)
    except (InputError, GraphError) as exc:
        raise type(exc)(f"{file}: {exc}") from None


def graph_to_node_link(graph: Graph) -> dict[str, Any]:
    """The node-link document of ``graph`` (readable by ``networkx.node_link_graph``)."""
    nodes, edges = graph_to_records(graph)
    return {
        "directed": True,
        "multigraph": False,
        "graph": {"name": graph.name},
        "nodes": nodes,
        "edges": edges,
    }


def write_graph_json(graph: Graph, path: str | os.PathLike) -> Path:
    """Write ``graph`` as node-link JSON, atomically."""
    return write_text_atomic(path, json.dumps(graph_to_node_link(graph), separators=(",", ":")))
