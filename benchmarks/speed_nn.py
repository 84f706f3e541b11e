"""Speed of ``dagopt.nn``: featurisation and encoder inference on layered graphs.

    python benchmarks/speed_nn.py               # 500 and 2000 nodes, about 30 s on 2 cores
    python benchmarks/speed_nn.py --sizes 500

One row per (graph size, encoder config): seconds for the masks (on a fresh ``Graph``,
so including its transitive closure and reduction), the node features, the Laplacian
encodings and one encoder forward pass (``torch.no_grad``, best of ``--repeat``), then
the peak RSS of the process so far (``resource.getrusage``; it only grows, so rows are
ordered small config first).
"""

import resource
from functools import partial

import numpy as np
import torch

from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import best_of
from dagopt.generate import generate_layered
from dagopt.graph import Graph
from dagopt.nn import Encoder, EncoderConfig, graph_inputs, laplacian_pe, node_features
from dagopt.nn.masks import topological_masks

CONFIGS = {
    "small (d=64, 2x32 heads/group)": EncoderConfig(dim=64, heads_per_group=(2,) * 7, head_dim=32),
    "paper (d=256, 10x64 heads/group)": EncoderConfig(),
}


def fresh_masks(graph: Graph) -> np.ndarray:
    """Masks of a copy of ``graph``, so the closure and reduction are computed anew."""
    copy = Graph(graph.num_nodes, *graph.edges, mem=graph.mem, param_mem=graph.param_mem)
    return topological_masks(copy)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[500, 2000])
    parser.add_argument("--repeat", type=positive_int, default=2)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    header = f"{'nodes':>5}  {'config':<33} {'masks':>7} {'features':>8} {'PE':>7} "
    print(header + f"{'forward':>8} {'peak RSS':>9}")
    for config_name, config in CONFIGS.items():
        encoder = Encoder(config).eval()
        for size in args.sizes:
            graph = generate_layered(size, seed=size)
            masks = best_of(args.repeat, partial(fresh_masks, graph))
            features = best_of(args.repeat, partial(node_features, graph))
            pe = best_of(args.repeat, partial(laplacian_pe, graph, config.pe_dim))
            with torch.no_grad():
                forward = best_of(args.repeat, partial(encoder, graph_inputs(graph)))
            print(
                f"{size:>5}  {config_name:<33} {masks:>6.3f}s {features:>7.4f}s {pe:>6.3f}s "
                f"{forward:>7.3f}s {peak_rss_mib():>6.0f} MiB"
            )
    return 0


if __name__ == "__main__":
    run_script(main)
