"""The tile collection: zoo-shaped fused kernels, their tilings and their TpuGraphs records.

A kernel (``dagopt.integrations.tvm.tile.TileKernel``) is a zoo conv2d (groups 1) or
linear layer plus bias and activation (ReLU after a conv, GELU after a linear), cropped
to ``max_macs`` multiply-adds: the tokens of a linear layer and the output side of a conv
shrink (halving) until it fits; channels, window, stride and padding stay the zoo's.
Each configuration is a ``Tiling``; ``config_feat`` encodes it in the 24 columns of the
official description (``docs/configs_dataset.md`` has the mapping):

- 0-7 ``kernel_bounds``: the weight tile (dense ``(n, k)``; conv ``(o, c, r, s)``), sum, product;
- 8-15 ``output_bounds``: the output tile (dense ``(m, n)``; conv ``(1, o, y, x)``), sum, product;
- 16-23 ``input_bounds`` (0 in the official files, the compiler infers them): here
  the knobs no tile size holds: 16 loop order (0-2), 17 vectorised (0/1), 18 unrolled
  (0/1), 22 their sum, 23 their product.
"""

import numpy as np

from dagopt.integrations.tvm.tile import LOOP_ORDERS, TileKernel, Tiling
from dagopt.io.tpugraphs import OUTPUT_BOUNDS, TILE_CONFIG_FEATURES, TileRecord
from dagopt.rank.configs.features import HloNode, graph_arrays
from dagopt.rank.configs.zoo_shapes import LayerShape

TILE_SIZES = (1, 2, 4, 8, 16, 32, 64)


def tile_kernel(layer: LayerShape, max_macs: int) -> TileKernel | None:
    """The kernel of ``layer`` cropped to ``max_macs``; ``None`` when it cannot fit (or
    is a grouped conv)."""
    if layer.kind == "linear":
        m = layer.side
        while m > 1 and m * layer.cin * layer.cout > max_macs:
            m = (m + 1) // 2
        kernel = TileKernel("dense", "gelu", m=m, n=layer.cout, k=layer.cin)
    else:
        if layer.groups != 1:
            return None
        size = layer.side
        kernel = TileKernel(
            "conv2d",
            "relu",
            cin=layer.cin,
            cout=layer.cout,
            size=size,
            kernel=layer.kernel,
            stride=layer.stride,
            pad=layer.pad,
        )
        while kernel.macs > max_macs and kernel.out_size > 1:
            out = (kernel.out_size + 1) // 2
            size = (out - 1) * layer.stride + layer.kernel - 2 * layer.pad
            kernel = TileKernel(
                "conv2d",
                "relu",
                cin=layer.cin,
                cout=layer.cout,
                size=max(size, layer.kernel - 2 * layer.pad, 1),
                kernel=layer.kernel,
                stride=layer.stride,
                pad=layer.pad,
            )
    return kernel if kernel.macs <= max_macs and kernel.out_size >= 1 else None


def model_kernels(layers: list[LayerShape], count: int, max_macs: int) -> list[TileKernel]:
    """Up to ``count`` distinct kernels of one model, spread evenly over its layers."""
    kernels = list(dict.fromkeys(k for k in (tile_kernel(x, max_macs) for x in layers) if k))
    if len(kernels) <= count:
        return kernels
    picks = np.linspace(0, len(kernels) - 1, count).round().astype(int)
    return [kernels[i] for i in dict.fromkeys(picks.tolist())]


def random_tilings(kernel: TileKernel, count: int, rng: np.random.Generator) -> list[Tiling]:
    """``count`` distinct tilings drawn uniformly (tile sizes from ``TILE_SIZES`` up to
    each extent); vectorising is drawn only where the output tile is innermost (order 1)."""
    seen: dict[Tiling, None] = {}
    reduction = kernel.reduction_shape[0]
    for _ in range(count * 50):
        if len(seen) == count:
            break
        output = tuple(
            int(rng.choice([t for t in TILE_SIZES if t <= d])) for d in kernel.output_shape
        )
        order = int(rng.integers(LOOP_ORDERS))
        tiling = Tiling(
            output,
            int(rng.choice([t for t in TILE_SIZES if t <= reduction])),
            order,
            bool(rng.integers(2)) and order == 1,
            bool(rng.integers(2)),
        )
        seen.setdefault(tiling)
    return list(seen)


def _bounds(values) -> list[float]:
    values = [float(v) for v in values]
    return [*values, *[0.0] * (6 - len(values)), sum(values), float(np.prod(values))]


def config_features(kernel: TileKernel, tiling: Tiling) -> np.ndarray:
    """The 24 ``config_feat`` columns of ``tiling`` (module docstring)."""
    out = tiling.output
    if kernel.op == "dense":
        weight = (out[1], tiling.reduction)
    else:
        weight = (out[1], tiling.reduction, kernel.kernel, kernel.kernel)
    knobs = (tiling.order, int(tiling.vectorize), int(tiling.unroll))
    row = _bounds(weight) + _bounds(out) + _bounds(knobs)
    assert len(row) == TILE_CONFIG_FEATURES
    return np.array(row, dtype=np.float32)


def tiling_from_features(kernel: TileKernel, row: np.ndarray) -> Tiling:
    """The ``Tiling`` a ``config_feat`` row encodes: the inverse of ``config_features``."""
    rank = len(kernel.output_shape)
    output = tuple(int(v) for v in row[OUTPUT_BOUNDS][:rank])
    return Tiling(output, int(row[1]), int(row[16]), bool(row[17]), bool(row[18]))


def kernel_nodes(kernel: TileKernel) -> list[HloNode]:
    """The kernel as HLO nodes: parameters, convolution / dot, bias broadcast and add,
    then the activation (ReLU: ``maximum`` with a broadcast constant 0; GELU: its
    ``tanh`` and the final ``multiply``)."""
    data, weight, bias = kernel.input_shapes
    out = kernel.output_shape
    feature_dim = 1
    if kernel.op == "dense":
        main = HloNode("dot", out, (0, 1))
    else:
        main = HloNode(
            "convolution", out, (0, 1), window=kernel.kernel, stride=kernel.stride, pad=kernel.pad
        )
    nodes = [
        HloNode("parameter", data, parameter=0),
        HloNode("parameter", weight, parameter=1),
        main,
        HloNode("parameter", bias, parameter=2),
        HloNode("broadcast", out, (3,), dimensions=(feature_dim,)),
        HloNode("add", out, (2, 4)),
    ]
    if kernel.activation == "relu":
        nodes += [
            HloNode("constant", ()),
            HloNode("broadcast", out, (6,)),
            HloNode("maximum", out, (5, 7)),
        ]
    else:
        nodes += [HloNode("tanh", out, (5,)), HloNode("multiply", out, (5, 6))]
    return nodes


def tile_record(
    kernel: TileKernel,
    tilings: list[Tiling],
    runtime_ns: np.ndarray,
    default_ns: int,
    name: str,
) -> TileRecord:
    """The TpuGraphs tile record of a measured kernel (normaliser: the default schedule)."""
    feat, opcode, edges = graph_arrays(kernel_nodes(kernel))
    return TileRecord(
        node_feat=feat,
        node_opcode=opcode,
        edge_index=edges,
        config_feat=np.stack([config_features(kernel, t) for t in tilings]),
        config_runtime=np.asarray(runtime_ns, dtype=np.int64),
        config_runtime_normalizers=np.full(len(tilings), default_ns, dtype=np.int64),
        name=name,
    )


def measure_tile_kernel(kernel: TileKernel, count: int, *, rounds: int, seed: int):
    """``count`` random tilings of ``kernel``, timed together with the default schedule
    in the same interleaved rounds; returns the tilings, their measurement (the default
    last) and the compiled code's numpy check error."""
    from dagopt.integrations.tvm import compile_functions, require_tvm
    from dagopt.integrations.tvm.measure import measure_programs
    from dagopt.integrations.tvm.tile import random_inputs, reference, schedule

    rng = np.random.default_rng(seed)
    tilings = random_tilings(kernel, count, rng)
    plans = [*tilings, None]
    executable = compile_functions(
        {f"cfg{j}": schedule(kernel, t)["main"] for j, t in enumerate(plans)}
    )
    tvm = require_tvm()
    device = tvm.cpu(0)
    arrays = random_inputs(kernel, seed)
    tensors = [tvm.runtime.tensor(a, device) for a in arrays]
    expected = reference(kernel, *arrays[:3])
    runners, error = [], 0.0
    for j in range(len(plans)):
        function = executable[f"cfg{j}"]
        function(*tensors)
        error = max(error, float(np.abs(tensors[-1].numpy() - expected).max()))
        runners.append(lambda f=function: f(*tensors))
    return tilings, measure_programs(runners, rounds=rounds, seed=seed), error
