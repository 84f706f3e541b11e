"""Quotient graphs: a graph's nodes grouped, each group one node.

Two consumers group nodes: HSDAG's co-location coarsening (``dagopt.graph.coarsen``)
and joining a PyTorch graph's share nodes to their operators
(``dagopt.graph.shares.join_shares``). A group's edges are the edges between its nodes
and other groups' nodes; its extensive node data (``EXTENSIVE_DATA``) add up over its
nodes.
"""

import numpy as np

from dagopt.graph.core import Graph

#: Node data that add up over a group's nodes (seconds, FLOPs); other data are dropped.
EXTENSIVE_DATA = ("runtime", "flops")


def quotient_edges(graph: Graph, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct edges ``(src, dst)`` between the groups ``group[v]`` of ``graph``'s
    nodes (edges inside a group are dropped)."""
    src, dst = graph.edges
    crossing = group[src] != group[dst]
    pairs = np.unique(np.stack([group[src][crossing], group[dst][crossing]], axis=1), axis=0)
    return pairs[:, 0].reshape(-1), pairs[:, 1].reshape(-1)


def summed_node_data(graph: Graph, group: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """``graph``'s ``EXTENSIVE_DATA`` summed over each of the ``k`` groups (a value or a
    row per group)."""
    sums = {}
    for key in EXTENSIVE_DATA:
        if key in graph.node_data:
            data = graph.node_data[key]
            sums[key] = np.zeros((k, *data.shape[1:]))
            np.add.at(sums[key], group, data)
    return sums
