"""Tuned BRKGA (paper 003, section 3.2, baseline 5): hyper-parameters by grid search.

``grid_search`` runs BRKGA with every combination of ``GRID`` on a set of training
graphs and keeps the one with the smallest mean cost ratio to BRKGA's defaults (an
infeasible result counts as ratio 2). ``dagopt train brkga`` writes the winners to a
JSON file, one entry per objective; the ``brkga-tuned`` placer reads it (the shipped
``brkga-tuned`` of ``dagopt.models.model_path`` unless ``params`` names another file).
"""

import itertools
import json
import os
import reprlib
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file
from dagopt.io.placements import graph_hash
from dagopt.models import model_path
from dagopt.objectives.devices import Devices
from dagopt.place.base import PlacementProblem, PlacerResult, cost_ratio, register_placer
from dagopt.place.brkga import BrkgaParams, outcome_result, run_brkga

GRID = {
    "population": (50, 100, 200),
    "elite_fraction": (0.1, 0.2, 0.3),
    "mutant_fraction": (0.1, 0.2, 0.3),
    "elite_bias": (0.6, 0.7, 0.8),
}


def grid_search(
    graphs: list[Graph],
    objective: str,
    *,
    devices: Devices | None = None,
    evaluations: int = BrkgaParams().evaluations,
    grid: dict[str, tuple] = GRID,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: Path | None = None,
) -> tuple[BrkgaParams, list[tuple[BrkgaParams, float]]]:
    """The best ``BrkgaParams`` of ``grid`` on ``graphs``, and every setting's mean ratio.

    With ``checkpoint`` (a JSON file), each setting's ratio is saved as soon as it is
    known and a rerun of the same search (same graphs, objective, devices, budget and
    seed) skips the settings already there; a file of another search is an
    ``InputError``."""
    devices = devices or Devices()
    settings = [
        dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())
    ]
    search = {
        "objective": objective,
        "graphs": [graph_hash(g) for g in graphs],
        "devices": repr(devices),
        "evaluations": evaluations,
        "seed": seed,
    }
    saved = _saved_ratios(checkpoint, search)

    def cost(graph: Graph, params: BrkgaParams) -> tuple[int, float]:
        problem = PlacementProblem(graph, devices, objective)
        return run_brkga(problem, seed=seed, params=params).cost

    defaults = [cost(g, BrkgaParams(evaluations=evaluations)) for g in graphs]
    references = [None if infeasible else value for infeasible, value in defaults]
    table = []
    for i, setting in enumerate(settings):
        try:
            params = BrkgaParams(evaluations=evaluations, **setting)
        except InputError:  # e.g. elites + mutants fill the population
            continue
        key = json.dumps(setting, sort_keys=True)
        if key not in saved:
            pairs = zip(graphs, references, strict=True)
            saved[key] = float(np.mean([cost_ratio(cost(g, params), r) for g, r in pairs]))
            if checkpoint is not None:
                write_text_atomic(checkpoint, json.dumps({"search": search, "ratios": saved}))
        table.append((params, saved[key]))
        if progress is not None:
            progress(i + 1, len(settings))
    best = min(table, key=lambda row: row[1])[0]
    return best, table


def _saved_ratios(checkpoint: Path | None, search: dict) -> dict[str, float]:
    """The ratios ``checkpoint`` holds for ``search`` (none without a file)."""
    if checkpoint is None or not checkpoint.exists():
        return {}
    document = read_json_file(checkpoint)
    if not isinstance(document, dict) or document.get("search") != search:
        raise InputError(
            f"{checkpoint}: holds another grid search (other graphs, objective or budget); "
            "delete it to start this one"
        )
    return dict(document["ratios"])


def read_tuned_file(path: str | os.PathLike) -> dict:
    """The document of a tuned-parameters file, ``{}`` when there is none yet; a file
    that is not a JSON object is a one-line ``InputError``. ``dagopt train brkga`` reads
    its output file with it before the grid search, so that a file it could not update
    stops the command before the search, not after."""
    file = Path(path)
    if not file.exists():
        return {}
    document = read_json_file(file)
    if not isinstance(document, dict):
        raise InputError(f"{file}: not a tuned BRKGA parameters file (expected a JSON object)")
    return document


def write_tuned(path: str | os.PathLike, objective: str, params: BrkgaParams, meta: dict) -> Path:
    """Add (or replace) ``objective``'s tuned parameters in the JSON file at ``path``."""
    document = read_tuned_file(path)
    document[objective] = {"params": asdict(params), "meta": meta}
    return write_text_atomic(path, json.dumps(document, indent=1, sort_keys=True))


def read_tuned(path: str | os.PathLike, objective: str) -> BrkgaParams:
    """The tuned parameters for ``objective`` stored at ``path``; a missing or bad file or
    entry is a one-line ``InputError``."""
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"option 'params' must be a file path, got {reprlib.repr(path)}")
    file = Path(path)
    if not file.is_file():
        raise InputError(f"no tuned BRKGA parameters at {file}; run `dagopt train brkga`")
    entry = read_tuned_file(file).get(objective)
    if not (isinstance(entry, dict) and isinstance(entry.get("params"), dict)):
        raise InputError(f"{file}: no tuned BRKGA parameters for {objective!r}")
    try:
        return BrkgaParams.from_dict(entry["params"], what="tuned parameter")
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None


@register_placer(
    "brkga-tuned",
    "BRKGA with hyper-parameters from a grid search on training graphs (003 section 3.2)",
    ("params", "evaluations"),
)
def brkga_tuned(
    problem: PlacementProblem, *, seed=None, time_limit=None, params=None, evaluations=None
) -> PlacerResult:
    tuned = read_tuned(
        params if params is not None else model_path("brkga-tuned"), problem.objective
    )
    if evaluations is not None:
        tuned = BrkgaParams.from_dict({**asdict(tuned), "evaluations": evaluations})
    outcome = run_brkga(problem, seed=seed, params=tuned, time_limit=time_limit)
    return outcome_result(outcome, params=asdict(tuned))
