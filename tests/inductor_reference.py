"""Plain Python transcriptions of PyTorch Inductor's three topological sorts
(``torch/_inductor/memory.py``), the oracle for the numba kernels of
``dagopt.schedule.inductor``: they were dagopt's implementation until the kernels
replaced them, and every table's Inductor rows were measured with them."""

import heapq

import numpy as np

from dagopt.graph import Graph


def reference_lpmf(graph: Graph, *, keep_outputs: bool = False) -> np.ndarray:
    """Least Peak Memory First (Inductor's ``topological_sort_lpmf``).

    Among ready nodes pick the one minimising, lexicographically,
    ``(max(live + mem1(v), max_so_far), mem(v) - freed(v), index)``: if a node fits
    under the peak so far, take the one leaving least memory behind; otherwise the
    one with the lowest peak while it runs.
    """
    n = graph.num_nodes
    mem, param = graph.mem, graph.param_mem
    missing = graph.in_degree.astype(np.int64).copy()
    uses_left = graph.out_degree.astype(np.int64) + (1 if keep_outputs else 0)
    to_free = np.zeros(n)
    for u in range(n):
        if uses_left[u] == 1:
            to_free[graph.successors(u)] += mem[u]
        elif uses_left[u] == 0:
            to_free[u] += mem[u]
    live = 0.0
    max_memory = float(mem[graph.sinks].sum()) if keep_outputs else 0.0
    ready = set(np.flatnonzero(missing == 0).tolist())
    order = []
    while ready:
        v = min(
            ready,
            key=lambda x: (max(live + mem[x] + param[x], max_memory), mem[x] - to_free[x], x),
        )
        ready.remove(v)
        order.append(v)
        max_memory = max(max_memory, live + mem[v] + param[v])
        live += mem[v] - to_free[v]
        for w in graph.successors(v):
            missing[w] -= 1
            if missing[w] == 0:
                ready.add(int(w))
        for u in graph.predecessors(v):
            uses_left[u] -= 1
            if uses_left[u] == 1:
                to_free[graph.successors(u)] += mem[u]
    return np.asarray(order, dtype=np.int64)


def reference_fifo_bfs(graph: Graph) -> np.ndarray:
    """Inductor's ``topological_sort_bfs``: run the ready node whose predecessors ran
    earliest (sorted list of predecessor execution steps, compared lexicographically)."""
    missing = graph.in_degree.astype(np.int64).copy()
    step = np.full(graph.num_nodes, -1, dtype=np.int64)
    heap = [([], v) for v in np.flatnonzero(missing == 0).tolist()]
    heapq.heapify(heap)
    order = []
    while heap:
        _, v = heapq.heappop(heap)
        step[v] = len(order)
        order.append(v)
        for w in graph.successors(v):
            missing[w] -= 1
            if missing[w] == 0:
                priority = sorted(set(step[graph.predecessors(w)].tolist()))
                heapq.heappush(heap, (priority, int(w)))
    return np.asarray(order, dtype=np.int64)


def reference_size_dfs(graph: Graph) -> np.ndarray:
    """Inductor's ``topological_sort_dfs``: visit nodes by ascending size of the buffers
    they read and write, each after its (same-sorted) unvisited dependencies."""
    src, dst = graph.edges
    size_with_reads = graph.mem + np.bincount(
        dst, weights=graph.mem[src], minlength=graph.num_nodes
    )
    rank = np.lexsort((np.arange(graph.num_nodes), size_with_reads))
    position = np.empty_like(rank)
    position[rank] = np.arange(rank.size)
    seen = np.zeros(graph.num_nodes, dtype=bool)
    order: list[int] = []
    for root in rank.tolist():
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(_by_rank(graph.predecessors(root), position)))]
        while stack:
            node, deps = stack[-1]
            dep = next((d for d in deps if not seen[d]), None)
            if dep is None:
                stack.pop()
                order.append(node)
            else:
                seen[dep] = True
                stack.append((dep, iter(_by_rank(graph.predecessors(dep), position))))
    return np.asarray(order, dtype=np.int64)


def _by_rank(nodes: np.ndarray, position: np.ndarray) -> list[int]:
    return nodes[np.argsort(position[nodes], kind="stable")].tolist()
