"""TGraph on CPU: milliseconds per training step and per inference batch, configurations
as the batch axis against one forward pass per configuration.

    python benchmarks/tgraph_speed.py                    # paper width 256, 1 thread
    python benchmarks/tgraph_speed.py --nodes 400 --threads 2

The graph is a SYNTHETIC layout record (``--nodes`` nodes, 1 in 10 configurable),
pruned as in training; only its size matters here. A training step is forward, eq. 8
and backward on ``c`` configurations; an inference batch is a forward pass without
gradients. "per config" runs the same model once per configuration (batch of 1, where
cross-attention is the identity) to show what the batch axis saves. Median of
``--repeats`` runs, after one warm-up.
"""

import statistics
import time

import numpy as np
import torch

from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.generate.tpugraphs import synthetic_layout_record
from dagopt.nn.tgraph.config import TGraphConfig, baseline_config
from dagopt.nn.tgraph.ranker import TGraphRanker
from dagopt.rank.tgraph import fit_normalizers, normalize, prepare
from dagopt.train.tgraph import TGraphTrainConfig, optimizer_for, train_step


def median_ms(work, repeats: int) -> float:
    work()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times)


def timings(config: TGraphConfig, graph, c: int, repeats: int) -> tuple[float, float, float]:
    """Training step, inference batch and per-configuration inference, milliseconds."""
    torch.manual_seed(0)
    model = TGraphRanker(config)
    normalize(model, *fit_normalizers([graph]))
    recipe = TGraphTrainConfig()
    optimizer = optimizer_for(model, recipe)
    index = np.arange(c)
    step = median_ms(lambda: train_step(model, optimizer, [(graph, index)], recipe), repeats)
    model.eval()
    with torch.no_grad():
        batch = median_ms(lambda: model(graph.tensors, graph.configs(index)), repeats)
        single = median_ms(
            lambda: [model(graph.tensors, graph.configs(index[i : i + 1])) for i in index],
            max(1, repeats // 2),
        )
    return step, batch, single


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--nodes", type=positive_int, default=200)
    parser.add_argument("--hidden", type=positive_int, default=256)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    record = synthetic_layout_record(
        0, num_nodes=args.nodes, num_configurable=args.nodes // 10, num_configs=128
    )
    graph = prepare(record)
    print(
        f"SYNTHETIC layout graph: {args.nodes} nodes, {graph.tensors.num_nodes} after pruning; "
        f"{args.threads} thread(s); milliseconds (median of {args.repeats})"
    )
    print("| model | configs | train step | inference batch | inference, per config |")
    print("|---|---:|---:|---:|---:|")
    models = {
        "tgraph": TGraphConfig(hidden=args.hidden),
        "tgraph, no cross-attn": TGraphConfig(hidden=args.hidden, cross_attention=False),
        "tpugraphs baseline": baseline_config("layout"),
    }
    for name, config in models.items():
        for c in (64, 128):
            print(
                f"| {name} | {c} | "
                + " | ".join(f"{t:.1f}" for t in timings(config, graph, c, args.repeats))
                + " |"
            )
    return 0


if __name__ == "__main__":
    run_script(main)
