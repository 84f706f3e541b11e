"""Local search on the memory Inductor's generated code holds, over kernel orders.

dagopt's methods order a ``SchedulerGraph`` (``dagopt.io.inductor``), whose peak is
Inductor's estimate; the code Inductor generates holds memory differently
(``dagopt.io.inductor_codegen``: kernel groups, kernel-local buffers, concatenation
views, in-place updates and the wrapper's buffer pool, which keeps freed buffers up to
the estimate's own peak wherever the code holds less). ``refine_order`` starts from an
order and moves one kernel at a time, keeping each move after which the generated
code's peak (``CodegenMemory.profile``) does not grow, so it also walks along plateaus:
the kernel is drawn from the calls at the peak and ``window`` kernels either side of
them, its new place uniformly from where its predecessors and successors let it go.
It stops after ``time_limit`` seconds, ``moves`` moves drawn, or ``PATIENCE`` moves drawn
in a row without lowering the peak, whichever comes first.
"""

import time
from collections.abc import Sequence

import numpy as np

from dagopt.errors import InputError
from dagopt.io.inductor_codegen import CodegenMemory
from dagopt.io.inductor_estimate import positions

#: Kernels either side of the calls at the peak that a move may take.
WINDOW = 16
#: Moves drawn in a row without lowering the peak after which the search stops.
PATIENCE = 2000


def refine_order(
    memory: CodegenMemory,
    predecessors: Sequence[np.ndarray],
    order: Sequence[int] | np.ndarray,
    *,
    time_limit: float | None,
    seed: int | None = 0,
    moves: int | None = None,
    window: int = WINDOW,
) -> tuple[np.ndarray, int]:
    """The order ``refine_order`` reaches from ``order`` (kernel indices, topological
    under ``predecessors``: per kernel, the kernels that must run before it) and its peak
    (module docstring). ``time_limit`` (seconds) or ``moves`` (drawn, kept or not) bounds
    the search; with neither it raises ``InputError``, as for a negative bound."""
    if time_limit is None and moves is None:
        raise InputError("refine_order needs a time_limit or a number of moves")
    if (time_limit is not None and time_limit < 0) or (moves is not None and moves < 0):
        raise InputError("refine_order's time_limit and moves must be at least 0")
    rng = np.random.default_rng(seed)
    successors: list[list[int]] = [[] for _ in predecessors]
    for k, before in enumerate(predecessors):
        for u in before:
            successors[u].append(k)
    order = np.asarray(order, dtype=np.int64)
    if len(order) < 2:
        return order, memory.peak(order)
    position = positions(order)
    profile = memory.profile(order)
    peak = int(profile.max(initial=0))
    low, high = _around_peak(profile, peak, window)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    done = since_lower = 0
    while (moves is None or done < moves) and since_lower < PATIENCE:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        i = int(rng.integers(low, high + 1))
        k = int(order[i])
        done += 1
        since_lower += 1
        earliest = max((position[u] for u in predecessors[k]), default=-1) + 1
        latest = min((position[v] for v in successors[k]), default=len(order)) - 1
        if latest <= earliest:
            continue
        j = int(rng.integers(earliest, latest + 1))
        if j == i:
            continue
        moved = np.insert(np.delete(order, i), j, k)
        moved_profile = memory.profile(moved)
        moved_peak = int(moved_profile.max(initial=0))
        if moved_peak <= peak:
            since_lower = 0 if moved_peak < peak else since_lower
            order, profile, peak = moved, moved_profile, moved_peak
            position = positions(order)
            low, high = _around_peak(profile, peak, window)
    return order, peak


def _around_peak(profile: np.ndarray, peak: int, window: int) -> tuple[int, int]:
    """The positions from ``window`` before the first kernel of a call at the peak to
    ``window`` after the last (``profile``: ``CodegenMemory.profile``, per position)."""
    at_peak = np.flatnonzero(profile == peak)
    return max(int(at_peak[0]) - window, 0), min(int(at_peak[-1]) + window, len(profile) - 1)
