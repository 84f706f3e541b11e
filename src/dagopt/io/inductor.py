"""PyTorch Inductor's scheduler nodes -> ``Graph``: the kernels ``torch.compile`` runs.

Inductor (``torch._inductor``) lowers a graph to scheduler nodes (fused kernels, extern
kernels such as matmuls, no-ops) and, before generating code, reorders them for peak
memory (``torch/_inductor/memory.py``, ``reorder_for_peak_memory``), judging each order
by ``estimate_peak_memory``: a buffer is allocated when its node runs and freed after
its last reader (never, for a graph output); a freeable graph input (an activation
AOTAutograd hands the backward graph, say) is live from the start until its last
reader. ``scheduler_graph`` builds the ``Graph`` whose peak (``dagopt.objectives``,
``keep_outputs=False``) equals that estimate on Inductor's own order where no kernel
writes into a concatenation (the estimate counts such a view as a buffer of its own,
the graph as the memory of the concatenation's output, below) and, on other orders,
counts one more thing the estimate misses (the tuples of multi-output kernels, below),
so every dagopt method orders the kernels by what the generated code holds;
``kernels_in_order`` turns an order back into the scheduler nodes. Given
``workspaces`` (kernel name -> bytes an extern kernel allocates inside itself and frees
before it returns, which the estimate leaves out too;
``dagopt.integrations.extern_kernels`` measures them), each is added while its kernel
runs. The nodes, in Inductor's order (so ``np.arange(n)`` is that order):

- the freeable inputs (``mem``: their bytes), then ``<inputs>`` (``mem`` 0), which reads
  them all and precedes every kernel, so they are live from the start. Inductor takes
  every input named ``primals_*`` for a parameter, never freed; but with its layout
  optimization a forward graph returns a channels-last copy of a convolution weight it
  converts, which AOTAutograd saves for the backward graph, where the input of that
  parameter's name is the copy and the generated code frees it after its last reader.
  Given such inputs (``saved_copies``: ``returned_input_copies`` of the forward), the
  graph counts them as freeable inputs too (``SchedulerGraph.input_buffers``), beyond
  Inductor's estimate. Inductor sizes a freeable input by the bytes its reads cover,
  but an input that is a view holds its whole storage: a saved half of a ``chunk``
  (ShuffleNetV2's units) holds the tensor it was cut from, and the query, key and value
  a transformer's backward reads are views of one projection's output, freed together
  after the last of their readers. Given each input's storage (``input_storages``,
  ``current_scheduler_graph`` reads them from the graph's placeholders), the inputs of
  one storage are one node of the storage's bytes, read by all their readers, and of
  no bytes where the storage is also an input that is not freeable (a parameter's,
  held beyond the graph). An input Inductor would free but that no kernel reads (an
  activation AOTAutograd saved that the backward graph does not use, as in
  DenseNet-121's) is never freed by the generated code, which holds it until its call
  returns: given the storages, such an input is live from the start to the end;
- per kernel, its storages, then the kernel itself (``mem`` 0). A storage
  (``dagopt.graph.shares``: named ``<kernel>.<j>``, node data ``share`` = ``j`` >= 1,
  ``mem`` the buffer's bytes) has the kernel's predecessors, precedes the kernel and is
  read by the buffer's readers; it holds the buffer's lifetime. A kernel's order
  edges (Inductor's ``succ_nodes``, which include order-only dependencies, and the
  orders of buffer mutations, which those miss: a kernel mutating a buffer in place runs
  after the readers of its old value and before those of its new one) join mem-0
  kernel nodes, so they keep no buffer alive. The outputs of a multi-output kernel
  (``MultiOutputLayout``: Inductor allocates them all when the kernel runs) are storages
  of that kernel, each read also by the kernel's ``MultiOutput`` nodes (which take the
  outputs out of the tuple): the generated code holds the tuple, and every output in
  it, until the last of those has run. Inductor's estimate frees each output after its
  own last reader, which is what happens only while those nodes run before the
  outputs' readers, as in Inductor's orders (they cost nothing and are ready at once);
  an order that leaves one for later keeps every output of the kernel alive until
  then (an upper bound where the code reuses such an output's storage in place). A
  kernel's workspace is one more storage (``op`` ``"workspace"``), read by the kernel
  alone. A buffer a kernel writes straight into a concatenation's output
  (``NonOwningLayout``) is a storage of ``mem`` 0; the output's storage precedes
  every kernel that writes into it and is read by their readers too, and has no
  predecessor but ``<inputs>`` (so an order allocates it before the first writer);
- ``<outputs>`` (``mem`` 0) reads every graph-output storage and follows every kernel,
  so those live to the end.

A storage running right before the first kernel that needs it is allocated one step
early with nothing freed in between, so with each ``MultiOutput`` node right after its
kernel too, the peak is Inductor's estimate (plus workspaces, saved copies and the
bytes of input storages beyond their reads, less the views) exactly;
with the storages so and the ``MultiOutput`` nodes anywhere, it is what the generated
code holds but for ``dagopt.io.inductor_codegen``'s other effects
(``SchedulerGraph.node_order`` gives that order of any order of the kernels); elsewhere
an upper bound. Inductor's data
structures are internal ("prototype", its docs say) and this module reads the ones of
torch 2.13 (``docs/real_models.md``, "torch.compile").
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dagopt.errors import GraphError
from dagopt.graph import Graph
from dagopt.graph.shares import SHARE_KEY, SHARE_SEPARATOR

#: The node that makes the freeable inputs live before every kernel.
INPUTS_NODE = "<inputs>"
#: The node that keeps the graph outputs live to the end.
OUTPUTS_NODE = "<outputs>"


@dataclass(frozen=True)
class SchedulerGraph:
    """A ``Graph`` of Inductor's scheduler nodes (module docstring).

    ``kernels`` are the scheduler nodes in the order given; ``kernel_nodes[i]`` is the
    graph node of ``kernels[i]``, ``storage_nodes[i]`` those of its storages and
    ``storage_buffers[i]`` the buffers they hold (the first ``len(storage_buffers[i])``
    of them; a workspace node follows); ``views`` maps the storage node of each
    concatenation view to that of the concatenation's output; ``front`` the input
    buffers' nodes (in the order of ``input_buffers``, one per storage) and
    ``<inputs>``. ``freeable_inputs`` and ``graph_outputs`` are Inductor's planning
    inputs (its heuristics take them); ``input_buffers`` are those and the saved copies
    (module docstring), every input the generated code frees, and the inputs no kernel
    reads (held to the end), and ``input_nodes`` maps
    each of their names to its node (inputs of one storage share it)."""

    graph: Graph
    kernels: tuple[Any, ...]
    kernel_nodes: np.ndarray
    storage_nodes: tuple[tuple[int, ...], ...]
    storage_buffers: tuple[tuple[Any, ...], ...]
    views: dict[int, int]
    front: tuple[int, ...]
    freeable_inputs: dict[str, Any]
    graph_outputs: Any
    input_buffers: dict[str, Any]
    input_nodes: dict[str, int]

    def kernels_in_order(self, order: Sequence[int] | np.ndarray) -> list[Any]:
        """The scheduler nodes of ``order`` (node indices of ``graph``), in its order:
        storages, ``<inputs>`` and ``<outputs>`` are dropped (a kernel allocates its
        storages when it runs)."""
        return [self.kernels[k] for k in self.kernel_indices(order)]

    def kernel_indices(self, order: Sequence[int] | np.ndarray) -> np.ndarray:
        """The indices in ``kernels`` of the kernels of ``order`` (node indices of
        ``graph``), in its order (``kernels_in_order``'s, as indices)."""
        picked = self.kernel_of[np.asarray(order, dtype=np.int64)]
        return picked[picked >= 0]

    @cached_property
    def position(self) -> dict[int, int]:
        """``id(kernel)`` -> its index in ``kernels``."""
        return {id(kernel): i for i, kernel in enumerate(self.kernels)}

    @cached_property
    def kernel_of(self) -> np.ndarray:
        """Per graph node, the index in ``kernels`` of the kernel it is, or -1."""
        kernel_of = np.full(self.graph.num_nodes, -1, dtype=np.int64)
        kernel_of[self.kernel_nodes] = np.arange(len(self.kernels))
        return kernel_of

    @cached_property
    def kernel_predecessors(self) -> tuple[np.ndarray, ...]:
        """Per kernel, the indices of the kernels that must run before it (Inductor's
        dependencies: every storage a kernel reads is its writer's, whose kernel precedes
        the reader)."""
        return tuple(
            np.unique(found[found >= 0])
            for found in (self.kernel_of[self.graph.predecessors(v)] for v in self.kernel_nodes)
        )

    def indices(self, kernels: Sequence[Any]) -> np.ndarray:
        """The indices in ``kernels`` (of this graph's ``kernels``) of the given ones."""
        return np.asarray([self.position[id(kernel)] for kernel in kernels], dtype=np.int64)

    def node_order(self, kernels: Sequence[Any]) -> np.ndarray:
        """The graph order that runs ``kernels`` (all of them, in a topological order)
        with each storage right before the first kernel that needs it: ``front``, per
        kernel the storages it needs that are not yet allocated (its own, and a
        concatenation's output it writes into) and itself, then ``<outputs>``."""
        storage = np.zeros(self.graph.num_nodes, dtype=bool)
        for nodes in self.storage_nodes:
            storage[list(nodes)] = True
        placed = np.zeros(self.graph.num_nodes, dtype=bool)
        body = []
        for v in self.kernel_nodes[self.indices(kernels)].tolist():
            preds = dict.fromkeys(self.graph.predecessors(v).tolist())
            needed = [u for u in preds if storage[u] and not placed[u]]
            placed[needed] = True
            body.extend(needed)
            body.append(v)
        return np.asarray([*self.front, *body, self.graph.num_nodes - 1], dtype=np.int64)


def current_scheduler_graph(
    kernels: Sequence[Any],
    *,
    workspaces: Mapping[str, int] | None = None,
    saved_copies: Iterable[str] = (),
    name: str = "inductor",
) -> SchedulerGraph:
    """``scheduler_graph`` of ``kernels`` with the scheduler and graph Inductor is
    compiling now (``torch._inductor.virtualized.V``): what a scheduler pass such as
    ``torch._inductor.config._post_fusion_custom_pass`` is given."""
    from torch._inductor.virtualized import V
    from torch.utils._ordered_set import OrderedSet

    scheduler = V.graph.scheduler
    return scheduler_graph(
        kernels,
        scheduler.name_to_buf,
        scheduler.name_to_fused_node,
        OrderedSet(V.graph.graph_inputs.keys()),
        OrderedSet(V.graph.get_output_names()),
        workspaces=workspaces,
        saved_copies=saved_copies,
        input_storages=_input_storages(V.graph.module.graph),
        name=name,
    )


def _input_storages(fx_graph: Any) -> dict[str, tuple[Any, int]]:
    """Per tensor placeholder of ``fx_graph`` (an FX graph Inductor compiles), its
    storage (a key equal for inputs of one storage) and that storage's bytes, from the
    fake tensor AOTAutograd traced it with (``meta["val"]``)."""
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef

    storages = {}
    for node in fx_graph.find_nodes(op="placeholder"):
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            storages[node.name] = (StorageWeakRef(storage), storage.nbytes())
    return storages


def returned_input_copies() -> frozenset[str]:
    """The inputs that the graph Inductor is compiling now returns as copies: an output
    of the FX graph that is one of its inputs, which Inductor returns as a buffer of its
    own (its layout optimization makes a channels-last copy of a convolution weight).
    In a forward graph, these are the inputs AOTAutograd saves for the backward as
    copies: the backward graph's inputs of the same names (module docstring)."""
    from torch._inductor.virtualized import V

    returned = V.graph.graph.output_node().args[0]
    return frozenset(
        node.name
        for node, output in zip(returned, V.graph.get_output_names(), strict=True)
        if getattr(node, "op", None) == "placeholder" and output != node.name
    )


def scheduler_graph(
    kernels: Sequence[Any],
    name_to_buf: dict[str, Any],
    name_to_fused_node: dict[str, Any],
    graph_inputs: Iterable[str],
    graph_outputs: Iterable[str],
    *,
    workspaces: Mapping[str, int] | None = None,
    saved_copies: Iterable[str] = (),
    input_storages: Mapping[str, tuple[Any, int]] | None = None,
    name: str = "inductor",
) -> SchedulerGraph:
    """The ``Graph`` of Inductor's scheduler nodes ``kernels`` (module docstring), with
    the buffer sizes and readers of Inductor's own planning (``prepare_planning_info``,
    which this calls as ``reorder_for_peak_memory`` does), the ``workspaces`` (kernel
    name -> bytes) of the kernels named there, the graph inputs ``saved_copies``
    freed after their last readers though Inductor takes them for parameters, and the
    inputs sized by their storages where ``input_storages`` gives them (graph input
    name -> (storage key, bytes); else by Inductor's bytes of their reads). Raises
    ``GraphError`` for a buffer whose allocating kernel it cannot find, or a workspace of
    no kernel or below 0."""
    from torch._inductor.memory import prepare_planning_info
    from torch.utils._ordered_set import OrderedSet

    kernels = list(kernels)
    workspaces = dict(workspaces or {})
    _check_workspaces(workspaces, kernels)
    outputs = OrderedSet(graph_outputs)
    graph_inputs = OrderedSet(graph_inputs)
    _, freeable = prepare_planning_info(
        kernels, name_to_buf, name_to_fused_node, graph_inputs, outputs
    )
    inputs = {**freeable, **_input_buffers(kernels, graph_inputs & OrderedSet(saved_copies))}
    unread = _unread_inputs(graph_inputs, inputs, input_storages)
    inputs.update(unread)
    builder = _Builder()
    sizes = {name: buffer.mpi_buffer.size_free for name, buffer in inputs.items()}
    for names, size in _input_groups(sizes, graph_inputs, input_storages):
        builder.add_input(names, size)
    if inputs:
        builder.start = builder.add(INPUTS_NODE, 0.0, "inputs")
    multi = _multi_outputs(kernels)
    storages: dict[int, list[Any]] = {id(k): [] for k in kernels}
    for kernel in kernels:
        for buffer in kernel.get_outputs():
            info = buffer.mpi_buffer
            if info.size_free == 0:
                continue  # a rename of a mutated buffer, or a multi-output kernel's tuple
            owner = kernel if info.size_alloc else multi.allocator.get(buffer.get_name())
            if owner is None:
                raise GraphError(
                    f"Inductor buffer {buffer.get_name()!r} frees {info.size_free} bytes "
                    "that no kernel allocates"
                )
            storages[id(owner)].append(buffer)
    views = _concatenation_views(storages)
    mutations = _mutation_orders(kernels)
    kernel_nodes, storage_nodes = [], []
    for kernel in kernels:
        name_of = kernel.get_name()
        nodes = [
            builder.add(
                f"{name_of}{SHARE_SEPARATOR}{j}",
                0 if id(buffer) in views else buffer.mpi_buffer.size_free,
                "storage",
                share=j,
                key=buffer,
            )
            for j, buffer in enumerate(storages[id(kernel)], start=1)
        ]
        if workspaces.get(name_of):
            j = len(nodes) + 1
            nodes.append(
                builder.add(
                    f"{name_of}{SHARE_SEPARATOR}{j}", workspaces[name_of], "workspace", share=j
                )
            )
        storage_nodes.append(tuple(nodes))
        kernel_nodes.append(builder.add(name_of, 0.0, type(kernel).__name__, key=kernel))
    builder.add(OUTPUTS_NODE, 0.0, "outputs")
    live_to_end = outputs | OrderedSet(unread)
    builder.connect(
        kernels, storages, storage_nodes, multi.extractors, inputs, live_to_end, views, mutations
    )
    return SchedulerGraph(
        graph=builder.graph(name),
        kernels=tuple(kernels),
        kernel_nodes=np.asarray(kernel_nodes, dtype=np.int64),
        storage_nodes=tuple(storage_nodes),
        storage_buffers=tuple(tuple(storages[id(k)]) for k in kernels),
        views={builder.index[view]: builder.index[id(output)] for view, output in views.items()},
        front=(*dict.fromkeys(builder.inputs.values()), *([builder.start] if inputs else [])),
        freeable_inputs=freeable,
        graph_outputs=outputs,
        input_buffers=inputs,
        input_nodes=dict(builder.inputs),
    )


def _unread_inputs(
    graph_inputs: Iterable[str], inputs: Mapping[str, Any], storages: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The graph inputs that Inductor would take for freeable (its
    ``is_nonfreeable_buffers``: not a parameter's, a tangent's or an RNG state's name) but
    that no kernel reads, as ``FreeableInputBuffer`` of their storages' bytes and no
    readers: the generated code never frees them, they are held until its call returns
    (module docstring). None without ``storages``, which size them."""
    from types import SimpleNamespace

    from torch._inductor.memory import is_nonfreeable_buffers
    from torch.utils._ordered_set import OrderedSet

    if storages is None:
        return {}
    return {
        name: _freeable_input(name, storages[name][1], OrderedSet(), OrderedSet())
        for name in graph_inputs
        if name not in inputs
        and name in storages
        and not is_nonfreeable_buffers(SimpleNamespace(name=name))
    }


def _input_groups(
    sizes: dict[str, int],
    graph_inputs: Iterable[str],
    storages: Mapping[str, tuple[Any, int]] | None,
) -> list[tuple[list[str], int]]:
    """The freeable inputs (name -> Inductor's bytes, ``sizes``) grouped by storage, in
    the order of their first: ``(names, bytes)``, the bytes of their storage, 0 where
    another graph input that is not freeable shares it (module docstring); without
    ``storages``, each input alone with Inductor's bytes."""
    if storages is None:
        return [([name], size) for name, size in sizes.items()]
    held = {storages[name][0] for name in graph_inputs if name not in sizes and name in storages}
    groups: dict[Any, list[str]] = {}
    for name in sizes:
        groups.setdefault(storages[name][0], []).append(name)
    return [(names, 0 if key in held else storages[names[0]][1]) for key, names in groups.items()]


def _input_buffers(kernels: Sequence[Any], names: Iterable[str]) -> dict[str, Any]:
    """Inductor's ``FreeableInputBuffer`` of each graph input ``names`` that ``kernels``
    read, as its ``get_freeable_input_buf`` makes them of the inputs it takes for
    freeable: the bytes of the reads, the readers (fake weak reads order only)."""
    from torch._inductor.dependencies import WeakDep
    from torch._inductor.virtualized import V
    from torch.utils._ordered_set import OrderedSet

    wanted = set(names)
    readers: dict[str, Any] = {}
    ordered: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    for kernel in kernels:
        for dep in kernel.read_writes.reads:
            if dep.name in wanted:
                ordered.setdefault(dep.name, OrderedSet()).add(kernel)
                readers.setdefault(dep.name, OrderedSet())
                sizes[dep.name] = V.graph.get_dep_size_hint(dep)
                if not (isinstance(dep, WeakDep) and dep.is_fake):
                    readers[dep.name].add(kernel)
    return {
        name: _freeable_input(name, sizes[name], readers[name], found)
        for name, found in ordered.items()
    }


def _freeable_input(name: str, size: int, readers: Any, ordering: Any) -> Any:
    """Inductor's ``FreeableInputBuffer`` of graph input ``name``: ``size`` bytes, freed
    after its last reader of ``readers`` (kernels), ordered before ``ordering``'s."""
    from torch._inductor.memory import FreeableInputBuffer, MemoryPlanningInfoForBuffer

    return FreeableInputBuffer(
        name,
        MemoryPlanningInfoForBuffer(
            size_free=size, succ_nodes=readers, succ_nodes_for_ordering=ordering
        ),
    )


def _check_workspaces(workspaces: dict[str, int], kernels: Sequence[Any]) -> None:
    names = {kernel.get_name() for kernel in kernels}
    for name, size in workspaces.items():
        if name not in names:
            raise GraphError(f"workspace of {name!r}, which is not a kernel of this graph")
        if size < 0:
            raise GraphError(f"workspace of {name!r} is {size} bytes, below 0")


def _concatenation_views(storages: dict[int, list[Any]]) -> dict[int, Any]:
    """``id(buffer)`` -> the buffer it is a view into, for every storage buffer that a
    kernel writes straight into a concatenation's output (``NonOwningLayout``)."""
    from torch._inductor.ir import NonOwningLayout

    by_name = {b.get_name(): b for held in storages.values() for b in held}
    views = {}
    for held in storages.values():
        for buffer in held:
            layout = buffer.node.layout
            if isinstance(layout, NonOwningLayout) and layout.view.get_name() in by_name:
                views[id(buffer)] = by_name[layout.view.get_name()]
    return views


def _mutation_orders(kernels: Sequence[Any]) -> list[tuple[Any, Any]]:
    """(before, after) pairs of kernels that a buffer mutation orders and Inductor's
    memory-planning dependencies (``succ_nodes``) leave out: a kernel that mutates a
    buffer in place (a scatter-add into zeros, say) runs after every kernel reading the
    buffer's old value and before every kernel reading its new one, as Inductor's own
    transitive dependencies (``ancestors``) say."""
    mutators: dict[str, list[Any]] = {}
    for kernel in kernels:
        for buffer in kernel.get_outputs():
            for name in buffer.node.get_mutation_names():
                mutators.setdefault(name, []).append(kernel)
    pairs = []
    for kernel in kernels:
        touched = {dep.name for dep in kernel.read_writes.reads_and_writes()}
        for name in touched & mutators.keys():
            for mutator in mutators[name]:
                if mutator is kernel:
                    continue
                if mutator.get_operation_names() & kernel.ancestors:
                    pairs.append((mutator, kernel))
                elif kernel.get_operation_names() & mutator.ancestors:
                    pairs.append((kernel, mutator))
    return pairs


@dataclass(frozen=True)
class _MultiOutputs:
    """The multi-output kernels (``MultiOutputLayout``: a tuple of outputs, nested tuples
    too): ``allocator`` maps each output buffer's name to the kernel that allocates it,
    which Inductor sizes as allocated by that kernel and freed each on its own
    (``compute_size_for_scheduler_buffer``); ``extractors`` maps ``id(kernel)`` to the
    ``MultiOutput`` nodes that take its outputs out of the tuple. The generated code
    holds the tuple until the last of those has run, and every output with it."""

    allocator: dict[str, Any]
    extractors: dict[int, list[Any]]


def _multi_outputs(kernels: Sequence[Any]) -> _MultiOutputs:
    from torch._inductor.ir import MultiOutput, MultiOutputLayout
    from torch._inductor.scheduler import OutputNode

    found = _MultiOutputs({}, {})

    def claim(buffer: Any, kernel: Any) -> None:
        for user in buffer.users:
            if isinstance(user.node, OutputNode):
                continue
            for out in user.node.get_outputs():
                if isinstance(out.node, MultiOutput):
                    found.allocator[out.get_name()] = kernel
                    extractors = found.extractors.setdefault(id(kernel), [])
                    if user.node not in extractors:
                        extractors.append(user.node)
                    if isinstance(out.node.layout, MultiOutputLayout):
                        claim(out, kernel)

    for kernel in kernels:
        for buffer in kernel.get_outputs():
            if isinstance(buffer.node.layout, MultiOutputLayout) and buffer.mpi_buffer.size_alloc:
                claim(buffer, kernel)
    return found


class _Builder:
    """Nodes and edges of a ``SchedulerGraph`` as they are added."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.mem: list[float] = []
        self.ops: list[str] = []
        self.share: list[int] = []
        self.index: dict[int, int] = {}  # id(kernel or buffer) -> node
        self.inputs: dict[str, int] = {}
        self.start: int | None = None  # <inputs>, when there are freeable inputs
        self.src: list[int] = []
        self.dst: list[int] = []

    def add(self, node_name: str, mem: float, op: str, *, share: int = 0, key: Any = None) -> int:
        v = len(self.names)
        self.names.append(node_name)
        self.mem.append(float(mem))
        self.ops.append(op)
        self.share.append(share)
        if key is not None:
            self.index[id(key)] = v
        return v

    def add_input(self, buffer_names: Sequence[str], size: int) -> None:
        """One input node for ``buffer_names`` (inputs of one storage), named by the first."""
        v = self.add(buffer_names[0], size, "input")
        self.inputs.update(dict.fromkeys(buffer_names, v))

    def edge(self, u: int, v: int) -> None:
        self.src.append(u)
        self.dst.append(v)

    def connect(
        self,
        kernels: Sequence[Any],
        storages: dict[int, list[Any]],
        storage_nodes: Sequence[tuple[int, ...]],
        extractors: dict[int, list[Any]],
        freeable: dict[str, Any],
        live_to_end: Any,
        views: dict[int, Any],
        mutations: Sequence[tuple[Any, Any]],
    ) -> None:
        """Edges (module docstring): inputs -> ``<inputs>`` -> every kernel and storage;
        order edges between kernels (Inductor's ``succ_nodes`` and ``mutations``'
        pairs); storage (``storage_nodes[i]``, the workspace among
        them) -> its kernel; a buffer's storage -> its readers and the ``MultiOutput``
        nodes of its kernel's tuple; a concatenation's output -> the kernels writing
        into it and their views' readers (and not from its own kernel's
        predecessors); the storages and inputs named in ``live_to_end`` (the graph
        outputs, the unread inputs) and every kernel -> ``<outputs>``."""
        final = len(self.names) - 1  # <outputs>, the last node added
        targets = {self.index[id(t)] for t in views.values()}
        in_edges: dict[int, list[int]] = {self.index[id(k)]: [] for k in kernels}
        for before, after in mutations:
            in_edges[self.index[id(after)]].append(self.index[id(before)])
        for i, kernel in enumerate(kernels):
            v = self.index[id(kernel)]
            for succ in kernel.mpi_node.succ_nodes:
                in_edges[self.index[id(succ)]].append(v)
            for s in storage_nodes[i]:
                self.edge(s, v)
            for buffer in storages[id(kernel)]:
                s = self.index[id(buffer)]
                readers = [r for r in buffer.mpi_buffer.succ_nodes if r is not kernel]
                holders = [x for x in extractors.get(id(kernel), []) if x not in readers]
                target = self.index[id(views[id(buffer)])] if id(buffer) in views else None
                if target is not None:
                    self.edge(target, v)
                for reader in readers + holders:
                    in_edges[self.index[id(reader)]].append(s)
                    if target is not None:
                        in_edges[self.index[id(reader)]].append(target)
                if buffer.get_name() in live_to_end:
                    self.edge(s, final)
            self.edge(v, final)
        for buffer_name, buffer in freeable.items():
            u = self.inputs[buffer_name]
            for reader in buffer.mpi_buffer.succ_nodes:
                in_edges[self.index[id(reader)]].append(u)
            if buffer_name in live_to_end:
                self.edge(u, final)
        if self.start is not None:
            for u in dict.fromkeys(self.inputs.values()):
                self.edge(u, self.start)
        for i, kernel in enumerate(kernels):
            v = self.index[id(kernel)]
            preds = in_edges[v] + ([self.start] if self.start is not None else [])
            for node in (v, *(u for u in storage_nodes[i] if u not in targets)):
                for u in preds:
                    self.edge(u, node)
        if self.start is not None:
            for node in targets:
                self.edge(self.start, node)

    def graph(self, name: str) -> Graph:
        return Graph(
            len(self.names),
            self.src,
            self.dst,
            mem=np.asarray(self.mem),
            op=self.ops,
            names=self.names,
            name=name,
            node_data={SHARE_KEY: np.asarray(self.share, dtype=np.float64)},
        )
