"""Share nodes: the extra output storages of a multi-output operator, one node each.

A PyTorch importer with ``split_outputs`` (``dagopt.io.torch.graph_from_module``) gives
each new storage of an operator after its first its own node, so that every storage
lives until its own last reader, as in a real run. Such a node is marked in the graph's
node data: ``SHARE_KEY`` is ``j`` for the share node of storage ``j`` and 0 for an
operator. A graph without share nodes has no ``SHARE_KEY`` data.
"""

import numpy as np

from dagopt.graph.core import Graph

#: The node-data key marking share nodes (kept in graph files like any node attribute).
SHARE_KEY = "share"


def share_nodes(graph: Graph) -> np.ndarray:
    """Indices of ``graph``'s share nodes (empty when it has none)."""
    marks = graph.node_data.get(SHARE_KEY)
    if marks is None:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(np.asarray(marks) != 0)
