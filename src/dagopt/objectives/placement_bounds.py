"""Lower bounds of the placement objectives (paper 003, A.1): what no placement can beat."""

import numpy as np

from dagopt.graph import Graph
from dagopt.graph.paths import longest_paths
from dagopt.objectives.costmodel import check_objective
from dagopt.objectives.devices import Devices
from dagopt.objectives.memory import lower_bound
from dagopt.objectives.op_runtimes import resolve_runtimes


def placement_lower_bound(
    graph: Graph, devices: Devices, objective: str, *, runtimes=None
) -> float:
    """A value no placement and order of ``graph`` on ``devices`` can beat (A.1).

    ``peak-memory``: the largest working set of one op, its output, parameters and
    inputs, all of which are on its device while it runs (``memory.lower_bound``, the
    single-device bound, holds on every device).

    ``runtime``: the longer of a critical path and a work bound (transfers only add
    time). With ``(n,)`` runtimes, the critical path on the fastest device and the total
    work spread over every device at once, ``sum(runtime) / sum(speed)``. With
    ``(n, d)`` durations ``t[v, k]``:

    - Critical path: each op takes at least ``min_k t[v, k]``, and the ops of a path
      run one after another, so the longest path under those weights is a bound.
    - Work: device ``k`` is busy for ``L_k = sum of t[v, k]`` over its ops, and the
      makespan ``T`` is at least every ``L_k``. So for any weights ``y >= 0`` with
      ``sum(y) = 1``, ``T >= sum_k y_k L_k >= sum_v min_k y_k t[v, k]`` (each op pays
      its cheapest weighted time). Uniform ``y`` gives ``sum_v min_k t[v, k] / d``.
      ``y_k`` proportional to ``1 / sum_v t[v, k]`` suits a device that is fast on
      every op. The bound is the larger of the two. For ``(n,)`` runtimes, ``y``
      proportional to the speeds gives ``sum(runtime) / sum(speed)``, the bound above.

    A search whose best value equals the bound has provably found an optimum.
    """
    check_objective(objective)
    if objective == "peak-memory":
        return lower_bound(graph)
    runtime = resolve_runtimes(graph, runtimes, devices)
    if runtime.ndim == 1:
        before = longest_paths(graph.succ_ptr, graph.succ_idx, graph.in_degree, runtime)[1]
        critical = float((before + runtime).max(initial=0.0)) / float(devices.speeds.max())
        return max(critical, float(runtime.sum()) / float(devices.speeds.sum()))
    fastest = runtime.min(axis=1)
    before = longest_paths(graph.succ_ptr, graph.succ_idx, graph.in_degree, fastest)[1]
    critical = float((before + fastest).max(initial=0.0))
    totals = runtime.sum(axis=0)
    weights = [np.full(devices.count, 1.0 / devices.count)]
    if (totals > 0).all():
        weights.append((1.0 / totals) / (1.0 / totals).sum())
    work = max(float((runtime * y[None, :]).min(axis=1).sum()) for y in weights)
    return max(critical, work)


def meets_bound(value: float, bound: float) -> bool:
    """Whether ``value`` reaches the lower ``bound``. Both are float sums of the same
    terms, maybe added in another order, so a relative ``1e-9`` above it still counts."""
    return value <= bound * (1 + 1e-9)
