"""Run an ONNX model in onnxruntime in the order of its file, and check that it did.

``dagopt export-onnx`` (``dagopt.io.onnx.write_onnx``) writes a model's nodes in a
dagopt order, but onnxruntime's default execution order is a topological sort of its
own, after graph optimizations that fuse and rewrite nodes: a file's order is not what
its default session runs. ``file_order_options`` are the session options under which it
is, but for two kinds of node: the ``PRIORITY_BASED`` execution order (no graph
optimizations) is a Kahn sort that runs the ready node of the smallest index first,
except that ``Shape`` and ``Size`` nodes run first as soon as they are ready (their
outputs are a few int64s), ``Constant`` nodes never run (onnxruntime makes them
initializers when it loads the model), and neither do nodes it drops as no-ops (a
``Cast`` to its input's own type, in ViT-B's export). ``onnxruntime_order`` is that
order for a model written in a dagopt order, as an order of its ``Graph``; the few
moved ``Shape`` nodes barely change its peak, and ``ran_in_order`` checks a run against
it.

``executed_kernels`` runs a session with profiling on and reads the nodes' kernels in
the order they ran, with the bytes of their outputs and of the allocator's, so that a
caller can check both (``size_mismatches``). The nodes of a subgraph are listed as they
run, before the ``If``, ``Loop`` or ``Scan`` node that ran them, which finishes last.
``measured_peak`` is the most bytes the allocator holds in a run of a file's order, and
``activations`` the graph that predicts it, the one to order for onnxruntime
(``docs/real_models.md``, "ONNX").
"""

import heapq
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import onnx
import onnxruntime as ort

from dagopt.errors import InputError
from dagopt.graph import Graph, validate_order
from dagopt.io.onnx import DEFAULT_DOMAINS, OnnxGraph, declared_types

#: Suffix of the profiler's event for a node's kernel (``{node name}_kernel_time``).
KERNEL_EVENT = "_kernel_time"
#: Ops onnxruntime's ``PRIORITY_BASED`` order runs as soon as they are ready.
EARLY_OPS = ("Shape", "Size")
#: Nodes of a ``dagopt.io.onnx`` graph that are no kernel: available from the start.
NOT_RUN = ("input", "Constant")
#: Ops whose output onnxruntime's CPU kernels return in their first input's buffer, and
#: ops that write into it when nothing reads it later: the ops that allocated nothing in
#: the runs of ``benchmarks/onnx_models.py`` (onnxruntime 1.32).
ALIAS_OPS = ("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze")
IN_PLACE_OPS = ("Relu", "Clip", "Tanh", "Softmax", "Cast")
#: The prefix of the names ONNX's shape inference gives dimensions it does not know.
UNKNOWN_DIM = "unk__"


def file_order_options() -> ort.SessionOptions:
    """Session options under which onnxruntime runs a model's nodes in the file's order
    (module doc): ``PRIORITY_BASED`` execution order, graph optimizations off."""
    options = ort.SessionOptions()
    options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def onnxruntime_order(onnx_graph: OnnxGraph, order: Sequence[int] | np.ndarray) -> np.ndarray:
    """The order of ``onnx_graph.graph`` in which onnxruntime runs the model written in
    ``order`` (``write_onnx``) under ``file_order_options`` (module doc): a Kahn sort
    that takes graph inputs, ``Constant``, ``Shape`` and ``Size`` nodes as soon as they
    are ready and every other node in the order of ``order``."""
    graph = onnx_graph.graph
    position = np.empty(graph.num_nodes, dtype=np.int64)
    position[validate_order(graph, order)] = np.arange(graph.num_nodes)
    early = [op in EARLY_OPS or op in NOT_RUN for op in graph.op]
    waiting = graph.in_degree.copy()
    ready = [(not early[v], position[v], v) for v in np.flatnonzero(waiting == 0)]
    heapq.heapify(ready)
    result = []
    while ready:
        _, _, v = heapq.heappop(ready)
        result.append(v)
        for w in graph.successors(v):
            waiting[w] -= 1
            if waiting[w] == 0:
                heapq.heappush(ready, (not early[w], position[w], w))
    return np.asarray(result, dtype=np.int64)


def kernel_names(onnx_graph: OnnxGraph, order: Sequence[int] | np.ndarray) -> list[str]:
    """The ONNX names of the nodes of ``order`` that run as kernels (not graph inputs,
    ``Constant`` or the ``output`` node), in that order: what ``executed_kernels``
    reports of a run in that order, for a model whose nodes all have names (exporters
    name every node; onnxruntime names an unnamed one itself)."""
    nodes = onnx_graph.model.graph.node
    return [
        nodes[onnx_graph.origin[v]].name
        for v in validate_order(onnx_graph.graph, order)
        if isinstance(onnx_graph.origin[v], int) and onnx_graph.graph.op[v] not in NOT_RUN
    ]


@dataclass(frozen=True)
class Kernel:
    """One node's kernel as onnxruntime's profiler saw it run: the node's name, the bytes
    of its outputs (``output_size``) and the bytes its CPU allocator had handed out and
    not taken back when the kernel finished, before the values it read last were
    released (``mem_bytes_requested_in_use``), with the change the kernel made to them
    (``mem_requested_in_use_delta``); ``None`` where this onnxruntime does not report
    them."""

    name: str
    output_bytes: int
    bytes_in_use: int | None
    in_use_change: int | None


def executed_kernels(
    path: str | os.PathLike,
    feeds: Mapping[str, np.ndarray],
    options: ort.SessionOptions | None = None,
    *,
    runs: int = 1,
) -> list[Kernel]:
    """The kernels of ``path``'s nodes in the order they finished in the last of ``runs``
    runs on ``feeds`` (CPU), under ``options`` (``file_order_options()`` by default; given
    ones are left with profiling on); subgraphs' nodes included (module doc)."""
    options = options or file_order_options()
    with TemporaryDirectory(prefix="dagopt-ort-profile-") as folder:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(folder) / "profile")
        session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
        for _ in range(runs):
            session.run(None, dict(feeds))
        events = json.loads(Path(session.end_profiling()).read_text())
    last_run = max(event["ts"] for event in events if event["name"] == "model_run")
    return [
        Kernel(
            event["name"].removesuffix(KERNEL_EVENT),
            int(event["args"]["output_size"]),
            _optional_int(event["args"], "mem_bytes_requested_in_use"),
            _optional_int(event["args"], "mem_requested_in_use_delta"),
        )
        for event in events
        if event.get("cat") == "Node"
        and event["name"].endswith(KERNEL_EVENT)
        and event["ts"] >= last_run
    ]


def _optional_int(args: Mapping[str, str], key: str) -> int | None:
    return int(args[key]) if key in args else None


def measured_peak(
    path: str | os.PathLike, feeds: Mapping[str, np.ndarray], *, own_order: bool = False
) -> float:
    """The most bytes of values onnxruntime holds at once when it runs ``path`` in the
    file's order (``file_order_options``) on ``feeds``: the allocator's bytes in use after
    each kernel, less those in use before the first, in the second of two runs, with
    memory patterns and buffer reuse off, so that each value is allocated by its kernel
    and freed after its last reader (kernels that compute in place still do). What the
    file's order costs, measured: ``activations`` gives the graph that predicts it.
    ``own_order``: in onnxruntime's own (``DEFAULT``) execution order instead, graph
    optimizations still off."""
    options = file_order_options()
    if own_order:
        options.execution_order = ort.ExecutionOrder.DEFAULT
    options.enable_mem_pattern = False
    options.enable_mem_reuse = False
    kernels = executed_kernels(path, feeds, options, runs=2)
    if not kernels or kernels[0].bytes_in_use is None:
        raise InputError(
            f"onnxruntime {ort.__version__} reports no allocator statistics in its profile: "
            "measuring a peak needs a version that does (1.32 does)"
        )
    before = kernels[0].bytes_in_use - kernels[0].in_use_change
    return float(max(kernel.bytes_in_use for kernel in kernels) - before)


def activations(onnx_graph: OnnxGraph) -> Graph:
    """``onnx_graph.graph`` as ``measured_peak`` counts it, the graph to order for
    onnxruntime. Graph inputs and parameters, which onnxruntime holds outside the
    allocator it reports, weigh nothing. A node of ``ALIAS_OPS`` returns its first
    input's buffer, and one of ``IN_PLACE_OPS`` writes into it when it is that tensor's
    only reader (then in every order) and onnxruntime can tell their shapes are equal:
    it plans from the shapes it infers from the file, so both must be known there, each
    dimension a number or the same name (``declared_types``); where one is unknown it
    computes into a new buffer. Such a node weighs nothing, and
    the node that allocated the buffer gets an edge to each of its readers, so the buffer
    lives until the last of them (the edges are implied by the order already, so the
    graph has the same topological orders)."""
    graph = onnx_graph.graph
    nodes = onnx_graph.model.graph.node
    node_of: dict[str, int] = {}  # tensor -> the node that makes it (graph inputs too)
    for v, origin in enumerate(onnx_graph.origin):
        if isinstance(origin, int):
            node_of.update(dict.fromkeys(nodes[origin].output, v))
        elif origin is not None:
            node_of[origin] = v
    is_input = np.array([isinstance(origin, str) for origin in onnx_graph.origin])
    mem = np.where(is_input, 0.0, graph.mem)
    declared = declared_types(onnx_graph.model)
    owner = np.arange(graph.num_nodes)  # the node whose buffer each node's output is in
    for v, origin in enumerate(onnx_graph.origin):
        if not isinstance(origin, int) or not nodes[origin].input:
            continue
        node = nodes[origin]
        if node.domain not in DEFAULT_DOMAINS:
            continue
        source = node_of.get(node.input[0])  # None for a weight
        allocated = source is not None and not is_input[source]
        in_place = (  # v reads the one output of source, and nothing else does
            allocated
            and node.op_type in IN_PLACE_OPS
            and _same_shape(declared.get(node.input[0]), declared.get(node.output[0]))
            and graph.out_degree[source] == 1
            and len(nodes[onnx_graph.origin[source]].output) == 1
            and mem[source] > 0
            and mem[source] == mem[v]
        )
        if node.op_type in ALIAS_OPS or in_place:
            mem[v] = 0.0  # an alias of a weight or a feed is held outside the allocator
            if allocated:
                owner[v] = owner[source]
    src, dst = graph.edges
    moved = owner[src] != src
    return Graph(
        graph.num_nodes,
        np.concatenate([src, owner[src[moved]]]),
        np.concatenate([dst, dst[moved]]),
        mem=mem,
        op=graph.op,
        names=graph.names,
        name=graph.name,
    )


def _same_shape(first: onnx.TypeProto | None, second: onnx.TypeProto | None) -> bool:
    """Whether two tensor types have shapes known to be equal: every dimension a number
    or a name of the file's (ONNX's inference names the dimensions it does not know
    ``unk__<n>``), the same in both."""
    if first is None or second is None:
        return False
    if not all(t.tensor_type.HasField("shape") for t in (first, second)):
        return False
    dims = [
        [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.tensor_type.shape.dim]
        for t in (first, second)
    ]
    known = all(d != 0 and d != "" and not str(d).startswith(UNKNOWN_DIM) for d in dims[0])
    return known and dims[0] == dims[1]


def size_mismatches(onnx_graph: OnnxGraph, kernels: Sequence[Kernel]) -> list[str]:
    """The names of the main graph's ``kernels`` whose output bytes are not those the
    graph gives their node: its ``mem``, or for an ``Identity`` of a parameter (which
    onnxruntime aliases) the parameter's bytes."""
    graph = onnx_graph.graph
    index = {name: v for v, name in enumerate(graph.names)}
    expected = np.where(
        np.isin(np.arange(graph.num_nodes), list(onnx_graph.param_aliases)),
        graph.param_mem,
        graph.mem,
    )
    return [
        k.name for k in kernels if k.name in index and expected[index[k.name]] != k.output_bytes
    ]


def ran_in_order(
    onnx_graph: OnnxGraph, order: Sequence[int] | np.ndarray, kernels: Sequence[Kernel]
) -> bool:
    """Whether ``kernels`` (``executed_kernels`` of the model written in ``order``) ran in
    ``onnxruntime_order``: the main graph's kernels that ran, all in the order it gives
    (onnxruntime may drop a no-op node, module doc, but not move one)."""
    expected = kernel_names(onnx_graph, onnxruntime_order(onnx_graph, order))
    names = set(expected)
    ran = [kernel.name for kernel in kernels if kernel.name in names]
    done = set(ran)
    return bool(ran) and [name for name in expected if name in done] == ran
