"""Lower bounds on the optimal peak memory (paper 000, eq. 1-3 and 15) of any order.

``must_live_bound``: while ``v`` runs at step ``t``, every ancestor ``u`` of ``v`` has
run, and ``u``'s output is still live if one of its consumers has not run yet: ``v``
itself or a descendant of ``v`` (they all run after step ``t``). So in *every*
topological order::

    M_t >= mem(v) + param_mem(v) + sum(mem(u) for u in anc(v) if succ(u) meets {v} | desc(v))

and the maximum over ``v`` bounds the optimum. It contains ``lower_bound`` (one op's
working set: the predecessors of ``v`` are such ``u``) and is equal to the optimum on
chains, trees and any graph whose peak is one op's forced working set. With
``keep_outputs`` the last step runs a sink while every other sink is kept, so the peak
is also at least ``sum(mem(sinks)) + min(param_mem(sinks))``.

The sets are packed bitsets: ``anc(v)`` is closed in topological order and
``needed(v)``, the predecessors of ``{v} | desc(v)``, in reverse topological order
(``needed(v) = preds(v) | needed(s) for s in succ(v)``), both in numba; the bound is the
weighted popcount of ``anc(v) & needed(v)``, a byte at a time
(a table of each byte's 256 sums). Two ``(n, n / 64)`` word arrays: 100 MB at
20k nodes; above ``MAX_BOUND_BYTES`` (or 80 % of the available memory) the bound falls
back to ``lower_bound``.
"""

import weakref

import numpy as np
from numba import njit

from dagopt.graph import Graph, num_words
from dagopt.objectives.memory import lower_bound
from dagopt.resources import available_bytes

#: Largest closure arrays (bytes, both together) ``must_live_bound`` allocates.
MAX_BOUND_BYTES = 2.0 * 2**30


@njit(cache=True)
def _must_live(topo, pred_ptr, pred_idx, succ_ptr, succ_idx, mem, run, words):
    """``run[v] + sum(mem[u] for u in anc(v) & needed(v))`` for every node ``v``."""
    n = topo.size
    anc = np.zeros((n, words), dtype=np.uint64)
    needed = np.zeros((n, words), dtype=np.uint64)
    one = np.uint64(1)
    for v in topo:
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            anc[v] |= anc[u]
            anc[v, u >> 6] |= one << np.uint64(u & 63)
    for i in range(n - 1, -1, -1):
        v = topo[i]
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            needed[v, u >> 6] |= one << np.uint64(u & 63)
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            needed[v] |= needed[succ_idx[k]]
    # byte_sums[j, p]: the memory of the nodes of byte j of a bitset whose bits are p
    byte_sums = np.zeros((8 * words, 256))
    for j in range(8 * words):
        for p in range(1, 256):
            low = p & -p
            bit = 0
            while (1 << bit) != low:
                bit += 1
            node = 8 * j + bit
            byte_sums[j, p] = byte_sums[j, p ^ low] + (mem[node] if node < n else 0.0)
    out = run.copy()
    for v in range(n):
        total = 0.0
        for w in range(words):
            bits = anc[v, w] & needed[v, w]
            for j in range(8):
                if bits:
                    total += byte_sums[8 * w + j, np.int64(bits & np.uint64(255))]
                    bits >>= np.uint64(8)
        out[v] += total
    return out


#: ``must_live_memory`` of the graphs alive in this process: a solver that stops at the
#: bound and the command that prints it next to the solver's peak compute it once.
_MUST_LIVE: "weakref.WeakKeyDictionary[Graph, np.ndarray]" = weakref.WeakKeyDictionary()


def must_live_memory(graph: Graph) -> np.ndarray | None:
    """Per node ``v``: the memory live in every order while ``v`` runs (module
    docstring), read-only and computed once per graph; ``None`` when the closures would
    take more than ``MAX_BOUND_BYTES`` or 80 % of the available memory."""
    cached = _MUST_LIVE.get(graph)
    if cached is not None:
        return cached
    n = graph.num_nodes
    words = num_words(n)
    if 16.0 * n * words > min(MAX_BOUND_BYTES, 0.8 * available_bytes()):
        return None
    forced = _must_live(
        graph.topological_order.astype(np.int64),
        graph.pred_ptr, graph.pred_idx, graph.succ_ptr, graph.succ_idx,
        graph.mem, graph.mem + graph.param_mem, words,
    )  # fmt: skip
    forced.flags.writeable = False
    _MUST_LIVE[graph] = forced
    return forced


def kept_outputs_bound(graph: Graph) -> float:
    """With ``keep_outputs`` every sink but the last one run is live at the last step."""
    sinks = graph.out_degree == 0
    if not sinks.any():
        return 0.0
    return float(graph.mem[sinks].sum() + graph.param_mem[sinks].min())


def must_live_bound(graph: Graph, *, keep_outputs: bool = False) -> float:
    """The strongest of this module's bounds on the least peak of any order of
    ``graph``; ``lower_bound`` when the closures do not fit (``must_live_memory``)."""
    forced = must_live_memory(graph)
    bound = lower_bound(graph) if forced is None else float(forced.max(initial=0.0))
    return max(bound, kept_outputs_bound(graph)) if keep_outputs else bound
