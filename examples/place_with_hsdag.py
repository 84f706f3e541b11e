"""Place a real PyTorch model with HSDAG (paper 004), rewarded by latency MEASURED by
running each placement in PyTorch, then check that the placed model computes what the
model does.

    python examples/place_with_hsdag.py --devices cpu,cpu --episodes 3
    python examples/place_with_hsdag.py --devices cpu,cuda:0 --episodes 20  # a GPU machine

The model is a two-branch CNN with random weights, exported with torch.export
(inference). ``TorchLatency`` turns a placement into an fx module in which every op runs
on its device, with a copy per tensor that crosses devices, and times it (10 runs, the
mean of the last 5: the paper's protocol). On ``cpu,cpu`` the two "devices" are one CPU:
that checks the machinery, not a speed-up; paper 004's CPU + GPU numbers need a GPU.
"""

import argparse

import numpy as np
import torch
from torch import nn

from dagopt.integrations.torch_latency import TorchLatency
from dagopt.io.torch import graph_from_module
from dagopt.place import place

parser = argparse.ArgumentParser()
parser.add_argument("--devices", default="cpu,cpu", help="two PyTorch devices")
parser.add_argument("--episodes", type=int, default=3, help="HSDAG episodes of 10 placements")
args = parser.parse_args()


class TwoBranchNet(nn.Module):
    """A 3x3 and a 5x5 convolution branch over one stem, joined and classified."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.narrow = nn.Sequential(nn.Conv2d(32, 64, 3, padding=1), nn.ReLU())
        self.wide = nn.Sequential(nn.Conv2d(32, 64, 5, padding=2), nn.ReLU())
        self.head = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        joined = torch.cat([self.narrow(x), self.wide(x)], dim=1)
        return self.head(joined.mean(dim=(2, 3)))


torch.manual_seed(0)
model = TwoBranchNet().eval()
inputs = (torch.randn(2, 3, 32, 32),)
torch_graph = graph_from_module(model, *inputs, mode="inference")
env = TorchLatency(torch_graph, args.devices.split(","), inputs)
n = torch_graph.graph.num_nodes
print(f"{n} ops on {args.devices}")
for device in range(2):
    alone = env.evaluate(np.full(n, device, dtype=np.int64), None, "runtime").makespan
    print(f"  everything on device {device}: {alone * 1e3:.3f} ms (measured)")

result = place(torch_graph.graph, "hsdag", cost_model=env, seed=0, episodes=args.episodes, steps=10)
split = np.bincount(result.device_of, minlength=2)
print(
    f"  hsdag: {result.makespan * 1e3:.3f} ms (measured), ops per device {split.tolist()}, "
    f"{result.info['placements']} placements measured in {result.seconds:.1f} s, "
    f"{env.failures} failed"
)
with torch.no_grad():
    expected = model(*inputs)
placed = env.outputs(result.device_of)[0].cpu()
same = torch.allclose(placed, expected, atol=1e-4)
print(f"  the placed model's output matches the model's: {same}")
