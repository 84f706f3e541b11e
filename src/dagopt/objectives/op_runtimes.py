"""Op runtimes for the placement cost model (paper 003, A.1): read, validated, per device.

Runtimes come once per op (``(n,)``, seconds on a speed-1 device, divided by each
device's speed factor) or per op and device (``(n, d)``, e.g. a CPU and a GPU, which
are not one speed factor apart). ``op_durations`` turns either into the ``(n, d)``
seconds the simulator reads.
"""

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.objectives.devices import Devices


def resolve_runtimes(graph: Graph, runtimes, devices: Devices | None = None) -> np.ndarray:
    """``runtimes`` or ``graph.node_data["runtime"]``, validated: seconds per op.

    Two shapes are accepted (003 A.1 assumes "runtime estimates for each op"):

    - ``(n,)``: seconds of each op on a speed-1 device; device ``k`` takes
      ``runtime / speed_k`` (``op_durations``).
    - ``(n, d)``: seconds of op ``v`` on device ``k``, used as they are, since a CPU and
      a GPU are not one speed factor apart. ``d`` must be ``devices.count`` when
      ``devices`` are given.

    A wrong shape, a non-number, or a NaN, infinite or negative runtime raises a
    one-line ``InputError``.
    """
    if runtimes is None and graph.num_nodes == 0:
        runtimes = np.zeros(0)  # no op to time: a graph without nodes has no attributes
    if runtimes is None:
        if "runtime" not in graph.node_data:
            raise InputError(
                f"graph {graph.name!r} has no op runtimes: give every node a numeric "
                "'runtime' attribute (one node without it, or with a non-number, leaves the "
                "graph without any) or pass runtimes=estimate_runtimes(graph, ...) "
                "(dagopt.objectives.runtime)"
            )
        runtimes = graph.node_data["runtime"]
    try:
        array = np.asarray(runtimes, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("runtimes must be numbers, one per op or one per op and device") from None
    n = graph.num_nodes
    columns = "d" if devices is None else str(devices.count)
    if not (
        array.shape == (n,)
        or (
            array.ndim == 2
            and array.shape[0] == n
            and array.shape[1] >= 1
            and (devices is None or array.shape[1] == devices.count)
        )
    ):
        raise InputError(f"runtimes have shape {array.shape}, expected ({n},) or ({n}, {columns})")
    bad = np.argwhere(~np.isfinite(array) | (array < 0))
    if bad.size:
        v = int(bad[0][0])
        where = f" on device {int(bad[0][1])}" if array.ndim == 2 else ""
        raise InputError(
            f"node {graph.names[v]!r} has invalid runtime {array[tuple(bad[0])]}{where} "
            "(finite, >= 0)"
        )
    return np.array(array)  # a writable copy: one compiled kernel signature


def op_durations(runtimes: np.ndarray, devices: Devices) -> np.ndarray:
    """``(n, d)`` seconds of op ``v`` on device ``k`` from ``resolve_runtimes``' output.

    ``(n,)`` runtimes are divided by each device's speed (the simulator always did
    this division, with the same float result); ``(n, d)`` runtimes are copied as they are.
    """
    if runtimes.ndim == 1:
        with np.errstate(over="ignore"):  # a tiny speed: the simulator rejects the inf
            return runtimes[:, None] / devices.speeds[None, :]
    return np.array(runtimes, dtype=np.float64, order="C")


def op_runtimes(graph: Graph, runtimes, devices: Devices) -> np.ndarray:
    """One runtime per op, for features that describe ops (REGAL's, ``dagopt.nn.regal``).

    ``(n,)`` runtimes are returned as they are (a speed-1 device). For ``(n, d)``
    runtimes this is each op's time on its fastest device. Features built from ratios
    of these values (to their mean, their sum, a critical path) do not depend on the
    time scale.
    """
    runtime = resolve_runtimes(graph, runtimes, devices)
    return runtime if runtime.ndim == 1 else runtime.min(axis=1)


def relative_speeds(runtimes: np.ndarray, devices: Devices) -> np.ndarray:
    """Speed of each device relative to the others, for placers that balance or choose
    devices without the cost model (``single-device``, ``gp-dfs``).

    With ``(n,)`` runtimes this is ``devices.speeds``. With ``(n, d)`` runtimes it is
    ``T_min / T_k``, where ``T_k`` is the total time of every op on device ``k``: the
    device that runs the whole graph fastest gets 1. A total of 0 counts as ``1e-12``
    of the largest total, and when every total is 0 all speeds are 1.
    """
    if runtimes.ndim == 1:
        return devices.speeds
    totals = runtimes.sum(axis=0)
    largest = float(totals.max(initial=0.0))
    if largest == 0:
        return np.ones(devices.count)
    totals = np.maximum(totals, largest * 1e-12)
    return totals.min() / totals
