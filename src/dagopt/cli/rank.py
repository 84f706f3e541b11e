"""``dagopt rank``: the configurations a trained TGraph model predicts fastest (paper 002)."""

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dagopt.cli.output import check_output, console, progress_on_terminal
from dagopt.registry import MAX_SEED

if TYPE_CHECKING:
    import numpy as np


def rank(
    graphs: Annotated[
        list[Path],
        typer.Argument(
            metavar="GRAPH...",
            help="TpuGraphs .npz file(s) (tile or layout); several, or folders of them.",
        ),
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
    top: Annotated[int, typer.Option(min=1, help="How many configurations to print per file.")] = 5,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the submission CSV, a row per file (needs a collection: "
            "--collection, or the model's).",
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(
            help="The graphs' collection, e.g. layout:xla:random: picks the shipped model "
            "and the CSV's IDs (a tile graph's is tile:xla)."
        ),
    ] = None,
    tta: Annotated[
        int, typer.Option(min=1, help="Test-time augmentation: random configuration orders.")
    ] = 10,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the TTA permutations.")
    ] = 0,
) -> None:
    """Rank each GRAPH's configurations with a TGraph model; print the predicted best.

    When a file holds measured runtimes, each printed configuration's runtime over
    the fastest one's is shown (a tile file's normalised runtimes, which its metric
    reads), with Kendall's tau of the whole ranking (paper 002, eq. 9); over several
    such files, the collection's metric (the mean tau, or for tile the mean of eq. 10).
    With --out, write the competition CSV (ID,TopConfigs: the top 5 for tile, every
    configuration for layout), once every file is ranked."""
    from dagopt.cli.batch import graph_files
    from dagopt.errors import InputError
    from dagopt.io.tpugraphs import submission_id, write_submission
    from dagopt.objectives.ranking import TILE_TOP_K, layout_score, tile_score, top_configs
    from dagopt.rank.tgraph import open_ranking, predict

    files = graph_files(
        graphs, suffixes=(".npz",), what="TpuGraphs files", shared="one submission ID"
    )
    check_output(out, *files, *([] if model is None else [model]))
    missing = next((file for file in files if not file.is_file()), None)
    if missing is not None:
        raise InputError(f"{missing}: no such file")
    rankings = {}
    measured: dict[str, list] = {"tile": [], "layout": []}
    loaded: dict = {}  # each model file read once
    for number, file in enumerate(files):
        began = time.perf_counter()
        ranking = open_ranking(file, model=model, collection=collection, loaded=loaded)
        loading = time.perf_counter() - began
        if out is not None and ranking.collection is None:
            raise InputError(
                "--out writes a submission CSV and needs --collection (the model records none)"
            )
        began = time.perf_counter()
        with progress_on_terminal():
            scores = predict(ranking.model, ranking.graph, permutations=tta, seed=seed)
        seconds = time.perf_counter() - began
        order = top_configs(scores)
        if number:
            console.print()
        console.print(
            f"{ranking.graph.name}: {scores.size} configurations, predicted fastest first, "
            f"ranked in {seconds:.3g} s (+ {loading:.3g} s reading the file and the model)"
        )
        runtimes = ranking.graph.runtimes  # a tile file's normalised ones, as its metric
        _print_top(scores, order[:top], runtimes)
        if runtimes is not None:
            measured[ranking.graph.kind].append((scores, runtimes))
        if out is not None:
            best = order[:TILE_TOP_K] if ranking.graph.kind == "tile" else order
            rankings[submission_id(ranking.collection, ranking.graph.name)] = best
    if len(files) > 1:
        for kind, score, what in (
            ("layout", layout_score, "mean Kendall tau"),
            ("tile", tile_score, "mean tile metric (eq. 10)"),
        ):
            if measured[kind]:
                value = score(*zip(*measured[kind], strict=True))
                console.print(f"\n{len(measured[kind])} measured {kind} files: {what} {value:.3f}")
    if out is not None:
        console.print(f"wrote {write_submission(out, rankings)}")


def _print_top(scores: "np.ndarray", best: "np.ndarray", runtimes: "np.ndarray | None") -> None:
    """The ``best`` configurations (predicted fastest first) with their scores, and when
    there are runtimes, each one's over the fastest one's and the ranking's Kendall tau
    (eq. 9)."""
    from dagopt.objectives.ranking import kendall_tau, top_k_slowdown

    console.print("rank  config  score" + ("" if runtimes is None else "  measured / fastest"))
    for position, config in enumerate(best, start=1):
        row = f"{position:>4}  {config:>6}  {scores[config]:.4f}"
        if runtimes is not None:
            row += f"  {runtimes[config] / runtimes.min():.3f}"
        console.print(row, markup=False)
    if runtimes is not None:
        console.print(
            f"measured runtimes in the file: Kendall tau {kendall_tau(scores, runtimes):.3f}; "
            f"the best of the top {best.size} runs "
            f"{1 + top_k_slowdown(scores, runtimes, best.size):.3f}x the fastest"
        )
