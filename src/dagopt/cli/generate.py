"""``dagopt generate``: write synthetic graph families as node-link JSON files."""

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import track

from dagopt.cli.output import console, err_console
from dagopt.io import write_graph_json

#: Show a progress bar from this many graphs on; list every file below it.
PROGRESS_FROM = 20

generate_app = typer.Typer(
    help="Write synthetic graphs (node-link JSON) for experiments.", no_args_is_help=True
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
SeedOpt = Annotated[int, typer.Option(min=0, help="Seed of the first graph; graph k uses seed+k.")]
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
