"""Order a saved PyTorch program (``torch.export.save``, ``.pt2``) for peak memory, write
it back in that order and run both files for real.

python examples/order_saved_program.py --time-limit 2

The model is a small two-branch CNN (random weights) whose ``forward`` computes both
branches' wide feature maps before reducing either, as code often is written. Its
eval-mode program is saved to ``model.pt2``; dagopt reads it, ``anytime`` orders it,
and ``write_exported_program`` writes ``model.ordered.pt2``, whose
``torch.export.load(...).module()`` runs that order: same outputs, lower measured peak.
The train-mode program is then read as its training graph (forward + backward, each
operator output apart), ordered and run the same way. The command-line equivalent:
``dagopt schedule model.pt2 --method anytime --keep-outputs --out order.json``,
``dagopt export-pt2 model.pt2 order.json --out model.ordered.pt2``,
``dagopt measure model.pt2 order.json``.
"""

import argparse

import numpy as np
import torch

from dagopt.integrations.torch import measure_peak, reorder
from dagopt.io.torch_program import read_exported_program, write_exported_program
from dagopt.schedule import solve

parser = argparse.ArgumentParser()
parser.add_argument("--time-limit", type=float, default=5.0, help="seconds for anytime")
args = parser.parse_args()


class TwoBranchNet(torch.nn.Module):
    """Two 1x1-expand / 3x3-reduce branches over a shared stem, then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.expand = torch.nn.ModuleList(torch.nn.Conv2d(16, 128, 1) for _ in range(2))
        self.reduce = torch.nn.ModuleList(torch.nn.Conv2d(128, 16, 3, padding=1) for _ in range(2))
        self.norm = torch.nn.BatchNorm2d(32)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        wide = [torch.relu(expand(x)) for expand in self.expand]  # both wide maps first
        y = torch.cat([reduce(w) for reduce, w in zip(self.reduce, wide, strict=True)], 1)
        return self.head(torch.relu(self.norm(y)).mean((2, 3)))


torch.manual_seed(0)
model, images = TwoBranchNet(), torch.randn(4, 3, 32, 32)

# Inference: the program as saved, ordered, written back, both files run from disk.
with torch.no_grad():
    torch.export.save(torch.export.export(model.eval(), (images,)), "model.pt2")
saved = read_exported_program("model.pt2")
graph = saved.torch_graph.graph
best = solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=args.time_limit)
write_exported_program(saved, best.order, "model.ordered.pt2")
original = torch.export.load("model.pt2").module()
ordered = torch.export.load("model.ordered.pt2").module()
with torch.no_grad():
    same = torch.equal(original(images), ordered(images))
before = measure_peak(original, (images,)).peak
after = measure_peak(ordered, (images,)).peak
print(f"inference graph: {graph.num_nodes} nodes")
print(f"  model.pt2 run: {before / 1e6:.3f} MB measured")
predicted = best.peak_memory / 1e6
print(f"  model.ordered.pt2 run: {after / 1e6:.3f} MB measured, {predicted:.3f} predicted")
print(f"  change: {100 * (after / before - 1):+.2f} %, same outputs: {same}")

# Training: the train-mode program read as its forward + backward graph.
torch.export.save(torch.export.export(model.train(), (images,)), "model.train.pt2")
saved = read_exported_program("model.train.pt2", mode="training")
graph = saved.torch_graph.graph
best = solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=args.time_limit)
traced = measure_peak(reorder(saved.torch_graph, np.arange(graph.num_nodes)), saved.inputs).peak
searched = measure_peak(reorder(saved.torch_graph, best.order), saved.inputs).peak
print(f"training graph: {graph.num_nodes} nodes")
print(f"  traced order: {traced / 1e6:.3f} MB measured")
print(f"  anytime order: {searched / 1e6:.3f} MB measured, {best.peak_memory / 1e6:.3f} predicted")
print(f"  change: {100 * (searched / traced - 1):+.2f} %")
