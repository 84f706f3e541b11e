"""The layout collections: small zoo-shaped programs, their layout configurations and
their TpuGraphs records.

``xla`` graphs (zoo CNNs): a conv2d layer of the model (groups 1), its output reshaped
to ``(channels, pixels)`` and multiplied by a ``(next channels, channels)`` matrix (a
1x1 conv as a dot): configurable convolution, reshape and dot. ``nlp`` graphs (zoo
transformers): attention scores of ``h`` heads against cached keys: the query
projection ``q = x Wq`` (a dot with a ``hidden -> hidden`` layer's slice of ``h`` heads),
reshaped to ``(tokens, h, head_dim)``, the batched dot with the keys (a parameter)
``scores[h, i, j] = sum_d q[i, h, d] k[j, h, d]``, reshaped to ``(h * tokens, tokens)``:
four configurable nodes.
Tokens and pixels shrink (halving) until a graph fits ``max_macs``; channels, windows,
strides, hidden sizes and head dims are the zoo's.

``random`` configurations draw every layout uniformly; ``default`` ones are the
configurations a small genetic search visits, starting from the row-major default
(paper 002, section 1.4: the GA-based collections sample near the fastest runtimes).
"""

from collections.abc import Callable, Sequence

import numpy as np

from dagopt.integrations.tvm.layout import (
    LayoutConfig,
    LayoutGraph,
    LayoutOp,
    LayoutPrograms,
    random_config,
)
from dagopt.integrations.tvm.measure import measure_programs
from dagopt.io.tpugraphs import LAYOUT_CONFIG_FEATURES, LayoutRecord
from dagopt.rank.configs.features import HloNode, graph_arrays
from dagopt.rank.configs.zoo_shapes import LayerShape


def _conv_out(side: int, layer: LayerShape) -> int:
    return (side + 2 * layer.pad - layer.kernel) // layer.stride + 1


def xla_graph(layer: LayerShape, next_channels: int, max_macs: int) -> LayoutGraph | None:
    """conv -> reshape -> dot of one zoo conv layer, cropped to ``max_macs``."""
    if layer.kind != "conv2d" or layer.groups != 1:
        return None
    side = layer.side
    while True:
        out = _conv_out(side, layer)
        macs = out * out * layer.cout * (layer.cin * layer.kernel**2 + next_channels)
        if out >= 1 and macs <= max_macs:
            break
        if out <= 1:
            return None
        side = (((out + 1) // 2) - 1) * layer.stride + layer.kernel - 2 * layer.pad
    ops = (
        LayoutOp("parameter", (1, layer.cin, side, side)),
        LayoutOp("parameter", (layer.cout, layer.cin, layer.kernel, layer.kernel)),
        LayoutOp(
            "convolution", (1, layer.cout, out, out), (0, 1), stride=layer.stride, pad=layer.pad
        ),
        LayoutOp("reshape", (layer.cout, out * out), (2,)),
        LayoutOp("parameter", (next_channels, layer.cout)),
        LayoutOp("dot", (next_channels, out * out), (4, 3), spec="nc,cp->np"),
    )
    name = (
        f"{layer.model}.conv-c{layer.cin}-o{layer.cout}-k{layer.kernel}-st{layer.stride}"
        f"-s{side}-n{next_channels}"
    )
    return LayoutGraph(name, ops)


def nlp_graph(layer: LayerShape, heads: int, tokens: int, max_macs: int) -> LayoutGraph | None:
    """Attention scores of ``heads`` heads on ``tokens`` tokens, cropped to ``max_macs``
    (``None`` without tokens: a layer of fewer tokens than the shrink factor)."""
    if layer.kind != "linear" or layer.cin != layer.cout or layer.heads < heads or tokens < 1:
        return None
    hidden, head_dim = layer.cin, layer.cin // layer.heads
    width = heads * head_dim

    def macs(t: int) -> int:
        return t * width * (hidden + t)

    while tokens > 1 and macs(tokens) > max_macs:
        tokens //= 2
    if macs(tokens) > max_macs:
        return None
    ops = (
        LayoutOp("parameter", (tokens, hidden)),
        LayoutOp("parameter", (hidden, width)),
        LayoutOp("dot", (tokens, width), (0, 1), spec="sd,de->se"),
        LayoutOp("reshape", (tokens, heads, head_dim), (2,)),
        LayoutOp("parameter", (tokens, heads, head_dim)),
        LayoutOp("dot", (heads, tokens, tokens), (3, 4), spec="ihd,jhd->hij"),
        LayoutOp("reshape", (heads * tokens, tokens), (5,)),
    )
    return LayoutGraph(f"{layer.model}.attention-d{hidden}-h{heads}-t{tokens}", ops)


def _padded(layout: tuple[int, ...]) -> list[int]:
    return [*layout, *[-1] * (6 - len(layout))]


def config_features(graph: LayoutGraph, configs: Sequence[LayoutConfig]) -> np.ndarray:
    """``node_config_feat`` (c, nc, 18): output, input and kernel layouts, -1 padded."""
    rows = [
        [_padded(out) + _padded(first) + _padded(kernel) for out, first, kernel in config]
        for config in configs
    ]
    return np.array(rows, dtype=np.float32).reshape(
        len(configs), len(graph.configurable_ids), LAYOUT_CONFIG_FEATURES
    )


def graph_nodes(graph: LayoutGraph) -> list[HloNode]:
    """The graph's ops as HLO nodes (parameters numbered in order)."""
    nodes, parameter = [], 0
    for op in graph.ops:
        if op.kind == "parameter":
            nodes.append(HloNode("parameter", op.shape, parameter=parameter))
            parameter += 1
        elif op.kind == "convolution":
            window = graph.ops[op.inputs[1]].shape[2]
            nodes.append(
                HloNode(op.kind, op.shape, op.inputs, window=window, stride=op.stride, pad=op.pad)
            )
        else:
            nodes.append(HloNode(op.kind, op.shape, op.inputs))
    return nodes


def layout_record(
    graph: LayoutGraph, configs: Sequence[LayoutConfig], runtime_ns: np.ndarray
) -> LayoutRecord:
    """The TpuGraphs layout record of a measured graph."""
    feat, opcode, edges = graph_arrays(graph_nodes(graph))
    return LayoutRecord(
        node_feat=feat,
        node_opcode=opcode,
        edge_index=edges,
        node_config_ids=np.array(graph.configurable_ids, dtype=np.int32),
        node_config_feat=config_features(graph, configs),
        config_runtime=np.asarray(runtime_ns, dtype=np.int64),
        name=graph.name,
    )


def random_configs(graph: LayoutGraph, count: int, rng: np.random.Generator) -> list[LayoutConfig]:
    """``count`` distinct uniformly drawn configurations (fewer if the space is smaller)."""
    seen: dict[LayoutConfig, None] = {}
    for _ in range(count * 50):
        if len(seen) == count:
            break
        seen.setdefault(random_config(graph, rng))
    return list(seen)


def _mutate(config: LayoutConfig, rng: np.random.Generator, rate: float) -> LayoutConfig:
    """Swap two dimensions of each layout with probability ``rate``."""
    nodes = []
    for layouts in config:
        new = []
        for layout in layouts:
            layout = list(layout)
            if len(layout) > 1 and rng.random() < rate:
                i, j = rng.choice(len(layout), size=2, replace=False)
                layout[i], layout[j] = layout[j], layout[i]
            new.append(tuple(layout))
        nodes.append(tuple(new))
    return tuple(nodes)


def genetic_configs(
    graph: LayoutGraph,
    count: int,
    rng: np.random.Generator,
    fitness: Callable[[list[LayoutConfig]], np.ndarray],
    population: int = 16,
) -> list[LayoutConfig]:
    """The distinct configurations a small genetic search visits, ``count`` at most.

    Starts from the row-major default and mutants of it; each generation keeps the
    fastest half (``fitness`` gives runtimes of new configurations), and breeds the
    other half by uniform per-node crossover of two survivors and mutation (each
    layout's two random dimensions swapped with probability 0.3).
    """
    default = graph.default_config()
    visited: dict[LayoutConfig, float] = {}
    batch = [default] + [_mutate(default, rng, 0.3) for _ in range(population - 1)]
    for _ in range(count * 10):
        batch = [c for c in dict.fromkeys(batch) if c not in visited][: count - len(visited)]
        if batch:
            visited.update(zip(batch, fitness(batch).tolist(), strict=True))
        if len(visited) >= count:
            break
        ranked = sorted(visited, key=visited.__getitem__)[: population // 2]
        batch = []
        for _ in range(population):
            a, b = (ranked[i] for i in rng.choice(len(ranked), size=2))
            child = tuple(x if rng.random() < 0.5 else y for x, y in zip(a, b, strict=True))
            batch.append(_mutate(child, rng, 0.3))
    return list(visited)


def measure_layout_graph(
    graph: LayoutGraph,
    variant: str,
    count: int,
    *,
    rounds: int,
    seed: int,
):
    """Configurations of ``graph`` (``variant`` random or default) and their measurement."""
    rng = np.random.default_rng(seed)
    programs = LayoutPrograms(graph, seed=seed)

    def fitness(batch: list[LayoutConfig]) -> np.ndarray:
        programs.add(batch)
        runners = [programs.runner(c) for c in batch]
        if len(runners) < 2:
            runners.append(runners[0])
        return measure_programs(runners, rounds=2, seed=seed).runtime_ns[: len(batch)]

    if variant == "random":
        configs = random_configs(graph, count, rng)
    else:
        configs = genetic_configs(graph, count, rng, fitness)
    programs.add(configs)
    measurement = measure_programs([programs.runner(c) for c in configs], rounds=rounds, seed=seed)
    return configs, measurement
