"""Multi-device cost model of paper 003 (REGAL), section 2.1 and appendix A.1.

Given an op-to-device assignment and a schedule, the simulator runs the graph on
``d`` devices and reports the makespan and each device's peak memory (A.1):

- Each device runs its ops one at a time, in the order of ``priority_order`` restricted
  to that device; an op starts as soon as its device is free and its inputs are on it.
  Op ``v`` takes ``durations[v, k]`` seconds on device ``k``: its runtime divided by
  the device's speed factor for runtimes given once per op (``(n,)``), or the
  runtime given for that device (``(n, d)``, e.g. a CPU and a GPU).
- An input produced on another device is moved by a synchronous (blocking) transfer
  of ``latency + size / bandwidth`` seconds (both 0 by default, as in section 3.1).
  The transfer blocks the destination device, not the source: the consumer's device
  pulls the tensor just before the consumer runs, so a zero-cost transfer is free.
  A tensor is moved to a device once; the inputs an op pulls move in the order they
  became available (producer finish time, then priority).
- Memory: an op's output is allocated when it starts and its ``param_mem`` is held
  while it runs (as in ``peak_memory``); a transferred copy is allocated on the
  destination when its transfer starts. A copy is freed after its last local consumer
  has run (A.1); the producer's copy also waits for its outgoing transfers to end. An
  output nobody consumes is freed when its op ends. Events at the same instant apply
  in priority order, so with zero runtimes the execution order is ``priority_order``
  and ``d = 1`` gives exactly ``peak_memory(graph, priority_order)``.

Objectives (section 2.1): ``runtime`` is the makespan, ``peak-memory`` the largest
peak over the devices; memory-infeasible solutions rank after feasible ones (A.2).
``SimulatedCostModel`` is this simulator behind the ``CostModel`` interface placers
use (``dagopt.objectives.costmodel``). ``docs/placement.md`` explains every rule.
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from dagopt.errors import InputError, OrderError
from dagopt.graph import Graph, validate_order
from dagopt.graph.shares import share_nodes
from dagopt.objectives.costmodel import OBJECTIVES, Evaluation, check_objective
from dagopt.objectives.devices import Devices
from dagopt.objectives.op_runtimes import op_durations, relative_speeds, resolve_runtimes
from dagopt.objectives.placement_bounds import placement_lower_bound


@dataclass(frozen=True)
class PlacementResult:
    """One simulated run: times per op (seconds) and memory per device (bytes).

    ``overflow`` is the total of ``peak_memory - limit`` over the devices that exceed
    their limit (0 when ``feasible``).
    """

    makespan: float
    peak_memory: np.ndarray
    device_feasible: np.ndarray
    overflow: float
    start: np.ndarray
    finish: np.ndarray
    num_transfers: int

    @property
    def feasible(self) -> bool:
        return bool(self.device_feasible.all())


@dataclass(frozen=True)
class BatchResult:
    """Many simulated runs at once: row ``b`` is ``(device_of[b], priority_orders[b])``."""

    makespan: np.ndarray
    peak_memory: np.ndarray
    device_feasible: np.ndarray
    overflow: np.ndarray

    @property
    def feasible(self) -> np.ndarray:
        return self.device_feasible.all(axis=1)


# ------------------------------------------------------------------------------ kernel
@njit(cache=True)
def _simulate_one(
    pred_ptr,
    pred_idx,
    mem,
    param,
    durations,
    latency,
    inv_bw,
    device_of,
    order,
    start,
    finish,
    peak,
):
    """Simulate one placement; fill ``start``, ``finish``, ``peak``; return (makespan, transfers).

    Every memory change is a *slot* ``(time, device, delta)`` numbered in processing
    order; a device's slots are sorted by ``(time, slot)``. The release of a producer's
    copy is only known at the end: it joins the end slot of its last local consumer, or,
    when its last use is an outgoing transfer, is placed among its device's slots by
    binary search. One pass per device then gives the peak.
    """
    n = order.size
    d = durations.shape[1]
    max_slots = 2 * n + pred_idx.size
    slot_time = np.empty(max_slots)
    slot_dev = np.empty(max_slots, np.int64)
    slot_delta = np.empty(max_slots)
    remote_users = np.zeros(n * d, np.int64)  # consumers of u's copy on device k, still to run
    present = np.zeros(n * d, np.bool_)  # u's copy has been moved to device k
    last_time = np.empty(n)  # latest use (time, slot) of the producer's copy
    last_slot = np.empty(n, np.int64)
    last_local = np.empty(n, np.bool_)  # ... and whether that use is an op on its device
    position = np.empty(n, np.int64)
    pulled = np.empty(n, np.int64)
    dev_free = np.zeros(d)
    for i in range(n):
        position[order[i]] = i
    for v in range(n):
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            if device_of[u] != device_of[v]:
                remote_users[u * d + device_of[v]] += 1

    slots = 0
    transfers = 0
    for i in range(n):
        v = order[i]
        k = device_of[v]
        t = dev_free[k]
        # Inputs to pull onto k, sorted by (finish time, priority) by insertion.
        m = 0
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            if device_of[u] != k and not present[u * d + k]:
                j = m
                while j > 0 and (
                    finish[pulled[j - 1]] > finish[u]
                    or (
                        finish[pulled[j - 1]] == finish[u] and position[pulled[j - 1]] > position[u]
                    )
                ):
                    pulled[j] = pulled[j - 1]
                    j -= 1
                pulled[j] = u
                m += 1
        for q in range(m):
            u = pulled[q]
            t = max(t, finish[u])
            slot_time[slots] = t
            slot_dev[slots] = k
            slot_delta[slots] = mem[u]
            t += latency + mem[u] * inv_bw
            if t >= last_time[u]:
                last_time[u] = t
                last_slot[u] = slots
                last_local[u] = False
            present[u * d + k] = True
            slots += 1
            transfers += 1
        f = t + durations[v, k]
        slot_time[slots] = t
        slot_dev[slots] = k
        slot_delta[slots] = mem[v] + param[v]
        end = slots + 1
        slot_time[end] = f
        slot_dev[end] = k
        slot_delta[end] = -param[v]
        slots += 2
        for e in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[e]
            if device_of[u] == k:
                if f >= last_time[u]:
                    last_time[u] = f
                    last_slot[u] = end
                    last_local[u] = True
            else:
                remote_users[u * d + k] -= 1
                if remote_users[u * d + k] == 0:
                    slot_delta[end] -= mem[u]
        start[v] = t
        finish[v] = f
        last_time[v] = f
        last_slot[v] = end
        last_local[v] = True
        dev_free[k] = f

    # Slots of each device, in slot order (which is also (time, slot) order there).
    offsets = np.zeros(d + 1, np.int64)
    for s in range(slots):
        offsets[slot_dev[s] + 1] += 1
    for k in range(d):
        offsets[k + 1] += offsets[k]
    fill = offsets[:d].copy()
    by_device = np.empty(slots, np.int64)
    for s in range(slots):
        by_device[fill[slot_dev[s]]] = s
        fill[slot_dev[s]] += 1
    # A producer's copy is released right after its last use: with that op's end slot
    # when the use is local, else before the first slot of its device after the
    # transfer (binary search).
    released = np.zeros(slots)
    for u in range(n):
        if last_local[u]:
            slot_delta[last_slot[u]] -= mem[u]
            continue
        k = device_of[u]
        lo = offsets[k]
        hi = offsets[k + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            s = by_device[mid]
            if slot_time[s] > last_time[u] or (slot_time[s] == last_time[u] and s > last_slot[u]):
                hi = mid
            else:
                lo = mid + 1
        if lo < offsets[k + 1]:
            released[by_device[lo]] -= mem[u]
    for k in range(d):
        live = 0.0
        best = 0.0
        for p in range(offsets[k], offsets[k + 1]):
            s = by_device[p]
            live += released[s]
            live += slot_delta[s]
            best = max(best, live)
        peak[k] = best
    makespan = 0.0
    for v in range(n):
        makespan = max(makespan, finish[v])
    return makespan, transfers


@njit(cache=True)
def _simulate_rows(pred_ptr, pred_idx, mem, param, durations, latency, inv_bw, device_of, orders):
    """``_simulate_one`` for every row; returns makespans ``(B,)`` and peaks ``(B, d)``."""
    rows, n = orders.shape
    makespan = np.empty(rows)
    peak = np.empty((rows, durations.shape[1]))
    start = np.empty(n)
    finish = np.empty(n)
    for b in range(rows):
        makespan[b] = _simulate_one(
            pred_ptr,
            pred_idx,
            mem,
            param,
            durations,
            latency,
            inv_bw,
            device_of[b],
            orders[b],
            start,
            finish,
            peak[b],
        )[0]
    return makespan, peak


# ------------------------------------------------------------------------------ inputs
def _placements(graph: Graph, devices: Devices, device_of, rows: int | None) -> np.ndarray:
    """``device_of`` as int64 of shape ``(n,)`` (``rows=None``) or ``(rows, n)``, validated."""
    n = graph.num_nodes
    array = np.asarray(device_of)
    shape = (n,) if rows is None else (rows, n)
    if array.shape != shape:
        raise InputError(f"device_of has shape {array.shape}, expected {shape} (a device per op)")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise InputError(f"device_of must hold integer device indices, got {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array >= devices.count))
    if bad.size:
        flat = int(bad[0])
        row = "" if rows is None else f"placement {flat // n}: "
        raise InputError(
            f"{row}node {graph.names[flat % n]!r} is placed on device {int(array.flat[flat])}, "
            f"but the devices are 0..{devices.count - 1}"
        )
    return np.array(array, dtype=np.int64)


def _orders(graph: Graph, priority_orders) -> np.ndarray:
    """``(B, n)`` int64 topological orders; the first bad row raises ``OrderError``."""
    n = graph.num_nodes
    orders = np.asarray(priority_orders)
    if (
        orders.ndim != 2
        or orders.shape[1] != n
        or (orders.size and not np.issubdtype(orders.dtype, np.integer))
    ):
        raise OrderError(f"priority orders must be integers of shape (batch, {n})")
    rows = orders.shape[0]
    bad = ((orders < 0) | (orders >= n)).any(axis=1)
    if not bad.any():
        position = np.full((rows, n), -1, dtype=np.int64)
        position[np.arange(rows)[:, None], orders] = np.arange(n)
        src, dst = graph.edges
        bad = (position < 0).any(axis=1) | (position[:, src] > position[:, dst]).any(axis=1)
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        try:
            validate_order(graph, orders[b])
        except OrderError as error:
            raise OrderError(f"priority order {b}: {error}") from None
    return np.array(orders, dtype=np.int64)


def _feasibility(peak: np.ndarray, devices: Devices) -> tuple[np.ndarray, np.ndarray]:
    excess = peak - devices.memory_limits
    return excess <= 0, np.where(excess > 0, excess, 0.0).sum(axis=-1)


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.setflags(write=False)
    return view


# ------------------------------------------------------------------------------ public API
def _check_finite_makespan(
    graph: Graph, durations: np.ndarray, latency: float, seconds_per_byte: float
) -> None:
    """Raise ``InputError`` unless running every op on its slowest device and every edge
    as a transfer, one after another, takes a finite time. Each finish time the simulator
    computes is a sum of op and transfer times along a chain of waits, at most that
    total, so every makespan is then finite (huge runtimes, or a bandwidth so small that
    ``1 / bandwidth`` overflows, would make it infinite)."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflows are the error below
        work = float(durations.max(axis=1, initial=0.0).sum())
        transfers = graph.num_edges * latency
        if seconds_per_byte:
            transfers += float(graph.mem @ graph.out_degree) * seconds_per_byte
    if not (math.isfinite(seconds_per_byte) and math.isfinite(work + transfers)):
        raise InputError(
            "op runtimes and transfer times too large: their total exceeds the float range "
            "(1.8e308), so the makespan could be infinite"
        )


def _check_no_share_nodes(graph: Graph) -> None:
    """``InputError`` when ``graph`` has share nodes (``dagopt.graph.shares``): they are
    storages of an operator, not ops that run on a device of their own."""
    shares = share_nodes(graph)
    if shares.size:
        raise InputError(
            f"graph {graph.name!r} has {shares.size} share nodes (outputs of multi-output "
            f"operators, e.g. {graph.names[shares[0]]!r}); placement needs one node per "
            "operator: join them first (dagopt.graph.shares.join_shares)"
        )


class SimulatedCostModel:
    """003 A.1's simulator as a ``CostModel`` (``dagopt.objectives.costmodel``).

    It is built once per graph, devices and runtimes, and precomputes the ``(n, d)``
    matrix of op durations (``durations[v, k]``: seconds of op ``v`` on device ``k``)
    that the numba kernel reads. ``runtimes`` are ``(n,)`` seconds on a speed-1 device
    or ``(n, d)`` seconds per device (``resolve_runtimes``); ``None`` reads the graph's
    ``runtime`` node attribute. The model is deterministic, reads the order, scores
    both ``OBJECTIVES`` and knows every device's peak memory. A graph with share nodes
    (``dagopt.graph.shares``) is an ``InputError``: a share is a storage of its operator,
    not an op to place (``join_shares`` gives the graph to place).
    """

    objectives = OBJECTIVES
    uses_order = True

    def __init__(self, graph: Graph, devices: Devices | None = None, runtimes=None) -> None:
        _check_no_share_nodes(graph)
        self.graph = graph
        self.devices = Devices() if devices is None else devices
        runtimes = resolve_runtimes(graph, runtimes, self.devices)
        self.runtimes = _read_only(runtimes)
        durations = op_durations(runtimes, self.devices)
        self.durations = _read_only(durations)
        bandwidth = self.devices.bandwidth
        seconds_per_byte = 0.0 if math.isinf(bandwidth) else 1.0 / bandwidth
        _check_finite_makespan(graph, durations, self.devices.latency, seconds_per_byte)
        self._args = (
            graph.pred_ptr,
            graph.pred_idx,
            graph.mem,
            graph.param_mem,
            durations,  # the writable original: one compiled kernel signature
            float(self.devices.latency),
            seconds_per_byte,
        )

    @property
    def speeds(self) -> np.ndarray:
        """``relative_speeds`` of the devices under these runtimes."""
        return relative_speeds(self.runtimes, self.devices)

    def simulate(self, device_of, priority_order) -> PlacementResult:
        """One run with op ``v`` on device ``device_of[v]`` in ``priority_order`` (A.1).

        ``priority_order`` must be a topological order (the schedule BRKGA decodes,
        A.2). Bad lengths or device indices raise ``InputError``; an order that is not a
        topological permutation raises ``OrderError``.
        """
        graph, devices = self.graph, self.devices
        order = np.array(validate_order(graph, priority_order))
        placement = _placements(graph, devices, device_of, None)
        start = np.empty(graph.num_nodes)
        finish = np.empty(graph.num_nodes)
        peak = np.empty(devices.count)
        makespan, transfers = _simulate_one(*self._args, placement, order, start, finish, peak)
        device_feasible, overflow = _feasibility(peak, devices)
        return PlacementResult(
            makespan=float(makespan),
            peak_memory=peak,
            device_feasible=device_feasible,
            overflow=float(overflow),
            start=start,
            finish=finish,
            num_transfers=int(transfers),
        )

    def simulate_batch(self, device_of, priority_orders) -> BatchResult:
        """``simulate`` for each row of ``device_of`` and ``priority_orders`` (``(B, n)``).

        One compiled loop over the rows: this is what search (BRKGA, A.2) calls for a
        whole population. Rows are validated like ``simulate``'s inputs.
        """
        orders = _orders(self.graph, priority_orders)
        placements = _placements(self.graph, self.devices, device_of, orders.shape[0])
        makespan, peak = _simulate_rows(*self._args, placements, orders)
        device_feasible, overflow = _feasibility(peak, self.devices)
        return BatchResult(makespan, peak, device_feasible, overflow)

    def costs(self, device_of, orders, objective: str) -> tuple[np.ndarray, np.ndarray]:
        """``batch_costs`` of ``simulate_batch``: ``(infeasible, value)`` per row."""
        return batch_costs(self.simulate_batch(device_of, orders), objective)

    def evaluate(self, device_of, order, objective: str) -> Evaluation:
        """``simulate`` one solution and its ``placement_cost``."""
        result = self.simulate(device_of, order)
        return Evaluation(
            cost=placement_cost(result, objective),
            makespan=result.makespan,
            feasible=result.feasible,
            peak_memory=result.peak_memory,
        )

    def lower_bound(self, objective: str) -> float:
        """``placement_lower_bound`` of the graph on these devices and runtimes."""
        return placement_lower_bound(self.graph, self.devices, objective, runtimes=self.runtimes)


def simulate(
    graph: Graph, devices: Devices, device_of, priority_order, *, runtimes=None
) -> PlacementResult:
    """Run ``graph`` with op ``v`` on device ``device_of[v]`` in ``priority_order`` (A.1).

    ``runtimes`` are ``(n,)`` seconds per op on a speed-1 device or ``(n, d)`` seconds
    per op and device (``resolve_runtimes``), by default the node attribute ``runtime``.
    See ``SimulatedCostModel.simulate``; build the model once to simulate many
    solutions of one graph.
    """
    return SimulatedCostModel(graph, devices, runtimes).simulate(device_of, priority_order)


def simulate_batch(
    graph: Graph, devices: Devices, device_of, priority_orders, *, runtimes=None
) -> BatchResult:
    """``simulate`` for each row of ``device_of`` and ``priority_orders`` (both ``(B, n)``);
    see ``SimulatedCostModel.simulate_batch``."""
    model = SimulatedCostModel(graph, devices, runtimes)
    return model.simulate_batch(device_of, priority_orders)


def placement_cost(result: PlacementResult, objective: str = "runtime") -> tuple[int, float]:
    """Lexicographic cost, smaller is better: ``(0, value)`` if feasible, else ``(1, overflow)``.

    ``value`` is the makespan (``runtime``) or the largest per-device peak
    (``peak-memory``). Every memory-feasible solution ranks before every infeasible one
    (A.2); infeasible ones rank by the bytes by which they exceed the limits, which
    points a search towards feasibility under either objective.
    """
    check_objective(objective)
    if not result.feasible:
        return 1, result.overflow
    value = result.makespan if objective == "runtime" else float(result.peak_memory.max())
    return 0, value


def batch_costs(batch: BatchResult, objective: str = "runtime") -> tuple[np.ndarray, np.ndarray]:
    """``placement_cost`` of every row as arrays ``(infeasible, value)``.

    Rank rows best first with ``numpy.lexsort((value, infeasible))``.
    """
    check_objective(objective)
    infeasible = (~batch.feasible).astype(np.int64)
    value = batch.makespan if objective == "runtime" else batch.peak_memory.max(axis=1)
    return infeasible, np.where(infeasible == 1, batch.overflow, value)
