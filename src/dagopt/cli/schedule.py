"""``dagopt schedule`` and ``dagopt evaluate``: execution orders for peak memory."""

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from dagopt.cli.batch import JobsOpt, OutDirOpt, RayOpt, check_batch, run_graphs
from dagopt.cli.output import (
    console,
    fmt_mem,
    fmt_proved,
    fmt_seconds,
)
from dagopt.cli.settings import SolverSeedOpt
from dagopt.executor import Executor
from dagopt.graph import Graph
from dagopt.io import load, read_order, write_order
from dagopt.objectives import (
    MemoryProfile,
    meets_bound,
    memory_profile,
    must_live_bound,
)
from dagopt.schedule import Schedule, get_solver, solve
from dagopt.schedule.certify import INCUMBENT_METHOD, certify

GraphArg = Annotated[
    Path,
    typer.Argument(
        metavar="GRAPH", help="Graph file (.json, .onnx, .npz, OpenVINO .xml or PyTorch .pt2)."
    ),
]
GraphsArg = Annotated[
    list[Path],
    typer.Argument(
        metavar="GRAPH...", help="Graph file(s); several, or folders of them, with --out-dir."
    ),
]
KeepOutputs = Annotated[
    bool,
    typer.Option("--keep-outputs", help="Keep graph outputs (sinks) alive to the end."),
]


@dataclass(frozen=True)
class SolveJob:
    """One graph's ``solve`` with a command's method and options (a picklable batch job)."""

    method: str
    seed: int | None
    time_limit: float | None
    keep_outputs: bool
    options: dict[str, Any]

    def __call__(self, graph: Graph) -> Schedule:
        return solve(
            graph,
            self.method,
            seed=self.seed,
            time_limit=self.time_limit,
            keep_outputs=self.keep_outputs,
            **self.options,
        )


def bound_and_proof(graph: Graph, result: Schedule, keep_outputs: bool) -> tuple[float, bool]:
    """The lower bound shown beside ``result`` (the must-live bound, or the solver's own
    when stronger: ``anytime``'s cut bound) and whether the order is proved optimal: by
    its method, or by its peak meeting that bound."""
    bound = max(
        must_live_bound(graph, keep_outputs=keep_outputs),
        float(result.info.get("lower bound", 0.0)),
    )
    return bound, bool(result.proved_optimal) or meets_bound(result.peak_memory, bound)


def _result_line(graph: Graph, result: Schedule, keep_outputs: bool) -> str:
    bound, proved = bound_and_proof(graph, result, keep_outputs)
    return (
        f"{result.method}: peak {fmt_mem(result.peak_memory)}, "
        f"lower bound {fmt_mem(bound)}, "
        f"{fmt_seconds(result.seconds, result.setup_seconds)}, "
        f"proved optimal: {fmt_proved(proved)}"
    )


def _write(out: Path, graph: Graph, result: Schedule, keep_outputs: bool) -> Path:
    return write_order(
        out,
        graph,
        result.order,
        method=result.method,
        peak_memory=result.peak_memory,
        keep_outputs=keep_outputs,
        seconds=result.seconds,
        proved_optimal=bound_and_proof(graph, result, keep_outputs)[1] or result.proved_optimal,
    )


def schedule(
    graph_paths: GraphsArg,
    method: Annotated[str, typer.Option("--method", "-m", help="Solver (see `dagopt methods`).")],
    beam_width: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Beam width (approx-dp, anchored-dp, topoformer-beam, topoformer-ar-beam).",
            show_default=False,
        ),
    ] = None,
    max_states: Annotated[
        int | None, typer.Option(min=1, help="State budget (exact-dp).", show_default=False)
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Orders to draw (random, topoformer-sample, topoformer-ar-sample).",
            show_default=False,
        ),
    ] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            help="Model file or shipped model name (topoformer-* methods).", show_default=False
        ),
    ] = None,
    window: Annotated[
        int | None,
        typer.Option(min=1, help="Smallest DP window, steps (anytime).", show_default=False),
    ] = None,
    windows: Annotated[
        int | None,
        typer.Option(min=0, help="Stop after this many window DPs (anytime).", show_default=False),
    ] = None,
    guide: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="Priority model file or shipped name: its greedy order is a second start "
            "(anytime).",
            show_default=False,
        ),
    ] = None,
    largest: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Largest DP window, steps; 0: the whole graph (anytime).",
            show_default=False,
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="Search threads sharing one best order (anytime).", show_default=False
        ),
    ] = None,
    closure_reach: Annotated[
        int | None,
        typer.Option(
            min=0,
            help=(
                "Longest closure move at first, steps, doubled where a sweep finds "
                "nothing; 0: the whole graph (anytime)."
            ),
            show_default=False,
        ),
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option(min=0, help="Time limit in seconds.", show_default=False)
    ] = None,
    seed: SolverSeedOpt = None,
    keep_outputs: KeepOutputs = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="ORDER.json", help="Write the order file here."),
    ] = None,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = 1,
    ray: RayOpt = None,
) -> None:
    """Find an execution order of GRAPH with METHOD and print its peak memory in one line.

    With --out-dir, every GRAPH (files or folders) gets DIR/<name>.order.json, run on
    --jobs local processes or a --ray cluster (docs/scaling.md)."""
    check_batch(graph_paths, out_dir, out, jobs, ray)
    spec = get_solver(method)
    given = {
        "beam_width": beam_width,
        "max_states": max_states,
        "samples": samples,
        "checkpoint": checkpoint,
        "window": window,
        "windows": windows,
        "guide": guide,
        "largest": largest,
        "threads": threads,
        "closure_reach": closure_reach,
    }
    options = {key: value for key, value in given.items() if value is not None}
    spec.check_options(options)  # before any graph is read or any result written
    job = SolveJob(method, seed, time_limit, keep_outputs, options)
    inputs = tuple(Path(p) for p in (checkpoint, guide) if p is not None and Path(p).is_file())
    write = partial(_write, keep_outputs=keep_outputs)
    describe = partial(_result_line, keep_outputs=keep_outputs)
    run_graphs(graph_paths, out_dir, out, ".order.json", job, write, describe,
               Executor(jobs, ray), inputs)  # fmt: skip


def evaluate(
    graph_path: GraphArg,
    order_path: Annotated[
        Path, typer.Argument(metavar="ORDER", help="Order file (.json, see `schedule --out`).")
    ],
    keep_outputs: Annotated[
        bool | None,
        typer.Option(
            "--keep-outputs/--free-outputs",
            help="Keep graph outputs (sinks) alive to the end, or free them after their last "
            "use. Default: what ORDER records (`schedule --out` records it), else free.",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[bool, typer.Option("--profile", help="Print memory at every step.")] = False,
    bound_time: Annotated[
        float,
        typer.Option(
            "--bound-time",
            min=0.0,
            help="Seconds for the lower bound: approx-dp's order first (a quarter of the "
            "time), then the cut bound raised by branch and bound until it meets the least "
            "peak known or the time is up (0: the must-live bound only).",
        ),
    ] = 10.0,
) -> None:
    """Peak memory of the order in ORDER on GRAPH, a lower bound, and the recorded peak.

    The bound is the strongest found in --bound-time seconds (dagopt.schedule.certify:
    approx-dp's order, then the cut bound and branching on precedences); "proved
    optimal" when it meets the peak, "the optimum" when no order can go lower."""
    graph = load(graph_path)
    order_file = read_order(order_path, graph)
    if keep_outputs is None:
        keep_outputs = bool(order_file.keep_outputs)
    steps = memory_profile(graph, order_file.order, keep_outputs=keep_outputs)
    if profile:
        console.print(_profile_table(graph, steps))
    line = f"peak {fmt_mem(steps.peak)}, lower bound "
    if bound_time > 0:
        found = certify(graph, steps.peak, keep_outputs=keep_outputs, time_limit=bound_time)
        line += fmt_mem(found.bound)
        if found.proves(steps.peak):
            line += " (proved optimal)"
        else:
            incumbent = f"{INCUMBENT_METHOD} reaches {fmt_mem(found.incumbent_peak)}"
            if found.closed:
                line += f" (the optimum: {incumbent})"
            else:
                line += f" (stopped at --bound-time {bound_time:g} s"
                line += f"; {incumbent})" if found.incumbent_peak < steps.peak else ")"
    else:
        line += fmt_mem(must_live_bound(graph, keep_outputs=keep_outputs))
    recorded = order_file.peak_memory
    if recorded is not None:
        line += f", recorded peak {fmt_mem(recorded)}"
        if not math.isclose(recorded, steps.peak, rel_tol=1e-9, abs_tol=1e-9):
            if order_file.graph and order_file.graph != graph.name:
                line += f" (differs: the order file was made for graph {order_file.graph!r})"
            elif order_file.keep_outputs not in (None, keep_outputs):
                flag = "--keep-outputs" if order_file.keep_outputs else "--free-outputs"
                line += f" (differs: it was computed with {flag})"
            elif order_file.keep_outputs is None:
                line += " (differs: was it computed with another --keep-outputs?)"
            else:
                line += " (differs: was the graph's memory changed since?)"
    console.print(line, markup=False)


def _profile_table(graph: Graph, steps: MemoryProfile) -> Table:
    """One row per step: the node run, memory while it runs (M_t) and live after it (I_t)."""
    table = Table(title=f"memory profile of {graph.name}")
    for header in ("step", "node", "op", "during", "live after"):
        table.add_column(header, justify="left" if header in ("node", "op") else "right")
    peak_step = steps.peak_step
    for t, v in enumerate(steps.order.tolist()):
        table.add_row(
            str(t),
            Text(str(graph.names[v])),
            Text(graph.op[v] or ""),
            fmt_mem(steps.during[t]),
            fmt_mem(steps.after[t]),
            style="bold red" if t == peak_step else None,
        )
    return table
