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


@generate_app.command()
def layered(
    nodes: Annotated[int, typer.Option("--nodes", "-n", min=1, help="Nodes per graph.")],
    count: Annotated[int, typer.Option("--count", "-c", min=1, help="Number of graphs.")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the first graph; graph k uses seed+k.")] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path("."),
) -> None:
    """Layered, neural-net-like DAGs (paper 000, appendix A): OUT/layered-N-sK.json."""
    from dagopt.generate import generate_layered

    seeds = range(seed, seed + count)
    written = []
    for k in track(
        seeds,
        description=f"generating {count} layered graphs",
        console=err_console,
        disable=count < PROGRESS_FROM,
    ):
        name = f"layered-{nodes}-s{k}"
        graph = generate_layered(nodes, seed=k, name=name)
        written.append(write_graph_json(graph, out / f"{name}.json"))
    if count < PROGRESS_FROM:
        for path in written:
            console.print(f"wrote {path}", markup=False)
    else:
        console.print(
            f"wrote {count} graphs to {out}: {written[0].name} .. {written[-1].name}", markup=False
        )
