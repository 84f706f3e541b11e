"""PyTorch Inductor's peak-memory reordering, re-implemented on ``Graph``.

Follows the published description of ``torch/_inductor/memory.py``
(``reorder_for_peak_memory``): three heuristic topological sorts and the
best-of selection. Mapping to dagopt's model (paper 000, eq. 2-3, 15): every node
owns one output buffer of ``mem(v)`` bytes whose consumers are its successors; a
sink's buffer is freed right after it runs unless ``keep_outputs`` makes it a
graph output (Inductor's ``outdegree + 1``). ``param_mem`` is transient memory of
the running node, so it enters the "memory during the node" term only. The node
index (file order) is Inductor's ``mpi_node.index`` tie-breaker.
"""

import numpy as np

from dagopt.graph import Graph
from dagopt.objectives import peak_memory
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.inductor_kernels import fifo_bfs_kernel, lpmf_kernel, size_dfs_kernel


def lpmf_order(graph: Graph, *, keep_outputs: bool = False) -> np.ndarray:
    """Least Peak Memory First (Inductor's ``topological_sort_lpmf``).

    Among ready nodes pick the one minimising, lexicographically,
    ``(max(live + mem1(v), max_so_far), mem(v) - freed(v), index)``: if a node fits
    under the peak so far, take the one leaving least memory behind; otherwise the
    one with the lowest peak while it runs. A buffer is freed when its last use runs;
    a kept graph output counts one use more and is never freed.
    """
    max_memory = float(graph.mem[graph.sinks].sum()) if keep_outputs else 0.0
    return lpmf_kernel(
        graph.succ_ptr, graph.succ_idx, graph.pred_ptr, graph.pred_idx,
        graph.mem, graph.param_mem, keep_outputs, max_memory,
    )  # fmt: skip


def fifo_bfs_order(graph: Graph) -> np.ndarray:
    """Inductor's ``topological_sort_bfs``: run the ready node whose predecessors ran
    earliest (sorted list of predecessor execution steps, compared lexicographically,
    then the node index)."""
    return fifo_bfs_kernel(graph.succ_ptr, graph.succ_idx, graph.pred_ptr, graph.pred_idx)


def size_dfs_order(graph: Graph) -> np.ndarray:
    """Inductor's ``topological_sort_dfs``: visit nodes by ascending size of the buffers
    they read and write (then index), each after its unvisited dependencies, which are
    visited in the same order."""
    n = graph.num_nodes
    src, dst = graph.edges
    size_with_reads = graph.mem + np.bincount(dst, weights=graph.mem[src], minlength=n)
    rank = np.lexsort((np.arange(n), size_with_reads))
    position = np.empty_like(rank)
    position[rank] = np.arange(n)
    consumer = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    sorted_preds = graph.pred_idx[np.lexsort((position[graph.pred_idx], consumer))]
    return size_dfs_kernel(rank, graph.pred_ptr, sorted_preds.astype(np.int64))


@register("lpmf", "PyTorch Inductor's least-peak-memory-first greedy")
def solve_lpmf(graph: Graph, *, keep_outputs: bool = False, **_: object) -> SolverResult:
    return SolverResult(order=lpmf_order(graph, keep_outputs=keep_outputs))


@register("inductor-bfs", "PyTorch Inductor's FIFO BFS (earliest-executed predecessors first)")
def solve_inductor_bfs(graph: Graph, **_: object) -> SolverResult:
    return SolverResult(order=fifo_bfs_order(graph))


@register("inductor-dfs", "PyTorch Inductor's size-ordered DFS")
def solve_inductor_dfs(graph: Graph, **_: object) -> SolverResult:
    return SolverResult(order=size_dfs_order(graph))


def inductor_best_order(
    graph: Graph, *, keep_outputs: bool = False
) -> tuple[np.ndarray, str, dict[str, float]]:
    """``reorder_for_peak_memory``: the candidate of least peak, earlier candidates winning
    ties; returns it, its name and every candidate's peak. The given order (node order of
    the file) is a candidate when it is topological."""
    candidates = {}
    identity = np.arange(graph.num_nodes)
    if graph.is_topological(identity):
        candidates["given"] = identity
    candidates["lpmf"] = lpmf_order(graph, keep_outputs=keep_outputs)
    candidates["bfs"] = fifo_bfs_order(graph)
    candidates["dfs"] = size_dfs_order(graph)
    peaks = {k: peak_memory(graph, o, keep_outputs=keep_outputs) for k, o in candidates.items()}
    best = min(peaks, key=peaks.get)
    return candidates[best], best, peaks


@register("inductor", "PyTorch Inductor's best of {given order, lpmf, bfs, dfs}")
def solve_inductor(graph: Graph, *, keep_outputs: bool = False, **_: object) -> SolverResult:
    order, chosen, peaks = inductor_best_order(graph, keep_outputs=keep_outputs)
    return SolverResult(order=order, info={"chosen": chosen, "peaks": peaks})
