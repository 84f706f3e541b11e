"""``dagopt measure``: run a saved PyTorch program's graph for real in orders and print
the predicted and measured peaks; the order files and the table it shares with
``dagopt zoo measure``."""

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import numpy as np
import typer
from rich.table import Table
from rich.text import Text

from dagopt.bench.timing import format_seconds
from dagopt.cli.imports import DimsOption, ProgramModeOption, RunShapesOption, parse_dims
from dagopt.cli.output import console, err_console
from dagopt.cli.torch_options import CoreAtenOption, Mode, SplitOutputsOption
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.io import read_order

if TYPE_CHECKING:
    from dagopt.bench.realgraphs import RealRun

T = TypeVar("T")

MeasuredModelArg = Annotated[
    Path,
    typer.Argument(
        metavar="MODEL",
        help="Saved PyTorch program (.pt2, torch.export.save) or ONNX model (.onnx).",
    ),
]
OrdersArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Order files (`dagopt schedule --out`) of this model's graph, read with the "
        "same options.",
        show_default=False,
    ),
]


def check_order_paths(paths: list[Path] | None) -> list[Path]:
    """The order files, each an existing file (checked before any export or run)."""
    for path in paths or []:
        if not path.is_file():
            raise InputError(f"{path}: no such order file")
    return list(paths or [])


def labelled_orders(paths: list[Path], graph: Graph) -> list[tuple[str, np.ndarray]]:
    """``(label, order)`` of each order file, which must be an order of ``graph``."""
    labelled = []
    for path in paths:
        order_file = read_order(path, graph)
        if order_file.graph and order_file.graph != graph.name:
            raise InputError(f"{path}: an order of graph {order_file.graph!r}, not {graph.name!r}")
        labelled.append((f"{path.name} ({order_file.method or '?'})", order_file.order))
    return labelled


def timed(status: str, work: Callable[[], T]) -> tuple[T, float]:
    """``work()`` under a status line on stderr, and the seconds it took."""
    with err_console.status(status):
        start = time.perf_counter()
        result = work()
    return result, time.perf_counter() - start


def print_runs(name: str, graph: Graph, runs: list["RealRun"], seconds: dict[str, float]) -> None:
    """A table of the runs of ``graph``, titled ``name``: each run's predicted and
    measured MB, their difference, and the measured change from the first run (the
    traced order) and, when there is one, from eager PyTorch; then the ``seconds`` of
    each named step."""
    from dagopt.bench.realgraphs import EAGER

    eager = [run.measured for run in runs if run.label == EAGER]
    table = Table(title=f"{name}: {graph.num_nodes} nodes, peaks with graph outputs kept")
    for column in ("run", "predicted MB", "measured MB", "measured - predicted %"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_column("vs traced %", justify="right")
    if eager:
        table.add_column("vs eager %", justify="right")
    base = runs[0].measured
    for run in runs:
        predicted = run.predicted
        cells = [
            Text(run.label if run.label != EAGER else "eager PyTorch"),
            "-" if predicted is None else f"{predicted / 1e6:.3f}",
            f"{run.measured / 1e6:.3f}",
            "-" if predicted is None else f"{100 * (run.measured / predicted - 1):+.2f}",
            f"{100 * (run.measured / base - 1):+.2f}",
        ]
        if eager:
            cells.append(f"{100 * (run.measured / eager[0] - 1):+.2f}")
        table.add_row(*cells)
    console.print(table)
    steps = ", ".join(f"{step} {format_seconds(value)} s" for step, value in seconds.items())
    console.print(steps, markup=False)


def measure(
    model: MeasuredModelArg,
    orders: OrdersArg = None,
    mode: ProgramModeOption = Mode.inference,
    split_outputs: SplitOutputsOption = True,
    core_aten: CoreAtenOption = True,
    dims: DimsOption = None,
    run_shapes: RunShapesOption = False,
) -> None:
    """Run a saved PyTorch program's graph for real on its saved example inputs, in its
    own order and in each ORDER, then (inference) the saved program itself; or run an
    ONNX model in onnxruntime in its file's order and in each ORDER; print each run's
    predicted and measured peak.

    Measured: live tensor storage of the real run (`docs/real_models.md`, "Measure"), or
    the most bytes onnxruntime's allocator holds ("ONNX", `measured_peak`); predicted:
    the graph's peak with its outputs kept (ONNX: of `activations`)."""
    from dagopt.bench.realgraphs import saved_program_runs
    from dagopt.io.torch_program import read_exported_program

    paths = check_order_paths(orders)
    if model.suffix.lower() == ".onnx":
        if mode != Mode.inference or not split_outputs or not core_aten:
            raise InputError("--mode, --joint-outputs and --no-core-aten apply to .pt2 programs")
        measure_onnx(model, paths, parse_dims(dims or []), run_shapes)
        return
    if model.suffix.lower() != ".pt2":
        raise InputError(
            f"{model}: measure runs saved PyTorch programs (.pt2) and ONNX models (.onnx); "
            "a zoo model runs with `dagopt zoo measure`"
        )
    if dims or run_shapes:
        raise InputError("--dim and --run-shapes apply to ONNX models")
    saved, read_seconds = timed(
        f"reading {model}",
        lambda: read_exported_program(
            model, mode=mode.value, split_outputs=split_outputs, core_aten=core_aten
        ),
    )
    if saved.inputs is None:
        raise InputError(f"{model}: the program has no saved example inputs to run it on")
    graph = saved.torch_graph.graph
    labelled = labelled_orders(paths, graph)
    runs, run_seconds = timed(f"running {graph.name}", lambda: saved_program_runs(saved, labelled))
    print_runs(graph.name, graph, runs, {"read": read_seconds, "runs": run_seconds})


def measure_onnx(model: Path, paths: list[Path], dims: dict[str, int], run_shapes: bool) -> None:
    """``dagopt measure`` of an ONNX model: its runs in onnxruntime on example inputs
    (``example_inputs``: normal floats, zero integers)."""
    from dagopt.bench.realgraphs import onnx_runs
    from dagopt.integrations.onnx_runtime import activations
    from dagopt.io.onnx import example_inputs, read_onnx

    onnx_graph, read_seconds = timed(
        f"reading {model}", lambda: read_onnx(model, dims=dims, run_shapes=run_shapes)
    )
    graph = onnx_graph.graph
    labelled = labelled_orders(paths, graph)
    feeds = example_inputs(onnx_graph.model, dims)
    runs, run_seconds = timed(
        f"running {graph.name}",
        lambda: onnx_runs(onnx_graph, activations(onnx_graph), model, feeds, labelled),
    )
    print_runs(graph.name, graph, runs, {"read": read_seconds, "runs": run_seconds})
