"""Peak memory of an execution order: paper 000, eq. (1)-(3) with parameter memory (15).

When node ``v = sigma_t`` runs at step ``t``::

    M_t = I_{t-1} + mem(v) + param_mem(v)                           (2), (15)
    I_t = I_{t-1} + mem(v) - sum(mem(u) for u in S_t)               (3)

where ``S_t`` holds every executed, not yet freed node whose successors have all
run (a sink is freed right after it runs, unless ``keep_outputs=True``, which keeps
graph outputs alive to the end as PyTorch does). The cost is ``max_t M_t`` (1).
This module is the single source of truth for every peak a solver reports.
"""

from dataclasses import dataclass

import numpy as np

from dagopt.graph import Graph, validate_order


@dataclass(frozen=True)
class MemoryProfile:
    """Memory at every step of an order: ``during[t] = M_t`` and ``after[t] = I_t``."""

    order: np.ndarray
    during: np.ndarray
    after: np.ndarray

    @property
    def peak(self) -> float:
        return float(self.during.max()) if self.during.size else 0.0

    @property
    def peak_step(self) -> int | None:
        """The first step at the peak; None for an empty order (no step)."""
        return int(self.during.argmax()) if self.during.size else None


def free_steps(graph: Graph, position: np.ndarray, *, keep_outputs: bool = False) -> np.ndarray:
    """Step after which each node's output is freed: its last consumer's step.

    A sink is freed at its own step, or never (``n``) with ``keep_outputs``.
    """
    n = graph.num_nodes
    free_at = position.copy() if not keep_outputs else np.full(n, n, dtype=np.int64)
    has_succ = graph.out_degree > 0
    if graph.num_edges:
        starts = graph.succ_ptr[:-1][has_succ]
        free_at[has_succ] = np.maximum.reduceat(position[graph.succ_idx], starts)
    return free_at


def memory_profile(graph: Graph, order, *, keep_outputs: bool = False) -> MemoryProfile:
    """``M_t`` and ``I_t`` for every step of ``order`` (validated first), vectorized."""
    order = validate_order(graph, order)
    n = graph.num_nodes
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    free_at = free_steps(graph, position, keep_outputs=keep_outputs)
    kept = free_at < n
    freed = np.bincount(free_at[kept], weights=graph.mem[kept], minlength=n)[:n]
    allocated = graph.mem[order]
    after = np.cumsum(allocated - freed)
    before = np.concatenate(([0.0], after[:-1]))
    during = before + allocated + graph.param_mem[order]
    return MemoryProfile(order=order, during=during, after=after)


def peak_memory(graph: Graph, order, *, keep_outputs: bool = False) -> float:
    """Peak memory ``max_t M_t`` of ``order`` (eq. 1); raises ``OrderError`` if invalid."""
    return memory_profile(graph, order, keep_outputs=keep_outputs).peak


def largest_working_set(src, dst, mem: np.ndarray, param_mem: np.ndarray) -> float:
    """The most bytes one op needs at once: ``max_v mem(v) + param_mem(v) + sum mem(preds)``
    over the edges ``src -> dst`` (0 without ops). Takes arrays, so a generator can size
    a graph before building it."""
    inputs = np.bincount(dst, weights=mem[src], minlength=mem.size)
    return float((mem + param_mem + inputs).max(initial=0.0))


def lower_bound(graph: Graph) -> float:
    """A cheap lower bound on the optimal peak: the ``largest_working_set`` of ``graph``.

    While ``v`` runs, the outputs of all its predecessors are still live.
    """
    return largest_working_set(*graph.edges, graph.mem, graph.param_mem)
