"""Place a real PyTorch model on two devices: op runtimes from FLOPs and bytes (roofline),
then BRKGA, REGAL and the partitioning baseline side by side, and the best placement saved.

python examples/place_model.py --memory-gib 0.05 --out placement.json

The model is a small transformer encoder with random weights, exported with
torch.export as a training graph (forward and backward); --memory-gib makes the devices
small enough that the placement has to split the work.
"""

import argparse

import numpy as np
import torch

from dagopt.io import write_placement
from dagopt.io.torch import graph_from_module
from dagopt.objectives.devices import GIB, Devices
from dagopt.objectives.runtime import estimate_runtimes
from dagopt.place import place

parser = argparse.ArgumentParser()
parser.add_argument("--memory-gib", type=float, default=0.05, help="memory of each device")
parser.add_argument("--out", default="placement.json")
args = parser.parse_args()

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024)
model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
# one node per operator: placement runs operators, not their separate output storages
batch = torch.randn(128, 8, 256)
graph = graph_from_module(model, batch, mode="training", split_outputs=False).graph
runtimes = estimate_runtimes(graph, peak_flops=100e12, bandwidth=1e12)
devices = Devices.homogeneous(2, memory=args.memory_gib * GIB)
print(f"{graph.num_nodes} ops, {graph.num_edges} tensors, {runtimes.sum() * 1e6:.1f} us of work")

results = []
for method in ("single-device", "gp-dfs", "brkga", "regal"):
    for objective in ("runtime", "peak-memory"):
        r = place(graph, method, devices=devices, objective=objective, runtimes=runtimes, seed=0)
        results.append(r)
        peaks = ", ".join(f"{p / 2**20:.1f}" for p in r.peak_memory)
        print(
            f"{method:>13} {objective:>11}: makespan {r.makespan * 1e6:7.1f} us, "
            f"peaks [{peaks}] MiB, feasible {r.feasible}, {r.seconds:.2f} s"
        )

best = min((r for r in results if r.objective == "runtime"), key=lambda r: r.cost)
path = write_placement(args.out, graph, best)
print(
    f"best runtime placement: {best.method}, {np.bincount(best.device_of)} ops per device; "
    f"wrote {path}"
)
