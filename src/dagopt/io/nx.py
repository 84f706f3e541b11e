"""networkx interchange: ``networkx.DiGraph`` <-> ``Graph`` via node-link records."""

import networkx as nx

from dagopt.graph import Graph
from dagopt.io.records import graph_from_records, graph_to_records


def to_networkx(graph: Graph) -> nx.DiGraph:
    """A ``DiGraph`` with the file's node ids and attributes ``mem``, ``param_mem``, ``op``...

    ``node_data`` and ``edge_data`` become node and edge attributes (a list per node or
    edge for ``(n, k)`` arrays).
    """
    nodes, edges = graph_to_records(graph)
    g = nx.DiGraph(name=graph.name)
    g.add_nodes_from((record.pop("id"), record) for record in nodes)
    g.add_edges_from((e.pop("source"), e.pop("target"), e) for e in edges)
    return g


def from_networkx(g: nx.DiGraph, *, name: str | None = None) -> Graph:
    """Build a ``Graph`` from a ``DiGraph`` whose nodes carry ``mem`` (required).

    Numeric node and edge attributes (numbers, or lists of numbers of one length) that
    every node or every edge has are kept, as by ``graph_from_records``.
    """
    nodes = [{"id": node_id, **attrs} for node_id, attrs in g.nodes(data=True)]
    edges = [{**attrs, "source": s, "target": t} for s, t, attrs in g.edges(data=True)]
    return graph_from_records(nodes, edges, name=name or g.graph.get("name") or "graph")
