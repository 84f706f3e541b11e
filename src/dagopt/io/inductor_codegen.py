"""The memory Inductor's generated code holds: the peak of a kernel order as its wrapper runs it.

Inductor's estimate (``estimate_peak_memory``, the peak ``dagopt.io.inductor``'s graph
extends) allocates each scheduler node's buffers when the node runs and frees each
after its last reader. The code Inductor generates (torch 2.13, ``torch/_inductor``)
holds memory differently, in five ways this module models:

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
   value); nor is one that a kernel of loops fused over a common outer loop keeps, row
   by row, in a buffer local to one iteration of it (a softmax's exponentials).
3. **Concatenation views.** The inputs of a concatenation are written straight into its
   output (``NonOwningLayout``) and own no memory: the output is allocated with the
   first of them and freed after the last reader of it or of any of them.
4. **In-place updates.** A generated kernel writes an output into an input buffer of the
   same size when it is that input's last remaining reader and reads it at one index
   (``BaseSchedulerNode.decide_inplace_update``, whose conditions ``CodegenMemory``
   keeps): the output takes the input's memory, which lives until the output's last
   reader.
5. **The buffer pool.** The wrapper keeps a freed buffer for a later allocation of the
   same reuse key (device, dtype, storage size, alignment: ``buffer_reuse_key``) instead
   of freeing it (``memory_plan_reuse``): going through its allocations and frees in
   order, an allocation takes the buffer freed last of its key (``AllocateLine.plan``)
   when that was freed at the step right before it, or when Inductor's estimate
   (``dagopt.io.inductor_estimate``) with the buffer held in between stays within the
   estimate's own peak (``should_reuse_buffer``; each buffer so held is added to the
   estimate). The freed buffer's memory then lives on until the new one is freed: where
   the generated code holds less than the estimate, the pool fills the gap. An
   in-place update of an unaligned buffer (an extern kernel's output) is unaligned too
   (``KernelArgs.make_inplace``), and so is its key when it is freed.

``codegen_memory(sched)`` reads these facts off a ``SchedulerGraph`` while Inductor
compiles it (an in-place update depends on which of the input's readers have run, so
the candidates are kept with the kernels that must run first);
``CodegenMemory.peak(kernels)`` is the peak of the kernels run in that order, with each
extern kernel's workspace while it runs. Left out: a kernel-local buffer read in a loop
of the same ranges that still loads it back; a group's arguments are counted as the
distinct buffers its kernels read and write, without size variables; a freed
multi-output buffer enters the pool at its kernel's last ``MultiOutput`` node if that
runs after its last reader.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dagopt.io.inductor import OUTPUTS_NODE, SchedulerGraph
from dagopt.io.inductor_estimate import (
    InductorEstimate,
    flat_pairs,
    inductor_estimate,
    positions,
)

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
    in ``SchedulerGraph.kernels``; storages are the input buffers, then every kernel's
    storages. Per kernel: ``kinds``, ``workspaces`` (bytes), ``arguments`` (the buffers
    it reads and writes, for the group limit), ``in_place`` (its candidates, in the order
    Inductor tries them). Per storage: ``sizes`` (bytes; 0 for a concatenation view and a
    kernel-local buffer), ``owner`` (the storage whose memory it is: itself, or a
    concatenation's output), ``allocator`` (its kernel; -1 for an input buffer, live
    from the start), ``readers`` (kernels) and ``kept`` (a graph output, never freed);
    for the buffer pool, ``reuse_keys`` (-1 where the wrapper neither allocates nor frees
    it), ``unaligned`` (Inductor's unaligned buffers) and ``unaligned_reuse_keys`` (the
    key it has as an in-place update of an unaligned buffer), whether the wrapper
    allocates it (``takes``: it may take a pooled buffer) and
    whether its free enters the pool (``gives``), ``reuse_bytes`` (its allocation's bytes),
    and Inductor's ``estimate``."""

    kinds: np.ndarray
    workspaces: np.ndarray
    arguments: tuple[frozenset[str], ...]
    in_place: tuple[tuple[InPlace, ...], ...]
    sizes: np.ndarray
    owner: np.ndarray
    allocator: np.ndarray
    readers: tuple[np.ndarray, ...]
    kept: np.ndarray
    reuse_keys: np.ndarray
    unaligned: np.ndarray
    unaligned_reuse_keys: np.ndarray
    takes: np.ndarray
    gives: np.ndarray
    reuse_bytes: np.ndarray
    estimate: InductorEstimate

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
        return int(self.profile(order).max(initial=0))

    def profile(self, order: Sequence[int] | np.ndarray) -> np.ndarray:
        """Per position of ``order`` (kernel indices, run in that order), the bytes the
        generated code holds during the call (``segments``) its kernel is part of: the
        buffers allocated up to the call and not freed before it, and its extern kernel's
        workspace."""
        order = np.asarray(order, dtype=np.int64)
        position = positions(order)
        segment = self.segments(order)
        made = np.where(self.allocator >= 0, segment[self.allocator], 0)  # an input: from 0
        owner, consumed = self._after_in_place(order, position)
        owner = self._after_reuse(order, position, segment, made, owner, consumed)
        calls = int(segment.max(initial=-1)) + 1
        first = np.full(len(self.sizes), calls, dtype=np.int64)
        np.minimum.at(first, owner, made)
        last = np.full(len(self.sizes), -1, dtype=np.int64)
        storages, kernels = self._reads
        np.maximum.at(last, owner[storages], segment[kernels])
        kept = np.zeros(len(self.sizes), dtype=bool)
        np.logical_or.at(kept, owner, self.kept)
        roots = np.flatnonzero((self.sizes > 0) & (owner == np.arange(len(owner))))
        allocated = np.zeros(calls, dtype=np.int64)
        np.add.at(allocated, first[roots], self.sizes[roots])
        freed = np.zeros(calls, dtype=np.int64)
        freeing = roots[~kept[roots]]
        np.add.at(freed, np.maximum(last[freeing], first[freeing]), self.sizes[freeing])
        workspace = np.zeros(calls, dtype=np.int64)
        np.maximum.at(workspace, segment, self.workspaces)
        held = np.cumsum(allocated) - np.cumsum(freed) + freed  # frees come after the call
        return (held + workspace)[segment[order]]

    @cached_property
    def _reads(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (storage, kernel reading it) pair, as two flat arrays."""
        return flat_pairs(self.readers)

    def _after_in_place(
        self, order: np.ndarray, position: np.ndarray
    ) -> tuple[np.ndarray, set[int]]:
        """``owner`` after the in-place updates the order allows: an updated output's
        memory is its input's (the input's owner's, along chains of updates); and the
        inputs so taken (the wrapper frees none of them)."""
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
        return owner, taken

    def _after_reuse(
        self,
        order: np.ndarray,
        position: np.ndarray,
        segment: np.ndarray,
        made: np.ndarray,
        owner: np.ndarray,
        consumed: set[int],
    ) -> np.ndarray:
        """``owner`` after the buffer pool (module docstring): the wrapper's lines in order,
        per call (``segments``) the allocations of its kernels, then the frees after it,
        each free at the step of the call's last kernel; an allocation that takes a
        pooled buffer has that buffer's memory. ``made``: per storage, the call that
        allocates it."""
        flushed_at = np.full(int(segment.max(initial=-1)) + 1, -1, dtype=np.int64)
        np.maximum.at(flushed_at, segment, position)
        allocated = np.flatnonzero(self.allocator >= 0)
        allocated_at = np.full(len(owner), len(position), dtype=np.int64)  # per root
        np.minimum.at(allocated_at, owner[allocated], position[self.allocator[allocated]])
        taking = np.flatnonzero(self.takes & (allocated_at < len(position)))
        storages, kernels = self._reads
        last = made.copy()
        np.maximum.at(last, storages, segment[kernels])
        giving = np.flatnonzero(self.gives & ~self.kept)
        giving = giving[~np.isin(giving, list(consumed))]
        calls = np.concatenate([segment[order[allocated_at[taking]]], last[giving]])
        phases = np.repeat([0, 1], [len(taking), len(giving)])
        steps_of = np.concatenate([allocated_at[taking], np.zeros(len(giving), dtype=np.int64)])
        subjects = np.concatenate([taking, giving])
        lines = np.lexsort((subjects, steps_of, phases, calls))
        steps = self.estimate.steps(position)
        ceiling = steps.max()
        keys = np.where(self.unaligned[owner], self.unaligned_reuse_keys, self.reuse_keys)
        pool: dict[int, list[tuple[int, int]]] = {}
        for line in lines.tolist():
            call, is_free, step, s = calls[line], phases[line], steps_of[line], subjects[line]
            key = keys[s]
            if is_free:
                pool.setdefault(key, []).append((s, flushed_at[call]))
                continue
            if not pool.get(key):
                continue
            freed, freed_at = pool[key][-1]
            if freed_at + 1 != step:
                if self.reuse_bytes[s] + steps[freed_at + 1 : step].max() > ceiling:
                    continue
                steps[freed_at + 1 : step] += self.reuse_bytes[s]
            pool[key].pop()
            owner[owner == owner[s]] = owner[freed]
        return owner


def codegen_memory(sched: SchedulerGraph) -> CodegenMemory:
    """The ``CodegenMemory`` of ``sched`` (module docstring), read while Inductor compiles
    it (``torch._inductor.virtualized.V``: the scheduler, the wrapper and the graph's
    removed operations)."""
    graph = sched.graph
    outputs = graph.index_of[OUTPUTS_NODE]
    named = {}  # per input node, the first input buffer of its storage
    for buffer_name, v in sched.input_nodes.items():
        named.setdefault(v, sched.input_buffers[buffer_name])
    nodes = list(named)
    buffers: list[Any] = list(named.values())
    inputs = len(nodes)
    allocator = [-1] * inputs
    for k, storage_nodes in enumerate(sched.storage_nodes):
        held = sched.storage_buffers[k]
        nodes.extend(storage_nodes[: len(held)])
        buffers.extend(held)
        allocator.extend([k] * len(held))
    storage_of = {v: s for s, v in enumerate(nodes)}
    index_of_buffer = {buffer.get_name(): s for s, buffer in enumerate(buffers)}
    index_of_buffer.update((n, storage_of[v]) for n, v in sched.input_nodes.items())
    readers, kept = [], []
    for v in nodes:
        successors = graph.successors(v)
        found = sched.kernel_of[successors]
        readers.append(np.unique(found[found >= 0]))
        kept.append(outputs in successors)
    kinds = np.array([_kind(kernel) for kernel in sched.kernels])
    sizes = graph.mem[nodes].astype(np.int64)  # a concatenation view's is 0
    owner = np.arange(len(buffers), dtype=np.int64)
    for view, output in sched.views.items():
        owner[storage_of[view]] = storage_of[output]
    for s, buffer in enumerate(buffers):
        if (
            owner[s] == s
            and allocator[s] >= 0
            and kinds[allocator[s]] == GROUPED
            and not kept[s]
            and set(readers[s].tolist()) <= {allocator[s]}
            and (
                _read_as_written(sched.kernels[allocator[s]], buffer.get_name())
                or _outer_loop_local(sched.kernels[allocator[s]], buffer)
            )
        ):
            sizes[s] = 0  # kernel-local: never allocated
    workspaces = np.zeros(len(sched.kernels), dtype=np.int64)
    for k, storage_nodes in enumerate(sched.storage_nodes):
        for v in storage_nodes[len(sched.storage_buffers[k]) :]:
            workspaces[k] = int(graph.mem[v])
    removed = (sizes == 0) & (owner == np.arange(len(buffers)))
    local = {buffers[s].get_name() for s in np.flatnonzero(removed)}
    unlined = removed.copy()
    unlined[:inputs] = True  # inputs: freed by ``del``, never pooled
    reuse = _reuse_facts(buffers, unlined)
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
        reuse_keys=reuse[0],
        unaligned=reuse[1],
        unaligned_reuse_keys=reuse[2],
        takes=reuse[3],
        gives=reuse[4],
        reuse_bytes=reuse[5],
        estimate=inductor_estimate(sched),
    )


def _reuse_facts(buffers: Sequence[Any], skipped: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per storage buffer (those ``skipped`` left out: the wrapper has no line for them),
    the buffer pool's facts (``CodegenMemory``): reuse key, unaligned, the key as an
    unaligned buffer, takes, gives, bytes."""
    import torch._inductor.config as inductor_config
    from torch._inductor import ir
    from torch._inductor.codegen.wrapper import buffer_reuse_key
    from torch._inductor.utils import get_dtype_size
    from torch._inductor.virtualized import V

    keys = np.full(len(buffers), -1, dtype=np.int64)
    unaligned_keys = keys.copy()
    unaligned = np.array([b.get_name() in V.graph.unaligned_buffers for b in buffers], dtype=bool)
    takes = np.zeros(len(buffers), dtype=bool)
    gives = np.zeros(len(buffers), dtype=bool)
    nbytes = np.zeros(len(buffers), dtype=np.int64)
    ids: dict[Any, int] = {}
    never = V.graph.removed_buffers | V.graph.never_reuse_buffers
    for s in np.flatnonzero(~skipped):
        buffer = buffers[s]
        node = buffer.node
        layout = node.get_output_spec()
        takes[s] = (
            inductor_config.allow_buffer_reuse
            and not isinstance(
                layout,
                (
                    ir.MutationLayoutSHOULDREMOVE,
                    ir.NoneLayout,
                    ir.NonOwningLayout,
                    ir.CommBufferLayout,
                    ir.MultiOutputLayout,
                ),
            )
            and (
                node.should_allocate()
                or not isinstance(node.get_defining_op(), (ir.ExternKernelAlloc, ir.MultiOutput))
            )
        )
        gives[s] = (
            buffer.can_free()
            and buffer.get_name() not in never
            and buffer.get_name() not in V.graph.constants
            and not isinstance(layout, (ir.CommBufferLayout, ir.MultiOutputLayout))
            and not node.get_inputs_that_alias_output()
        )
        if takes[s] or gives[s]:
            keys[s] = ids.setdefault(buffer_reuse_key(node), len(ids))
            unaligned_keys[s] = (
                keys[s] if unaligned[s] else ids.setdefault(_unaligned_reuse_key(node), len(ids))
            )
            storage = V.graph.get_allocation_storage_size(node)
            nbytes[s] = V.graph.sizevars.optimization_hint(storage, fallback=0) * get_dtype_size(
                node.get_dtype()
            )
    return keys, unaligned, unaligned_keys, takes, gives, nbytes


def _unaligned_reuse_key(node: Any) -> Any:
    """``buffer_reuse_key`` of ``node``, an aligned buffer, as Inductor computes it once
    ``node`` is among its unaligned buffers (an in-place update of one:
    ``KernelArgs.make_inplace``)."""
    from torch._inductor.codegen.wrapper import buffer_reuse_key
    from torch._inductor.virtualized import V

    name = node.get_name()
    V.graph.unaligned_buffers.add(name)
    try:
        return buffer_reuse_key(node)
    finally:
        V.graph.unaligned_buffers.discard(name)


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


def _outer_loop_local(kernel: Any, buffer: Any) -> bool:
    """Whether the C++ backend replaces ``buffer`` (of ``kernel``) with a buffer local to
    one iteration of the kernel's fused outer loop (``try_outer_loop_fusion_with_local_buf``
    in ``torch/_inductor/codegen/cpp.py``, as in a softmax's exponentials): the kernel
    fuses loops over a common outer loop whose every nest has one more level, and a
    pointwise node of one output writes the contiguous buffer and its readers, all in the
    kernel, read it at the index it writes."""
    from torch._inductor.codegen.cpp import OuterLoopFusedSchedulerNode
    from torch._inductor.scheduler import SchedulerNode

    if not isinstance(kernel, OuterLoopFusedSchedulerNode):
        return False
    depth = kernel.outer_loop_fusion_depth
    if any(len(_call_ranges(nest)) != depth + 1 for nest in kernel.get_outer_nodes()):
        return False
    writer = buffer.defining_op
    name = buffer.get_name()
    inside = set(kernel.get_nodes())
    if writer.is_reduction() or len(writer.get_outputs()) != 1:
        return False
    if not all(user.node in inside for user in buffer.users):
        return False
    contiguous, stride = 0, 1
    for var, extent in reversed(writer._body.var_ranges.items()):
        contiguous += stride * var
        stride *= extent
    return (
        buffer.node.get_layout().is_contiguous()
        and writer._body.get_write_expr(name) == contiguous
        and all(
            isinstance(user.node, SchedulerNode)
            and user.node._body.get_read_expr(name) == contiguous
            for user in buffer.users
        )
    )


def _call_ranges(nest: Any) -> tuple[Any, ...]:
    """The loop ranges of a fused loop nest: its reduction node's, where it has one."""
    _, (group, reduction_group) = max(nest.get_nodes(), key=lambda x: int(x.is_reduction())).group
    return (*group, *reduction_group)


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
