"""Share nodes: the extra output storages of a multi-output operator, one node each.

A PyTorch importer with ``split_outputs`` (``dagopt.io.torch.graph_from_module``) gives
each new storage of an operator after its first its own node, so that every storage
lives until its own last reader, as in a real run. Such a node is marked in the graph's
node data: ``SHARE_KEY`` is ``j`` for the share node of storage ``j`` and 0 for an
operator; it is named ``<operator>.<j>`` (``SHARE_SEPARATOR``). A graph without share
nodes has no ``SHARE_KEY`` data.

Orders keep share nodes (each holds its storage's lifetime); placement needs one node
per operator, and ``join_shares`` gives it that graph back.
"""

import numpy as np

from dagopt.errors import GraphError
from dagopt.graph.core import Graph
from dagopt.graph.quotient import quotient_edges, summed_node_data

#: The node-data key marking share nodes (kept in graph files like any node attribute).
SHARE_KEY = "share"
#: Joins an operator's name and an output index in the name of its share node; fx names
#: are Python identifiers, so no operator's name contains it.
SHARE_SEPARATOR = "."


def share_nodes(graph: Graph) -> np.ndarray:
    """Indices of ``graph``'s share nodes (empty when it has none)."""
    marks = graph.node_data.get(SHARE_KEY)
    if marks is None:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(np.asarray(marks) != 0)


def without_shares(graph: Graph, order: np.ndarray) -> np.ndarray:
    """``order`` (node indices of ``graph``) without its share nodes: the fx nodes in
    that order, as a program runs them (each operator creates its share storages)."""
    marks = graph.node_data.get(SHARE_KEY)
    return order if marks is None else order[np.asarray(marks)[order] == 0]


def _operator_of(graph: Graph, share: int) -> int:
    """The operator node of share node ``share``, found by name (``<operator>.<j>``)."""
    name = graph.names[share]
    operator = graph.index_of.get(str(name).rpartition(SHARE_SEPARATOR)[0])
    if operator is None or graph.node_data[SHARE_KEY][operator] != 0:
        raise GraphError(
            f"share node {name!r} of graph {graph.name!r} names no operator "
            f"(expected a node named <operator>{SHARE_SEPARATOR}<j>)"
        )
    return operator


def join_shares(graph: Graph) -> Graph:
    """``graph`` with every share node joined to its operator: one node per operator,
    whose ``mem`` is the bytes of all its new storages, its edges those of the operator
    and its shares, its runtimes and FLOPs summed (shares have none of their own);
    other node data and edge data are dropped. On an importer's graph this is the
    graph ``split_outputs=False`` gives (one node per fx node). A graph without share
    nodes is returned as is."""
    shares = share_nodes(graph)
    if not shares.size:
        return graph
    head = np.arange(graph.num_nodes)
    head[shares] = [_operator_of(graph, int(p)) for p in shares]
    operators = np.flatnonzero(head == np.arange(graph.num_nodes))
    number = np.full(graph.num_nodes, -1, dtype=np.int64)
    number[operators] = np.arange(operators.size)
    group = number[head]
    k = operators.size
    src, dst = quotient_edges(graph, group)
    return Graph(
        k,
        src,
        dst,
        mem=np.bincount(group, weights=graph.mem, minlength=k),
        param_mem=np.bincount(group, weights=graph.param_mem, minlength=k),
        op=[graph.op[v] for v in operators],
        names=[graph.names[v] for v in operators],
        name=graph.name,
        node_data=summed_node_data(graph, group, k) or None,
    )
