"""The branch bound: the cut bound raised towards the optimum by branching on precedences.

Any order of paper 000's problem (peak memory, eq. 1-3, 15) runs each pair of
incomparable nodes ``u``, ``v`` one way or the other, so the optimal peak is the smaller
of the optima of the two subproblems with the precedence ``u -> v`` or ``v -> u`` added.
Such a precedence is an *order arc*: it constrains the order and moves no memory (``u``'s
output is not kept for ``v``). Each subproblem is bounded below by its own cut bound
(``cut_bound``: per node, the least memory while it runs over the downsets that may
precede it, now also respecting the order arcs), which can only rise with more arcs. A
best-first branch-and-bound (Land and Doig, 1960) over such decisions returns the least
bound of any open subproblem: a valid lower bound at any time, which rises towards the
optimum and meets the peak ``upper`` of a known order when every subproblem's bound
reaches it (``optimal``: that order is optimal).

A subproblem keeps, per node whose cut may exceed its bound, the cut's value and the
downset attaining it (its *witness*). A child (the parent with one arc ``a -> b``) keeps
every witness that respects the arc (no ``S`` holding ``b`` without ``a``; for ``b``'s
own cut, ``a`` in ``S``), whose value is then still the least, and re-solves the others;
a node that gains ancestors gets a cut when its upper bound ``run(v) + live(anc(v))``
passes the bound. Every node without a cut has that upper bound at most the bound, so
the bound is the largest cut.

Branching: on the node ``v`` of the largest cut that still has siblings (nodes neither
before nor after it) and the sibling ``u``, among the ``candidates`` of largest output,
that maximises the smaller of the two children's bounds (then the larger) as estimated
from the cuts of ``u`` and ``v`` alone (strong branching, Applegate, Bixby, Chvátal and
Cook, 1995, restricted to the two nodes of the arc). Children are evaluated when they are
the least open subproblem (lazily), so each expansion costs the cuts its arc
invalidates. A subproblem whose arcs leave no two nodes incomparable is one order, its
bound that order's peak: as the least open subproblem it is the optimum.

Layered graphs, whose nodes share sizes within a layer, have many equal-valued downsets:
the bound rises in steps with long plateaus, and where the largest cut belongs to a node
whose downset is fixed every subproblem keeps that value until branching lifts another
node above it in each. So the bound often proves an order optimal within seconds and
otherwise narrows the gap, without a guarantee of either (docs/ordering.md, "The branch
bound"; docs/results.md, "With the branch bound").

Cost: the cut bound's cuts (about 1 ms each at 2000 nodes) for each expansion; the
subproblems in the queue hold two ``(n,)`` arrays each, and the search stops (a valid
bound, ``optimal`` false) at ``time_limit`` or when they and the witnesses (one
bit per node and cut) would take ``MEMORY_SHARE`` of the available memory.
"""

import heapq
import itertools
import time
from dataclasses import dataclass

import numpy as np

from dagopt.graph import Graph
from dagopt.objectives.bounds import must_live_bound
from dagopt.objectives.cut_bound import (
    NO_ARCS,
    ClosureNetwork,
    Precedence,
    meets_bound,
    scan_cuts,
)
from dagopt.progress import report
from dagopt.resources import available_bytes

#: Siblings of the branched node tried as the other end of the arc (strong branching).
CANDIDATES = 8
#: Stop when the open subproblems would hold this share of the available memory.
MEMORY_SHARE = 0.25
NO_CUT = -np.inf


@dataclass(frozen=True)
class BranchBound:
    """``bound``: the lower bound; ``optimal``: it is the optimal peak (it met ``upper``,
    or the least open subproblem was a single order); ``expanded``: subproblems branched;
    ``cuts``: minimum cuts solved."""

    bound: float
    optimal: bool
    expanded: int
    cuts: int


@dataclass
class _Subproblem:
    """Order arcs ``arcs`` and, per node, its cut's ``value`` (``NO_CUT``: none, its upper
    bound is at most ``bound``) and witness (index into ``_Search.witnesses``). A child not
    yet evaluated holds its parent's arrays, its own arc in ``pending`` and the cuts its
    branching scored in ``scored``."""

    bound: float
    arcs: tuple[np.ndarray, np.ndarray]
    value: np.ndarray
    witness: np.ndarray
    pending: tuple[int, int] | None = None
    scored: tuple[tuple[int, float, int], ...] = ()


class _Search:
    def __init__(self, graph: Graph, keep_outputs: bool) -> None:
        self.graph = graph
        self.network = ClosureNetwork(graph, keep_outputs=keep_outputs)
        self.witnesses: list[np.ndarray] = []  # packed boolean masks
        self.cuts = 0

    def cut(self, v: int, order: Precedence) -> tuple[float, int]:
        """The cut of ``v`` under ``order``: its value and its witness's index."""
        self.cuts += 1
        return self.keep(*self.network.cut(v, order.ancestors(v), order))

    def keep(self, value: float, members: np.ndarray) -> tuple[float, int]:
        """Store a cut's witness ``members``: ``value`` and the witness's index."""
        self.witnesses.append(np.packbits(members))
        return value, len(self.witnesses) - 1

    def holds(self, witness: int, node: int) -> bool:
        packed = self.witnesses[witness]
        return bool((packed[node >> 3] >> (7 - (node & 7))) & 1)

    def respects(self, v: int, witness: int, arc: tuple[int, int]) -> bool:
        """Whether ``v``'s witness is still admissible with the order arc ``a -> b``."""
        a, b = arc
        if v == b:
            return self.holds(witness, a)
        return not self.holds(witness, b) or self.holds(witness, a)

    def root(self, floor: float, deadline: float) -> tuple[_Subproblem, bool]:
        """The cut bound with witnesses (``scan_cuts``) and whether it finished."""
        n = self.graph.num_nodes
        value = np.full(n, NO_CUT)
        witness = np.full(n, -1, dtype=np.int64)

        def on_cut(v: int, found: float, members: np.ndarray) -> None:
            value[v], witness[v] = self.keep(found, members)

        found = scan_cuts(
            self.graph, self.network, Precedence(self.graph), floor=floor, deadline=deadline,
            on_cut=on_cut,
        )  # fmt: skip
        self.cuts += found.cuts
        return _Subproblem(found.bound, NO_ARCS, value, witness), found.complete

    def evaluate(self, child: _Subproblem, deadline: float) -> bool:
        """Add ``child``'s pending arc to its parent's cuts; false past ``deadline``."""
        a, b = child.pending
        order = Precedence(self.graph, child.arcs)
        value, witness = child.value.copy(), child.witness.copy()
        for v, found, index in child.scored:
            value[v], witness[v] = found, index
        scored = {v for v, _, _ in child.scored}
        for v in np.flatnonzero(value > NO_CUT):
            if v not in scored and not self.respects(v, witness[v], (a, b)):
                if time.perf_counter() > deadline:
                    return False
                value[v], witness[v] = self.cut(v, order)
        bound = max(child.bound, float(value.max()))
        # nodes that gain ancestors: b and what follows it, unless a already preceded it
        before = Precedence(self.graph, (child.arcs[0][:-1], child.arcs[1][:-1]))
        gained = np.setdiff1d(order.below(b), before.below(a), assume_unique=True)
        for v in gained[value[gained] == NO_CUT]:
            if time.perf_counter() > deadline:
                return False
            if self.network.upper(v, order.ancestors(v)) > bound:
                value[v], witness[v] = self.cut(v, order)
                bound = max(bound, value[v])
        child.bound, child.value, child.witness = bound, value, witness
        child.pending, child.scored = None, ()
        return True

    def children(self, parent: _Subproblem, candidates: int) -> list[_Subproblem] | None:
        """The two children of ``parent``'s best branching arc; ``None`` when the order
        arcs leave no two nodes incomparable (``parent`` is one order)."""
        order = Precedence(self.graph, parent.arcs)
        branched = self._branching_node(parent, order)
        if branched is None:
            return None
        v, siblings = branched
        tried = siblings[np.argsort(-self.graph.mem[siblings], kind="stable")[:candidates]]
        best, chosen = [-np.inf, -np.inf], None
        for u in tried:
            if parent.value[u] == NO_CUT:  # u's cut is needed to score its arcs
                parent.value[u], parent.witness[u] = self.cut(u, order)
            pair = [self._child(parent, arc, (v, u)) for arc in ((v, u), (u, v))]
            score = sorted(child.bound for child in pair)
            if score > best:
                best, chosen = score, pair
        return chosen

    def _branching_node(
        self, parent: _Subproblem, order: Precedence
    ) -> tuple[int, np.ndarray] | None:
        """The node of the largest cut that has siblings, and its siblings; if no node
        with a cut has any, the first other node that has (given a cut)."""
        n = self.graph.num_nodes
        with_cut = parent.value > NO_CUT
        ranked = np.argsort(-parent.value, kind="stable")
        for v in np.concatenate([ranked[with_cut[ranked]], np.flatnonzero(~with_cut)]):
            sibling = np.ones(n, dtype=bool)
            sibling[order.ancestors(v)] = False
            sibling[order.below(v)] = False
            if sibling.any():
                if not with_cut[v]:
                    parent.value[v], parent.witness[v] = self.cut(v, order)
                return int(v), np.flatnonzero(sibling)
        return None

    def _child(
        self, parent: _Subproblem, arc: tuple[int, int], nodes: tuple[int, int]
    ) -> _Subproblem:
        """``parent`` plus ``arc``, with the bound estimated from the cuts of ``nodes``."""
        arcs = (np.append(parent.arcs[0], arc[0]), np.append(parent.arcs[1], arc[1]))
        order = None
        scored = []
        for v in nodes:
            if self.respects(v, parent.witness[v], arc):
                continue
            order = order or Precedence(self.graph, arcs)
            found, index = self.cut(v, order)
            scored.append((v, found, index))
        bound = max([parent.bound] + [found for _, found, _ in scored])
        return _Subproblem(bound, arcs, parent.value, parent.witness, arc, tuple(scored))


def branch_bound(
    graph: Graph,
    *,
    upper: float,
    keep_outputs: bool = False,
    time_limit: float,
    candidates: int = CANDIDATES,
) -> BranchBound:
    """The branch bound (module docstring) of ``graph`` with ``keep_outputs`` as in
    ``peak_memory``, given ``time_limit`` seconds; ``upper``: the peak of a known order
    (the search stops when its bound meets it: that order is optimal). Never below
    ``must_live_bound`` nor above ``upper``."""
    if graph.num_nodes == 0:
        return BranchBound(0.0, True, 0, 0)
    deadline = time.perf_counter() + time_limit
    search = _Search(graph, keep_outputs)
    floor = must_live_bound(graph, keep_outputs=keep_outputs)
    root, complete = search.root(floor, deadline)
    if not complete:
        return _result(root.bound, upper, 0, search)
    budget = MEMORY_SHARE * available_bytes()
    tie = itertools.count()
    queue = [(root.bound, next(tie), root)]
    expanded = 0
    while True:
        bound, _, subproblem = queue[0]
        if meets_bound(upper, bound) or time.perf_counter() > deadline:
            return _result(bound, upper, expanded, search)
        heapq.heappop(queue)
        if subproblem.pending is not None:
            if not search.evaluate(subproblem, deadline):
                return _result(bound, upper, expanded, search)
            heapq.heappush(queue, (subproblem.bound, next(tie), subproblem))
            continue
        children = search.children(subproblem, candidates)
        if children is None:  # one order, the least open subproblem: its peak is optimal
            return BranchBound(float(min(bound, upper)), True, expanded, search.cuts)
        expanded += 1
        for child in children:
            heapq.heappush(queue, (child.bound, next(tie), child))
        if (len(queue) * 16 + search.cuts / 8) * graph.num_nodes > budget:
            return _result(queue[0][0], upper, expanded, search)
        if expanded % 64 == 0:
            report("branch bound: subproblems", expanded, None)


def _result(bound: float, upper: float, expanded: int, search: _Search) -> BranchBound:
    """The result when the search stops with ``bound`` as its least open subproblem's."""
    meets = meets_bound(upper, bound)
    return BranchBound(float(upper if meets else bound), meets, expanded, search.cuts)
