"""``dagopt rank``: the configurations a trained TGraph model predicts fastest (paper 002)."""

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

    With --out, write the competition CSV (ID,TopConfigs: the top 5 for tile, every
    configuration for layout). Every input and --out are checked before ranking."""
    from dagopt.errors import InputError
    from dagopt.io.tpugraphs import submission_id, write_submission
    from dagopt.objectives.ranking import TILE_TOP_K, top_configs
    from dagopt.rank.tgraph import open_ranking, predict

    check_output(out, graph, *([] if model is None else [model]))
    ranking = open_ranking(graph, model=model, collection=collection)
    if out is not None and ranking.collection is None:
        raise InputError(
            "--out writes a submission CSV and needs --collection (the model records none)"
        )
    scores = predict(ranking.model, ranking.graph, permutations=tta, seed=seed)
    order = top_configs(scores)
    console.print(f"{ranking.graph.name}: {order.size} configurations, predicted fastest first")
    console.print("rank  config  score")
    for position, config in enumerate(order[:top], start=1):
        console.print(f"{position:>4}  {config:>6}  {scores[config]:.4f}", markup=False)
    if out is not None:
        best = order[:TILE_TOP_K] if ranking.graph.kind == "tile" else order
        path = write_submission(out, {submission_id(ranking.collection, ranking.graph.name): best})
        console.print(f"wrote {path}")
