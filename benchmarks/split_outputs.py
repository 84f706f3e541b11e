"""Predicted against measured peaks of training graphs, joint and split operator outputs.

    python benchmarks/split_outputs.py                        # the default models, 10 s
    python benchmarks/split_outputs.py --models resnet-50 gpt2 --time-limit 3

Each zoo model (small size, training mode) is exported twice with ``graph_from_module``:
as by default (an operator's output storages are one node, freed together) and with
``split_outputs=True`` (each storage after the first has its own node and lifetime,
``docs/real_models.md``). On each graph: the traced order's predicted peak
(``peak_memory``, outputs kept) and its measured peak (``measure_peak`` of a real CPU
run), then ``anytime``'s order (``--time-limit`` seconds, seed 0), predicted and
measured, and the measured change from the traced order. Export and the numba warm-up
are not timed; nothing here is timed but ``anytime``'s own limit.
"""

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import (
    add_zoo_search_options,
    check_zoo_models,
    run_script,
    script_parser,
)

MODELS = (
    "resnet-50",
    "mobilenet-v2",
    "convnext-tiny",
    "inception-v3",
    "googlenet",
    "squeezenet-1.1",
    "shufflenet-v2",
    "efficientnet-b0",
    "mobilevit-small",
    "gpt2",
    "bert-base",
)


def _row(name: str, split: bool, time_limit: float) -> list[str]:
    from dagopt.integrations.torch import measure_peak, reorder
    from dagopt.io.torch import graph_from_module
    from dagopt.objectives import peak_memory
    from dagopt.schedule import solve
    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    exported = graph_from_module(module, inputs, mode="training", split_outputs=split)
    graph = exported.graph
    traced = np.arange(graph.num_nodes)
    searched = solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=time_limit)
    cells = [name, "split" if split else "joint", f"{graph.num_nodes:,}"]
    measured = []
    for order in (traced, searched.order):
        predicted = peak_memory(graph, order, keep_outputs=True)
        real = measure_peak(reorder(exported, order), inputs).peak
        measured.append(real)
        cells += [
            f"{predicted / 1e6:.3f}",
            f"{real / 1e6:.3f}",
            f"{100 * (predicted / real - 1):+.2f}",
        ]
    cells.append(f"{100 * (measured[1] / measured[0] - 1):+.2f}")
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_zoo_search_options(parser, MODELS)
    args = parser.parse_args(argv)
    check_zoo_models(args.models)
    print(
        markdown_row(
            [
                "model (training)",
                "outputs",
                "nodes",
                "traced predicted MB",
                "traced measured MB",
                "diff %",
                "anytime predicted MB",
                "anytime measured MB",
                "diff %",
                "measured change %",
            ]
        )
    )
    print(markdown_rule("llrrrrrrrr"))
    for name in args.models:
        for split in (False, True):
            print(markdown_row(_row(name, split, args.time_limit)), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
