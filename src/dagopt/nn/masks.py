"""The seven attention masks of Topoformer (paper 000, section 4.1).

Each attention-head group of a Topoformer layer only attends along one graph induced
by the DAG ``G``: its transitive reduction TR, ``G`` minus TR, the transitive closure TC
minus ``G``, the reversed version of each of those three, and the (undirected) graph of
incomparable pairs. Together they partition all ordered pairs of distinct nodes, so the
union of the seven groups is a fully connected transformer (eq. 4).

Convention: ``masks[k, i, j]`` is True when query ``i`` may attend to key ``j`` in graph
``k``. Messages travel along the edges, so for a forward edge ``u -> v`` node ``v``
(the query) attends to ``u`` (the key): ``masks[0, v, u]`` is True for a TR edge, and
the reversed graphs hold ``masks[3, u, v]``.

``sparse_groups`` gives the four sparse graphs (TR, G-TR and their reverses) as edge
lists instead, ``O(m)`` entries, for the sparse attention of ``topoformer-sparse``; the
other three (TC-G, its reverse, incomparable) have up to ``n^2`` pairs by nature.
"""

import numpy as np

from dagopt.graph import Graph
from dagopt.resources import check_pairs_fit

#: Names of the seven graphs, in the order of the first axis of ``topological_masks``.
MASK_NAMES = (
    "TR",
    "G-TR",
    "TC-G",
    "TR reversed",
    "G-TR reversed",
    "TC-G reversed",
    "incomparable",
)


#: The graphs of ``MASK_NAMES`` that are subgraphs of ``G`` or its reverse (``O(m)``
#: pairs): the groups of ``sparse_groups`` and of the ``topoformer-sparse`` encoder.
SPARSE_GROUPS = (0, 1, 3, 4)

#: Bytes per ordered node pair ``topological_masks`` holds at its peak: the one-byte
#: closure, adjacency and reduction matrices and their combinations beside the seven
#: stacked masks (measured: 13.3 at 3,000 and 6,000 nodes).
MASK_BYTES_PER_PAIR = 14
#: What to do about a graph too large for any Topoformer (its positional encodings, or the
#: sparse model's edge lists, do not fit).
NO_NETWORK_ALTERNATIVE = "order it with a method without a network (anytime, inductor)"
#: What to do about a graph whose dense masks do not fit.
DENSE_ALTERNATIVE = (
    "order larger graphs with the sparse model (--checkpoint topoformer-sparse-ordering) or "
    "a method without attention (anytime, inductor)"
)


def _adjacency(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    matrix = np.zeros((num_nodes, num_nodes), dtype=bool)
    matrix[src, dst] = True
    return matrix


def topological_masks(graph: Graph) -> np.ndarray:
    """Boolean ``(7, n, n)`` masks, ``[k, i, j]`` = "query i may attend to key j" in graph k.

    Graph order: see ``MASK_NAMES``. Every ordered pair ``(i, j)``, ``i != j``, lies in
    exactly one mask; the diagonal is empty (the attention layer adds self-attention).
    Built from ``graph.closure_matrix`` and ``graph.transitive_reduction`` with whole-
    matrix numpy operations. They are dense, ``7 n^2`` bytes: a graph whose masks would
    not fit in the available memory raises a one-line ``SolverError`` before any is built.
    """
    n = graph.num_nodes
    check_pairs_fit(
        n, MASK_BYTES_PER_PAIR, f"the Topoformer masks of {n:,} nodes", DENSE_ALTERNATIVE
    )
    reach = graph.closure_matrix  # [u, v] iff a path u -> v
    dag = _adjacency(n, *graph.edges)
    reduction = _adjacency(n, *graph.transitive_reduction)
    redundant = dag ^ reduction  # G minus TR (TR is a subgraph of G)
    implied = reach ^ dag  # TC minus G (G is a subgraph of TC)
    incomparable = ~(reach | reach.T)
    np.fill_diagonal(incomparable, False)
    # Directed graph X[u, v] (edge u -> v) becomes the forward mask X.T: v attends to u.
    return np.stack(
        [reduction.T, redundant.T, implied.T, reduction, redundant, implied, incomparable]
    )


def sparse_groups(graph: Graph) -> tuple[np.ndarray, ...]:
    """The graphs ``SPARSE_GROUPS`` of ``MASK_NAMES`` as int64 ``(2, E_k)`` edge lists
    ``[query, key]``, each followed by the ``n`` self loops (the dense attention bias
    allows the diagonal too): row ``k`` of ``sparse_groups`` holds the pairs
    ``masks[SPARSE_GROUPS[k]]`` marks, plus ``(i, i)``.

    Built from ``graph.transitive_reduction`` (block-wise, no ``n x n`` array) and
    ``graph.edges``; then ``O(m)``.
    """
    n = graph.num_nodes
    src, dst = (np.asarray(a, dtype=np.int64) for a in graph.edges)
    tr_src, tr_dst = (np.asarray(a, dtype=np.int64) for a in graph.transitive_reduction)
    in_reduction = np.isin(src * n + dst, tr_src * n + tr_dst, assume_unique=True)
    loops = np.arange(n, dtype=np.int64)
    redundant_src, redundant_dst = src[~in_reduction], dst[~in_reduction]
    pairs = [
        (tr_dst, tr_src),  # TR: v attends to u
        (redundant_dst, redundant_src),  # G - TR
        (tr_src, tr_dst),  # TR reversed: u attends to v
        (redundant_src, redundant_dst),  # G - TR reversed
    ]
    return tuple(
        np.stack([np.concatenate([query, loops]), np.concatenate([key, loops])])
        for query, key in pairs
    )
