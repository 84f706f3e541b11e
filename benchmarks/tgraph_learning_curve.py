"""How TGraph's held-out ranking grows with the number of training programs (issue 20).

    python benchmarks/tgraph_learning_curve.py --data datasets/configs \\
        --collection layout:xla:random --sizes 11 22 44 88 --seeds 0 1 2

The train split's programs are dealt into 5 folds (``dagopt.train.tgraph.fold_of``, seed
0); fold 0 is held out. The other programs are shuffled by each ``--seeds`` value and
the first ``n`` of them, for each of ``--sizes`` (nested: a larger set holds the
smaller), train one TGraph with the shipped models' recipe (width 128, 60 epochs, one
fold of 5: 80 % of the ``n`` programs train, 20 % choose the epoch kept). Each model is
scored with 10-permutation test-time augmentation on the held-out programs (other
programs of the training architectures) and on the valid split (architectures no
training program comes from). A row per size: the mean over seeds and each seed's
score; a last line gives the fitted gain per doubling of the programs (least squares
of the held-out score on log2 n over all runs), to read how far more programs of the
same kinds would carry the score. Runs resume from ``--work``.
"""

import sys
from pathlib import Path

import numpy as np
import torch

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import non_negative_int, positive_int, run_script, script_parser
from dagopt.errors import InputError
from dagopt.io.tpugraphs import COLLECTIONS, collection_files, read_tpugraphs
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.rank.tgraph import evaluate, load_ranker, prepare
from dagopt.train.tgraph import TGraphTrainConfig, fold_of, load_graphs, train_tgraph

HELD_OUT_FOLD = 0
FOLDS = 5


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="folder holding npz/")
    parser.add_argument("--collection", choices=COLLECTIONS, default="layout:xla:random")
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[11, 22, 44, 88])
    parser.add_argument("--seeds", type=non_negative_int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--work", type=Path, default=Path("runs/tgraph_learning_curve"))
    parser.add_argument("--epochs", type=positive_int, default=60)
    parser.add_argument("--hidden", type=positive_int, default=128)
    parser.add_argument("--tta", type=positive_int, default=10)
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    kind = args.collection.split(":")[0]
    training = load_graphs(args.data, args.collection, ["train"])
    valid = load_graphs(args.data, args.collection, ["valid"], deduplicate=False)
    fold = fold_of(training, FOLDS, 0)
    pool = np.flatnonzero(fold != HELD_OUT_FOLD)
    # the held-out fold scored as inference sees it: every configuration, none de-duplicated
    path_of = {p.stem: p for p in collection_files(args.data, args.collection, "train")}
    held_out = [
        prepare(read_tpugraphs(path_of[training[i].name]))  # a record is named after its file
        for i in np.flatnonzero(fold == HELD_OUT_FOLD)
    ]
    if max(args.sizes) > pool.size or min(args.sizes) < FOLDS:
        raise InputError(f"--sizes must lie in {FOLDS}..{pool.size} programs")
    print(
        f"{args.collection}: {len(held_out)} held-out programs of the training architectures,"
        f" {len(valid)} valid programs; {pool.size} programs to draw from",
        file=sys.stderr,
    )
    sizes = sorted(args.sizes)
    scores = {}  # (size, seed) -> (held-out tau, valid tau)
    trained_on = {}  # size -> programs the run's kept fold trains on (the rest pick its epoch)
    for seed in args.seeds:
        order = pool[np.random.default_rng(seed).permutation(pool.size)]
        for size in sizes:
            run = args.work / f"n{size}_s{seed}"
            config = TGraphTrainConfig(
                collection=args.collection,
                data=str(args.data),
                model=TGraphConfig(kind=kind, hidden=args.hidden),
                epochs=args.epochs,
                folds=FOLDS,
                train_folds=1,
                keep_folds=1,
                seed=seed,
            )
            graphs = [training[i] for i in sorted(order[:size])]
            trained_on[size] = int((fold_of(graphs, FOLDS, seed) != 0).sum())  # fold 0 validates
            train_tgraph(run, config, resume=(run / "state.pt").exists(), graphs=graphs)
            model = load_ranker(run / "model.pt")
            scores[size, seed] = (
                evaluate(model, held_out, permutations=args.tta),
                evaluate(model, valid, permutations=args.tta),
            )
            print(f"  n={size} seed {seed}: {scores[size, seed]}", file=sys.stderr)
    x = np.log2([size for size, _ in scores])
    slope = np.polyfit(x, [held for held, _ in scores.values()], 1)[0] if len(set(x)) > 1 else 0
    header = ["programs", "trained on", "held-out tau: mean", "per seed", "valid tau: mean"]
    print(markdown_row([*header, "per seed"]))
    print(markdown_rule("rrrlrl"))
    for size in sizes:
        held = [scores[size, s][0] for s in args.seeds]
        val = [scores[size, s][1] for s in args.seeds]
        print(
            markdown_row(
                [
                    str(size),
                    str(trained_on[size]),
                    f"{np.mean(held):.3f}",
                    " / ".join(f"{v:.3f}" for v in held),
                    f"{np.mean(val):.3f}",
                    " / ".join(f"{v:.3f}" for v in val),
                ]
            )
        )
    print(f"\nheld-out tau gained per doubling of the programs (least squares): {slope:+.3f}")
    return 0


if __name__ == "__main__":
    run_script(main)
