"""HSDAG's initial node features (paper 004, section 2.3, eq. 3-5).

``x_v = T || S || Delta_in || Delta_out || D || PE``: the one-hot op type (eq. 3), the
padded output shape, one-hot in- and out-degrees, the fractal dimension (eq. 4) and the
sinusoidal encoding of the op's topological index (eq. 5). ``FeatureGroups`` switches
each group off for the ablations of Table 3. The vocabularies (op types, degree values,
shape length) are those of all the graphs a model sees (section 2.3: "among all the
input models"), so ``FeatureSpace.fit`` takes every graph first.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from dagopt.graph import Graph
from dagopt.io.openvino import SHAPE_KEY
from dagopt.resources import check_fits


def fractal_dimension(graph: Graph) -> np.ndarray:
    """``D(v)`` of eq. 4 for every op: the least-squares slope of ``log N(v, r)`` against
    ``log r`` over the distinct hop distances ``r`` from ``v`` (edges taken both ways),
    where ``N(v, r)`` counts the ops within distance ``r`` of ``v``, ``v`` included (the
    mass distribution of box-growing). 0 for an op that reaches fewer than two distinct
    distances (the slope is undefined). The middle op of a 201-op path gets 0.9-1.1 and
    the middle op of a 31 x 31 grid 1.5-2.1 (``tests/test_hsdag_features.py``): small
    radii (``N = 2r^2 + 2r + 1``) and the grid's border pull the fitted slope below the
    asymptotic dimensions 1 and 2.

    All hop distances are one ``(n, n)`` matrix (scipy's breadth-first
    ``shortest_path``), guarded by ``check_fits``."""
    n = graph.num_nodes
    check_fits(8.0 * n * n, f"the fractal dimension of {n:,} ops (all hop distances)",
               "switch the fractal feature off")  # fmt: skip
    src, dst = graph.edges
    adjacency = csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    hops = shortest_path(adjacency, directed=False, unweighted=True)
    reach = np.isfinite(hops) & (hops > 0)
    if not reach.any():
        return np.zeros(n)
    longest = int(hops[reach].max())
    rows, cols = np.nonzero(reach)
    histogram = np.zeros((n, longest + 1))
    np.add.at(histogram, (rows, hops[rows, cols].astype(np.int64)), 1.0)
    within = 1.0 + np.cumsum(histogram, axis=1)  # N(v, r): v and the ops up to r hops away
    present = histogram > 0  # the distances r_k of v
    present[:, 0] = False
    log_r = np.log(np.maximum(np.arange(longest + 1), 1))[None, :]
    log_n = np.log(within)
    count = present.sum(axis=1)
    mean_r = np.where(present, log_r, 0).sum(axis=1) / np.maximum(count, 1)
    mean_n = np.where(present, log_n, 0).sum(axis=1) / np.maximum(count, 1)
    dr = np.where(present, log_r - mean_r[:, None], 0.0)
    dn = np.where(present, log_n - mean_n[:, None], 0.0)
    denominator = (dr * dr).sum(axis=1)
    slope = np.divide((dr * dn).sum(axis=1), denominator, out=np.zeros(n), where=denominator > 0)
    return np.where(count >= 2, slope, 0.0)


def positional_encoding(graph: Graph, dim: int) -> np.ndarray:
    """Eq. 5: ``PE(pos, 2i) = sin(pos / 10000^(2i / d))``, ``PE(pos, 2i + 1) = cos(...)``
    of each op's 1-based index ``pos`` in the graph's topological order; ``(n, dim)``."""
    pos = np.empty(graph.num_nodes)
    pos[graph.topological_order] = np.arange(1, graph.num_nodes + 1)
    k = np.arange(dim)
    angle = pos[:, None] / 10000.0 ** ((k - k % 2) / dim)[None, :]
    return np.where(k % 2 == 0, np.sin(angle), np.cos(angle))


@dataclass(frozen=True)
class FeatureGroups:
    """Which groups of section 2.3 the features hold (all on: the paper's full model;
    Table 3 switches one off at a time)."""

    op_type: bool = True
    output_shape: bool = True
    degrees: bool = True
    fractal: bool = True
    positional: bool = True
    positional_dim: int = 16


@dataclass(frozen=True)
class FeatureSpace:
    """The vocabularies of the one-hot groups and the padded shape length, fitted on the
    graphs a model trains and runs on (``fit``)."""

    op_types: tuple[str, ...]
    in_degrees: tuple[int, ...]
    out_degrees: tuple[int, ...]
    shape_length: int
    groups: FeatureGroups = field(default_factory=FeatureGroups)

    @classmethod
    def fit(cls, graphs: list[Graph], groups: FeatureGroups | None = None) -> "FeatureSpace":
        """The vocabularies of ``graphs`` (op types sorted, ``""`` for an untyped op)."""
        lengths = [g.node_data[SHAPE_KEY].shape[1] for g in graphs if SHAPE_KEY in g.node_data]
        return cls(
            op_types=tuple(sorted({op or "" for g in graphs for op in g.op})),
            in_degrees=tuple(sorted({int(d) for g in graphs for d in g.in_degree})),
            out_degrees=tuple(sorted({int(d) for g in graphs for d in g.out_degree})),
            shape_length=max(lengths, default=0),
            groups=groups or FeatureGroups(),
        )

    def features(self, graph: Graph) -> np.ndarray:
        """``X^(0)`` of ``graph``, float32 ``(n, d)``: the switched-on groups concatenated
        in the order of section 2.3. A value outside the fitted vocabularies gets an
        all-zero one-hot."""
        g, n, parts = self.groups, graph.num_nodes, []
        if g.op_type:
            parts.append(_one_hot([op or "" for op in graph.op], self.op_types))
        if g.output_shape:
            shape = np.zeros((n, self.shape_length))
            if SHAPE_KEY in graph.node_data:
                given = graph.node_data[SHAPE_KEY][:, : self.shape_length]
                shape[:, : given.shape[1]] = given
            parts.append(np.log1p(np.maximum(shape, 0.0)))
        if g.degrees:
            parts.append(_one_hot(graph.in_degree.tolist(), self.in_degrees))
            parts.append(_one_hot(graph.out_degree.tolist(), self.out_degrees))
        if g.fractal:
            parts.append(fractal_dimension(graph)[:, None])
        if g.positional:
            parts.append(positional_encoding(graph, g.positional_dim))
        return np.concatenate([np.zeros((n, 0)), *parts], axis=1).astype(np.float32)


def _one_hot(values: list, vocabulary: tuple) -> np.ndarray:
    index = {value: i for i, value in enumerate(vocabulary)}
    out = np.zeros((len(values), len(vocabulary)))
    for row, value in enumerate(values):
        if value in index:
            out[row, index[value]] = 1.0
    return out


__all__ = [
    "SHAPE_KEY",
    "FeatureGroups",
    "FeatureSpace",
    "fractal_dimension",
    "positional_encoding",
]
