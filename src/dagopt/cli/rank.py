"""``dagopt rank``: the configurations a trained TGraph model predicts fastest (paper 002)."""

import time
from pathlib import Path
from typing import Annotated

import typer

from dagopt.cli.output import check_output, console
from dagopt.registry import MAX_SEED


def ranked_files(paths: list[Path]) -> list[Path]:
    """The TpuGraphs files named by ``paths``: files as given, folders as their ``.npz``
    files, sorted. Two files of one name are an error: a submission ID is the
    collection and the file's name."""
    from dagopt.errors import InputError

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix == ".npz")
            if not found:
                raise InputError(f"{path}: no TpuGraphs files (.npz)")
            files += found
        else:
            files.append(path)
    files = list(dict.fromkeys(files))
    seen: dict[str, Path] = {}
    for file in files:
        if file.stem in seen:
            raise InputError(f"{seen[file.stem]} and {file} would share one submission ID")
        seen[file.stem] = file
    return files


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
    from dagopt.errors import InputError
    from dagopt.io.tpugraphs import submission_id, write_submission
    from dagopt.objectives.ranking import (
        TILE_TOP_K,
        kendall_tau,
        layout_score,
        tile_score,
        top_configs,
    )
    from dagopt.rank.tgraph import open_ranking, predict

    files = ranked_files(graphs)
    check_output(out, *files, *([] if model is None else [model]))
    missing = next((file for file in files if not file.is_file()), None)
    if missing is not None:
        raise InputError(f"{missing}: no such file")
    rankings = {}
    measured: dict[str, list] = {"tile": [], "layout": []}
    for number, file in enumerate(files):
        began = time.perf_counter()
        ranking = open_ranking(file, model=model, collection=collection)
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
        if number:
            console.print()
        console.print(
            f"{ranking.graph.name}: {order.size} configurations, predicted fastest first, "
            f"ranked in {seconds:.3g} s (+ {loading:.3g} s reading the file and the model)"
        )
        header = "rank  config  score" + ("  measured / fastest" if runtimes is not None else "")
        console.print(header)
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
