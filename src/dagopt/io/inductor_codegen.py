"""The memory Inductor's generated code holds: the peak of a kernel order as its wrapper runs it.

Inductor's estimate (``estimate_peak_memory``, the peak ``dagopt.io.inductor``'s graph
extends) allocates each scheduler node's buffers when the node runs and frees each
after its last reader. The code Inductor generates (torch 2.13, ``torch/_inductor``)
holds memory differently, in four ways this module models:

1. **Kernel groups (CPU).** The C++ backend gathers consecutive generated kernels into
   one C++ function and calls it once: ``Scheduler._codegen`` flushes the group
   (``CppScheduling.flush``) before an extern kernel, a template or a change of device,
   and after a kernel that takes the group past ``MAX_FUSED_KERNEL_ARGS_NUM`` (500)
   arguments. The wrapper allocates the buffers of every kernel of a group before the
   call, and frees those whose last reader is in the group after it
   (``Scheduler.free_buffers`` runs at a flush and after each extern kernel); the frees
   of a no-op kernel wait for the next flush. On other devices each kernel is a call
   of its own.
2. **Kernel-local buffers.** A buffer that only the generated kernel writing it reads,
   in loops over the ranges of the loop that writes it, and that is no graph output, is
   never allocated (``Kernel.remove_kernel_local_buffers``: the kernel uses the stored
   value).
3. **Concatenation views.** The inputs of a concatenation are written straight into its
   output (``NonOwningLayout``) and own no memory: the output is allocated with the
   first of them and freed after the last reader of it or of any of them.
4. **In-place updates.** A generated kernel writes an output into an input buffer of the
   same size when it is that input's last remaining reader and reads it at one index
   (``BaseSchedulerNode.decide_inplace_update``, whose conditions ``CodegenMemory``
   keeps): the output takes the input's memory, which lives until the output's last
   reader.

``codegen_memory(sched)`` reads these facts off a ``SchedulerGraph`` while Inductor
compiles it (an in-place update depends on which of the input's readers have run, so
the candidates are kept with the kernels that must run first);
``CodegenMemory.peak(kernels)`` is the peak of the kernels run in that order, with each
extern kernel's workspace while it runs. Left out: the wrapper's buffer pool
(``memory_plan_reuse``), which keeps a freed buffer for a later one of the same size
only where Inductor's own estimate says the peak does not grow; a kernel-local buffer
read in a loop of the same ranges that still loads it back; and a group's arguments are
counted as the distinct buffers its kernels read and write, without size variables.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagopt.io.inductor import OUTPUTS_NODE, SchedulerGraph

#: Kernel kinds: a generated kernel (joins the C++ group), one called on its own (extern,
#: template, a generated kernel on another device), a no-op.
GROUPED, ALONE, NO_OP = 0, 1, 2
#: ``CppScheduling.MAX_FUSED_KERNEL_ARGS_NUM``: a C++ group is called once it has more
#: arguments.
MAX_GROUP_ARGUMENTS = 500


@dataclass(frozen=True)
class InPlace:
    """Kernel ``kernel`` may write storage ``output`` into storage ``input`` when every
    kernel of ``after`` (the other readers of ``input`` that need not precede it) has
    run before it."""

    kernel: int
    output: int
    input: int
    after: tuple[int, ...]


@dataclass(frozen=True)
class CodegenMemory:
    """The memory facts of one compiled graph (module docstring). Kernels are indexed as
    in ``SchedulerGraph.kernels``; storages are the freeable inputs, then every kernel's
    storages. Per kernel: ``kinds``, ``workspaces`` (bytes), ``arguments`` (the buffers
    it reads and writes, for the group limit), ``in_place`` (its candidates, in the order
    Inductor tries them). Per storage: ``sizes`` (bytes; 0 for a concatenation view and a
    kernel-local buffer), ``owner`` (the storage whose memory it is: itself, or a
    concatenation's output), ``allocator`` (its kernel; -1 for a freeable input, live
    from the start), ``readers`` (kernels) and ``kept`` (a graph output, never freed)."""

    kinds: np.ndarray
    workspaces: np.ndarray
    arguments: tuple[frozenset[str], ...]
    in_place: tuple[tuple[InPlace, ...], ...]
    sizes: np.ndarray
    owner: np.ndarray
    allocator: np.ndarray
    readers: tuple[np.ndarray, ...]
    kept: np.ndarray

    def segments(self, order: np.ndarray) -> np.ndarray:
        """Per kernel, the index of the call it is part of when the kernels run in
        ``order`` (kernel indices): consecutive grouped kernels share one, up to the
        argument limit; no-op kernels belong to the call that ends at the next flush."""
        segment = np.empty(len(self.kinds), dtype=np.int64)
        current, open_group, arguments = 0, False, set()
        for k in order:
            if self.kinds[k] == ALONE:
                if open_group:  # flushed first
                    current += 1
                segment[k] = current
                current, open_group, arguments = current + 1, False, set()
                continue
            segment[k] = current
            open_group = True  # a group, or a no-op's frees, waiting for the next flush
            if self.kinds[k] == GROUPED:
                arguments |= self.arguments[k]
                if len(arguments) > MAX_GROUP_ARGUMENTS:
                    current, open_group, arguments = current + 1, False, set()
        return segment

    def peak(self, order: Sequence[int] | np.ndarray) -> int:
        """Peak bytes of the generated code when it runs the kernels in ``order`` (kernel
        indices, a topological order of all of them)."""
        order = np.asarray(order, dtype=np.int64)
        position = np.empty(len(self.kinds), dtype=np.int64)
        position[order] = np.arange(len(order))
        segment = self.segments(order)
        owner = self._after_in_place(order, position)
        n_segments = int(segment.max(initial=-1)) + 2
        first = np.full(len(self.sizes), n_segments, dtype=np.int64)
        last = np.full(len(self.sizes), -1, dtype=np.int64)
        kept = np.zeros(len(self.sizes), dtype=bool)
        for s in range(len(self.sizes)):
            root = owner[s]
            made = -1 if self.allocator[s] < 0 else segment[self.allocator[s]]
            first[root] = min(first[root], made)
            if len(self.readers[s]):
                last[root] = max(last[root], segment[self.readers[s]].max())
            kept[root] |= self.kept[s]
        start = 0
        allocated = np.zeros(n_segments, dtype=np.int64)
        freed = np.zeros(n_segments, dtype=np.int64)
        for root in np.flatnonzero(self.sizes > 0):
            if owner[root] != root:
                continue
            size = int(self.sizes[root])
            if first[root] < 0:
                start += size
            else:
                allocated[first[root]] += size
            if not kept[root]:
                freed[max(last[root], first[root], 0)] += size
        workspace = np.zeros(n_segments, dtype=np.int64)
        np.maximum.at(workspace, segment, self.workspaces)
        live = peak = start
        for s in range(n_segments):
            live += int(allocated[s])
            peak = max(peak, live + int(workspace[s]))
            live -= int(freed[s])
        return peak

    def _after_in_place(self, order: np.ndarray, position: np.ndarray) -> np.ndarray:
        """``owner`` after the in-place updates the order allows: an updated output's
        memory is its input's (the input's owner's, along chains of updates)."""
        owner = self.owner.copy()
        taken: set[int] = set()
        for k in order:
            updated: set[int] = set()
            for candidate in self.in_place[k]:
                if candidate.output in updated or candidate.input in taken:
                    continue
                if all(position[a] < position[k] for a in candidate.after):
                    root = owner[candidate.input]
                    owner[owner == owner[candidate.output]] = root
                    taken.add(candidate.input)
                    updated.add(candidate.output)
        return owner


def codegen_memory(sched: SchedulerGraph) -> CodegenMemory:
    """The ``CodegenMemory`` of ``sched`` (module docstring), read while Inductor compiles
    it (``torch._inductor.virtualized.V``: the scheduler, the wrapper and the graph's
    removed operations)."""
    graph = sched.graph
    outputs = graph.index_of[OUTPUTS_NODE]
    nodes = [*sched.front[: len(sched.freeable_inputs)]]
    buffers: list[Any] = list(sched.freeable_inputs.values())
    allocator = [-1] * len(nodes)
    for k, storage_nodes in enumerate(sched.storage_nodes):
        held = sched.storage_buffers[k]
        nodes.extend(storage_nodes[: len(held)])
        buffers.extend(held)
        allocator.extend([k] * len(held))
    index_of_buffer = {buffer.get_name(): s for s, buffer in enumerate(buffers)}
    readers, kept = [], []
    for v in nodes:
        successors = graph.successors(v)
        found = sched.kernel_of[successors]
        readers.append(np.unique(found[found >= 0]))
        kept.append(outputs in successors)
    kinds = np.array([_kind(kernel) for kernel in sched.kernels])
    sizes = graph.mem[nodes].astype(np.int64)  # a concatenation view's is 0
    owner = np.arange(len(buffers), dtype=np.int64)
    storage_of = {v: s for s, v in enumerate(nodes)}
    for view, output in sched.views.items():
        owner[storage_of[view]] = storage_of[output]
    for s, buffer in enumerate(buffers):
        if (
            owner[s] == s
            and allocator[s] >= 0
            and kinds[allocator[s]] == GROUPED
            and not kept[s]
            and set(readers[s].tolist()) <= {allocator[s]}
            and _read_as_written(sched.kernels[allocator[s]], buffer.get_name())
        ):
            sizes[s] = 0  # kernel-local: never allocated
    workspaces = np.zeros(len(sched.kernels), dtype=np.int64)
    for k, storage_nodes in enumerate(sched.storage_nodes):
        for v in storage_nodes[len(sched.storage_buffers[k]) :]:
            workspaces[k] = int(graph.mem[v])
    local = {buffers[s].get_name() for s in np.flatnonzero(sizes == 0) if owner[s] == s}
    return CodegenMemory(
        kinds=kinds,
        workspaces=workspaces,
        arguments=tuple(
            frozenset(d.name for d in kernel.read_writes.reads_and_writes()) - local
            for kernel in sched.kernels
        ),
        in_place=_in_place_candidates(sched, index_of_buffer, sizes),
        sizes=sizes,
        owner=owner,
        allocator=np.asarray(allocator, dtype=np.int64),
        readers=tuple(readers),
        kept=np.asarray(kept, dtype=bool),
    )


def _read_as_written(kernel: Any, name: str) -> bool:
    """Whether every read of buffer ``name`` inside ``kernel`` is in a loop over the ranges
    of the loop that writes it (the subnodes' ``group``): the generated code then takes
    the stored value instead of loading it back, and the buffer is removed; a kernel that
    loads it back (a reduction read by a later loop over other ranges, say) keeps it."""
    groups = set()
    for node in kernel.get_nodes():
        accesses = (*node.read_writes.writes, *node.read_writes.reads)
        if any(d.name == name for d in accesses):
            groups.add(node.group)
    return len(groups) == 1


def _kind(kernel: Any) -> int:
    """``GROUPED``, ``ALONE`` or ``NO_OP`` (the module's kernel kinds)."""
    from torch._inductor.scheduler import NopKernelSchedulerNode

    if isinstance(kernel, NopKernelSchedulerNode):
        return NO_OP
    device = kernel.get_device()
    if kernel.is_extern() or kernel.is_template() or device is None or device.type != "cpu":
        return ALONE
    return GROUPED


def _in_place_candidates(
    sched: SchedulerGraph, index_of_buffer: dict[str, int], sizes: np.ndarray
) -> tuple[tuple[InPlace, ...], ...]:
    """Per kernel, the in-place updates ``decide_inplace_update`` may make in it, with the
    conditions that do not depend on the order checked here."""
    import torch._inductor.config as inductor_config
    from torch._inductor.scheduler import SchedulerNode
    from torch._inductor.virtualized import V

    if not inductor_config.inplace_buffers:
        return tuple(() for _ in sched.kernels)
    scheduler = V.graph.scheduler
    found: list[tuple[InPlace, ...]] = []
    for k, kernel in enumerate(sched.kernels):
        candidates = []
        for node in kernel.get_nodes():
            if not isinstance(node, SchedulerNode):
                continue
            for buffer in node.get_outputs():
                output = index_of_buffer.get(buffer.get_name())
                if output is None or sizes[output] == 0 or not _may_update(buffer.node):
                    continue
                for read in node.read_writes.reads:
                    source = scheduler.name_to_donated_buffer.get(
                        read.name
                    ) or scheduler.name_to_buf.get(read.name)
                    source_index = index_of_buffer.get(read.name)
                    if source is None or source_index is None or sizes[source_index] == 0:
                        continue
                    after = _blockers(node, source, buffer, scheduler, sched.position)
                    if after is not None and k not in after:
                        candidates.append(InPlace(k, output, source_index, tuple(sorted(after))))
        found.append(tuple(candidates))
    return tuple(found)


def _may_update(node: Any) -> bool:
    """An output buffer ``decide_inplace_update`` may write into an input."""
    return bool(
        node.should_allocate()
        and not node.get_inputs_that_alias_output()
        and not node.get_mutation_names()
    )


def _blockers(
    node: Any, source: Any, output: Any, scheduler: Any, position: dict[int, int]
) -> set[int] | None:
    """The kernels of ``source``'s other readers that need not precede ``node`` (its
    ancestors must), when ``node`` may write ``output`` into ``source`` once they have run;
    None when it never may (``decide_inplace_update``'s conditions)."""
    from torch._inductor import ir
    from torch._inductor.codegen.wrapper import can_match_buffer_size
    from torch._inductor.scheduler import BaseSchedulerNode, NopKernelSchedulerNode
    from torch._inductor.virtualized import V

    if not V.graph.wrapper_code.can_reuse(source, node) or isinstance(
        source.defining_op, NopKernelSchedulerNode
    ):
        return None
    layout = source.node.get_output_spec()
    if isinstance(
        layout,
        (ir.NoneLayout, ir.MultiOutputLayout, ir.MutationLayoutSHOULDREMOVE, ir.CommBufferLayout),
    ):
        return None
    if (
        source.defining_op is not None
        and isinstance(source.defining_op.node, (ir.FallbackKernel, ir.MultiOutput))
        and source.node.get_inputs_that_alias_output()
    ):
        return None
    if not can_match_buffer_size(source.node, output.node):
        return None
    skipped = node.ancestors | V.graph.removed_operations
    remaining = [u for u in source.users if u.node.get_name() not in skipped]
    own = [u for u in remaining if u.node is node]
    if len(own) != 1 or not own[0].can_inplace or not _one_index(node, source, scheduler):
        return None
    after = set()
    for user in remaining:
        if user.node is node:
            continue
        if not isinstance(user.node, BaseSchedulerNode):
            return None  # a graph output
        after.add(position[id(scheduler.get_fused_node(user.node))])
    return after


def _one_index(node: Any, source: Any, scheduler: Any) -> bool:
    """``single_index_in_fused_node``: the readers of ``source`` inside ``node``'s fused
    kernel access it at one index."""
    from torch._inductor.scheduler import BaseSchedulerNode

    fused = scheduler.get_fused_node(node)
    name = source.get_name()
    accesses = set()
    for user in source.users:
        reader = user.node
        if not isinstance(reader, BaseSchedulerNode):
            continue
        if reader.get_first_name() not in scheduler.name_to_fused_node:
            continue
        if scheduler.get_fused_node(reader) is not fused:
            continue
        accesses |= {d for d in reader.read_writes.reads_and_writes() if d.name == name}
        if len(accesses) > 1:
            return False
    return True
