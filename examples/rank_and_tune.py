"""Rank compiler configurations with the shipped TGraph models (paper 002), then tune a
layout program and a kernel with the model's picks against random search, on measured
runtimes.

    python examples/rank_and_tune.py --budget 0.1 --seeds 5

The two files are the ones ``dagopt examples`` writes, from the test split of the
measured configuration dataset (``datasets/configs``: TVM on a CPU, not TPUs): a Swin-T
dense kernel with 64 tilings (collection ``tile:xla``) and a Swin-T attention program
with 200 layouts (``layout:nlp:random``). Neither architecture is in any shipped model's
training data. Every configuration's runtime was measured, so the script can say how
good the predicted order is (Kendall's tau, eq. 9; the tile metric, eq. 10) and REPLAY
tuning: "measuring" a configuration looks its runtime up (``dagopt.rank.tuning``).
"""

import argparse
from importlib import resources

import numpy as np

from dagopt.objectives.ranking import kendall_tau, tile_metric, top_configs
from dagopt.rank.tgraph import rank_file
from dagopt.rank.tuning import RandomSearch, ScoreGuided, slowdown, tuning_budget

parser = argparse.ArgumentParser()
parser.add_argument("--budget", type=float, default=0.1, help="fraction of configs measured")
parser.add_argument("--seeds", type=int, default=5, help="random-search repetitions")
args = parser.parse_args()


def ranked(name: str, collection: str):
    """The file ``name`` that ``dagopt examples`` writes, read from the installed package,
    and its scores (lower = predicted faster) by the shipped model of ``collection``
    with 10-permutation test-time augmentation over its ensemble (2.5.3)."""
    with resources.as_file(resources.files("dagopt.data") / name) as path:
        return rank_file(path, collection=collection)


def tune(record, scores) -> None:
    """Tune ``record`` with ``--budget`` of its configurations measured: TGraph's top
    picks (zero-shot) against random picks, each as best found / best measured."""
    budget = tuning_budget(record.num_configs, args.budget)
    guided = ScoreGuided(lambda _: scores).pick(record, budget, np.random.default_rng(0))
    drawn = [
        slowdown(record.config_runtime, RandomSearch().pick(record, budget, rng))
        for rng in (np.random.default_rng(seed) for seed in range(args.seeds))
    ]
    print(f"  tuning with {budget} of {record.num_configs} measurements (best found / best):")
    print(f"    TGraph's top {budget}: {slowdown(record.config_runtime, guided):.3f}")
    print(f"    random search, mean of {args.seeds} seeds: {np.mean(drawn):.3f}")


# Ranking a program's layouts: how well the predicted order matches the measured one.
layout, scores = ranked("layout-program.npz", "layout:nlp:random")
runtimes = layout.config_runtime
best = top_configs(scores, 1)[0]
print(
    f"{layout.name}: {layout.num_configs} layouts, Kendall tau {kendall_tau(scores, runtimes):.3f}"
)
print(
    f"  predicted best layout {best}: {runtimes[best] / runtimes.min():.3f}x the fastest "
    f"measured, {runtimes[best] / np.median(runtimes):.3f}x the median"
)
tune(layout, scores)

# Ranking a kernel's tilings, then tuning it the same way.
tile, scores = ranked("tile-kernel.npz", "tile:xla")
runtimes = tile.config_runtime
print(f"{tile.name}: {tile.num_configs} tilings, Kendall tau {kendall_tau(scores, runtimes):.3f}")
metric = tile_metric(scores, runtimes)
print(f"  tile metric (1 = the fastest is in the predicted top 5): {metric:.3f}")
tune(tile, scores)
