"""``Graph``: an immutable, validated DAG over nodes ``0..n-1`` in CSR form.

Nodes carry the sizes of the peak-memory problem of paper 000 (section 3.2 and
eq. 15): ``mem`` is the size of the node's output, ``param_mem`` the size of the
parameters it reads while it runs. Other numeric data may ride along: per node
(``node_data``, e.g. op runtimes, or per-device runtimes, or feature vectors such as
TpuGraphs' 140 per node) and per edge (``edge_data``). Derived structure (a topological
order, the transitive closure and reduction, hop depths) is computed on first use and
cached.
"""

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from dagopt.errors import GraphError
from dagopt.graph.bitset import bits_to_bool, singleton_bits

#: Why a model reader (ONNX, OpenVINO) refuses a model whose tensor shapes overflow a
#: float (Python raises OverflowError turning such a size or FLOP count into one).
BEYOND_FLOAT_RANGE = "tensor shapes too large: a size or FLOP count exceeds the float range"

NodeId = int | str


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _csr(keys: np.ndarray, values: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Group ``values`` by ``keys`` (already sorted by key then value) into CSR arrays."""
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=num_nodes), out=ptr[1:])
    return _read_only(ptr), _read_only(values.astype(np.int32))


def _sizes(values: Any, num_nodes: int, what: str, names: Sequence[NodeId]) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (num_nodes,):
        raise GraphError(f"{what} has {array.size} entries, expected one per node ({num_nodes})")
    bad = np.flatnonzero(~np.isfinite(array) | (array < 0))
    if bad.size:
        v = int(bad[0])
        raise GraphError(
            f"node {names[v]!r} has invalid {what} {float(array[v])} (must be finite, >= 0)"
        )
    return _read_only(array)


def _check_distinct_as_text(names: Sequence[NodeId]) -> None:
    """Raise ``GraphError`` if two ids read the same as text, such as ``1`` and ``"1"``:
    JSON object keys are text (placement files key devices by ``str(id)``), so such ids
    could not be told apart there. Only mixed integer and string ids can clash."""
    if len({type(name) for name in names}) < 2:
        return
    first: dict[str, NodeId] = {}
    for name in names:
        other = first.setdefault(str(name), name)
        if other is not name:
            raise GraphError(
                f"node ids {other!r} and {name!r} are the same as text; "
                "ids must stay distinct when written as strings"
            )


def _data(
    data: Mapping[str, Any] | None, rows: int, what: str, label: Callable[[int], str]
) -> dict[str, np.ndarray]:
    """``node_data`` / ``edge_data`` as float arrays of shape ``(rows,)`` or ``(rows, k)``;
    a non-numeric, misshaped or non-finite array raises a one-line ``GraphError``
    (``label(row)`` names the node or edge)."""
    arrays = {}
    for key, values in (data or {}).items():
        if not isinstance(key, str):
            raise GraphError(f"{what} attribute names must be strings, got {key!r}")
        try:
            array = np.asarray(values)
        except ValueError:
            array = np.empty(0, dtype=object)  # ragged: rejected just below
        if array.dtype.kind not in "biuf":
            raise GraphError(f"{what} attribute {key!r} must be an array of numbers")
        if array.ndim not in (1, 2) or array.shape[0] != rows:
            raise GraphError(
                f"{what} attribute {key!r} has shape {array.shape}, expected ({rows},) or "
                f"({rows}, k): one value or one row per {what}"
            )
        array = array.astype(np.float64)
        bad = np.argwhere(~np.isfinite(array))
        if bad.size:
            value = float(array[tuple(bad[0])])
            raise GraphError(f"{label(int(bad[0][0]))} has a non-finite {key!r}: {value}")
        arrays[key] = array
    return arrays


class Graph:
    """Immutable DAG with CSR successor/predecessor arrays and per-node memory sizes.

    Build one with ``Graph(num_nodes, src, dst, mem=..., ...)``. Duplicate edges are
    merged; a cycle, a self-loop, an edge to an unknown node, a negative / non-finite
    size, sizes whose total overflows a float (so that every peak memory is finite) or
    two node ids that are equal as text (``1`` and ``"1"``) raise ``GraphError`` with a
    one-line message.

    ``node_data`` maps names to finite numeric arrays of shape ``(n,)`` or ``(n, k)``
    (one value or one row per node). ``edge_data`` does the same per edge: its arrays
    have one row per edge given in ``src`` / ``dst``, and the graph stores them in the
    order of ``graph.edges`` (duplicate edges must carry equal data). Stored arrays are
    read-only float64.
    """

    def __init__(
        self,
        num_nodes: int,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        *,
        mem: Sequence[float] | np.ndarray,
        param_mem: Sequence[float] | np.ndarray | None = None,
        op: Sequence[str | None] | None = None,
        names: Sequence[NodeId] | None = None,
        name: str = "graph",
        node_data: Mapping[str, Sequence[float] | np.ndarray] | None = None,
        edge_data: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ) -> None:
        n = int(num_nodes)
        if n < 0:
            raise GraphError(f"number of nodes must be >= 0, got {n}")
        node_names: tuple[NodeId, ...] = tuple(range(n)) if names is None else tuple(names)
        if len(node_names) != n:
            raise GraphError(f"{len(node_names)} node names given for {n} nodes")
        if len(set(node_names)) != n:
            seen: set[NodeId] = set()
            dup = next(x for x in node_names if x in seen or seen.add(x))
            raise GraphError(f"duplicate node id {dup!r}")
        _check_distinct_as_text(node_names)
        src_a = np.asarray(src, dtype=np.int64).reshape(-1)
        dst_a = np.asarray(dst, dtype=np.int64).reshape(-1)
        if src_a.shape != dst_a.shape:
            raise GraphError("edge source and target arrays differ in length")
        bad = np.flatnonzero((src_a < 0) | (src_a >= n) | (dst_a < 0) | (dst_a >= n))
        if bad.size:
            e = int(bad[0])
            raise GraphError(f"edge {int(src_a[e])} -> {int(dst_a[e])} refers to an unknown node")
        loops = np.flatnonzero(src_a == dst_a)
        if loops.size:
            raise GraphError(f"self-loop on node {node_names[int(src_a[loops[0]])]!r}")
        keys, first, merged = np.unique(
            src_a * max(n, 1) + dst_a, return_index=True, return_inverse=True
        )
        src_u, dst_u = keys // max(n, 1), keys % max(n, 1)

        set_attr = object.__setattr__
        set_attr(self, "num_nodes", n)
        set_attr(self, "name", str(name))
        set_attr(self, "names", node_names)
        set_attr(self, "mem", _sizes(mem, n, "mem", node_names))
        param = np.zeros(n) if param_mem is None else param_mem
        set_attr(self, "param_mem", _sizes(param, n, "param_mem", node_names))
        with np.errstate(over="ignore"):  # an overflow is the error raised just below
            total = float(self.mem.sum()) + float(self.param_mem.max(initial=0.0))
        if not math.isfinite(total):
            raise GraphError(
                "sizes too large: the sum of every 'mem' plus the largest 'param_mem' "
                "exceeds the float range (1.8e308), so peak memory would be infinite"
            )
        ops = (None,) * n if op is None else tuple(op)
        if len(ops) != n:
            raise GraphError(f"op has {len(ops)} entries, expected one per node ({n})")
        set_attr(self, "op", ops)
        node_arrays = _data(node_data, n, "node", lambda v: f"node {node_names[v]!r}")
        set_attr(self, "node_data", {key: _read_only(a) for key, a in node_arrays.items()})
        stored = {}

        def edge(e: int) -> str:
            return f"edge {node_names[int(src_a[e])]!r} -> {node_names[int(dst_a[e])]!r}"

        for key, array in _data(edge_data, src_a.size, "edge", edge).items():
            if key in ("source", "target"):
                raise GraphError(f"edge attribute name {key!r} is reserved for the edge's ends")
            unique = array[first]
            differs = unique[merged] != array
            clash = np.flatnonzero(differs.any(axis=1) if differs.ndim == 2 else differs)
            if clash.size:
                raise GraphError(f"duplicate {edge(int(clash[0]))} has different {key!r} values")
            stored[key] = _read_only(unique)
        set_attr(self, "edge_data", stored)
        succ_ptr, succ_idx = _csr(src_u, dst_u, n)
        set_attr(self, "succ_ptr", succ_ptr)
        set_attr(self, "succ_idx", succ_idx)
        by_dst = np.lexsort((src_u, dst_u))
        pred_ptr, pred_idx = _csr(dst_u[by_dst], src_u[by_dst], n)
        set_attr(self, "pred_ptr", pred_ptr)
        set_attr(self, "pred_idx", pred_idx)
        set_attr(self, "_topo", self._kahn_or_raise())

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Graph is immutable")

    def __repr__(self) -> str:
        return f"Graph(name={self.name!r}, nodes={self.num_nodes}, edges={self.num_edges})"

    # ---------------------------------------------------------------- basic views
    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled graph (in a worker process) is read-only like the original:
        numpy's pickles drop the flag, and numba compiles a writable array as another
        type (a first solve in each worker would compile its kernels again)."""
        for value in state.values():
            for array in value.values() if isinstance(value, dict) else (value,):
                if isinstance(array, np.ndarray):
                    array.setflags(write=False)
        self.__dict__.update(state)

    @property
    def num_edges(self) -> int:
        return int(self.succ_idx.size)

    @cached_property
    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Edge arrays ``(src, dst)`` sorted by source then target."""
        src = np.repeat(np.arange(self.num_nodes, dtype=np.int32), np.diff(self.succ_ptr))
        return _read_only(src), self.succ_idx

    def successors(self, v: int) -> np.ndarray:
        return self.succ_idx[self.succ_ptr[v] : self.succ_ptr[v + 1]]

    def predecessors(self, v: int) -> np.ndarray:
        return self.pred_idx[self.pred_ptr[v] : self.pred_ptr[v + 1]]

    @cached_property
    def out_degree(self) -> np.ndarray:
        return _read_only(np.diff(self.succ_ptr).astype(np.int32))

    @cached_property
    def in_degree(self) -> np.ndarray:
        return _read_only(np.diff(self.pred_ptr).astype(np.int32))

    @cached_property
    def index_of(self) -> dict[NodeId, int]:
        """Map from original node id (as in the file) to node index."""
        return {name: i for i, name in enumerate(self.names)}

    # ---------------------------------------------------------------- derived structure
    def _kahn_or_raise(self) -> np.ndarray:
        """Kahn's algorithm (FIFO, smallest index first among sources); raise on a cycle."""
        n = self.num_nodes
        indeg = self.in_degree.copy()
        order = np.empty(n, dtype=np.int32)
        queue = list(np.flatnonzero(indeg == 0))
        head = 0
        succ_ptr, succ_idx = self.succ_ptr, self.succ_idx
        while head < len(queue):
            v = queue[head]
            order[head] = v
            head += 1
            for w in succ_idx[succ_ptr[v] : succ_ptr[v + 1]]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    queue.append(w)
        if head < n:
            cycle = self._find_cycle(np.flatnonzero(indeg > 0))
            shown = " -> ".join(repr(self.names[v]) for v in cycle[:8])
            more = " -> ..." if len(cycle) > 8 else ""
            raise GraphError(f"graph has a cycle: {shown}{more} -> {self.names[cycle[0]]!r}")
        return _read_only(order)

    def _find_cycle(self, stuck: np.ndarray) -> list[int]:
        """Nodes on one cycle, found by walking predecessors among nodes Kahn could not order."""
        in_stuck = np.zeros(self.num_nodes, dtype=bool)
        in_stuck[stuck] = True
        position: dict[int, int] = {}
        path: list[int] = []
        v = int(stuck[0])
        while v not in position:
            position[v] = len(path)
            path.append(v)
            v = int(next(u for u in self.predecessors(v) if in_stuck[u]))
        return path[position[v] :][::-1]

    @property
    def topological_order(self) -> np.ndarray:
        """A topological order (Kahn's algorithm, FIFO), as node indices."""
        return self._topo

    def is_topological(self, order: np.ndarray) -> bool:
        """True when ``order`` (node indices) is a permutation respecting every edge."""
        order = np.asarray(order)
        if order.shape != (self.num_nodes,):
            return False
        position = np.full(self.num_nodes, -1, dtype=np.int64)
        if order.size and (order.min() < 0 or order.max() >= self.num_nodes):
            return False
        position[order] = np.arange(order.size)
        if (position < 0).any():
            return False
        src, dst = self.edges
        return bool(np.all(position[src] < position[dst]))

    @cached_property
    def descendant_bits(self) -> np.ndarray:
        """``(n, words)`` uint64 bitsets: row ``u`` = nodes reachable from ``u`` (strict)."""
        return self._reach(self.succ_ptr, self.succ_idx, self._topo[::-1])

    @cached_property
    def ancestor_bits(self) -> np.ndarray:
        """``(n, words)`` uint64 bitsets: row ``v`` holds every node that reaches ``v`` (strict)."""
        return self._reach(self.pred_ptr, self.pred_idx, self._topo)

    def _reach(self, ptr: np.ndarray, idx: np.ndarray, visit: np.ndarray) -> np.ndarray:
        closed = singleton_bits(self.num_nodes)
        for v in visit:
            lo, hi = ptr[v], ptr[v + 1]
            if hi > lo:
                closed[v] |= np.bitwise_or.reduce(closed[idx[lo:hi]], axis=0)
        return _read_only(closed ^ singleton_bits(self.num_nodes))

    @cached_property
    def closure_matrix(self) -> np.ndarray:
        """Boolean ``(n, n)`` matrix of the transitive closure: ``[u, v]`` iff a path u -> v."""
        return _read_only(bits_to_bool(self.descendant_bits, self.num_nodes))

    @cached_property
    def transitive_reduction(self) -> tuple[np.ndarray, np.ndarray]:
        """Edges ``(src, dst)`` of the transitive reduction (section 3.1 of paper 000).

        Edge ``u -> v`` is redundant iff ``v`` is a descendant of another successor of ``u``
        (``dagopt.graph.reduction``: block-wise descendant bitsets, no ``n x n`` array).
        """
        from dagopt.graph.reduction import redundant_edges  # numba: compiled on first use

        src, dst = self.edges
        keep = ~redundant_edges(self.succ_ptr, self.succ_idx, self._topo)
        return _read_only(src[keep].copy()), _read_only(dst[keep].copy())

    @cached_property
    def sinks(self) -> np.ndarray:
        return _read_only(np.flatnonzero(self.out_degree == 0).astype(np.int32))

    @cached_property
    def sources(self) -> np.ndarray:
        return _read_only(np.flatnonzero(self.in_degree == 0).astype(np.int32))
