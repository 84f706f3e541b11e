"""``dagopt zoo``: list the model zoo and export its models as node-link JSON graphs."""

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from dagopt.bench.timing import format_seconds
from dagopt.cli.output import console, err_console
from dagopt.cli.torch_options import CoreAtenOption, Mode, ModeOption, SplitOutputsOption
from dagopt.errors import InputError
from dagopt.io import write_graph_json
from dagopt.registry import MAX_SEED

if TYPE_CHECKING:
    from dagopt.integrations.torch_compile import PeakSite

zoo_app = typer.Typer(
    help="Real model graphs (transformers architectures, random weights), cached.",
    no_args_is_help=True,
)

CacheOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Cache directory (default: $DAGOPT_ZOO_CACHE, else ~/.cache/dagopt/zoo).",
        show_default=False,
    ),
]


class Size(StrEnum):
    """Input size variants of every zoo model."""

    small = "small"
    large = "large"


SizeOption = Annotated[Size, typer.Option(help="Input size variant.")]


@zoo_app.command("list")
def list_models(cache_dir: CacheOption = None) -> None:
    """The catalogue: each model's family, inputs, and node counts of cached graphs.

    Then the held-out multi-branch CNNs (family "cnn, held out")."""
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise InputError(f"{cache_dir}: is a file, not a directory")
    from dagopt.zoo import HELD_OUT_MODELS, MODELS, SIZES, read_cached

    table = Table(title="model zoo (nodes: small / large, - when not cached)")
    table.add_column("name", no_wrap=True)
    table.add_column("family")
    table.add_column("inputs (small / large)")
    table.add_column("inference", justify="right", no_wrap=True)
    table.add_column("training", justify="right", no_wrap=True)
    for model in MODELS + HELD_OUT_MODELS:
        nodes = {}
        for mode in Mode:
            counts = []
            for size in SIZES:
                hit = read_cached(model.name, size, mode.value, cache_dir)
                counts.append("-" if hit is None else str(hit.graph.num_nodes))
            nodes[mode] = " / ".join(counts)
        inputs = " / ".join(model.inputs[size] for size in SIZES)
        table.add_row(
            Text(model.name),
            Text(f"{model.family}, held out" if model.held_out else model.family),
            Text(inputs),
            nodes[Mode.inference],
            nodes[Mode.training],
        )
    console.print(table)


@zoo_app.command("export")
def export(
    name: Annotated[str, typer.Argument(help="Model name (see `dagopt zoo list`).")],
    mode: ModeOption,
    size: SizeOption = Size.small,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write the graph here (node-link JSON).", show_default=False
        ),
    ] = None,
    cache_dir: CacheOption = None,
    refresh: Annotated[bool, typer.Option(help="Export again even if cached.")] = False,
    split_outputs: SplitOutputsOption = True,
    core_aten: CoreAtenOption = True,
) -> None:
    """Export one zoo model as a graph (cached); print nodes, edges, parameter bytes, time."""
    from dagopt.zoo import export_zoo, get_model
    from dagopt.zoo.export import cache_path

    get_model(name)  # an unknown name fails before the spinner starts
    variant = {"split_outputs": split_outputs, "core_aten": core_aten}
    cached = cache_path(name, size.value, mode.value, cache_dir, **variant)
    if out is not None and out.resolve() == cached.resolve():
        raise InputError(f"{out}: is the zoo's cache file of this model; write elsewhere")
    label = _label(name, size, mode, split_outputs, core_aten)
    with err_console.status(f"exporting {label}"):
        result = export_zoo(
            name,
            size=size.value,
            mode=mode.value,
            cache_dir=cache_dir,
            refresh=refresh,
            **variant,
        )
    graph = result.graph
    source = (
        f"cache hit (exported in {format_seconds(result.seconds)} s)"
        if result.cached
        else f"exported in {format_seconds(result.seconds)} s, cache miss"
    )
    where = f" -> {write_graph_json(graph, out)}" if out is not None else ""
    console.print(
        f"{label}: {graph.num_nodes} nodes, {graph.num_edges} edges, "
        f"{result.param_bytes:,} parameter bytes, {source}{where}",
        markup=False,
    )


@zoo_app.command("measure")
def measure(
    name: Annotated[str, typer.Argument(help="Model name (see `dagopt zoo list`).")],
    mode: ModeOption,
    orders: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Order files (`dagopt schedule --out`) of this model's graph, exported with "
            "the same --mode, --size and options.",
            show_default=False,
        ),
    ] = None,
    size: SizeOption = Size.small,
    split_outputs: SplitOutputsOption = True,
    core_aten: CoreAtenOption = True,
) -> None:
    """Run a zoo model's graph for real in its traced order and in each ORDER, then the
    model in eager PyTorch; print each run's predicted and measured peak.

    The model is rebuilt (random weights) and exported afresh, so the graph is runnable;
    an order file of another graph is an error. Measured: live tensor storage of the real
    run (`docs/real_models.md`, "Measure")."""
    from dagopt.bench.realgraphs import measure_runs
    from dagopt.cli.measure import check_order_paths, labelled_orders, print_runs, timed
    from dagopt.zoo import build_zoo_module, get_model

    get_model(name)  # an unknown name or order file fails before the export starts
    paths = check_order_paths(orders)
    label = _label(name, size, mode, split_outputs, core_aten)
    built, export_seconds = timed(
        f"exporting {label}",
        lambda: build_zoo_module(
            name, size.value, mode.value, split_outputs=split_outputs, core_aten=core_aten
        ),
    )
    labelled = labelled_orders(paths, built.torch_graph.graph)
    runs, run_seconds = timed(f"running {label}", lambda: measure_runs(built, labelled))
    print_runs(
        label, built.torch_graph.graph, runs, {"export": export_seconds, "runs": run_seconds}
    )


@zoo_app.command("compile")
def compile_model(
    name: Annotated[str, typer.Argument(help="Model name (see `dagopt zoo list`).")],
    mode: ModeOption,
    size: SizeOption = Size.small,
    method: Annotated[
        str, typer.Option(help="dagopt ordering method of the kernels (`dagopt methods`).")
    ] = "anytime",
    time_limit: Annotated[
        float, typer.Option(min=0, help="Time limit of the method per compiled graph, s.")
    ] = 10.0,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed of the method.")] = 0,
    min_gain: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.99,
            help="Keep dagopt's order only when its estimate is at least this fraction "
            "below that of the best of Inductor's own orders.",
        ),
    ] = 0.0,
    workspaces: Annotated[
        bool,
        typer.Option(
            help="Measure what extern kernels allocate inside themselves while they run "
            "and count it in the estimate.",
        ),
    ] = True,
    refine_limit: Annotated[
        float,
        typer.Option(
            min=0,
            help="Seconds per compiled graph of the local search on the generated code's "
            "memory after the method (0: none).",
        ),
    ] = 5.0,
    channels_last: Annotated[
        bool,
        typer.Option(
            help="Convert the model's 4-d weights to channels-last first, the layout in "
            "which Inductor returns convolution weights' gradients.",
        ),
    ] = False,
    contiguous_depthwise: Annotated[
        bool,
        typer.Option(
            help="With --channels-last, give depthwise convolution weights contiguous "
            "strides, which decide how their CPU backward runs: less memory on some "
            "models (EfficientNet-B0), more on others (MobileViT-small); measure both.",
        ),
    ] = False,
) -> None:
    """Compile a zoo model with torch.compile on the CPU, by Inductor alone and with dagopt
    ordering its kernels, run both; print the estimates and the measured peaks.

    Per compiled graph: the peak estimate (`dagopt.io.inductor_codegen`: the memory the
    generated code holds, the extern kernels' workspaces included) of the best of
    Inductor's own orders and of dagopt's (the method's, refined by a local search on that
    memory for --refine-limit seconds), kept when at least --min-gain below.
    Measured: the CPU allocator's peak over one run and where the run was then, and the
    gradients autograd copied into their parameters' layouts (`docs/real_models.md`,
    "torch.compile"); the results' largest difference is shown beside that of Inductor's
    own rerun."""
    from dagopt.bench.compiled import compiled_run, relative_difference
    from dagopt.cli.measure import timed
    from dagopt.integrations.torch_compile import channels_last_weights
    from dagopt.schedule import get_solver
    from dagopt.zoo import get_model

    model = get_model(name)
    get_solver(method)  # an unknown name fails before the build starts
    if contiguous_depthwise and not channels_last:
        raise InputError("--contiguous-depthwise needs --channels-last")
    label = _label(name, size, mode, True, True) + " channels-last" * channels_last
    label += ", depthwise contiguous" * contiguous_depthwise
    (module, inputs), build_seconds = timed(f"building {label}", lambda: model.build(size.value))
    if channels_last:
        channels_last_weights(module, depthwise=not contiguous_depthwise)
    alone, _ = timed(
        f"compiling {label} with Inductor alone",
        lambda: compiled_run(module, inputs, mode=mode.value),
    )
    ordered, _ = timed(
        f"compiling {label} with dagopt's {method}",
        lambda: compiled_run(
            module,
            inputs,
            mode=mode.value,
            method=method,
            time_limit=time_limit,
            seed=seed,
            min_gain=min_gain,
            workspaces=workspaces,
            refine_limit=refine_limit,
        ),
    )
    lines = [
        f"{label}, torch.compile on the CPU; dagopt: {method}, {time_limit:g} s per graph, "
        f"refined {refine_limit:g} s"
    ]
    for r in ordered.reports:
        kept = "" if r.applied else f"; {r.best_candidate} kept"
        unmeasured = f", {len(r.unmeasured)} not" if r.unmeasured else ""
        measured = (
            f" ({r.measured_kernels} extern workspaces measured{unmeasured})" if workspaces else ""
        )
        lines.append(
            f"{r.graph}: {r.kernels} kernels{measured}, estimate of the order Inductor runs "
            f"({r.inductor_choice}) {r.inductor_peak / 1e6:.3f} MB, of the best of its "
            f"candidates ({r.best_candidate}) {r.best_candidate_peak / 1e6:.3f} MB, "
            f"{method}'s {r.search_peak / 1e6:.3f} MB, "
            f"dagopt's (refined) {r.dagopt_peak / 1e6:.3f} MB "
            f"({r.seconds:.1f} s search{kept})"
        )
    change = 100 * (ordered.peak / alone.peak - 1) if alone.peak else 0.0
    lines += [
        f"measured peak: Inductor alone {alone.peak / 1e6:.3f} MB (in {_site(alone.site)}), "
        f"with dagopt {ordered.peak / 1e6:.3f} MB (in {_site(ordered.site)}; {change:+.2f} %)",
        *_gradient_copies(alone.site.gradient_copies),
        "results: largest difference from Inductor alone "
        f"{relative_difference(ordered.results, alone.results):.1e} (its own rerun: "
        f"{alone.rerun_difference:.1e})",
        f"seconds: build {format_seconds(build_seconds)}, compile and first run "
        f"{alone.compile_seconds:.1f} alone, {ordered.compile_seconds:.1f} with dagopt",
    ]
    for line in lines:
        console.print(line, markup=False, highlight=False)


def _site(site: "PeakSite") -> str:
    """``region`` or ``region, operator``: where a run was at its peak."""
    return f"{site.region}, {site.operator}" if site.operator else site.region


def _gradient_copies(copies: tuple[int, ...]) -> list[str]:
    """The line on the gradients autograd copied into their parameters' layouts, if any."""
    if not copies:
        return []
    return [
        f"gradient accumulation copied {len(copies)} gradients into their parameters' "
        f"layouts: {sum(copies) / 1e6:.3f} MB, the largest {max(copies) / 1e6:.3f} MB, "
        "while every gradient is held (with --channels-last convolution weights need none, "
        "though it changes the compiled code otherwise too: measure both)"
    ]


def _label(name: str, size: Size, mode: Mode, split_outputs: bool, core_aten: bool) -> str:
    """``name (size, mode[, joint outputs][, autograd operators])`` for progress and output."""
    notes = [size.value, mode.value] + ["joint outputs"] * (not split_outputs)
    notes += ["autograd operators"] * (mode.value == "training" and not core_aten)
    return f"{name} ({', '.join(notes)})"
