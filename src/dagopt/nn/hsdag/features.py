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
from numba import njit

from dagopt.graph import Graph
from dagopt.io.openvino import SHAPE_KEY


def fractal_dimension(graph: Graph) -> np.ndarray:
    """``D(v)`` of eq. 4 for every op: the least-squares slope of ``log N(v, r)`` against
    ``log r`` over the distinct hop distances ``r`` from ``v`` (edges taken both ways),
    where ``N(v, r)`` counts the ops within distance ``r`` of ``v``, ``v`` included (the
    mass distribution of box-growing). 0 for an op that reaches fewer than two distinct
    distances (the slope is undefined). The middle op of a 201-op path gets 0.9-1.1 and
    the middle op of a 31 x 31 grid 1.5-2.1 (``tests/test_hsdag_features.py``): small
    radii (``N = 2r^2 + 2r + 1``) and the grid's border pull the fitted slope below the
    asymptotic dimensions 1 and 2.

    One breadth-first search per op (``_fractal_slopes``): O(n (n + m)) time, O(n + m)
    memory (all hop distances as an ``(n, n)`` matrix, 8 n^2 bytes, made up most of
    hsdag's 56.8 s on the 18,545-op graph of docs/hsdag.md)."""
    return _fractal_slopes(graph.succ_ptr, graph.succ_idx, graph.pred_ptr, graph.pred_idx)


@njit(cache=True)
def _fractal_slopes(succ_ptr, succ_idx, pred_ptr, pred_idx):
    """``D(v)`` (``fractal_dimension``), edges taken both ways (successor and
    predecessor CSRs): a BFS from each op gives the counts per distance, contiguous from
    1 to the farthest, then the two-pass least-squares slope over the points
    ``(log r, log N(v, r))``."""
    n = succ_ptr.size - 1
    out = np.zeros(n)
    dist = np.full(n, -1, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    within = np.empty(n + 1)  # N(v, r) for r = 1..farthest
    for v in range(n):
        dist[v], queue[0], head, tail = 0, v, 0, 1
        while head < tail:
            u = queue[head]
            head += 1
            for ptr, idx in ((succ_ptr, succ_idx), (pred_ptr, pred_idx)):
                for k in range(ptr[u], ptr[u + 1]):
                    w = idx[k]
                    if dist[w] < 0:
                        dist[w] = dist[u] + 1
                        queue[tail] = w
                        tail += 1
        farthest = dist[queue[tail - 1]]
        for r in range(1, farthest + 1):
            within[r] = 0.0
        for i in range(1, tail):
            within[dist[queue[i]]] += 1.0
        total = 1.0
        for r in range(1, farthest + 1):
            total += within[r]
            within[r] = total
        for i in range(tail):
            dist[queue[i]] = -1
        if farthest < 2:
            continue
        mean_r, mean_n = 0.0, 0.0
        for r in range(1, farthest + 1):
            mean_r += np.log(r)
            mean_n += np.log(within[r])
        mean_r /= farthest
        mean_n /= farthest
        covariance, variance = 0.0, 0.0
        for r in range(1, farthest + 1):
            dr = np.log(r) - mean_r
            covariance += dr * (np.log(within[r]) - mean_n)
            variance += dr * dr
        if variance > 0:
            out[v] = covariance / variance
    return out


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
