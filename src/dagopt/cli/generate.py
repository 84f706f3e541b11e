"""``dagopt generate``: write synthetic graph families as node-link JSON files."""

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import track

from dagopt.cli.output import console, err_console
from dagopt.errors import InputError
from dagopt.io import write_graph_json
from dagopt.registry import MAX_SEED

#: Show a progress bar from this many graphs on; list every file below it.
PROGRESS_FROM = 20

generate_app = typer.Typer(
    help="Write graphs for experiments: synthetic DAGs (node-link JSON) and measured"
    " compiler configurations (TpuGraphs files).",
    no_args_is_help=True,
)


def _write_family(family: str, count: int, seed: int, out: Path, make) -> None:
    """Write graphs ``make(k)`` for seeds ``seed..seed+count-1``; list them or show progress."""
    written = []
    for k in track(
        range(seed, seed + count),
        description=f"generating {count} {family} graphs",
        console=err_console,
        disable=count < PROGRESS_FROM,
    ):
        graph = make(k)
        written.append(write_graph_json(graph, out / f"{graph.name}.json"))
    if count < PROGRESS_FROM:
        for path in written:
            console.print(f"wrote {path}", markup=False)
    else:
        console.print(
            f"wrote {count} graphs to {out}: {written[0].name} .. {written[-1].name}", markup=False
        )


CountOpt = Annotated[int, typer.Option("--count", "-c", min=1, help="Number of graphs.")]
SeedOpt = Annotated[
    int, typer.Option(min=0, max=MAX_SEED, help="Seed of the first graph; graph k uses seed+k.")
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output directory.")]


@generate_app.command()
def layered(
    nodes: Annotated[int, typer.Option("--nodes", "-n", min=1, help="Nodes per graph.")],
    count: CountOpt = 1,
    seed: SeedOpt = 0,
    out: OutOpt = Path("."),
) -> None:
    """Layered, neural-net-like DAGs (paper 000, appendix A): OUT/layered-N-sK.json."""
    from dagopt.generate import generate_layered

    _write_family(
        "layered",
        count,
        seed,
        out,
        lambda k: generate_layered(nodes, seed=k, name=f"layered-{nodes}-s{k}"),
    )


@generate_app.command()
def placement(
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            "-n",
            min=1,
            help="Ops per graph (default: drawn from 30..300).",
            show_default=False,
        ),
    ] = None,
    count: CountOpt = 1,
    seed: SeedOpt = 0,
    out: OutOpt = Path("."),
) -> None:
    """Graphs with op runtimes for device placement (paper 003): OUT/placement-N-sK.json."""
    from dagopt.generate.placement import generate_placement

    _write_family("placement", count, seed, out, lambda k: generate_placement(nodes, seed=k))


@generate_app.command()
def configs(
    collection: Annotated[
        str, typer.Option("--collection", help="tile, layout-xla (zoo CNNs) or layout-nlp.")
    ],
    variant: Annotated[
        str | None,
        typer.Option(
            help="Layout configurations: random (uniform, the default) or default (GA).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset root (gets npz/...).")] = Path(
        "datasets/configs"
    ),
    graphs: Annotated[
        int | None,
        typer.Option(min=1, help="Graphs (default: 55 tile, 40 layout).", show_default=False),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option(
            "--configs",
            min=2,
            help="Configurations per graph (default: 64 tile, 200 layout).",
            show_default=False,
        ),
    ] = None,
    rounds: Annotated[int, typer.Option(min=2, help="Interleaved timing rounds (even).")] = 10,
    max_macs: Annotated[int, typer.Option(min=1, help="Multiply-adds budget of a graph.")] = (
        2_000_000
    ),
    seed: SeedOpt = 0,
    core: Annotated[
        int | None, typer.Option(help="CPU to pin to (default: the last allowed one).")
    ] = None,
    extra: Annotated[
        bool, typer.Option("--extra", help="Measure the extra training architectures.")
    ] = False,
    extra_wave: Annotated[
        int | None,
        typer.Option(
            "--extra-wave",
            min=1,
            help="Measure a later wave of extra training architectures (1 = --extra).",
            show_default=False,
        ),
    ] = None,
    lengths: Annotated[
        bool,
        typer.Option(
            "--lengths",
            help="Programs at drawn sequence lengths (layout-xla: input sides), train and valid.",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Measure the check architectures (no shipped model trains on them) into test.",
        ),
    ] = False,
    drawn_convs: Annotated[
        bool,
        typer.Option(
            "--drawn-convs",
            help="layout-xla: convolutions of drawn windows, strides and channels, train.",
        ),
    ] = False,
) -> None:
    """Measure compiler configurations with Apache TVM; write a TpuGraphs collection.

    Needs the optional extra \\[tvm]. Graphs already written are skipped, so a rerun
    continues (docs/configs_dataset.md)."""
    from dagopt.cli.output import progress_on_terminal
    from dagopt.rank.configs.build import BuildOptions, build_collection, collection_name

    if collection == "tile" and variant is not None:
        raise InputError("--variant applies to the layout collections, not to tile")
    variant = variant or "random"
    if extra and extra_wave not in (None, 1):
        raise InputError(f"--extra is wave 1: it cannot go with --extra-wave {extra_wave}")
    wave = extra_wave or int(extra)
    options = BuildOptions(
        graphs, count, rounds, max_macs, seed, core, wave, lengths, check, drawn_convs
    )
    name = collection_name(collection, variant)
    with progress_on_terminal():
        written = build_collection(out, collection, variant, options)
    console.print(f"{name}: wrote {len(written)} new graphs under {out}", markup=False)
