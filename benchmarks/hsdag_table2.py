"""Paper 004, Table 2 on a SIMULATED CPU + GPU: HSDAG against the single devices, random
placements and BRKGA. Simulated, not measured: op times are roofline estimates.

    python benchmarks/hsdag_table2.py                 # 3 models x seeds 0, 1, 2
    python benchmarks/hsdag_table2.py --models resnet-50 --seeds 0

The graphs are Inception-V3 (299 px), ResNet-50 (224 px) and BERT-base (8 tokens) from
the zoo (random weights), read through OpenVINO (``dagopt.io.openvino``). Each op's
seconds on each device come from ``estimate_runtimes`` with the device's peak FLOP/s,
memory bandwidth and per-op launch cost (``DEVICES``); a tensor crossing devices pays
the link's latency plus bytes over its bandwidth (``LINK``); paper 003's simulator
(``SimulatedCostModel``) gives the latency of a placement. Rows: every op on the CPU,
every op on the GPU, the median of 200 uniformly random placements, BRKGA and HSDAG
with the same number of simulated placements (HSDAG: Table 4's 100 episodes x 20 steps,
plus its device-0 reference). The paper's Table 2 measured Inception-V3 at 0.0128 s on
its CPU and 0.0105 s with HSDAG, ResNet-50 at 0.0160 s / 0.00766 s and BERT-base at
0.00638 s / 0.00267 s: different hardware, shown for scale only.
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from dagopt.io.openvino import convert_openvino, graph_from_openvino
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.objectives.runtime import estimate_runtimes
from dagopt.place import PlacementProblem, place
from dagopt.zoo import get_model

#: Roofline parameters: (peak FLOP/s, memory bytes/s, seconds per op launch).
DEVICES = {"cpu": (1.5e12, 1.0e11, 2e-6), "gpu": (5.0e13, 2.0e12, 8e-6)}
#: The CPU-GPU link: latency (s) and bandwidth (bytes/s), PCIe 4.0 x16-like.
LINK = (1e-5, 2.5e10)
MODELS = {"inception-v3": ("large", None), "resnet-50": ("large", None), "bert-base": ("small", 8)}


def model_graph(name: str):
    size, tokens = MODELS[name]
    module, inputs = get_model(name).build(size)
    if tokens is not None:
        inputs = tuple(x[:, :tokens] for x in inputs)
    with torch.no_grad():
        return graph_from_openvino(convert_openvino(module, example_input=inputs), name=name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)
    devices = Devices(
        (DeviceSpec(memory=64 * GIB), DeviceSpec(memory=80 * GIB)),
        latency=LINK[0],
        bandwidth=LINK[1],
    )
    print("SIMULATED latencies (roofline op times, paper 003's simulator), milliseconds")
    print(f"{'model':13} {'seed':>4} {'CPU':>8} {'GPU':>8} {'random':>8} {'BRKGA':>8} "
          f"{'HSDAG':>8} {'HSDAG s':>8} {'groups':>6}")  # fmt: skip
    for name in args.models:
        graph = model_graph(name)
        runtimes = np.stack(
            [estimate_runtimes(graph, peak_flops=f, bandwidth=b, launch=s)
             for f, b, s in DEVICES.values()], axis=1,
        )  # fmt: skip
        problem = PlacementProblem(graph, devices, runtimes=runtimes)
        order = graph.topological_order[None, :]
        n = graph.num_nodes
        single = [problem.evaluate(np.full((1, n), d), order)[1][0] for d in (0, 1)]
        for seed in args.seeds:
            rng = np.random.default_rng(seed)
            random = problem.evaluate(rng.integers(0, 2, (200, n)), np.repeat(order, 200, 0))[1]
            began = time.perf_counter()
            hsdag = place(graph, "hsdag", devices=devices, runtimes=runtimes, seed=seed)
            seconds = time.perf_counter() - began
            brkga = place(graph, "brkga", devices=devices, runtimes=runtimes, seed=seed,
                          evaluations=hsdag.evaluations)  # fmt: skip
            row = [*single, statistics.median(random), brkga.makespan, hsdag.makespan]
            cells = " ".join(f"{1e3 * v:8.3f}" for v in row)
            print(f"{name:13} {seed:4} {cells} {seconds:8.1f} {hsdag.info['groups']:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
