"""Layered random DAGs: the synthetic dataset of paper 000, appendix A.

A graph of ``|V|`` nodes is cut into layers (eq. 11-12, algorithm 1), adjacent layers
are joined by a cone of edges (eq. 13, algorithm 2), skip connections jump at least
one layer (eq. 14, algorithm 3), and every layer draws one output and one parameter
size from a Gaussian mixture restricted to the positive reals (eq. 16). Each reading
of an ambiguity in the appendix is listed in ``docs/generators.md``.

Nodes are numbered layer by layer, so ``0..n-1`` is a topological order, and
``graph.node_data["layer"]`` holds the layer index of every node.
"""

import math
import operator
from dataclasses import dataclass

import numpy as np

from dagopt.errors import GraphError, InputError
from dagopt.graph import Graph
from dagopt.resources import check_fits

#: Peak bytes of ``generate_layered`` per edge and per node (measured: peak RSS 0.71 GB
#: at 100,000 nodes and 6.4 million edges, 5.2 GB at 400,000 and 50 million: about
#: 105 bytes per edge; the edge arrays, their temporaries and the graph's CSR index).
BYTES_PER_EDGE, BYTES_PER_NODE = 128, 256

# Relative slack for ceil/floor of real numbers that are integers in exact arithmetic
# (e.g. 875 / 35 = 25 may come out as 24.999999999999996 in floating point).
_EPS = 1e-9


def _ceil(x: float) -> int:
    return math.ceil(x - _EPS * max(1.0, abs(x)))


def _floor(x: float) -> int:
    return math.floor(x + _EPS * max(1.0, abs(x)))


@dataclass(frozen=True)
class LayeredParams:
    """User parameters of appendix A; the defaults are the paper's values.

    ``width_range``: bounds of the width factor ``W ~ U(a, b)`` of eq. (11);
    ``sigma_n``: node-count variability of eq. (12); ``rho_e``: edge density of
    eq. (13); ``rho_s``: skip-connection density of eq. (14); ``gmm_*``: the Gaussian
    mixture of eq. (16) (weights are normalised to sum to one).
    """

    width_range: tuple[float, float] = (0.25, 0.5)
    sigma_n: float = 0.75
    rho_e: float = 0.2
    rho_s: float = 0.14
    gmm_weights: tuple[float, ...] = (0.3, 0.3, 0.3, 0.1)
    gmm_means: tuple[float, ...] = (0.5, 1.0, 3.0, 5.0)
    gmm_stds: tuple[float, ...] = (0.5, 1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        low, high = self.width_range
        if not 0 < low <= high <= 1:
            raise InputError(f"width_range must satisfy 0 < a <= b <= 1, got {self.width_range}")
        if not 0 <= self.sigma_n < math.inf:
            raise InputError(f"sigma_n must be finite and >= 0, got {self.sigma_n}")
        if not 0 <= self.rho_e <= 1:
            raise InputError(f"rho_e must lie in [0, 1], got {self.rho_e}")
        if not 0 <= self.rho_s < 1:
            raise InputError(f"rho_s must lie in [0, 1), got {self.rho_s}")
        sizes = {len(self.gmm_weights), len(self.gmm_means), len(self.gmm_stds)}
        if len(sizes) != 1 or 0 in sizes:
            raise InputError("gmm_weights, gmm_means and gmm_stds need the same, nonzero length")
        weights = np.asarray(self.gmm_weights, dtype=np.float64)
        if np.any(~np.isfinite(weights) | (weights < 0)):
            raise InputError(f"gmm_weights must be finite and >= 0, got {self.gmm_weights}")
        means = np.asarray(self.gmm_means, dtype=np.float64)
        stds = np.asarray(self.gmm_stds, dtype=np.float64)
        if not np.all(np.isfinite(means)):
            raise InputError(f"gmm_means must be finite, got {self.gmm_means}")
        if not np.all(np.isfinite(stds) & (stds > 0)):
            raise InputError(f"gmm_stds must be finite and > 0, got {self.gmm_stds}")
        # A weighted component with a positive mean keeps the redraw loop of eq. (16) short.
        if not np.any((weights > 0) & (means > 0)):
            raise InputError("the Gaussian mixture needs a weighted component with mean > 0")


PAPER_PARAMS = LayeredParams()


def _layer_sizes(num_nodes: int, params: LayeredParams, rng: np.random.Generator) -> np.ndarray:
    """Eq. (11)-(12) and algorithm 1: the number of nodes of each layer, summing to ``|V|``.

    Targets ``N_l`` are drawn until they cover ``|V|``; the last layer is truncated.
    Every target is at least ``lo``, so ``ceil(|V| / lo)`` draws always suffice.
    """
    width = rng.uniform(*params.width_range)
    num_layers = max(1, _ceil(math.sqrt(num_nodes * (1.0 / width - 1.0))))
    per_layer = num_nodes / num_layers
    lo = max(1, _ceil(per_layer * (1.0 - params.sigma_n)))
    hi = max(lo, _floor(per_layer * (1.0 + params.sigma_n)))
    targets = rng.integers(lo, hi, size=-(-num_nodes // lo), endpoint=True)
    ends = np.cumsum(targets)
    count = int(np.searchsorted(ends, num_nodes)) + 1
    sizes = targets[:count].copy()
    sizes[-1] -= ends[count - 1] - num_nodes
    return sizes


def _edge_budgets(sizes: np.ndarray, rho_e: float) -> np.ndarray:
    """Eq. (13): ``|E|`` of each adjacent layer pair, rounded half up."""
    n1, n2 = sizes[:-1], sizes[1:]
    exact = n1 * n2 * rho_e + (1.0 - rho_e) * np.maximum(n1, n2)
    return np.floor(exact + 0.5 + _EPS * np.maximum(1.0, exact)).astype(np.int64)


def _adjacent_edges(
    sizes: np.ndarray, offsets: np.ndarray, budget: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 for all adjacent layer pairs at once, ``budget`` their ``|E|`` (eq. 13,
    ``_edge_budgets``).

    The larger layer ``l_s`` of a pair (``l_1`` on ties) shares the budget ``|E|``:
    the greedy "increment a least-loaded node, ties at random" of algorithm 2 gives
    every node ``|E| // N_s`` edges and a uniformly random subset of ``|E| % N_s``
    nodes one more. Node ``n`` of ``l_s`` links to ``c_n`` consecutive nodes of ``l_t``
    centred on ``round(n (N_t - 1) / (N_s - 1))`` and shifted inside ``[0, N_t - 1]``.
    Edges point from the earlier layer to the later one.
    """
    n1, n2 = sizes[:-1], sizes[1:]
    forward = n1 >= n2  # l_s is the earlier layer of the pair
    first = np.arange(n1.size)
    layer_s, layer_t = np.where(forward, first, first + 1), np.where(forward, first + 1, first)
    ns, nt = sizes[layer_s], sizes[layer_t]

    pair = np.repeat(first, ns)  # pair of every node of every l_s
    local = np.arange(pair.size) - np.repeat(np.cumsum(ns) - ns, ns)  # its index n in l_s
    rank = np.empty_like(local)
    rank[np.lexsort((rng.random(pair.size), pair))] = local  # random rank within its l_s
    count = budget[pair] // ns[pair] + (rank < budget[pair] % ns[pair])

    span_s, span_t = ns[pair] - 1, nt[pair] - 1
    centre = (2 * local * span_t + span_s) // (2 * np.maximum(span_s, 1))  # round half up
    start = np.clip(centre - (count - 1) // 2, 0, nt[pair] - count)

    node = np.repeat(np.arange(pair.size), count)
    step = np.arange(node.size) - np.repeat(np.cumsum(count) - count, count)
    edge_pair = pair[node]
    s_node = offsets[layer_s[edge_pair]] + local[node]
    t_node = offsets[layer_t[edge_pair]] + start[node] + step
    ahead = forward[edge_pair]
    return np.where(ahead, s_node, t_node), np.where(ahead, t_node, s_node)


def _skip_edges(
    sizes: np.ndarray,
    offsets: np.ndarray,
    num_edges: int,
    rho_s: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (14) and algorithm 3: ``ceil(|E| rho_s / (1 - rho_s))`` skip connections.

    Source layer uniform in ``[0, L-3]``, target layer uniform in ``[l_s + 2, L-1]``,
    with ``L`` the final number of layers (none when ``L < 3``); the target node sits
    at relative position ``min(x_s + 0.2 y, 0.999)`` below the source's ``x_s``.
    """
    num_layers = sizes.size
    if num_layers < 3:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    count = _ceil(num_edges * rho_s / (1.0 - rho_s))
    layer_s = rng.integers(0, num_layers - 2, size=count)
    layer_t = rng.integers(layer_s + 2, num_layers)
    x_s = rng.random(count)
    x_t = np.minimum(x_s + 0.2 * rng.random(count), 0.999)
    src = offsets[layer_s] + np.floor(x_s * sizes[layer_s]).astype(np.int64)
    dst = offsets[layer_t] + np.floor(x_t * sizes[layer_t]).astype(np.int64)
    return src, dst


def _positive_gmm(params: LayeredParams, size: int, rng: np.random.Generator) -> np.ndarray:
    """Eq. (16): ``size`` draws of the Gaussian mixture conditioned on being > 0.

    "Projected on to R+" is read as conditioning: non-positive draws are redrawn.
    """
    weights = np.asarray(params.gmm_weights, dtype=np.float64)
    weights = weights / weights.sum()
    means = np.asarray(params.gmm_means, dtype=np.float64)
    stds = np.asarray(params.gmm_stds, dtype=np.float64)
    out = np.empty(size)
    todo = np.arange(size)
    while todo.size:
        component = rng.choice(weights.size, size=todo.size, p=weights)
        draw = rng.normal(means[component], stds[component])
        accepted = draw > 0
        out[todo[accepted]] = draw[accepted]
        todo = todo[~accepted]
    return out


def generate_layered(
    num_nodes: int,
    *,
    seed: int | np.random.Generator,
    params: LayeredParams = PAPER_PARAMS,
    name: str | None = None,
) -> Graph:
    """A random layered DAG of exactly ``num_nodes`` nodes (paper 000, appendix A).

    ``seed`` feeds ``numpy.random.default_rng`` (a ``Generator`` is used as is, and
    advanced); the same integer seed always gives the same graph. Duplicate skip
    connections are merged, so the graph may hold slightly fewer than ``N_S`` of them.
    """
    n = operator.index(num_nodes)
    if n < 1:
        raise GraphError(f"a layered graph needs at least 1 node, got {n}")
    rng = np.random.default_rng(seed)
    sizes = _layer_sizes(n, params, rng)
    budget = _edge_budgets(sizes, params.rho_e)
    adjacent = int(budget.sum())
    edges = adjacent + _ceil(adjacent * params.rho_s / (1.0 - params.rho_s))
    check_fits(
        BYTES_PER_EDGE * edges + BYTES_PER_NODE * n,
        f"a layered graph of {n:,} nodes and about {edges:,} edges",
        "generate fewer nodes",
    )
    offsets = np.cumsum(sizes) - sizes
    adj_src, adj_dst = _adjacent_edges(sizes, offsets, budget, rng)
    skip_src, skip_dst = _skip_edges(sizes, offsets, adj_src.size, params.rho_s, rng)
    layer = np.repeat(np.arange(sizes.size), sizes)
    output_cost = _positive_gmm(params, sizes.size, rng)
    param_cost = _positive_gmm(params, sizes.size, rng)
    if name is None:
        name = f"layered-{n}" if isinstance(seed, np.random.Generator) else f"layered-{n}-s{seed}"
    return Graph(
        n,
        np.concatenate([adj_src, skip_src]),
        np.concatenate([adj_dst, skip_dst]),
        mem=output_cost[layer],
        param_mem=param_cost[layer],
        names=list(range(n)),
        name=name,
        node_data={"layer": layer},
    )
