"""Zoo models exported to ONNX, read, ordered, written back and run in onnxruntime.

    python benchmarks/onnx_models.py                          # the 11 zoo models, 10 s
    python benchmarks/onnx_models.py --exporter dynamo        # torch.export's exporter
    python benchmarks/onnx_models.py --models bert-base resnet-50 --time-limit 3

Each zoo model (small size, inference, random weights) is exported with one of torch's
ONNX exporters: ``torchscript`` (the default here) with a dynamic batch dimension on
every input, as exported models often are, read back with
``read_onnx(dims={"batch": B}, run_shapes=True)``; or ``dynamo`` (``torch.export``,
``onnxscript``; torch's default exporter), whose graphs have static shapes, read with
``read_onnx(run_shapes=True)``. On each: the nodes, the seconds the read took (ONNX
and, where needed, onnxruntime's symbolic shape inference and a run), how many node
outputs the symbolic inference and the run sized (``symbolic_sized``, ``run_sized``),
and how many of the kernels onnxruntime ran had the output bytes the graph gives their
node (``executed_kernels`` of the exported file). ``anytime`` (``--time-limit``
seconds, seed 0, outputs kept) orders the graph of the values onnxruntime holds
(``activations``) and ``write_onnx`` writes it;
onnxruntime runs the written file under ``file_order_options()``: whether its kernels
ran in ``onnxruntime_order``, whether the outputs equal those of the exported file run
the same way, bit for bit, and the peak of the values onnxruntime holds (graph inputs
and parameters aside), predicted (``activations``, outputs kept, the order onnxruntime
runs) and measured (``measured_peak``), in the exported order and in ``anytime``'s;
last, the exported file measured in onnxruntime's own execution order.
Export and the numba warm-up are not timed; a model the exporter cannot export, or
with a tensor no inference or run sizes, gets a row that says why.
"""

import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import add_zoo_search_options, check_zoo_models, run_script, script_parser

MODELS = (
    "bert-base",
    "gpt2",
    "t5-small",
    "llama-small",
    "vit-base",
    "swin-tiny",
    "resnet-50",
    "inception-v3",
    "convnext-tiny",
    "mobilenet-v2",
    "whisper-tiny-encoder",
)


def _export(name: str, path: Path, exporter: str) -> dict[str, np.ndarray]:
    """Export zoo model ``name`` (small, inference) to ``path``; its inputs by name."""
    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    names = [f"input_{k}" for k in range(len(inputs))]
    # Both exporters are chatty, and the TorchScript one's C++ prints the whole traced
    # graph to stdout when it meets an operator it cannot export: the table keeps
    # stdout, so file descriptor 1 points at stderr meanwhile.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        _export_quietly(module, inputs, names, path, exporter)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return {input_name: x.numpy() for input_name, x in zip(names, inputs, strict=True)}


def _export_quietly(module, inputs, names: list[str], path: Path, exporter: str) -> None:
    """``torch.onnx.export`` by ``exporter``, its warnings silenced; TorchScript with a
    dynamic batch."""
    import torch

    dynamic = exporter == "torchscript"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=names,
            dynamic_axes={input_name: {0: "batch"} for input_name in names} if dynamic else None,
            dynamo=not dynamic,
        )


def _reason(exc: Exception) -> str:
    """The first 200 characters of an exception's message, on one line."""
    return " ".join(str(exc).split())[:200]


def _row(name: str, time_limit: float, exporter: str, folder: Path) -> list[str]:
    import onnxruntime as ort

    from dagopt.bench.realgraphs import onnx_runs
    from dagopt.errors import InputError
    from dagopt.integrations.onnx_runtime import (
        activations,
        executed_kernels,
        file_order_options,
        ran_in_order,
        size_mismatches,
    )
    from dagopt.io.onnx import read_onnx, write_onnx
    from dagopt.schedule import solve

    exported = folder / f"{name}.onnx"
    try:
        feeds = _export(name, exported, exporter)
    except Exception as exc:  # an operator the exporter has no ONNX for: say which
        return [name, "-", "-", "-", "-", "-", "-", "-", "-", "-", f"export failed: {_reason(exc)}"]
    dims = {"batch": next(iter(feeds.values())).shape[0]} if exporter == "torchscript" else {}
    start = time.perf_counter()
    try:
        model = read_onnx(exported, dims=dims, run_shapes=True)
    except InputError as exc:  # a size neither inference gives: say which
        return [name, "-", "-", "-", "-", "-", "-", "-", "-", "-", f"read failed: {_reason(exc)}"]
    read_seconds = time.perf_counter() - start
    graph = model.graph
    kernels = executed_kernels(exported, feeds)
    sized = len(kernels) - len(size_mismatches(model, kernels))

    held = activations(model)
    run = solve(held, "anytime", keep_outputs=True, seed=0, time_limit=time_limit)
    written = write_onnx(model, run.order, folder / f"{name}.ordered.onnx")
    ran = executed_kernels(written, feeds)
    outputs = [
        ort.InferenceSession(str(path), file_order_options()).run(None, feeds)
        for path in (exported, written)
    ]
    identical = all(np.array_equal(a, b) for a, b in zip(*outputs, strict=True))
    file_run, anytime_run, own_run = onnx_runs(
        model, held, exported, feeds, [("anytime", run.order)]
    )
    predicted = [file_run.predicted, anytime_run.predicted]
    measured = [file_run.measured, anytime_run.measured]
    own = own_run.measured
    return [
        name,
        f"{graph.num_nodes:,}",
        f"{read_seconds:.2f}",
        f"{len(model.symbolic_sized):,} / {len(model.run_sized):,}",
        f"{sized} / {len(kernels)}",
        "yes" if ran_in_order(model, run.order, ran) else "no",
        "yes" if identical else "no",
        f"{predicted[0] / 1e6:.3f} / {measured[0] / 1e6:.3f}",
        f"{predicted[1] / 1e6:.3f} / {measured[1] / 1e6:.3f}",
        f"{100 * (measured[1] / measured[0] - 1):+.2f}",
        f"{own / 1e6:.3f} ({100 * (own / measured[0] - 1):+.2f} %)",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_zoo_search_options(parser, MODELS)
    parser.add_argument(
        "--exporter", choices=("torchscript", "dynamo"), default="torchscript", help="torch's"
    )
    args = parser.parse_args(argv)
    check_zoo_models(args.models)
    columns = [
        "model (inference)",
        "nodes",
        "read s",
        "outputs sized by symbolic inference / a run",
        "kernels with the graph's bytes",
        "ran in onnxruntime_order",
        "identical outputs",
        "exported order: predicted / measured MB",
        "anytime: predicted / measured MB",
        "measured change %",
        "onnxruntime's own order: measured MB (vs exported order)",
    ]
    print(markdown_row(columns))
    print(markdown_rule("lrrrrllrrrr"))
    with tempfile.TemporaryDirectory(prefix="dagopt-onnx-models-") as folder:
        for name in args.models:
            row = _row(name, args.time_limit, args.exporter, Path(folder))
            print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
