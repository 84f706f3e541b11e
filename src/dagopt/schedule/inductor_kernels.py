"""numba kernels of Inductor's three topological sorts (``dagopt.schedule.inductor``).

Each kernel makes exactly the choices of the description in ``inductor.py`` (same keys,
same tie-breaks, same floating-point sums in the same order), in compiled loops: the
sorts are the start of ``anytime`` and the baseline of every table, and in Python they
took seconds on 20k-node graphs. ``tests/test_solvers.py`` checks them against plain
Python transcriptions of Inductor's sorts on random graphs.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def lpmf_kernel(succ_ptr, succ_idx, pred_ptr, pred_idx, mem, param, keep_outputs, max_memory):
    """Least Peak Memory First: the ready node of least
    ``(max(live + mem1(v), max_so_far), mem(v) - freed(v), v)`` runs next.

    ``max_memory`` is the starting peak (the graph outputs' bytes when they are kept).
    """
    n = mem.size
    missing = np.diff(pred_ptr)
    uses_left = np.diff(succ_ptr) + (1 if keep_outputs else 0)
    to_free = np.zeros(n)
    for u in range(n):
        if uses_left[u] == 1:
            for i in range(succ_ptr[u], succ_ptr[u + 1]):
                to_free[succ_idx[i]] += mem[u]
        elif uses_left[u] == 0:
            to_free[u] += mem[u]
    ready = np.empty(n, dtype=np.int64)
    count = 0
    for v in range(n):
        if missing[v] == 0:
            ready[count] = v
            count += 1
    order = np.empty(n, dtype=np.int64)
    live = 0.0
    for t in range(n):
        best = 0
        b_x = ready[0]
        b_peak = max(live + mem[b_x] + param[b_x], max_memory)
        b_left = mem[b_x] - to_free[b_x]
        for j in range(1, count):
            x = ready[j]
            peak = max(live + mem[x] + param[x], max_memory)
            if peak > b_peak:
                continue
            left = mem[x] - to_free[x]
            if peak < b_peak or left < b_left or (left == b_left and x < b_x):
                best, b_x, b_peak, b_left = j, x, peak, left
        v = b_x
        count -= 1
        ready[best] = ready[count]
        order[t] = v
        max_memory = max(max_memory, live + mem[v] + param[v])
        live += mem[v] - to_free[v]
        for i in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[i]
            missing[w] -= 1
            if missing[w] == 0:
                ready[count] = w
                count += 1
        for i in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[i]
            uses_left[u] -= 1
            if uses_left[u] == 1:
                for k in range(succ_ptr[u], succ_ptr[u + 1]):
                    to_free[succ_idx[k]] += mem[u]
    return order


@njit(cache=True)
def _before(a, b, key_ptr, keys):
    """Whether ready node ``a`` runs before ``b`` in the FIFO BFS: its sorted list of
    predecessor steps is lexicographically smaller (a prefix is smaller), then its id."""
    la = key_ptr[a + 1] - key_ptr[a]
    lb = key_ptr[b + 1] - key_ptr[b]
    for i in range(min(la, lb)):
        ka, kb = keys[key_ptr[a] + i], keys[key_ptr[b] + i]
        if ka != kb:
            return ka < kb
    if la != lb:
        return la < lb
    return a < b


@njit(cache=True)
def fifo_bfs_kernel(succ_ptr, succ_idx, pred_ptr, pred_idx):
    """FIFO BFS: a binary heap of ready nodes keyed by their sorted predecessor steps."""
    n = succ_ptr.size - 1
    missing = np.diff(pred_ptr)
    step = np.full(n, -1, dtype=np.int64)
    keys = np.empty(pred_idx.size, dtype=np.int64)  # node w's key at pred_ptr[w]
    heap = np.empty(n, dtype=np.int64)
    size = 0
    for v in range(n):
        if missing[v] == 0:
            heap[size] = v  # ascending ids with empty keys: already a heap
            size += 1
    order = np.empty(n, dtype=np.int64)
    for t in range(n):
        v = heap[0]
        size -= 1
        last = heap[size]
        at = 0  # sift ``last`` down from the root
        while True:
            child = 2 * at + 1
            if child >= size:
                break
            if child + 1 < size and _before(heap[child + 1], heap[child], pred_ptr, keys):
                child += 1
            if not _before(heap[child], last, pred_ptr, keys):
                break
            heap[at] = heap[child]
            at = child
        if size > 0:
            heap[at] = last
        step[v] = t
        order[t] = v
        for i in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[i]
            missing[w] -= 1
            if missing[w] == 0:
                start, stop = pred_ptr[w], pred_ptr[w + 1]
                for k in range(start, stop):
                    keys[k] = step[pred_idx[k]]
                keys[start:stop] = np.sort(keys[start:stop])
                at = size  # sift ``w`` up
                size += 1
                while at > 0:
                    parent = (at - 1) // 2
                    if not _before(w, heap[parent], pred_ptr, keys):
                        break
                    heap[at] = heap[parent]
                    at = parent
                heap[at] = w
    return order


@njit(cache=True)
def size_dfs_kernel(rank, pred_ptr, sorted_preds):
    """Size-ordered DFS: roots in ``rank`` order, each node after its unvisited
    predecessors (``sorted_preds``: each node's predecessors in ``rank`` order)."""
    n = rank.size
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    done = 0
    stack = np.empty(n, dtype=np.int64)
    cursor = np.empty(n, dtype=np.int64)  # next predecessor to look at, per frame
    for root in rank:
        if seen[root]:
            continue
        seen[root] = True
        stack[0], cursor[0], depth = root, pred_ptr[root], 1
        while depth > 0:
            node = stack[depth - 1]
            at, stop = cursor[depth - 1], pred_ptr[node + 1]
            while at < stop and seen[sorted_preds[at]]:
                at += 1
            if at == stop:
                depth -= 1
                order[done] = node
                done += 1
            else:
                dep = sorted_preds[at]
                cursor[depth - 1] = at + 1
                seen[dep] = True
                stack[depth], cursor[depth] = dep, pred_ptr[dep]
                depth += 1
    return order
