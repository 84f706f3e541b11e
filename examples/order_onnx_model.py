"""Order an ONNX model exported from PyTorch, write it back and run it in onnxruntime in
that order.

python examples/order_onnx_model.py --time-limit 2

A small BERT encoder (``transformers`` config, random weights) is exported with torch's
ONNX exporter with a dynamic batch and sequence length, as models usually are.
``read_onnx`` sizes its tensors with ``dims`` (``dagopt import --dim batch=2 --dim
sequence=32``): ONNX shape inference with the inputs' symbolic dimensions fixed, then
onnxruntime's symbolic shape inference for the attention-mask arithmetic ONNX's leaves
symbolic. ``anytime`` orders the graph of what onnxruntime's allocator holds
(``activations``), ``write_onnx`` writes the model in that order,
and onnxruntime runs it under ``file_order_options()``: the script checks that the
kernels ran in the written order (``Shape`` nodes moved first, as onnxruntime's
``PRIORITY_BASED`` order runs them: ``onnxruntime_order``), that each node's outputs
had the bytes the graph gives it, and that the outputs are bitwise those of the
original model (the same kernels on the same values); last, the most bytes
onnxruntime's allocator holds in a run of each order (``measured_peak``) beside the
graph's prediction of it (``activations``). The command-line
equivalent: ``dagopt import bert.onnx --dim batch=2 --dim sequence=32 --onnxruntime
--out bert.json``,
``dagopt schedule bert.json --method anytime --keep-outputs --out order.json``,
``dagopt export-onnx bert.onnx order.json --out bert.ordered.onnx``,
``dagopt measure bert.onnx order.json --dim batch=2 --dim sequence=32``.
"""

import argparse
import warnings

import numpy as np
import onnxruntime as ort
import torch
from transformers import BertConfig, BertModel

from dagopt.integrations.onnx_runtime import (
    activations,
    executed_kernels,
    file_order_options,
    measured_peak,
    onnxruntime_order,
    ran_in_order,
    size_mismatches,
)
from dagopt.io.onnx import read_onnx, write_onnx
from dagopt.objectives import peak_memory
from dagopt.schedule import solve
from dagopt.zoo.models import tensor_forward

parser = argparse.ArgumentParser()
parser.add_argument("--time-limit", type=float, default=5.0, help="seconds for anytime")
args = parser.parse_args()

torch.manual_seed(0)
config = BertConfig(
    vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=256,
)  # fmt: skip
module = tensor_forward(BertModel(config), ("input_ids",), "last_hidden_state").eval()
tokens = torch.randint(0, 1000, (2, 32))
with warnings.catch_warnings():  # the TorchScript exporter is deprecated in recent torch
    warnings.simplefilter("ignore")
    torch.onnx.export(
        module,
        (tokens,),
        "bert.onnx",
        input_names=["input_ids"],
        output_names=["hidden"],
        dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}},
        dynamo=False,
    )

model = read_onnx("bert.onnx", dims={"batch": 2, "sequence": 32})
held = activations(model)  # what onnxruntime's allocator holds: the graph to order
run = solve(held, "anytime", keep_outputs=True, time_limit=args.time_limit, seed=0)
exported = peak_memory(held, np.arange(held.num_nodes), keep_outputs=True)
print(
    f"{held.name}: {held.num_nodes} nodes, peak {exported / 1e6:.4f} MB in the exported "
    f"order, {run.peak_memory / 1e6:.4f} MB in anytime's"
)
write_onnx(model, run.order, "bert.ordered.onnx")

feeds = {"input_ids": tokens.numpy()}
kernels = executed_kernels("bert.ordered.onnx", feeds)
runs = onnxruntime_order(model, run.order)  # Shape nodes first, as onnxruntime runs them
same_order = ran_in_order(model, run.order, kernels)
print(f"onnxruntime ran the written order: {same_order} ({len(kernels)} kernels)")
moved = peak_memory(held, runs, keep_outputs=True)
extra = moved - run.peak_memory
print(f"peak of the order it ran: {moved / 1e6:.4f} MB ({extra:+.0f} bytes: Shape nodes first)")
sizes = not size_mismatches(model, kernels)
print(f"every node's outputs had the bytes of the graph: {sizes}")
sessions = [
    ort.InferenceSession(path, file_order_options(), providers=["CPUExecutionProvider"])
    for path in ("bert.onnx", "bert.ordered.onnx")
]
outputs = [session.run(None, feeds)[0] for session in sessions]
print(f"outputs identical to the original model's: {np.array_equal(*outputs)}")
for label, path, order in (
    ("exported", "bert.onnx", np.arange(held.num_nodes)),
    ("anytime's", "bert.ordered.onnx", run.order),
):
    predicted = peak_memory(held, onnxruntime_order(model, order), keep_outputs=True)
    measured = measured_peak(path, feeds)
    print(f"{label} order in onnxruntime: {measured / 1e6:.4f} MB measured", end=", ")
    print(f"{predicted / 1e6:.4f} MB predicted")
