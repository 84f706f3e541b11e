"""A reference point for TGraph on the layout collections (issue 20): a gradient-boosted
tree model (XGBoost) on flat per-configuration features, no graph network, scored on the
same graphs as the shipped TGraph ensemble.

    python benchmarks/tgraph_reference_models.py --data datasets/configs \\
        --train-splits train --split valid --collections layout:xla:random
    python benchmarks/tgraph_reference_models.py --data datasets/configs \\
        --train-splits train valid --score-data datasets/configs-check --split test \\
        --shipped

A layout program's configuration is one row: for each configurable node in order, its
``node_feat[:134]`` (``sign(x) log(1 + |x|)``), the log extents of its operands' shapes
(``GraphTensors.owners``), its 18 minor-to-major values and the physical-layout features
of ``dagopt.nn.tgraph.physical`` (minor extents, vector lanes, copy flags). The target is
the log runtime less its program's mean (a program's scale does not matter to a
ranking); the model is a squared-error regression (``MODEL_PARAMETERS``, chosen on the
valid split of ``layout:xla:random``: depth 8 against 4 and 6, and against a pairwise
ranking objective). Every program of a collection must have the same number of
configurable nodes (one row layout); a collection that does not is an error. Scores are
Kendall's tau per program (``dagopt.objectives.ranking.kendall_tau``), the mean over the
programs of ``--split`` of ``--score-data`` (default ``--data``); ``--shipped`` adds the
shipped TGraph ensemble's score on the same programs (``graph_scores``, 10-permutation
test-time augmentation), which is in-sample on the splits it was trained on (train and
valid). Fitting time is the boosting alone (features apart).
"""

import time
from pathlib import Path

import numpy as np
import torch

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.errors import InputError
from dagopt.io.tpugraphs import COLLECTIONS, SHAPE_DIMS
from dagopt.models import model_path
from dagopt.nn.tgraph.features import numeric_features
from dagopt.nn.tgraph.physical import physical_features
from dagopt.objectives.ranking import kendall_tau
from dagopt.rank.tgraph import PreparedGraph, graph_scores, load_ranker, shipped_model_name
from dagopt.train.tgraph import load_graphs

LAYOUT_COLLECTIONS = [c for c in COLLECTIONS if c.startswith("layout:")]
MODEL_PARAMETERS = {
    "objective": "reg:squarederror",
    "max_depth": 8,
    "eta": 0.05,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
}
"""XGBoost's booster settings (module docstring)."""


def configuration_rows(graph: PreparedGraph) -> np.ndarray:
    """``(configs, columns)`` float32: one flat row per configuration (module docstring)."""
    tensors = graph.tensors
    configs = graph.configs(np.arange(graph.num_configs))  # (c, nc, 18) embedding indices
    node = numeric_features(tensors.node_feat, "log")[tensors.config_ids]  # (nc, 134)
    owners = tensors.owners  # (nc, 3), -1 where a slot has no operand
    dims = tensors.node_feat[:, SHAPE_DIMS].clamp(min=0).log1p()[owners.clamp(min=0)]
    operands = torch.where((owners >= 0).unsqueeze(-1), dims, 0.0).flatten(1)  # (nc, 18)
    shared = torch.cat([node, operands], dim=1).flatten()
    per_config = torch.cat([configs.float(), physical_features(tensors, configs)], dim=2)
    rows = torch.cat([shared.expand(len(configs), -1), per_config.flatten(1)], dim=1)
    return rows.numpy()


def design(graphs: list[PreparedGraph]) -> list[np.ndarray]:
    """Each graph's rows, all of one width; programs of another width are an
    ``InputError``."""
    rows = [configuration_rows(g) for g in graphs]
    widths = {r.shape[1] for r in rows}
    if len(widths) != 1:
        raise InputError(
            f"programs with different numbers of configurable nodes ({sorted(widths)} "
            "columns): one flat row layout cannot describe them"
        )
    return rows


def fit(graphs: list[PreparedGraph], rounds: int, threads: int):
    """The booster trained on ``graphs`` and its fitting seconds."""
    import xgboost

    logs = [np.log(g.runtimes) for g in graphs]
    targets = np.concatenate([log - log.mean() for log in logs])
    matrix = xgboost.DMatrix(np.concatenate(design(graphs)), label=targets)
    start = time.perf_counter()
    booster = xgboost.train({**MODEL_PARAMETERS, "nthread": threads}, matrix, rounds)
    return booster, time.perf_counter() - start


def booster_scores(booster, graphs: list[PreparedGraph]) -> np.ndarray:
    """Kendall's tau of the booster's predictions, per graph (of the row width it was
    trained on, else an ``InputError``)."""
    import xgboost

    rows = design(graphs)
    if rows[0].shape[1] != booster.num_features():
        raise InputError(
            f"{rows[0].shape[1]} columns per configuration, but the booster was trained on "
            f"{booster.num_features()}: programs with other numbers of configurable nodes"
        )
    return np.array(
        [
            kendall_tau(booster.predict(xgboost.DMatrix(r)), g.runtimes)
            for r, g in zip(rows, graphs, strict=True)
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="folder holding npz/")
    parser.add_argument("--train-splits", nargs="+", default=["train"])
    parser.add_argument("--score-data", type=Path, help="folder of the scored split")
    parser.add_argument("--split", default="valid", help="split to score (labelled)")
    parser.add_argument(
        "--collections", nargs="+", choices=LAYOUT_COLLECTIONS, default=LAYOUT_COLLECTIONS
    )
    parser.add_argument("--rounds", type=positive_int, default=600, help="boosting rounds")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--shipped", action="store_true", help="also the shipped TGraph")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    header = ["collection", "programs", "train programs", "XGBoost tau", "fit s"]
    header += ["shipped TGraph tau"] if args.shipped else []
    print(markdown_row(header))
    print(markdown_rule("l" + "r" * (len(header) - 1)))
    for collection in args.collections:
        train = load_graphs(args.data, collection, args.train_splits)
        scored = load_graphs(args.score_data or args.data, collection, [args.split])
        booster, seconds = fit(train, args.rounds, args.threads)
        tau = booster_scores(booster, scored).mean()
        row = [collection, str(len(scored)), str(len(train)), f"{tau:.3f}", f"{seconds:.1f}"]
        if args.shipped:
            model = load_ranker(model_path(shipped_model_name(collection)))
            row.append(f"{graph_scores(model, scored).mean():.3f}")
        print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
