"""Incremental peak-memory state for step-by-step search (paper 000, eq. 2-3, 15)."""

import numpy as np

from dagopt.errors import OrderError
from dagopt.graph import Graph


class MemoryState:
    """A partial order being built one node at a time.

    ``push(v)`` runs a ready node and updates ``live`` (``I_t``) and ``peak``
    (``max M_t`` so far); ``ready`` lists the nodes whose predecessors have all run.
    ``step_cost(v)`` and ``freed_by(v)`` look ahead without changing the state.
    """

    def __init__(self, graph: Graph, *, keep_outputs: bool = False) -> None:
        self.graph = graph
        self.keep_outputs = keep_outputs
        self.executed = np.zeros(graph.num_nodes, dtype=bool)
        self.missing_preds = graph.in_degree.astype(np.int64).copy()
        self.pending_succs = graph.out_degree.astype(np.int64).copy()
        self.order: list[int] = []
        self.live = 0.0
        self.peak = 0.0
        self._ready = set(np.flatnonzero(self.missing_preds == 0).tolist())

    @property
    def ready(self) -> list[int]:
        """Nodes that can run next, in increasing index order."""
        return sorted(self._ready)

    @property
    def done(self) -> bool:
        return len(self.order) == self.graph.num_nodes

    def step_cost(self, v: int) -> float:
        """``M_t`` if ``v`` ran now: live memory plus ``v``'s output and parameters."""
        return self.live + self.graph.mem[v] + self.graph.param_mem[v]

    def freed_by(self, v: int) -> float:
        """Memory released right after ``v`` runs: inputs whose last consumer is ``v``
        (and ``v``'s own output if it is a sink and outputs are not kept)."""
        g = self.graph
        freed = sum(g.mem[u] for u in g.predecessors(v) if self.pending_succs[u] == 1)
        if g.out_degree[v] == 0 and not self.keep_outputs:
            freed += g.mem[v]
        return float(freed)

    def push(self, v: int) -> float:
        """Run node ``v``; returns ``M_t`` of this step."""
        if v not in self._ready:
            raise OrderError(f"node {self.graph.names[v]!r} is not ready to run")
        g = self.graph
        during = self.step_cost(v)
        self.live += g.mem[v] - self.freed_by(v)
        self.peak = max(self.peak, during)
        self._ready.discard(v)
        self.executed[v] = True
        self.order.append(v)
        for u in g.predecessors(v):
            self.pending_succs[u] -= 1
        for w in g.successors(v):
            self.missing_preds[w] -= 1
            if self.missing_preds[w] == 0:
                self._ready.add(int(w))
        return during
