"""The cut bound: a lower bound on the optimal peak memory by one minimum cut per node.

Paper 000's peak (eq. 1-3, 15) of any order is at least the memory while any one node
``v`` runs. Just before ``v`` runs, the nodes run so far form a *downset* ``S`` (closed
under predecessors) that holds every ancestor of ``v`` and neither ``v`` nor any of its
descendants, and the memory while ``v`` runs is ``run(v) + live(S)``, where::

    live(S) = sum(mem(u) for u in S if some successor of u is not in S)

(outputs kept to the end count as live once run: with ``keep_outputs`` every sink;
without it a sink's output is freed at once). ``S`` depends on the order, but every
order runs ``v`` after *some* such downset, so::

    OPT >= max_v  run(v) + min { live(S) : anc(v) <= S, S downset, S disjoint from {v} | desc(v) }

``must_live_bound`` (``dagopt.objectives.bounds``) counts only the outputs that are
live for *every* such ``S``; the minimum also weighs, for each node ``y`` that is
neither an ancestor nor a descendant of ``v``, running ``y`` before ``v`` (its inputs
may be freed, its output becomes live) against not running it (its inputs stay live).
On layered graphs, whose peak is made of such siblings, this is what the must-live
bound misses.

The minimum is a maximum-weight closure problem (Picard, 1976), solved as a minimum
cut: items ``x_u`` ("``u`` in ``S``", weight ``-mem(u)``) and ``d_u`` ("``u`` in ``S``
and every successor too", weight ``+mem(u)``), with the implications ``d_u => x_s`` for
each successor ``s`` and ``x_s => x_u`` for each predecessor ``u``; then ``live(S) = sum
mem(u) (x_u - d_u)``. The ancestors of ``v`` (in ``S``) and ``v`` with its descendants
(out of ``S``) are fixed, so they are contracted away: only ``v``'s siblings get an
``x`` item, and the fixed nodes leave a constant and the ``d`` items they decide.
Capacities are integers (OR-Tools' ``SimpleMaxFlow``): sizes are scaled by a power of
two and rounded down, which can only lower the bound (integer sizes stay exact).

Each node's value is a valid bound on its own, so the search over nodes can stop at a
time limit with a valid (weaker) bound. Nodes are visited in decreasing order of their
must-live memory, and a node is cut only when ``run(v) + live(anc(v))``, the value of
the smallest admissible ``S`` and so an upper bound on its minimum, could beat the best
so far (at first ``must_live_bound``).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from ortools.graph.python import max_flow
from scipy.sparse.csgraph import breadth_first_order

from dagopt.graph import Graph
from dagopt.objectives.bounds import must_live_bound, must_live_memory
from dagopt.progress import report

#: The scaled sizes sum to at most this (a relative rounding of ``2**-50`` per size), far
#: below ``INFINITE``, so that no cut of finite arcs overflows 64-bit capacities.
CAPACITY_SCALE = 2.0**50
#: An infinite capacity (an implication that no minimum cut crosses).
INFINITE = 2**62


@dataclass(frozen=True)
class CutBound:
    """``bound``: the lower bound; ``node``: the ``v`` that gives it (-1: none beats
    ``must_live_bound``); ``cuts``: minimum cuts solved; ``complete``: every node was
    considered (not stopped by the time limit)."""

    bound: float
    node: int
    cuts: int
    complete: bool


#: A peak within this relative distance above a bound meets it: the cuts round each size
#: down to a multiple of ``2**-50`` of their sum.
BOUND_TOLERANCE = 1e-9


def meets_bound(peak: float, bound: float) -> bool:
    """Whether an order's ``peak`` meets the lower ``bound`` (then the order is optimal),
    to ``BOUND_TOLERANCE``."""
    return peak <= bound * (1.0 + BOUND_TOLERANCE)


#: No order arcs (``ClosureNetwork.least_live``).
NO_ARCS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


class Precedence:
    """The graph's edges plus order arcs (``src``, ``dst``): each node's ancestors and
    descendants under both (breadth-first search on CSR matrices)."""

    def __init__(self, graph: Graph, arcs: tuple[np.ndarray, np.ndarray] = NO_ARCS) -> None:
        n = graph.num_nodes
        src, dst = (np.asarray(e, dtype=np.int64) for e in graph.edges)
        before, after = np.concatenate([src, arcs[0]]), np.concatenate([dst, arcs[1]])
        self.arcs = arcs
        self.forward = sp.csr_matrix((np.ones(before.size), (before, after)), shape=(n, n))
        self.backward = self.forward.T.tocsr()

    def ancestors(self, v: int) -> np.ndarray:
        return breadth_first_order(self.backward, v, return_predecessors=False)[1:]

    def below(self, v: int) -> np.ndarray:
        """``v`` and its descendants."""
        return breadth_first_order(self.forward, v, return_predecessors=False)


class ClosureNetwork:
    """The closure network of a node's cut (module docstring), with the nodes the cut
    fixes contracted away: ``x_u`` is flow node ``u``, ``d_u`` is ``n + u``, the source
    ``2 n`` and the sink ``2 n + 1``; only the nodes that are neither ancestors of ``v``
    nor ``v`` or its descendants (``v``'s siblings) get an ``x`` item."""

    def __init__(self, graph: Graph, *, keep_outputs: bool) -> None:
        n = graph.num_nodes
        self.n = n
        self.src, self.dst = (np.asarray(e, dtype=np.int64) for e in graph.edges)
        sinks = graph.out_degree == 0
        self.counted = np.ones(n, dtype=bool) if keep_outputs else ~sinks
        self.freeable = self.counted & ~sinks  # d_u: its output can be freed
        total = float(graph.mem[self.counted].sum())
        # a power of two: integer sizes (and floats with short mantissas) stay exact
        self.scale = 2.0 ** np.floor(np.log2(CAPACITY_SCALE / total)) if total > 0 else 1.0
        self.capacity = np.floor(np.where(self.counted, graph.mem, 0.0) * self.scale).astype(
            np.int64
        )
        self.mem = graph.mem
        self.run = graph.mem + graph.param_mem  # memory while a node runs, beyond live(S)
        self.source, self.sink = 2 * n, 2 * n + 1

    def cut(
        self, v: int, ancestors: np.ndarray, precedence: Precedence
    ) -> tuple[float, np.ndarray]:
        """``v``'s cut under ``precedence`` (``ancestors``: ``v``'s under it): ``run(v) +
        min live(S)`` and an ``S`` that attains it."""
        live, witness = self.least_live(ancestors, precedence.below(v), precedence.arcs)
        return float(self.run[v] + live), witness

    def upper(self, v: int, ancestors: np.ndarray) -> float:
        """``run(v) + live(anc(v))``, the smallest admissible ``S``'s value: at least
        ``v``'s cut."""
        return float(self.run[v] + self.live(ancestors))

    def least_live(
        self,
        ancestors: np.ndarray,
        below: np.ndarray,
        order_arcs: tuple[np.ndarray, np.ndarray] = NO_ARCS,
    ) -> tuple[float, np.ndarray]:
        """``min live(S)`` over downsets holding ``ancestors`` and none of ``below``, and
        an ``S`` that attains it (a boolean mask: the source side of the minimum cut).

        ``order_arcs`` (``src``, ``dst``): precedences beyond the graph's edges that ``S``
        must respect too (``dst`` in ``S`` only with ``src``), which move no memory
        (``branch_bound``); ``ancestors`` and ``below`` must already follow them.
        An ancestor's output is live unless ``d_u`` (all its consumers run) holds; a
        consumer in ``below`` makes that impossible, and with every consumer an
        ancestor it holds for free. A sibling's ``d_u`` implies its consumers' ``x``
        (all siblings then: a consumer that is an ancestor of ``v`` would make ``u`` one),
        which imply ``x_u``."""
        n, src, dst, capacity = self.n, self.src, self.dst, self.capacity
        side = np.zeros(n, dtype=np.int8)  # 0: sibling, 1: in S, 2: out of S
        side[ancestors], side[below] = 1, 2
        src_side, dst_side = side[src], side[dst]
        blocked = np.zeros(n, dtype=bool)
        blocked[src[dst_side == 2]] = True
        waiting = np.zeros(n, dtype=bool)  # an ancestor with a consumer among the siblings
        waiting[src[(src_side == 1) & (dst_side == 0)]] = True
        freeable = self.freeable & ~blocked
        d_items = np.flatnonzero(freeable & ((side == 0) | waiting))
        x_items = np.flatnonzero((side == 0) & self.counted)
        constant = int(capacity[side == 1].sum())
        constant -= int(capacity[freeable & (side == 1) & ~waiting].sum())
        implies_x = np.zeros(n, dtype=bool)
        implies_x[d_items] = True
        d_arcs = implies_x[src] & (dst_side == 0)  # d_u => x_s
        before, after = np.concatenate([src, order_arcs[0]]), np.concatenate([dst, order_arcs[1]])
        x_arcs = (side[before] == 0) & (side[after] == 0)  # x_s => x_u
        flow = max_flow.SimpleMaxFlow()
        flow.add_arcs_with_capacity(
            np.concatenate(
                [
                    n + src[d_arcs],
                    after[x_arcs],
                    [self.source],
                    np.full(d_items.size, self.source),
                    x_items,
                ]
            ),
            np.concatenate(
                [
                    dst[d_arcs],
                    before[x_arcs],
                    [self.sink],
                    n + d_items,
                    np.full(x_items.size, self.sink),
                ]
            ),
            np.concatenate(
                [
                    np.full(d_arcs.sum() + x_arcs.sum(), INFINITE),
                    [0],
                    capacity[d_items],
                    capacity[x_items],
                ]
            ),
        )
        if flow.solve(self.source, self.sink) != flow.OPTIMAL:
            raise RuntimeError("OR-Tools max flow did not reach an optimum")
        freed = int(capacity[d_items].sum())
        members = side == 1
        chosen = np.asarray(flow.get_source_side_min_cut(), dtype=np.int64)
        chosen = chosen[chosen < n]
        members[chosen[side[chosen] == 0]] = True
        return (constant - freed + flow.optimal_flow()) / self.scale, members

    def live(self, nodes: np.ndarray) -> float:
        """``live(S)`` of the set ``S`` of ``nodes``: outputs a node outside ``S`` reads,
        and kept outputs (an order arc can put a sink in an ancestor set)."""
        members = np.zeros(self.n, dtype=bool)
        members[nodes] = True
        crossing = members[self.src] & ~members[self.dst]
        live = members & ~self.freeable  # kept sinks (uncounted when outputs are freed)
        live[self.src[crossing]] = True
        return float(self.mem[live & self.counted].sum())


def scan_cuts(
    graph: Graph,
    network: ClosureNetwork,
    precedence: Precedence,
    *,
    floor: float,
    deadline: float | None,
    on_cut: Callable[[int, float, np.ndarray], None] | None = None,
) -> CutBound:
    """The largest cut of any node (``run(v) + min live(S)``, module docstring) under
    ``precedence``, at least ``floor``: nodes visited by must-live memory, each cut (and
    passed to ``on_cut`` with its value and witness ``S``) only when its upper bound
    ``run(v) + live(anc(v))`` beats the best so far; stops at ``deadline``."""
    n = graph.num_nodes
    forced = must_live_memory(graph)
    visit = np.argsort(-(network.run if forced is None else forced), kind="stable")
    best, best_node, cuts = floor, -1, 0
    for done, v in enumerate(visit):
        if deadline is not None and time.perf_counter() > deadline:
            return CutBound(best, best_node, cuts, False)
        ancestors = precedence.ancestors(v)
        if network.upper(v, ancestors) > best:
            value, witness = network.cut(v, ancestors, precedence)
            cuts += 1
            if on_cut is not None:
                on_cut(int(v), value, witness)
            if value > best:
                best, best_node = value, int(v)
        if done % 256 == 0:
            report("cut bound", done, n)
    return CutBound(best, best_node, cuts, True)


def cut_bound(
    graph: Graph, *, keep_outputs: bool = False, time_limit: float | None = None
) -> CutBound:
    """The cut bound (module docstring) of ``graph``, with ``keep_outputs`` as in
    ``peak_memory``, never below ``must_live_bound``. ``time_limit`` (seconds): stop
    considering nodes then; the bound found so far is still valid (``complete`` is
    false)."""
    floor = must_live_bound(graph, keep_outputs=keep_outputs)
    if graph.num_nodes == 0:
        return CutBound(floor, -1, 0, True)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    network = ClosureNetwork(graph, keep_outputs=keep_outputs)
    return scan_cuts(graph, network, Precedence(graph), floor=floor, deadline=deadline)
