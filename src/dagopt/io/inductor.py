"""PyTorch Inductor's scheduler nodes -> ``Graph``: the kernels ``torch.compile`` runs.

Inductor (``torch._inductor``) lowers a graph to scheduler nodes (fused kernels, extern
kernels such as matmuls, no-ops) and, before generating code, reorders them for peak
memory (``torch/_inductor/memory.py``, ``reorder_for_peak_memory``), judging each order
by ``estimate_peak_memory``: a buffer is allocated when its node runs and freed after
its last reader (never, for a graph output); a freeable graph input (an activation
AOTAutograd hands the backward graph, say) is live from the start until its last
reader. ``scheduler_graph`` builds the ``Graph`` whose peak (``dagopt.objectives``,
``keep_outputs=False``) equals that estimate on Inductor's own order, so every dagopt
method orders the kernels by the number Inductor itself uses; ``kernels_in_order``
turns an order back into the scheduler nodes. The nodes, in Inductor's order (so
``np.arange(n)`` is that order):

- the freeable inputs (``mem``: their bytes), then ``<inputs>`` (``mem`` 0), which reads
  them all and precedes every kernel, so they are live from the start;
- per kernel, its storages, then the kernel itself (``mem`` 0). A storage
  (``dagopt.graph.shares``: named ``<kernel>.<j>``, node data ``share`` = ``j`` >= 1,
  ``mem`` the buffer's bytes) has the kernel's predecessors, precedes the kernel and is
  read by the buffer's readers; it holds the buffer's lifetime. A kernel's order
  edges (Inductor's ``succ_nodes``, which include order-only dependencies) join mem-0
  kernel nodes, so they keep no buffer alive. The outputs of a multi-output kernel
  (``MultiOutputLayout``: Inductor allocates them all when the kernel runs and frees
  each after its own last reader) are storages of that kernel;
- ``<outputs>`` (``mem`` 0) reads every graph-output storage and follows every kernel,
  so those live to the end.

A storage running right before its kernel is allocated one step early with nothing
freed in between, so the peak is Inductor's estimate exactly; elsewhere it is an upper
bound. Inductor's data structures are internal ("prototype", its docs say) and this
module reads the ones of torch 2.13 (``docs/real_models.md``, "torch.compile").
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
    graph node of ``kernels[i]``. ``freeable_inputs`` and ``graph_outputs`` are what
    ``estimate_peak`` needs; ``given_peak`` is Inductor's estimate of the given order."""

    graph: Graph
    kernels: tuple[Any, ...]
    kernel_nodes: np.ndarray
    freeable_inputs: dict[str, Any]
    graph_outputs: Any
    given_peak: int

    def kernels_in_order(self, order: Sequence[int] | np.ndarray) -> list[Any]:
        """The scheduler nodes of ``order`` (node indices of ``graph``), in its order:
        storages, ``<inputs>`` and ``<outputs>`` are dropped (a kernel allocates its
        storages when it runs)."""
        kernel_of = np.full(self.graph.num_nodes, -1, dtype=np.int64)
        kernel_of[self.kernel_nodes] = np.arange(len(self.kernels))
        picked = kernel_of[np.asarray(order, dtype=np.int64)]
        return [self.kernels[k] for k in picked[picked >= 0]]

    def estimate_peak(self, kernels: Sequence[Any]) -> int:
        """Inductor's own estimate (``estimate_peak_memory``) of the peak of ``kernels``
        run in that order."""
        from torch._inductor.memory import estimate_peak_memory

        peak, _ = estimate_peak_memory(list(kernels), self.freeable_inputs, self.graph_outputs)
        return int(peak)


def current_scheduler_graph(kernels: Sequence[Any], *, name: str = "inductor") -> SchedulerGraph:
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
        name=name,
    )


def scheduler_graph(
    kernels: Sequence[Any],
    name_to_buf: dict[str, Any],
    name_to_fused_node: dict[str, Any],
    graph_inputs: Iterable[str],
    graph_outputs: Iterable[str],
    *,
    name: str = "inductor",
) -> SchedulerGraph:
    """The ``Graph`` of Inductor's scheduler nodes ``kernels`` (module docstring), with
    the buffer sizes and readers of Inductor's own planning (``prepare_planning_info``,
    which this calls as ``reorder_for_peak_memory`` does). Raises ``GraphError`` for a
    buffer whose allocating kernel it cannot find."""
    from torch._inductor.memory import prepare_planning_info
    from torch.utils._ordered_set import OrderedSet

    kernels = list(kernels)
    outputs = OrderedSet(graph_outputs)
    peak, freeable = prepare_planning_info(
        kernels, name_to_buf, name_to_fused_node, OrderedSet(graph_inputs), outputs
    )
    builder = _Builder()
    for buffer_name, buffer in freeable.items():
        builder.add_input(buffer_name, buffer.mpi_buffer.size_free)
    if freeable:
        builder.start = builder.add(INPUTS_NODE, 0.0, "inputs")
    allocator = _multi_output_allocators(kernels)
    storages: dict[int, list[Any]] = {id(k): [] for k in kernels}
    for kernel in kernels:
        for buffer in kernel.get_outputs():
            info = buffer.mpi_buffer
            if info.size_free == 0:
                continue  # a rename of a mutated buffer, or a multi-output kernel's tuple
            owner = kernel if info.size_alloc else allocator.get(buffer.get_name())
            if owner is None:
                raise GraphError(
                    f"Inductor buffer {buffer.get_name()!r} frees {info.size_free} bytes "
                    "that no kernel allocates"
                )
            storages[id(owner)].append(buffer)
    kernel_nodes = []
    for kernel in kernels:
        for j, buffer in enumerate(storages[id(kernel)], start=1):
            builder.add(
                f"{kernel.get_name()}{SHARE_SEPARATOR}{j}",
                buffer.mpi_buffer.size_free,
                "storage",
                share=j,
                key=buffer,
            )
        kernel_nodes.append(builder.add(kernel.get_name(), 0.0, type(kernel).__name__, key=kernel))
    builder.add(OUTPUTS_NODE, 0.0, "outputs")
    builder.connect(kernels, storages, freeable, outputs)
    return SchedulerGraph(
        graph=builder.graph(name),
        kernels=tuple(kernels),
        kernel_nodes=np.asarray(kernel_nodes, dtype=np.int64),
        freeable_inputs=freeable,
        graph_outputs=outputs,
        given_peak=int(peak),
    )


def _multi_output_allocators(kernels: Sequence[Any]) -> dict[str, Any]:
    """Buffer name -> the kernel that allocates it, for the outputs of multi-output
    kernels (``MultiOutputLayout``, nested tuples too), which Inductor sizes as
    allocated by that kernel and freed each on its own (``compute_size_for_scheduler_buffer``)."""
    from torch._inductor.ir import MultiOutput, MultiOutputLayout
    from torch._inductor.scheduler import OutputNode

    allocator: dict[str, Any] = {}

    def claim(buffer: Any, kernel: Any) -> None:
        for user in buffer.users:
            if isinstance(user.node, OutputNode):
                continue
            for out in user.node.get_outputs():
                if isinstance(out.node, MultiOutput):
                    allocator[out.get_name()] = kernel
                    if isinstance(out.node.layout, MultiOutputLayout):
                        claim(out, kernel)

    for kernel in kernels:
        for buffer in kernel.get_outputs():
            if isinstance(buffer.node.layout, MultiOutputLayout) and buffer.mpi_buffer.size_alloc:
                claim(buffer, kernel)
    return allocator


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

    def add_input(self, buffer_name: str, size: int) -> None:
        self.inputs[buffer_name] = self.add(buffer_name, size, "input")

    def edge(self, u: int, v: int) -> None:
        self.src.append(u)
        self.dst.append(v)

    def connect(
        self,
        kernels: Sequence[Any],
        storages: dict[int, list[Any]],
        freeable: dict[str, Any],
        outputs: Any,
    ) -> None:
        """Edges (module docstring): inputs -> ``<inputs>`` -> every kernel and storage;
        order edges between kernels; storage -> its kernel and its readers; the graph
        outputs' storages and every kernel -> ``<outputs>``."""
        final = len(self.names) - 1  # <outputs>, the last node added
        in_edges: dict[int, list[int]] = {self.index[id(k)]: [] for k in kernels}
        for kernel in kernels:
            v = self.index[id(kernel)]
            for succ in kernel.mpi_node.succ_nodes:
                in_edges[self.index[id(succ)]].append(v)
            for buffer in storages[id(kernel)]:
                s = self.index[id(buffer)]
                self.edge(s, v)
                for reader in buffer.mpi_buffer.succ_nodes:
                    if reader is not kernel:
                        in_edges[self.index[id(reader)]].append(s)
                if buffer.get_name() in outputs:
                    self.edge(s, final)
            self.edge(v, final)
        for buffer_name, buffer in freeable.items():
            u = self.inputs[buffer_name]
            for reader in buffer.mpi_buffer.succ_nodes:
                in_edges[self.index[id(reader)]].append(u)
            if buffer_name in outputs:
                self.edge(u, final)
        if self.start is not None:
            for u in self.inputs.values():
                self.edge(u, self.start)
        for kernel in kernels:
            v = self.index[id(kernel)]
            preds = in_edges[v] + ([self.start] if self.start is not None else [])
            for target in [v] + [self.index[id(b)] for b in storages[id(kernel)]]:
                for u in preds:
                    self.edge(u, target)

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
