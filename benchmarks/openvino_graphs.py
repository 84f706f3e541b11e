"""Sizes of paper 004's benchmark graphs as dagopt reads them from OpenVINO.

    python benchmarks/openvino_graphs.py

Builds zoo models with random weights (``dagopt.zoo``), converts them with
``openvino.convert_model`` at static shapes, and prints per model: the ops that become
graph nodes (``dagopt.io.openvino``: constants folded into their readers), every op of
the OpenVINO model (constants included), the edges, and what co-location coarsening
(appendix G) leaves. Paper 004's Table 1 counts 728, 396 and 1009 ops for Inception-V3,
ResNet-50 and BERT-base with the OpenVINO of 2023.
"""

import argparse
import time

import torch

from dagopt.bench.script import run_script
from dagopt.graph.coarsen import colocate
from dagopt.io.openvino import convert_openvino, graph_from_openvino
from dagopt.zoo import get_model

#: (zoo model, size, tokens to keep): Inception-V3 at 299 px, ResNet-50 at 224 px,
#: BERT-base on 8 tokens, as in paper 004.
MODELS = (("inception-v3", "large", None), ("resnet-50", "large", None), ("bert-base", "small", 8))


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)  # no options: --help, and an unknown argument is a usage error
    print(f"{'model':12} {'input':16} {'nodes':>6} {'all ops':>8} {'edges':>6} "
          f"{'co-located':>10} {'convert s':>9}")  # fmt: skip
    for name, size, tokens in MODELS:
        module, inputs = get_model(name).build(size)
        if tokens is not None:
            inputs = tuple(x[:, :tokens] for x in inputs)
        began = time.perf_counter()
        with torch.no_grad():
            model = convert_openvino(module, example_input=inputs)
        seconds = time.perf_counter() - began
        graph = graph_from_openvino(model, name=name)
        shape = "x".join(str(d) for d in inputs[0].shape)
        ops, groups = len(model.get_ordered_ops()), colocate(graph).quotient.num_nodes
        print(f"{name:12} {shape:16} {graph.num_nodes:6} {ops:8} {graph.num_edges:6} "
              f"{groups:10} {seconds:9.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    run_script(main)
