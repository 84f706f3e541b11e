"""``dagopt import`` and ``dagopt export-onnx``: ONNX models in, reordered ONNX models out."""

from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from dagopt.cli.output import check_output, console, fmt_mem
from dagopt.errors import InputError
from dagopt.io import read_order, write_graph_json
from dagopt.objectives import peak_memory

ModelArg = Annotated[
    Path, typer.Argument(metavar="MODEL", help="ONNX model (.onnx) or OpenVINO IR (.xml).")
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
) -> None:
    """Import an ONNX model or an OpenVINO IR (.xml) as a graph file.

    The graph's node list keeps the model's node order."""
    check_output(out, model)
    if model.suffix.lower() == ".xml":
        if assume_size is not None:
            raise InputError(
                "--assume-size applies to ONNX models; OpenVINO IRs need static shapes"
            )
        from dagopt.io.openvino import read_openvino

        graph = read_openvino(model)
        param_bytes = float(graph.param_mem.sum())
    else:
        from dagopt.io.onnx import read_onnx

        onnx_graph = read_onnx(model, assume_size=assume_size)
        graph, param_bytes = onnx_graph.graph, onnx_graph.param_bytes
    path = write_graph_json(graph, out)
    peak = peak_memory(graph, np.arange(graph.num_nodes), keep_outputs=True)
    console.print(
        f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges, "
        f"parameters {fmt_mem(param_bytes)} bytes, "
        f"file-order peak {fmt_mem(peak)} (outputs kept); wrote {path}",
        markup=False,
    )


def export_onnx(
    model: Annotated[Path, typer.Argument(metavar="MODEL", help="ONNX model (.onnx).")],
    order_path: Annotated[
        Path,
        typer.Argument(
            metavar="ORDER", help="Order file for the graph `dagopt import MODEL` writes."
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="REORDERED.onnx", help="Write the reordered model here."
        ),
    ],
) -> None:
    """Write MODEL with its nodes in the order of ORDER, checked by the ONNX checker."""
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
