"""Roofline runtime estimates for real graphs (the op costs paper 003, section 2.1, assumes).

Paper 003 takes each op's runtime from a simulator (A.1); dagopt estimates it from
FLOPs and bytes with a roofline: an op takes as long as the slower of its compute and
its memory traffic on one device,

    runtime(v) = launch + max(flops(v) / peak_flops, bytes(v) / bandwidth)
    bytes(v)   = mem(v) + param_mem(v) + sum(mem(u) for u in preds(v))

(output written, parameters and inputs read once; ``launch`` is a fixed cost per op, a
kernel launch or a dispatch, 0 by default). Synthetic graphs draw runtimes from
a seeded distribution instead (``dagopt.generate.placement``).
"""

import math

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph

#: The device ``dagopt place --estimate-runtime`` assumes unless told otherwise: 100
#: TFLOP/s and 1 TB/s, an accelerator of the kind paper 003's placements are for.
DEFAULT_PEAK_FLOPS = 100e12
DEFAULT_BANDWIDTH = 1e12


def _bytes_moved(graph: Graph) -> np.ndarray:
    """Bytes each op reads and writes: its output, its parameters and its inputs."""
    src, dst = graph.edges
    inputs = np.bincount(dst, weights=graph.mem[src], minlength=graph.num_nodes)
    return graph.mem + graph.param_mem + inputs


def estimate_runtimes(
    graph: Graph, *, peak_flops: float, bandwidth: float, launch: float = 0.0
) -> np.ndarray:
    """Seconds per op on one device by the roofline above (``peak_flops`` in FLOP/s,
    ``bandwidth`` in bytes/s, ``launch`` in seconds).

    FLOPs come from ``graph.node_data["flops"]``, which the PyTorch and ONNX importers
    record (``torch.utils.flop_counter``'s formulas: matrix products, convolutions,
    attention; every other op has 0 FLOPs and is memory-bound here). A graph without
    them (synthetic graphs, older files) gets ``bytes(v) / bandwidth`` alone: every op
    is treated as memory-bound, which underrates compute-heavy ops such as matrix
    multiplications.
    """
    for what, value in (("peak_flops", peak_flops), ("bandwidth", bandwidth)):
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"{what} must be finite and > 0, got {value}")
    if not (math.isfinite(launch) and launch >= 0):
        raise InputError(f"launch must be finite and >= 0 seconds, got {launch}")
    seconds = _bytes_moved(graph) / bandwidth
    flops = graph.node_data.get("flops")
    if flops is not None:
        if flops.ndim != 1:
            raise InputError(f"node attribute 'flops' has shape {flops.shape}: one value per op")
        bad = np.flatnonzero(flops < 0)  # Graph keeps node data finite
        if bad.size:
            v = int(bad[0])
            raise InputError(f"node {graph.names[v]!r} has invalid flops {flops[v]} (finite, >= 0)")
        seconds = np.maximum(seconds, flops / peak_flops)
    return launch + seconds
