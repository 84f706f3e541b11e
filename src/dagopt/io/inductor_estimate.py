"""Inductor's own memory estimate, step by step, of any order of a graph's kernels.

Inductor judges orders by ``estimate_peak_memory`` (``torch/_inductor/memory.py``): each
kernel allocates its outputs' ``size_alloc`` when it runs, each buffer frees its
``size_free`` after its last reader (after its own kernel when nothing reads it; never
when it is a graph output), and the freeable inputs are live from the start. Its
wrapper consults the same estimate, step by step, when it decides whether a freed buffer
may be kept for a later allocation (``dagopt.io.inductor_codegen``, the buffer pool).
``InductorEstimate`` holds these facts of one compiled graph and gives that step-by-step
estimate for any order; ``inductor_estimate(sched)`` reads them off a
``SchedulerGraph``.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dagopt.io.inductor import SchedulerGraph


@dataclass(frozen=True)
class InductorEstimate:
    """Per kernel (indexed as in ``SchedulerGraph.kernels``): ``allocs``, the bytes it
    allocates when it runs. ``inputs``: the freeable inputs' bytes, live from the start.
    Per buffer that is freed (no graph output): ``frees`` (bytes), ``makers`` (its kernel;
    -1 for a freeable input) and ``users`` (the kernels that read it)."""

    allocs: np.ndarray
    inputs: int
    frees: np.ndarray
    makers: np.ndarray
    users: tuple[np.ndarray, ...]

    def steps(self, position: np.ndarray) -> np.ndarray:
        """Bytes live at each step when kernel ``k`` runs at step ``position[k]``, and
        after the last step (``estimate_peak_memory``'s per-step list, ``len(allocs) + 1``
        entries)."""
        delta = np.zeros(len(self.allocs) + 1, dtype=np.int64)
        np.add.at(delta, position, self.allocs)
        delta[0] += self.inputs
        buffers, users = self._reads
        end = np.where(self.makers >= 0, position[self.makers], -1)
        np.maximum.at(end, buffers, position[users])
        np.add.at(delta, end + 1, -self.frees)
        return np.cumsum(delta)

    def peak(self, order: Sequence[int] | np.ndarray) -> int:
        """``estimate_peak_memory``'s peak when the kernels run in ``order`` (kernel
        indices)."""
        return int(self.steps(positions(order)).max())

    @cached_property
    def _reads(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (freed buffer, kernel reading it) pair, as two flat arrays."""
        return flat_pairs(self.users)


def positions(order: Sequence[int] | np.ndarray) -> np.ndarray:
    """Per kernel, its position in ``order`` (kernel indices, each once)."""
    order = np.asarray(order, dtype=np.int64)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position


def flat_pairs(groups: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every (group index, member) pair of ``groups`` (arrays of kernel indices), as two
    flat ``int64`` arrays."""
    index = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    members = np.concatenate([np.zeros(0, dtype=np.int64), *groups]).astype(np.int64)
    return index, members


def inductor_estimate(sched: SchedulerGraph) -> InductorEstimate:
    """The ``InductorEstimate`` of ``sched``'s kernels (Inductor's planning information:
    each buffer's ``mpi_buffer``)."""
    allocs = np.zeros(len(sched.kernels), dtype=np.int64)
    frees, makers, users = [], [], []

    def freed(buffer, maker: int) -> None:
        if buffer.get_name() in sched.graph_outputs or not buffer.mpi_buffer.size_free:
            return
        frees.append(buffer.mpi_buffer.size_free)
        makers.append(maker)
        readers = [sched.position[id(node)] for node in buffer.mpi_buffer.succ_nodes]
        users.append(np.asarray(readers, dtype=np.int64))

    inputs = 0
    for buffer in sched.freeable_inputs.values():
        inputs += buffer.mpi_buffer.size_free
        freed(buffer, -1)
    for k, kernel in enumerate(sched.kernels):
        for buffer in kernel.get_outputs():
            allocs[k] += buffer.mpi_buffer.size_alloc
            freed(buffer, k)
    return InductorEstimate(
        allocs=allocs,
        inputs=int(inputs),
        frees=np.asarray(frees, dtype=np.int64),
        makers=np.asarray(makers, dtype=np.int64),
        users=tuple(users),
    )
