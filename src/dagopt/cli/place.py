"""``dagopt place`` and ``dagopt evaluate-placement``: ops on devices, and an order (paper 003)."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from dagopt.bench.latency_envs import is_zoo_model
from dagopt.cli.batch import JobsOpt, OutDirOpt, RayOpt, check_batch, run_graphs
from dagopt.cli.output import (
    check_output,
    console,
    fmt_mem,
    fmt_proved,
    fmt_seconds,
    progress_on_terminal,
)
from dagopt.cli.settings import SolverSeedOpt, merge_option, parse_settings
from dagopt.errors import InputError
from dagopt.executor import Executor
from dagopt.graph import Graph
from dagopt.io import load_operators, read_placement, write_placement
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.objectives.runtime import DEFAULT_BANDWIDTH, DEFAULT_PEAK_FLOPS

GraphArg = Annotated[
    Path,
    typer.Argument(
        metavar="GRAPH", help="Graph file (.json, .onnx, .npz, OpenVINO .xml or PyTorch .pt2)."
    ),
]
GraphsArg = Annotated[
    list[Path],
    typer.Argument(
        metavar="GRAPH...",
        help="Graph file(s) (.json, .onnx, .npz, OpenVINO .xml or PyTorch .pt2); several, "
        "or folders, with --out-dir; with --env one MODEL: also a zoo name.",
    ),
]
#: The most devices ``--devices`` takes (a guard against a mistyped count: every device
#: adds a gene per op to the searches and a column to the cost model's arrays).
MAX_DEVICES = 1024
DevicesOpt = Annotated[
    int,
    typer.Option(
        "--devices", "-d", min=1, max=MAX_DEVICES, help=f"Number of devices (1..{MAX_DEVICES})."
    ),
]


def _positive(value: float) -> float:
    """A device quantity's check (memory, bandwidth): it must be > 0 (a ``min`` would
    allow 0)."""
    if not value > 0:
        raise typer.BadParameter(f"{value:g} is not in the range x>0.")
    return value


MemoryOpt = Annotated[
    float,
    typer.Option("--memory-gib", callback=_positive, help="Memory of each device, GiB (> 0)."),
]
SpeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--speeds",
        help="Speed factor per device, comma-separated (default all 1).",
        show_default=False,
    ),
]
LatencyOpt = Annotated[float, typer.Option(min=0, help="Transfer latency, seconds.")]
BandwidthOpt = Annotated[
    float,
    typer.Option(
        callback=_positive, help="Transfer bandwidth, bytes/s, > 0 (inf: free transfers)."
    ),
]
ObjectiveOpt = Annotated[
    str, typer.Option("--objective", help="runtime or peak-memory (003 section 2.1).")
]
EstimateOpt = Annotated[
    bool,
    typer.Option(
        "--estimate-runtime",
        help="Estimate op runtimes from FLOPs and bytes (roofline) instead of the graph's "
        "'runtime' node attribute.",
    ),
]
PeakFlopsOpt = Annotated[float, typer.Option(help="Device FLOP/s (> 0) for --estimate-runtime.")]
MemBandwidthOpt = Annotated[
    float, typer.Option(help="Device memory bytes/s (> 0) for --estimate-runtime.")
]


def _devices(count: int, memory_gib: float, speeds: str | None, latency: float, bandwidth: float):
    if speeds is None:
        factors = [1.0] * count
    else:
        try:
            factors = [float(part) for part in speeds.split(",")]
        except ValueError:
            raise InputError(f"--speeds must be comma-separated numbers, got {speeds!r}") from None
        if len(factors) != count:
            raise InputError(f"--speeds gives {len(factors)} factors for {count} devices")
    specs = tuple(DeviceSpec(speed=s, memory=memory_gib * GIB) for s in factors)
    return Devices(specs, latency=latency, bandwidth=bandwidth)


def _runtimes(graph: Graph, estimate: bool, peak_flops: float, mem_bandwidth: float):
    if estimate:
        from dagopt.objectives.runtime import estimate_runtimes

        return estimate_runtimes(graph, peak_flops=peak_flops, bandwidth=mem_bandwidth)
    if "runtime" not in graph.node_data and graph.num_nodes:
        raise InputError(
            f"graph {graph.name!r} has no 'runtime' node attribute; add one (seconds per op) "
            "or pass --estimate-runtime"
        )
    return None


def _summary(result, seconds: float | None, setup: float = 0.0) -> str:
    """Makespan, peaks per device and feasibility of a simulated placement, in one line."""
    peaks = ", ".join(fmt_mem(p / GIB) for p in np.asarray(result.peak_memory))
    line = (
        f"makespan {result.makespan:.6g} s, peak memory per device [{peaks}] GiB, "
        f"feasible: {'yes' if result.feasible else 'no'}"
    )
    if seconds is not None:
        line += f", {fmt_seconds(seconds, setup)}"
    return line


@dataclass(frozen=True)
class PlaceJob:
    """One graph's ``place`` with a command's method and options (a picklable batch job)."""

    method: str
    devices: Devices
    objective: str
    estimate_runtime: bool
    peak_flops: float
    mem_bandwidth: float
    seed: int | None
    time_limit: float | None
    options: dict[str, Any]

    def __call__(self, graph: Graph):
        from dagopt.place import place

        runtimes = _runtimes(graph, self.estimate_runtime, self.peak_flops, self.mem_bandwidth)
        return place(
            graph,
            self.method,
            devices=self.devices,
            objective=self.objective,
            runtimes=runtimes,
            seed=self.seed,
            time_limit=self.time_limit,
            **self.options,
        )


def _stopped(result) -> str:
    """``"; the time limit stopped it after N episodes"`` (a learned placer) or ``"...
    after N evaluations"`` (a search) when it did, else ``""``."""
    if not result.info.get("stopped_by_time_limit"):
        return ""
    if "episodes" in result.info:
        return f"; the time limit stopped it after {result.info['episodes']} episodes"
    return f"; the time limit stopped it after {result.evaluations} evaluations"


def _result_line(graph: Graph, result) -> str:
    return (
        f"{result.method} ({result.objective}): "
        f"{_summary(result, result.seconds, result.setup_seconds)}, "
        f"{result.evaluations} evaluations, proved optimal: {fmt_proved(result.proved_optimal)}"
        f"{_stopped(result)}"
    )


def _device_list(devices: str) -> int | list[str]:
    """``--devices`` of ``place``: a count (the simulator on a graph file) or device
    names for ``--env`` (``cpu,cuda:0``, no empty entry)."""
    text = devices.strip()
    if not text.lstrip("+-").isdigit():
        names = [part.strip() for part in text.split(",")]
        if not all(names):
            raise InputError(
                f"--devices has an empty entry in {devices!r} (give names like cpu,cuda:0)"
            )
        return names
    count = int(text)
    if not 1 <= count <= MAX_DEVICES:
        raise InputError(
            f"invalid value for '--devices': {text} (a count must be at least 1 and less "
            f"than or equal to {MAX_DEVICES}; device names need --env)"
        )
    return count


#: ``place``'s options of the simulator's cost model (parameter name: flag): ``--env``
#: brings its own latency model, so none of them may be given with it.
SIMULATOR_OPTIONS = {
    "objective": "--objective",
    "memory_gib": "--memory-gib",
    "speeds": "--speeds",
    "latency": "--latency",
    "bandwidth": "--bandwidth",
    "estimate_runtime": "--estimate-runtime",
    "peak_flops": "--peak-flops",
    "mem_bandwidth": "--mem-bandwidth",
}
#: The environments whose latency model adds ``--noise`` (the others measure).
NOISY_ENVS = ("simulated", "profiled")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option of parameter ``name`` was given (not left at its default)."""
    source = ctx.get_parameter_source(name)  # an enum of the click that typer runs on
    return source is not None and source.name != "DEFAULT"


def _check_env_options(ctx: typer.Context, env: str | None, names: int | list[str]) -> None:
    """``InputError`` for an option that the setup does not use: the simulator's cost
    model options with ``--env``, ``--noise`` with a measuring ``--env``, and device
    names, ``--profile`` or ``--noise`` without ``--env``."""
    if env is not None:
        for name, flag in SIMULATOR_OPTIONS.items():
            if _given(ctx, name):
                raise InputError(
                    f"{flag} is for the simulator on a graph file; --env {env} has its own "
                    "latency model"
                )
        if _given(ctx, "noise") and env not in NOISY_ENVS:
            raise InputError(f"--noise is for --env {' or '.join(NOISY_ENVS)}, not {env}")
        return
    if isinstance(names, list):
        raise InputError(f"device names ({','.join(names)}) need --env; without it give a count")
    for name in ("profile", "noise"):
        if _given(ctx, name):
            raise InputError(f"--{name} needs --env")


def _place_in_env(
    model: str, method: str, env: str, names, profile, noise, seed, time_limit, options
):
    """``dagopt place MODEL --env ENV --devices NAMES`` (paper 004's environments)."""
    from dagopt.bench.latency_envs import latency_env
    from dagopt.place import place

    if isinstance(names, int):
        raise InputError("--env needs device names, e.g. --devices cpu,cuda:0")
    target = latency_env(model, env, names, profile=profile, noise=noise,
                         seed=0 if seed is None else seed)  # fmt: skip
    with progress_on_terminal():
        result = place(target.graph, method, cost_model=target.env, seed=seed,
                       time_limit=time_limit, **options)  # fmt: skip
    return result, target


def place_command(
    ctx: typer.Context,
    graph_paths: GraphsArg,
    method: Annotated[str, typer.Option("--method", "-m", help="Placer (see `dagopt methods`).")],
    devices: Annotated[
        str,
        typer.Option(
            "--devices",
            "-d",
            help=f"Number of devices (1..{MAX_DEVICES}), or with --env their names (cpu,cuda:0).",
        ),
    ] = "2",
    env: Annotated[
        str | None,
        typer.Option(
            help="Latency environment (paper 004): simulated, profiled, torch or openvino.",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        Path | None,
        typer.Option(help="Latency profile JSON for --env profiled.", show_default=False),
    ] = None,
    noise: Annotated[
        float, typer.Option(min=0, help="Log-normal measurement noise (simulated, profiled).")
    ] = 0.0,
    objective: ObjectiveOpt = "runtime",
    memory_gib: MemoryOpt = 16.0,
    speeds: SpeedsOpt = None,
    latency: LatencyOpt = 0.0,
    bandwidth: BandwidthOpt = math.inf,
    estimate_runtime: EstimateOpt = False,
    peak_flops: PeakFlopsOpt = DEFAULT_PEAK_FLOPS,
    mem_bandwidth: MemBandwidthOpt = DEFAULT_BANDWIDTH,
    evaluations: Annotated[
        int | None,
        typer.Option(min=1, help="Cost-model evaluations (search methods).", show_default=False),
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="Model file (regal, idrs).", show_default=False)
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Other method option (repeatable)."),
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option(min=0, help="Time limit in seconds.", show_default=False)
    ] = None,
    seed: SolverSeedOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="PLACEMENT.json", help="Write the placement here."),
    ] = None,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = 1,
    ray: RayOpt = None,
) -> None:
    """Place the ops of GRAPH on devices and order them with METHOD (paper 003).

    With --out-dir, every GRAPH (files or folders) gets DIR/<name>.placement.json, run
    on --jobs local processes or a --ray cluster (docs/scaling.md). A PyTorch graph's
    share nodes (split outputs) are joined to their operators: a placement places
    operators."""
    from dagopt.place import get_placer  # the simulator's numba kernels load here
    from dagopt.place.base import check_placer_options

    check_batch(graph_paths, out_dir, out, jobs, ray)
    missing = [p for p in graph_paths if not p.exists()]
    if env is None and missing and is_zoo_model(str(missing[0])):
        raise InputError(
            f"{missing[0]} is a zoo model, not a graph file: place it on real devices with "
            f"--env, or export its graph first (dagopt zoo export {missing[0]} --mode inference)"
        )
    spec = get_placer(method)
    names = _device_list(devices)
    _check_env_options(ctx, env, names)
    options = parse_settings(settings or [])
    merge_option(options, "evaluations", "--evaluations", evaluations)
    merge_option(options, "checkpoint", "--checkpoint", checkpoint)
    check_placer_options(spec, options)
    if env is not None:
        if len(graph_paths) > 1 or out_dir is not None:
            raise InputError("--env places one model at a time (no --out-dir batch)")
        check_output(out, graph_paths[0])
        result, target = _place_in_env(
            str(graph_paths[0]), method, env, names, profile, noise, seed, time_limit, options
        )
        line = (
            f"{method} ({target.kind}, {env} on {','.join(names)}): latency "
            f"{result.makespan:.6g} s, {fmt_seconds(result.seconds, result.setup_seconds)}, "
            f"{result.evaluations} evaluations, {target.env.failures} failed{_stopped(result)}"
        )
        if out is not None:
            environment = {"env": env, "devices": list(names), "latency": target.kind}
            line += f"; wrote {write_placement(out, target.graph, result, environment)}"
        console.print(line, markup=False)
        return
    device_set = _devices(names, memory_gib, speeds, latency, bandwidth)
    job = PlaceJob(
        method,
        device_set,
        objective,
        estimate_runtime,
        peak_flops,
        mem_bandwidth,
        seed,
        time_limit,
        options,
    )
    inputs = (checkpoint,) if checkpoint is not None else ()
    run_graphs(graph_paths, out_dir, out, ".placement.json", job, write_placement, _result_line,
               Executor(jobs, ray), inputs, load_operators)  # fmt: skip


def evaluate_placement(
    graph_path: GraphArg,
    placement_path: Annotated[
        Path, typer.Argument(metavar="PLACEMENT", help="Placement file (see `place --out`).")
    ],
    devices: DevicesOpt = 2,
    memory_gib: MemoryOpt = 16.0,
    speeds: SpeedsOpt = None,
    latency: LatencyOpt = 0.0,
    bandwidth: BandwidthOpt = math.inf,
    estimate_runtime: EstimateOpt = False,
    peak_flops: PeakFlopsOpt = DEFAULT_PEAK_FLOPS,
    mem_bandwidth: MemBandwidthOpt = DEFAULT_BANDWIDTH,
) -> None:
    """Simulate the placement in PLACEMENT on GRAPH with the cost model (003 A.1); a
    PyTorch graph's share nodes are joined to their operators, as ``place`` does."""
    from dagopt.objectives.placement import simulate

    graph = load_operators(graph_path)
    device_set = _devices(devices, memory_gib, speeds, latency, bandwidth)
    runtimes = _runtimes(graph, estimate_runtime, peak_flops, mem_bandwidth)
    placement = read_placement(placement_path, graph, device_set.count)
    result = simulate(graph, device_set, placement.device_of, placement.order, runtimes=runtimes)
    line = f"{_summary(result, None)}, {result.num_transfers} transfers"
    console.print(line, markup=False)
