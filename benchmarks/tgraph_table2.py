"""Paper 002, Table 2: the TpuGraphs baseline (trained as the official code trains it,
and on TGraph's recipe), TGraph without cross-attention and TGraph, trained and scored
by us, beside the paper's three columns.

    python benchmarks/tgraph_table2.py --data ~/data/tpugraphs            # real TpuGraphs
    python benchmarks/tgraph_table2.py --data DIR --collections layout:xla:random \\
        --epochs 5 --max-steps 2000 --split test                           # a budget
    python benchmarks/tgraph_table2.py                                     # SYNTHETIC smoke run

Each collection present under ``--data`` (a folder holding ``npz/``) is trained once per
variant with ``dagopt.train.tgraph`` (K-fold on ``--train-splits``, the kept folds
ensembled): ``baseline-tpugraphs`` is the baseline model with the official training
(``recipe="tpugraphs"``: ListMLE, Adam, 16 / 10 configurations of 8 / 10 graphs a step,
up to 500 / 100 epochs with early stopping, ``TPUGRAPHS_RECIPE``, in place of
``--epochs``), the other three with TGraph's (2.4), then scored on ``--split`` with
test-time augmentation: layout collections by mean Kendall tau, tile by eq. 10
(``dagopt.objectives.ranking``). A cell is the ensemble's score, then the mean +-
standard deviation of its folds scored alone; the effect of cross-attention is TGraph's
per-graph gain over TGraph without it, with a 95 % paired bootstrap interval over the
scored graphs. Runs are kept in ``--work`` and resume. The paper's columns are the
paper's numbers (its Table 2: validation scores on TpuGraphs, TPU v3), not measured
here. The retest ceiling is the mean ``retest_tau`` of the scored graphs in the
collection's ``measurements.json`` (the measured dataset records it; TpuGraphs has
none).
``--numeric-features``, ``--physical-layout``, ``--readout`` and ``--tile-extents`` set
the TGraph columns' options of those names (``dagopt.nn.tgraph.config.TGraphConfig``);
the baseline keeps its own. ``--pair-weights`` weighs eq. 8's pairs of the TGraph
columns (``TGraphTrainConfig.pair_weights``); ``--companions`` trains them beside those
collections' measurements of the same programs (``TGraphTrainConfig.companions``).
``--recipe tpugraphs`` trains the TGraph columns as ``baseline-tpugraphs`` is trained
(its epochs in place of ``--epochs``).

Without ``--data`` the script writes SYNTHETIC collections and runs on them: with
``--synthetic planted`` (default) the runtimes follow a made-up rule
(``dagopt.generate.tpugraphs.planted_*_runtimes``), which checks that the models can
learn; with ``random`` there is nothing to learn. Neither says anything about ranking
real programs.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from dagopt.bench.bootstrap import paired_interval
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.generate.tpugraphs import write_synthetic_collection
from dagopt.io.tpugraphs import COLLECTIONS, collection_dir, collection_files
from dagopt.nn.tgraph.config import NUMERIC_FEATURES, READOUTS, TGraphConfig, baseline_config
from dagopt.nn.tgraph.loss import PAIR_WEIGHTS
from dagopt.rank.configs.build import read_sidecar
from dagopt.rank.tgraph import evaluate, graph_scores, load_ranker
from dagopt.train.tgraph import (
    RECIPES,
    TPUGRAPHS_RECIPE,
    TGraphTrainConfig,
    load_graphs,
    train_tgraph,
)

#: Paper 002, Table 2: TpuGraphs [16], Xu 2023 [22], TGraph (validation scores).
PAPER = {
    "layout:xla:random": ("0.19", "0.5285", "0.6840 +- 0.0110"),
    "layout:xla:default": ("0.12", "0.5887", "0.4785 +- 0.0031"),
    "layout:nlp:random": ("0.58", "0.8387", "0.9713 +- 0.0008"),
    "layout:nlp:default": ("0.30", "0.4841", "0.5628 +- 0.0027"),
    "tile:xla": ("-", "0.8622", "0.9694 +- 0.0021"),
}
VARIANTS = ("baseline-tpugraphs", "baseline", "tgraph-no-cross", "tgraph")


def model_config(variant: str, kind: str, args: argparse.Namespace) -> TGraphConfig:
    """A column's model: the baseline's own, or TGraph of ``--hidden`` and ``--blocks``
    with the options ``--numeric-features``, for layout collections ``--physical-layout``
    and ``--readout``, for tile ones ``--tile-extents``."""
    if variant.startswith("baseline"):
        return baseline_config(kind)
    layout = kind == "layout"
    return TGraphConfig(
        kind=kind,
        hidden=args.hidden,
        blocks=args.blocks,
        cross_attention=variant == "tgraph",
        numeric_features=args.numeric_features,
        physical_layout=args.physical_layout and layout,
        readout=args.readout if layout else "mean",
        tile_extents=args.tile_extents and not layout,
    )


def retest_ceiling(data: Path, collection: str, paths: list[Path]) -> str:
    """Mean ``retest_tau`` of the scored files in the collection's ``measurements.json``
    (``npz/<collection>/measurements.json``, keyed by graph name, as the measured
    dataset writes it), or ``-`` (TpuGraphs has none)."""
    table = read_sidecar(data, collection)
    values = [
        float(table[p.stem]["retest_tau"])
        for p in paths
        if isinstance(table.get(p.stem), dict) and "retest_tau" in table[p.stem]
    ]
    return f"{np.mean(values):.3f} ({len(values)} graphs)" if values else "-"


def score_cell(run: Path, graphs, tta: int) -> tuple[str, np.ndarray]:
    """The cell of one trained variant, and its ensemble's per-graph scores."""
    ensemble = load_ranker(run / "model.pt")
    per_graph = graph_scores(ensemble, graphs, permutations=tta)
    folds = [evaluate(member, graphs, permutations=tta) for member in ensemble.members]
    spread = f" ({np.mean(folds):.4f} +- {np.std(folds):.4f})" if len(folds) > 1 else ""
    return f"{np.mean(per_graph):.4f}{spread}", per_graph


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--data", type=Path, help="folder holding npz/ (default: SYNTHETIC)")
    parser.add_argument("--synthetic", choices=("planted", "random"), default="planted")
    parser.add_argument("--collections", nargs="+", choices=COLLECTIONS)
    parser.add_argument("--work", type=Path, default=Path("runs/tgraph_table2"))
    parser.add_argument("--train-splits", nargs="+", default=["train"])
    parser.add_argument("--split", default="valid", help="split to score (labelled)")
    parser.add_argument("--epochs", type=positive_int, default=20)
    parser.add_argument("--max-steps", type=int, default=0, help="per fold, 0: no cap")
    parser.add_argument("--folds", type=positive_int, default=5)
    parser.add_argument("--train-folds", type=positive_int, default=2)
    parser.add_argument("--keep-folds", type=positive_int, default=2)
    parser.add_argument("--hidden", type=positive_int, default=256)
    parser.add_argument("--blocks", type=int, default=2, help="TGraph's graph blocks (eq. 4)")
    parser.add_argument(
        "--numeric-features", choices=NUMERIC_FEATURES, default="raw", help="TGraph's input"
    )
    parser.add_argument(
        "--physical-layout",
        action="store_true",
        help="layout TGraphs also read the physical-layout features (beyond the paper)",
    )
    parser.add_argument(
        "--readout",
        choices=READOUTS,
        default="mean",
        help="layout TGraphs' readout: eq. 7's mean pooling or a log-sum-exp of node scores",
    )
    parser.add_argument(
        "--tile-extents",
        action="store_true",
        help="tile TGraphs also read each tile size's count and tail (beyond the paper)",
    )
    parser.add_argument(
        "--pair-weights",
        choices=PAIR_WEIGHTS,
        default="uniform",
        help="TGraph's eq. 8 pairs: uniform, or by log runtime ratio (beyond the paper)",
    )
    parser.add_argument(
        "--companions",
        nargs="+",
        choices=COLLECTIONS,
        default=[],
        help="TGraph also trains on these collections' graphs of the same programs (beyond "
        "the paper)",
    )
    parser.add_argument(
        "--recipe", choices=RECIPES, default="tgraph", help="the TGraph columns' training"
    )
    parser.add_argument("--tta", type=positive_int, default=10)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), help="train only these"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    data, synthetic = args.data, args.data is None
    if synthetic:
        data = args.work / f"synthetic-{args.synthetic}"
        for collection in args.collections or ["layout:xla:random", "tile:xla"]:
            if not collection_dir(data, collection, "train").is_dir():
                write_synthetic_collection(
                    data,
                    collection,
                    graphs={"train": 16, "valid": 6},
                    seed=args.seed,
                    runtimes=args.synthetic,
                )
    collections = args.collections or [
        c for c in COLLECTIONS if collection_dir(data, c, args.split).is_dir()
    ]
    if synthetic:
        print(f"SYNTHETIC data ({args.synthetic} runtimes): nothing about real programs")
    ours = "ours" if args.recipe == "tgraph" else "ours, official training"
    header = [
        "collection", "metric", "TpuGraphs (paper)", "Xu 2023 (paper)", "TGraph (paper)",
        "baseline, official training (ours)", "baseline, TGraph's training (ours)",
        f"TGraph no cross-attn ({ours})", f"TGraph ({ours})",
        "cross-attn gain (95% CI)", "retest ceiling",
    ]  # fmt: skip
    print(markdown_row(header))
    print(markdown_rule("ll" + "r" * (len(header) - 2)))
    for collection in collections:
        kind = collection.split(":")[0]
        scored = load_graphs(data, collection, [args.split], deduplicate=False)
        cells, per_graph = [], {}
        for variant in VARIANTS:
            if variant not in args.variants:
                cells.append("-")
                continue
            run = args.work / collection.replace(":", "-") / variant
            recipe = {"baseline-tpugraphs": "tpugraphs", "baseline": "tgraph"}.get(
                variant, args.recipe
            )
            official = recipe == "tpugraphs"
            config = TGraphTrainConfig(
                collection=collection,
                data=str(data),
                splits=tuple(args.train_splits),
                model=model_config(variant, kind, args),
                epochs=TPUGRAPHS_RECIPE[kind].epochs if official else args.epochs,
                max_steps=args.max_steps,
                recipe=recipe,
                pair_weights=args.pair_weights if variant.startswith("tgraph") else "uniform",
                companions=tuple(args.companions) if variant.startswith("tgraph") else (),
                folds=args.folds,
                train_folds=args.train_folds,
                keep_folds=args.keep_folds,
                seed=args.seed,
            )
            train_tgraph(run, config, resume=(run / "state.pt").exists())  # done: returns
            cell, per_graph[variant] = score_cell(run, scored, args.tta)
            cells.append(cell)
            print(f"  {collection} {variant}: {cells[-1]}", file=sys.stderr)
        metric = "Kendall tau" if kind == "layout" else "M_tile (eq. 10)"
        ceiling = retest_ceiling(data, collection, collection_files(data, collection, args.split))
        gain = "-"
        if {"tgraph", "tgraph-no-cross"} <= per_graph.keys():
            gain = paired_interval(per_graph["tgraph"], per_graph["tgraph-no-cross"], args.seed)
        print(markdown_row([collection, metric, *PAPER[collection], *cells, gain, ceiling]))
    return 0


if __name__ == "__main__":
    run_script(main)
