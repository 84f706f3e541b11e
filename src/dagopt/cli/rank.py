"""``dagopt rank``: the configurations a trained TGraph model predicts fastest (paper 002)."""

import time
from pathlib import Path
from typing import Annotated

import typer

from dagopt.cli.output import check_output, console
from dagopt.registry import MAX_SEED


def rank(
    graph: Annotated[
        Path, typer.Argument(metavar="GRAPH", help="TpuGraphs .npz file (tile or layout).")
    ],
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="TGraph model: a run's model.pt (dagopt train tgraph) or a fold's "
            "(default: the model shipped for --collection).",
            show_default=False,
        ),
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="How many configurations to print.")] = 5,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the submission CSV (needs a collection: --collection, or the model's).",
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(
            help="The graph's collection, e.g. layout:xla:random: picks the shipped model "
            "and the CSV's ID (a tile graph's is tile:xla)."
        ),
    ] = None,
    tta: Annotated[
        int, typer.Option(min=1, help="Test-time augmentation: random configuration orders.")
    ] = 10,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the TTA permutations.")
    ] = 0,
) -> None:
    """Rank GRAPH's configurations with a TGraph model; print the predicted best.

    When the file holds measured runtimes, each printed configuration's runtime over
    the fastest one's is shown (a tile file's normalised runtimes, which its metric
    reads), with Kendall's tau of the whole ranking (paper 002, eq. 9). With --out,
    write the competition CSV (ID,TopConfigs: the top 5 for tile, every configuration
    for layout). Every input and --out are checked before ranking."""
    from dagopt.errors import InputError
    from dagopt.io.tpugraphs import submission_id, write_submission
    from dagopt.objectives.ranking import TILE_TOP_K, kendall_tau, top_configs
    from dagopt.rank.tgraph import open_ranking, predict

    check_output(out, graph, *([] if model is None else [model]))
    began = time.perf_counter()
    ranking = open_ranking(graph, model=model, collection=collection)
    loading = time.perf_counter() - began
    if out is not None and ranking.collection is None:
        raise InputError(
            "--out writes a submission CSV and needs --collection (the model records none)"
        )
    began = time.perf_counter()
    scores = predict(ranking.model, ranking.graph, permutations=tta, seed=seed)
    seconds = time.perf_counter() - began
    order = top_configs(scores)
    runtimes = ranking.graph.runtimes  # a tile file's normalised ones, as its metric
    console.print(
        f"{ranking.graph.name}: {order.size} configurations, predicted fastest first, "
        f"ranked in {seconds:.3g} s (+ {loading:.3g} s reading the file and the model)"
    )
    console.print("rank  config  score" + ("  measured / fastest" if runtimes is not None else ""))
    for position, config in enumerate(order[:top], start=1):
        row = f"{position:>4}  {config:>6}  {scores[config]:.4f}"
        if runtimes is not None:
            row += f"  {runtimes[config] / runtimes.min():.3f}"
        console.print(row, markup=False)
    if runtimes is not None:
        console.print(
            f"measured runtimes in the file: Kendall tau {kendall_tau(scores, runtimes):.3f}; "
            f"the best of the top {min(top, order.size)} runs "
            f"{runtimes[order[:top]].min() / runtimes.min():.3f}x the fastest"
        )
    if out is not None:
        best = order[:TILE_TOP_K] if ranking.graph.kind == "tile" else order
        path = write_submission(out, {submission_id(ranking.collection, ranking.graph.name): best})
        console.print(f"wrote {path}")
