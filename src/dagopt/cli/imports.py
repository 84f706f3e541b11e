"""``dagopt import``, ``dagopt export-onnx`` and ``dagopt export-pt2``: ONNX models,
OpenVINO IRs and saved PyTorch programs in, reordered ONNX models and programs out."""

from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from dagopt.cli.output import check_output, console, fmt_mem
from dagopt.cli.torch_options import CoreAtenOption, Mode, SplitOutputsOption
from dagopt.errors import InputError
from dagopt.io import read_order, write_graph_json
from dagopt.objectives import peak_memory

ModelArg = Annotated[
    Path,
    typer.Argument(
        metavar="MODEL",
        help="ONNX model (.onnx), OpenVINO IR (.xml) or saved PyTorch program (.pt2).",
    ),
]
ProgramArg = Annotated[
    Path,
    typer.Argument(metavar="MODEL", help="Saved PyTorch program (.pt2, torch.export.save)."),
]
OrderArg = Annotated[
    Path,
    typer.Argument(metavar="ORDER", help="Order file for the graph `dagopt import MODEL` writes."),
]
ProgramModeOption = Annotated[
    Mode,
    typer.Option(
        help="The program as saved, or the joint forward + backward graph of its forward "
        "(traced on its saved example inputs); .pt2 only."
    ),
]

DimsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dim",
        metavar="NAME=SIZE",
        help="Size of a symbolic dimension of the ONNX model's inputs (batch=1); repeat for each.",
        show_default=False,
    ),
]
RunShapesOption = Annotated[
    bool,
    typer.Option(
        "--run-shapes",
        help="Size the ONNX model's tensors that shape inference leaves unknown from "
        "one onnxruntime run on inputs of its static shapes.",
    ),
]


def import_model(
    model: ModelArg,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="G.json", help="Write the node-link graph file here."),
    ],
    assume_size: Annotated[
        float | None,
        typer.Option(
            "--assume-size",
            min=0,
            metavar="BYTES",
            help="Bytes to assume for each tensor whose shape is not static.",
            show_default=False,
        ),
    ] = None,
    dims: DimsOption = None,
    run_shapes: RunShapesOption = False,
    onnxruntime: Annotated[
        bool,
        typer.Option(
            "--onnxruntime",
            help="Write the graph of what onnxruntime's allocator holds (weights and "
            "inputs weigh nothing, aliases and in-place ops share buffers): the one to "
            "order for onnxruntime; its orders are orders of the model's graph too.",
        ),
    ] = False,
    mode: ProgramModeOption = Mode.inference,
    split_outputs: SplitOutputsOption = True,
    core_aten: CoreAtenOption = True,
) -> None:
    """Import an ONNX model, an OpenVINO IR (.xml) or a saved PyTorch program (.pt2) as
    a graph file.

    The graph's node list keeps the model's node order (a .pt2 training graph: the
    traced order of its forward and backward)."""
    check_output(out, model)
    program_options = mode != Mode.inference or not split_outputs or not core_aten
    onnx_options = [
        flag
        for flag, given in (
            ("--assume-size", assume_size),
            ("--dim", dims),
            ("--run-shapes", run_shapes or None),
            ("--onnxruntime", onnxruntime or None),
        )
        if given is not None
    ]
    if model.suffix.lower() == ".pt2":
        if onnx_options:
            raise InputError(f"{onnx_options[0]} applies to ONNX models, not saved programs")
        from dagopt.io.torch import state_bytes
        from dagopt.io.torch_program import read_exported_program

        torch_graph = read_exported_program(
            model, mode=mode.value, split_outputs=split_outputs, core_aten=core_aten
        ).torch_graph
        graph, param_bytes = torch_graph.graph, float(state_bytes(torch_graph.graph_module))
    elif program_options:
        raise InputError("--mode, --joint-outputs and --no-core-aten apply to .pt2 programs")
    elif model.suffix.lower() == ".xml":
        if onnx_options:
            raise InputError(f"{onnx_options[0]} applies to ONNX models, not OpenVINO IRs")
        from dagopt.io.openvino import read_openvino

        graph = read_openvino(model)
        param_bytes = float(graph.param_mem.sum())
    else:
        from dagopt.io.onnx import read_onnx

        onnx_graph = read_onnx(
            model, assume_size=assume_size, dims=parse_dims(dims or []), run_shapes=run_shapes
        )
        graph, param_bytes = onnx_graph.graph, onnx_graph.param_bytes
        if onnxruntime:
            from dagopt.integrations.onnx_runtime import activations

            graph = activations(onnx_graph)
    path = write_graph_json(graph, out)
    peak = peak_memory(graph, np.arange(graph.num_nodes), keep_outputs=True)
    console.print(
        f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges, "
        f"parameters {fmt_mem(param_bytes)} bytes, "
        f"file-order peak {fmt_mem(peak)} (outputs kept); wrote {path}",
        markup=False,
    )


def parse_dims(pairs: list[str]) -> dict[str, int]:
    """``--dim NAME=SIZE`` options as a mapping; a malformed or repeated one is an
    ``InputError``."""
    dims: dict[str, int] = {}
    for pair in pairs:
        name, sep, size = pair.partition("=")
        if not sep or not name or not size.strip().isdigit():
            raise InputError(f"--dim {pair!r}: give NAME=SIZE, a whole number of elements")
        if name in dims:
            raise InputError(f"--dim {name!r} given twice")
        dims[name] = int(size)
    return dims


def export_onnx(
    model: Annotated[Path, typer.Argument(metavar="MODEL", help="ONNX model (.onnx).")],
    order_path: OrderArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="REORDERED.onnx", help="Write the reordered model here."
        ),
    ],
) -> None:
    """Write MODEL with its nodes in the order of ORDER, checked by the ONNX checker.

    onnxruntime runs the written order with its execution order PRIORITY_BASED and graph
    optimizations off (`dagopt.integrations.onnx_runtime.file_order_options()`)."""
    check_output(out, model, order_path)
    if model.suffix.lower() != ".onnx":
        raise InputError(f"{model}: export-onnx writes ONNX models only; give the .onnx model")
    from dagopt.io.onnx import read_onnx, write_onnx

    # Writing needs the node names and edges only: sizes (and --assume-size) play no part.
    onnx_graph = read_onnx(model, assume_size=0.0)
    order = read_order(order_path, onnx_graph.graph).order
    path = write_onnx(onnx_graph, order, out)
    count = len(onnx_graph.model.graph.node)
    console.print(f"wrote {path}: {count} ONNX nodes in the order of {order_path}", markup=False)
    console.print(
        "onnxruntime runs them in this order under "
        "dagopt.integrations.onnx_runtime.file_order_options() (execution order "
        "PRIORITY_BASED, graph optimizations off); its default session does not",
        markup=False,
    )


def export_pt2(
    model: ProgramArg,
    order_path: OrderArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="REORDERED.pt2", help="Write the reordered program here."
        ),
    ],
    split_outputs: SplitOutputsOption = True,
) -> None:
    """Write the program saved in MODEL with its operators in the order of ORDER (an
    order of its graph as `dagopt import` reads it, with the same --joint-outputs);
    `torch.export.load(REORDERED).module()` runs them in that order."""
    check_output(out, model, order_path)
    if model.suffix.lower() != ".pt2":
        raise InputError(f"{model}: export-pt2 writes saved PyTorch programs only; give the .pt2")
    from dagopt.io.torch_program import read_exported_program, write_exported_program

    saved = read_exported_program(model, split_outputs=split_outputs)
    graph = saved.torch_graph.graph
    order = read_order(order_path, graph).order
    path = write_exported_program(saved, order, out)
    peak = peak_memory(graph, order, keep_outputs=True)
    console.print(
        f"wrote {path}: {graph.num_nodes} nodes in the order of {order_path}, "
        f"peak {fmt_mem(peak)} (outputs kept)",
        markup=False,
    )
