"""Synthetic computation graphs for device placement, sized like paper 003's (section 3.1).

Paper 003 trains and tests REGAL on procedurally generated graphs whose ops carry a
runtime estimate and output sizes (section 2.1), placed on two 16 GiB devices
(section 3.1). This generator draws such graphs:

- the number of ops, log-uniform over ``size_range`` (tens to a few hundred);
- a topology of layers, edges between adjacent layers and skip connections
  (``generate_layered``, paper 000's model of neural-network graphs);
- op runtimes, log-normal and independent of the sizes (``synthetic_runtimes``);
- output sizes (every op) and parameter sizes (a share of the ops), log-normal, then
  scaled so the graph holds a log-uniform total of bytes in ``footprint_range``, with
  no op needing more than ``max_working_set`` bytes for itself and its inputs.

``noisy_copy`` and ``placement_graph`` build datasets laid out like 003's TensorFlow
sets: noisy copies of a few recurring topologies (section 3.1's augmentation).

``docs/generators.md`` says what this mirrors of paper 003's data and what it cannot.
"""

import math
import operator
from dataclasses import dataclass

import numpy as np

from dagopt.errors import GraphError, InputError
from dagopt.generate.layered import PAPER_PARAMS, LayeredParams, generate_layered
from dagopt.graph import Graph
from dagopt.objectives.memory import largest_working_set

_GIB = float(2**30)


@dataclass(frozen=True)
class PlacementParams:
    """Parameters of ``generate_placement``; times in seconds, sizes in bytes.

    ``size_range``: inclusive bounds of the op count drawn when none is given;
    ``topology``: the layered-graph parameters; ``runtime_median`` and
    ``runtime_sigma``: the log-normal op runtimes; ``size_sigma``: the log-normal shape
    of output and parameter sizes; ``param_share``: the probability that an op reads
    parameters; ``footprint_range``: bounds of the total bytes (outputs plus parameters)
    of a graph; ``max_working_set``: the most bytes one op may need at once (its output,
    parameters and inputs), so that every op fits on a 16 GiB device.
    """

    size_range: tuple[int, int] = (30, 300)
    topology: LayeredParams = PAPER_PARAMS
    runtime_median: float = 1e-3
    runtime_sigma: float = 1.0
    size_sigma: float = 1.0
    param_share: float = 0.3
    footprint_range: tuple[float, float] = (16 * _GIB, 96 * _GIB)
    max_working_set: float = 12 * _GIB

    def __post_init__(self) -> None:
        low, high = self.size_range
        if not 1 <= low <= high:
            raise InputError(f"size_range must satisfy 1 <= low <= high, got {self.size_range}")
        for what in ("runtime_median", "max_working_set"):
            value = getattr(self, what)
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"{what} must be finite and > 0, got {value}")
        for what in ("runtime_sigma", "size_sigma"):
            value = getattr(self, what)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{what} must be finite and >= 0, got {value}")
        if not 0 <= self.param_share <= 1:
            raise InputError(f"param_share must lie in [0, 1], got {self.param_share}")
        low, high = self.footprint_range
        if not (0 < low <= high < math.inf):
            raise InputError(
                f"footprint_range must satisfy 0 < low <= high < inf, got {self.footprint_range}"
            )


DEFAULT_PARAMS = PlacementParams()


def synthetic_runtimes(
    num_nodes: int,
    *,
    seed: int | np.random.Generator,
    median: float = 1e-3,
    sigma: float = 1.0,
) -> np.ndarray:
    """``num_nodes`` op runtimes in seconds, log-normal with ``median`` and shape ``sigma``.

    A heavy right tail: a few expensive ops among many cheap ones. Use it to give any
    synthetic graph the ``runtime`` node attribute the placement cost model needs.
    """
    rng = np.random.default_rng(seed)
    return median * rng.lognormal(0.0, sigma, size=operator.index(num_nodes))


def _sizes(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, params: PlacementParams, rng
) -> tuple[np.ndarray, np.ndarray]:
    """Output and parameter bytes: log-normal shapes scaled to a drawn footprint."""
    mem = rng.lognormal(0.0, params.size_sigma, size=num_nodes)
    reads = rng.random(num_nodes) < params.param_share
    param = np.where(reads, rng.lognormal(0.0, params.size_sigma, size=num_nodes), 0.0)
    footprint = math.exp(rng.uniform(*np.log(params.footprint_range)))
    working_set = largest_working_set(src, dst, mem, param)
    scale = min(footprint / (mem.sum() + param.sum()), params.max_working_set / working_set)
    return np.floor(mem * scale), np.floor(param * scale)


def generate_placement(
    num_nodes: int | None = None,
    *,
    seed: int | np.random.Generator,
    params: PlacementParams = DEFAULT_PARAMS,
    name: str | None = None,
) -> Graph:
    """A random computation graph with ``runtime``, ``mem`` and ``param_mem`` per op.

    ``num_nodes`` defaults to a log-uniform draw from ``params.size_range``. ``seed``
    feeds ``numpy.random.default_rng`` (a ``Generator`` is used as is, and advanced); the
    same integer seed always gives the same graph. Nodes are numbered layer by layer, so
    ``0..n-1`` is a topological order; ``node_data`` holds ``runtime`` and ``layer``.
    """
    rng = np.random.default_rng(seed)
    if num_nodes is None:
        low, high = params.size_range
        n = min(high, math.floor(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))
    else:
        n = operator.index(num_nodes)
        if n < 1:
            raise GraphError(f"a placement graph needs at least 1 node, got {n}")
    topology = generate_layered(n, seed=rng, params=params.topology)
    src, dst = topology.edges
    mem, param = _sizes(src, dst, n, params, rng)
    runtime = synthetic_runtimes(
        n, seed=rng, median=params.runtime_median, sigma=params.runtime_sigma
    )
    if name is None:
        name = (
            f"placement-{n}" if isinstance(seed, np.random.Generator) else f"placement-{n}-s{seed}"
        )
    return Graph(
        n,
        src,
        dst,
        mem=mem,
        param_mem=param,
        names=list(range(n)),
        name=name,
        node_data={"runtime": runtime, "layer": topology.node_data["layer"]},
    )


def noisy_copy(
    graph: Graph,
    *,
    seed: int,
    sigma: float,
    max_working_set: float = DEFAULT_PARAMS.max_working_set,
) -> Graph:
    """``graph`` with every op's ``runtime``, ``mem`` and ``param_mem`` multiplied by
    independent log-normal factors of median 1 and shape ``sigma``.

    Paper 003 (section 3.1) augments its 372 TensorFlow graphs "by adding
    multiplicative noise"; this is that augmentation (the paper gives no noise law or
    scale). The topology is kept. If the noise makes some op need more than
    ``max_working_set`` bytes, all sizes are scaled down together so that every op
    still fits a device, as ``generate_placement`` guarantees.
    """
    if not (math.isfinite(sigma) and sigma >= 0):
        raise InputError(f"noise sigma must be finite and >= 0, got {sigma}")
    if "runtime" not in graph.node_data:
        raise InputError(f"{graph.name}: a noisy copy needs the 'runtime' node attribute")
    rng = np.random.default_rng(seed)
    factors = rng.lognormal(0.0, sigma, size=(3, graph.num_nodes))
    mem, param = graph.mem * factors[0], graph.param_mem * factors[1]
    src, dst = graph.edges
    scale = min(1.0, max_working_set / largest_working_set(src, dst, mem, param))
    node_data = dict(graph.node_data)
    runtime = graph.node_data["runtime"]  # (n,) or (n, d): one factor per op
    node_data["runtime"] = runtime * factors[2].reshape(-1, *(1,) * (runtime.ndim - 1))
    return Graph(
        graph.num_nodes,
        src,
        dst,
        mem=np.floor(mem * scale),
        param_mem=np.floor(param * scale),
        names=list(graph.names),
        name=f"{graph.name}-noise-s{seed}",
        node_data=node_data,
        edge_data=graph.edge_data,
    )


def placement_graph(seed: int, *, topologies: int = 0, noise_sigma: float = 0.2) -> Graph:
    """Graph ``seed`` of a placement dataset.

    With ``topologies == 0`` (the default) every seed is its own random graph
    (``generate_placement``). With ``topologies = K > 0`` the dataset mimics the layout
    of paper 003's TensorFlow datasets: ``K`` base graphs (seeds ``0..K-1``) and every
    seed a ``noisy_copy`` of base ``seed % K`` with noise seeded by ``seed``, so
    training, validation and test graphs share topologies but not their noise.
    """
    if topologies < 0:
        raise InputError(f"topologies must be >= 0, got {topologies}")
    if topologies == 0:
        return generate_placement(seed=seed)
    base = generate_placement(seed=seed % topologies)
    return noisy_copy(base, seed=seed, sigma=noise_sigma)
