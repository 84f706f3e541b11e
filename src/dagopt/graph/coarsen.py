"""Co-location coarsening of a computation graph (paper 004, appendix G; ref. [24]).

Op ``v`` and its child ``w`` go to one co-location group when ``w`` is ``v``'s only
child and ``v`` is ``w``'s only parent: chains of single-input, single-output ops
collapse into one node, which no placement should split (every tensor between them
would cross devices and nothing could run in parallel). Contracting such an edge never
creates a cycle (another path from ``v`` to ``w`` would give ``w`` a second parent),
so the quotient graph is a DAG.

``colocate`` returns the group of every op and the quotient graph, whose nodes carry
the id and name of their first op and the ops' types joined by ``+``. A group's output
is its last op's output (the only one read outside the group), its parameters the
sum of its ops', and the extensive node data (runtimes, FLOPs) sum over its ops
(``dagopt.graph.quotient``). The op type of a group is the mean of its ops' one-hot
types (appendix G): ``Coarsening.op_mix`` over ``Coarsening.op_types``.
"""

from dataclasses import dataclass

import numpy as np

from dagopt.graph.core import Graph
from dagopt.graph.quotient import quotient_edges, summed_node_data


@dataclass(frozen=True)
class Coarsening:
    """A graph's co-location groups: ``group[v]`` is op ``v``'s node of ``quotient``,
    numbered in the topological order of the groups' first ops; ``op_mix[g]`` is the
    mean one-hot op type of group ``g`` over ``op_types`` (the graph's op types, sorted;
    ops without a type count as ``""``)."""

    group: np.ndarray
    quotient: Graph
    op_types: tuple[str, ...]
    op_mix: np.ndarray


def colocation_groups(graph: Graph) -> np.ndarray:
    """``group[v]`` of every op (module docstring), groups numbered in topological order."""
    n = graph.num_nodes
    head = np.arange(n)  # the first op of v's chain
    single_child = graph.out_degree == 1
    for v in graph.topological_order.tolist():
        if single_child[v]:
            w = int(graph.succ_idx[graph.succ_ptr[v]])
            if graph.in_degree[w] == 1:
                head[w] = head[v]
    position = np.empty(n, dtype=np.int64)
    position[graph.topological_order] = np.arange(n)
    heads = np.unique(head)
    ranked = heads[np.argsort(position[heads], kind="stable")]
    number = np.empty(n, dtype=np.int64)
    number[ranked] = np.arange(ranked.size)
    return number[head]


def colocate(graph: Graph) -> Coarsening:
    """Co-location groups of ``graph`` and its quotient graph (appendix G)."""
    group = colocation_groups(graph)
    k = int(group.max(initial=-1)) + 1
    src, dst = quotient_edges(graph, group)
    last = np.full(k, -1, dtype=np.int64)
    for v in graph.topological_order.tolist():  # the group's last op in topological order
        last[group[v]] = v
    node_data = summed_node_data(graph, group, k)
    ops = [op or "" for op in graph.op]
    op_types = tuple(sorted(set(ops)))
    one_hot = np.zeros((graph.num_nodes, len(op_types)))
    one_hot[np.arange(graph.num_nodes), [op_types.index(op) for op in ops]] = 1.0
    counts = np.bincount(group, minlength=k).astype(np.float64)
    op_mix = np.zeros((k, len(op_types)))
    np.add.at(op_mix, group, one_hot)
    op_mix /= np.maximum(counts, 1.0)[:, None]
    members = [np.flatnonzero(group == g) for g in range(k)]
    quotient = Graph(
        k,
        src,
        dst,
        mem=graph.mem[last],
        param_mem=np.bincount(group, weights=graph.param_mem, minlength=k),
        op=["+".join(ops[v] for v in m) for m in members],
        names=[graph.names[m[0]] for m in members],
        name=f"{graph.name}-colocated",
        node_data=node_data or None,
    )  # fmt: skip
    return Coarsening(group=group, quotient=quotient, op_types=op_types, op_mix=op_mix)
