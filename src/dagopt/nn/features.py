"""Node features and model inputs of paper 000 (appendix C.5).

Every node gets eight structural features (memory sizes, degrees, hop distances),
each normalised by its maximum over the graph so that it lies in ``[0, 1]``, followed
by Laplacian positional encodings (Dwivedi and Bresson, the paper's reference [35]).
``graph_inputs`` bundles them with the seven dense Topoformer masks (or, for the sparse
encoder, the four sparse graphs as edge lists) and the edge list into the tensors every
encoder of ``dagopt.nn.encoders`` reads.
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh
from threadpoolctl import threadpool_limits

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.paths import csr_rows, longest_paths
from dagopt.nn.masks import NO_NETWORK_ALTERNATIVE, sparse_groups, topological_masks
from dagopt.resources import check_fits, check_pairs_fit

#: Column names of ``node_features``.
FEATURE_NAMES = (
    "mem",
    "param_mem",
    "in_degree",
    "out_degree",
    "min_hops_from_source",
    "max_hops_from_source",
    "min_hops_to_sink",
    "max_hops_to_sink",
)


#: Bytes per node pair of the dense ``eigh``: the dense Laplacian, LAPACK's copy and
#: workspace and the eigenvectors, all float64 (measured: 25 to 30).
EIGH_BYTES_PER_PAIR = 32
#: Bytes per node and eigenvector of ARPACK's ``eigsh``: its Lanczos basis of about
#: ``2 count + 1`` vectors, its workspace and the eigenvectors, float64.
ARPACK_BYTES_PER_ENTRY = 40
#: Positional encodings: ``"laplacian"`` (ARPACK shift-invert, the shipped models'),
#: ``"laplacian-fast"`` (ARPACK on ``2 I - L`` with a tolerance and an iteration cap).
PE_KINDS = ("laplacian", "laplacian-fast")
#: ``"laplacian-fast"``: ARPACK's relative tolerance and its cap on restarts.
FAST_TOLERANCE = 1e-4
FAST_MAX_RESTARTS = 300
#: How ``graph_inputs`` hands the Topoformer graphs over: dense ``(7, n, n)`` masks, or
#: ``sparse_groups`` edge lists (``topoformer-sparse``).
ATTENTION_INPUTS = ("dense", "sparse")


def _hops(ptr: np.ndarray, idx: np.ndarray, degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min and max hop distance from the nodes of zero ``degree``, walking CSR ``ptr/idx``.

    The minimum is a multi-source breadth-first search; the maximum (longest path) is
    the Kahn generation of each node: a node joins the frontier once all of its
    in-neighbours have been removed. Both loops run once per level, each level in numpy.
    """
    n = degree.size
    starts = np.flatnonzero(degree == 0)
    shortest = np.full(n, -1, dtype=np.int64)
    shortest[starts] = 0
    frontier, level = starts, 0
    while frontier.size:
        level += 1
        reached = csr_rows(ptr, idx, frontier)
        frontier = np.unique(reached[shortest[reached] < 0])
        shortest[frontier] = level
    longest = longest_paths(ptr, idx, degree)[0]
    return shortest, longest


def _normalise_columns(features: np.ndarray) -> np.ndarray:
    """Divide each column by its maximum (C.5); an all-zero column stays zero."""
    top = features.max(axis=0, initial=0.0)
    return np.divide(features, top, out=np.zeros_like(features), where=top > 0)


def node_features(graph: Graph) -> np.ndarray:
    """Float32 ``(n, 8)`` features of appendix C.5, columns ``FEATURE_NAMES``.

    Output and parameter memory, in- and out-degree, and the min / max hop distance
    from the sources (over all paths from any source; a source has 0) and to the sinks,
    each column divided by its maximum over the graph.
    """
    from_min, from_max = _hops(graph.succ_ptr, graph.succ_idx, graph.in_degree)
    to_min, to_max = _hops(graph.pred_ptr, graph.pred_idx, graph.out_degree)
    columns = [
        graph.mem,
        graph.param_mem,
        graph.in_degree,
        graph.out_degree,
        from_min,
        from_max,
        to_min,
        to_max,
    ]
    features = np.stack(columns, axis=1).astype(np.float64).reshape(graph.num_nodes, 8)
    return _normalise_columns(features).astype(np.float32)


def _normalised_laplacian(graph: Graph) -> sparse.csc_array:
    """``D^-1/2 (D - A) D^-1/2`` of the undirected graph; an isolated node has a zero row."""
    n = graph.num_nodes
    src, dst = graph.edges
    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    degree = np.bincount(rows, minlength=n).astype(np.float64)
    scale = np.divide(1.0, np.sqrt(degree), out=np.zeros(n), where=degree > 0)
    off_diagonal = sparse.coo_array((-scale[rows] * scale[cols], (rows, cols)), shape=(n, n))
    return (off_diagonal + sparse.diags_array((degree > 0).astype(np.float64))).tocsc()


def _smallest_eigenvectors(laplacian: sparse.csc_array, count: int, fast: bool) -> np.ndarray:
    """Eigenvectors of the ``count`` smallest eigenvalues, sorted by eigenvalue.

    ARPACK in shift-invert mode around a point just below 0 (scales better than a
    dense ``eigh``); dense ``eigh`` where ``count`` is not small against ``n``: tiny
    graphs, and graphs of many connected components (``count`` includes one vector per
    component). With ``fast``, ARPACK without shift-invert: the largest eigenvalues
    ``2 - lambda`` of ``2 I - L`` (the spectrum of ``L`` lies in ``[0, 2]``), to the
    relative tolerance ``FAST_TOLERANCE`` within ``FAST_MAX_RESTARTS`` restarts, so
    only sparse products and no factorisation (1.2 s at 20k nodes,
    ``benchmarks/neural_scale.py``), its BLAS on one thread (its calls are small:
    more threads mostly wait on a busy machine); vectors that have not converged by
    then are left out (zero columns). Either way a computation that would not fit in
    the available memory raises a one-line ``SolverError`` first.
    """
    n = laplacian.shape[0]
    what = f"the Laplacian positional encodings of {n:,} nodes ({count:,} eigenvectors)"
    if count >= n // 2:
        check_pairs_fit(n, EIGH_BYTES_PER_PAIR, what, NO_NETWORK_ALTERNATIVE)
        return np.linalg.eigh(laplacian.toarray())[1][:, :count]
    check_fits(ARPACK_BYTES_PER_ENTRY * n * (count + 20), what, NO_NETWORK_ALTERNATIVE)
    start = np.random.default_rng(0).standard_normal(n)  # fixed Lanczos start: deterministic
    if not fast:
        values, vectors = eigsh(laplacian, k=count, sigma=-0.01, which="LM", v0=start)
        return vectors[:, np.argsort(values)]
    shifted = 2.0 * sparse.identity(n, format="csr") - laplacian.tocsr()
    try:
        with threadpool_limits(1):  # small BLAS calls: threads only wait on a busy machine
            values, vectors = eigsh(
                shifted,
                k=count,
                which="LA",
                v0=start,
                tol=FAST_TOLERANCE,
                maxiter=FAST_MAX_RESTARTS,
            )
    except ArpackNoConvergence as partial:
        values, vectors = partial.eigenvalues, partial.eigenvectors
    return vectors[:, np.argsort(-values)]


def laplacian_pe(graph: Graph, dim: int = 20, *, kind: str = "laplacian") -> np.ndarray:
    """Float32 ``(n, dim)`` Laplacian positional encodings (C.5, reference [35]).

    Eigenvectors of the symmetric normalised Laplacian ``D^-1/2 (D - A) D^-1/2`` of the
    undirected graph (an isolated node has a zero row), sorted by eigenvalue. The first
    ``c`` eigenvectors, one of eigenvalue 0 per connected component, are skipped and the
    next ``dim`` kept; columns beyond the ``n - c`` available ones are zero. Each vector's
    sign is fixed so that its largest-magnitude entry is positive. ``kind`` (``PE_KINDS``)
    picks the eigensolver of ``_smallest_eigenvectors``.
    """
    if kind not in PE_KINDS:
        raise InputError(f"unknown positional encoding {kind!r} (choose from {PE_KINDS})")
    n = graph.num_nodes
    pe = np.zeros((n, dim), dtype=np.float32)
    if dim == 0 or n == 0:
        return pe
    laplacian = _normalised_laplacian(graph)
    skip = connected_components(laplacian, directed=False, return_labels=False)
    kept = _smallest_eigenvectors(laplacian, min(n, skip + dim), kind == "laplacian-fast")
    kept = kept[:, skip:]
    peak = np.abs(kept).argmax(axis=0)
    kept = kept * np.sign(kept[peak, np.arange(kept.shape[1])])
    pe[:, : kept.shape[1]] = kept
    return pe


@dataclass(frozen=True)
class GraphInputs:
    """Tensors for one graph, as read by the encoders.

    ``x``: float32 ``(n, 8 + pe_dim)`` node features then positional encodings;
    ``masks``: bool ``(7, n, n)`` from ``topological_masks`` (query-by-key), or ``None``
    for sparse inputs;
    ``edge_index``: long ``(2, E)`` DAG edges ``src -> dst`` (PyG layout);
    ``groups``: for sparse inputs, the ``sparse_groups`` edge lists, long
    ``(2, E_k)`` ``[query, key]`` each; else ``None``.
    """

    x: torch.Tensor
    masks: torch.Tensor | None
    edge_index: torch.Tensor
    groups: tuple[torch.Tensor, ...] | None = None

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]


def graph_inputs(
    graph: Graph,
    *,
    pe_dim: int = 20,
    pe: str = "laplacian",
    attention: str = "dense",
    sign_flip: np.random.Generator | None = None,
) -> GraphInputs:
    """Featurise ``graph`` (C.5) and build its masks (section 4.1) as torch tensors.

    ``pe``: the positional encodings (``PE_KINDS``); ``attention``: ``"dense"`` builds
    the ``(7, n, n)`` masks, ``"sparse"`` only the ``sparse_groups`` edge lists
    (``O(m)``, for ``topoformer-sparse``). With ``sign_flip`` each positional-encoding
    column is multiplied by a random sign, the training augmentation of reference [35]
    (an eigenvector's sign is arbitrary).
    """
    if attention not in ATTENTION_INPUTS:
        raise InputError(f"attention inputs must be one of {ATTENTION_INPUTS}, got {attention!r}")
    pe_columns = laplacian_pe(graph, pe_dim, kind=pe)
    if sign_flip is not None:
        pe_columns *= sign_flip.choice(np.array([-1.0, 1.0], dtype=np.float32), size=pe_dim)
    x = np.concatenate([node_features(graph), pe_columns], axis=1)
    edge_index = np.stack(graph.edges).astype(np.int64).reshape(2, -1)
    dense = attention == "dense"
    return GraphInputs(
        x=torch.from_numpy(x),
        masks=torch.from_numpy(topological_masks(graph)) if dense else None,
        edge_index=torch.from_numpy(edge_index),
        groups=None if dense else tuple(map(torch.from_numpy, sparse_groups(graph))),
    )
