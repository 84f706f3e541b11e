"""Runs of ``dagopt train tgraph`` that differ in their training data, compared on the
training programs their own K-fold models held out (issue 20): a selection set larger
than a valid split of one architecture.

    python benchmarks/tgraph_heldout_programs.py \\
        --before runs/xla_w4_s{0,1}/layout-xla-random/tgraph \\
        --after runs/xla_w5_s{0,1}/layout-xla-random/tgraph --after-data /tmp/w5/datasets/configs

Each run's ``config.json`` names its data, collection, splits, folds and seed; the run's
K-fold split (``dagopt.train.tgraph.fold_of``, section 2.4.3) is rebuilt from them, and
each kept fold model ``fold-k/model.pt`` scores the programs of fold ``k``, which it did
not train on (``dagopt.rank.tgraph.graph_scores``, the same test-time augmentation as
everywhere). ``--before-data`` / ``--after-data`` replace the data folder of every run
on that side (a run trained from a worktree that no longer exists, or data since
reverted). Runs are paired by position (``--before`` i with ``--after`` i, e.g. the same
seed): a program counts for a pair when both runs held it out, its gain is after minus
before, and the gains of a program over the pairs that hold it are averaged. The row
gives the programs, both means over them and the mean gain with the paired bootstrap
interval of ``dagopt.bench.bootstrap.paired_interval`` (95 %, 2,000 resamples of the
programs); ``--per-graph`` then lists them. Programs that exist on one side only (the
added data) are not compared; ``--exclude`` leaves out named programs (those whose
failures suggested the change, say, which cannot judge it).
"""

import json
import sys
from functools import cache
from pathlib import Path

import numpy as np
import torch

from dagopt.bench.bootstrap import paired_interval
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.rank.tgraph import graph_scores, load_ranker
from dagopt.train.tgraph import fold_of, load_graphs


@cache
def _training_programs(data: str, collection: str, splits: tuple[str, ...]):
    """``load_graphs`` once per data folder and splits: runs of one side share them."""
    return load_graphs(data, collection, splits)


def held_out_scores(run: Path, data: Path | None, tta: int) -> dict[str, float]:
    """Each training program of ``run`` that one of its fold models held out, with that
    model's score on it."""
    config = json.loads((run / "config.json").read_text())
    source = str(data or config["data"])
    graphs = _training_programs(source, config["collection"], tuple(config["splits"]))
    fold = fold_of(graphs, config["folds"], config["seed"])
    scores = {}
    for k in range(config["folds"]):
        if not (run / f"fold-{k}" / "model.pt").is_file():
            continue
        held = [g for g, f in zip(graphs, fold, strict=True) if f == k]
        model = load_ranker(run / f"fold-{k}" / "model.pt")
        names = [g.name for g in held]
        scores.update(zip(names, graph_scores(model, held, permutations=tta), strict=True))
    if not scores:
        print(f"error: {run}: no fold-k/model.pt", file=sys.stderr)
        raise SystemExit(2)
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--before", type=Path, nargs="+", required=True, help="run folders")
    parser.add_argument("--after", type=Path, nargs="+", required=True, help="run folders")
    parser.add_argument("--before-data", type=Path, help="data folder of the --before runs")
    parser.add_argument("--after-data", type=Path, help="data folder of the --after runs")
    parser.add_argument("--tta", type=positive_int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-graph", action="store_true", help="then every program's scores")
    parser.add_argument("--exclude", nargs="+", default=[], help="program names to leave out")
    args = parser.parse_args(argv)
    if len(args.before) != len(args.after):
        parser.error("--before and --after pair runs by position: give as many of each")
    torch.set_num_threads(1)
    gains: dict[str, list[tuple[float, float]]] = {}
    excluded = set(args.exclude)
    for before_run, after_run in zip(args.before, args.after, strict=True):
        before = held_out_scores(before_run, args.before_data, args.tta)
        after = held_out_scores(after_run, args.after_data, args.tta)
        for name in before.keys() & after.keys():
            gains.setdefault(name, []).append((before[name], after[name]))
    if excluded - gains.keys():
        unknown = ", ".join(sorted(excluded - gains.keys()))
        print(f"error: --exclude names no program both runs held out: {unknown}", file=sys.stderr)
        return 2
    gains = {name: pairs for name, pairs in gains.items() if name not in excluded}
    if not gains:
        print("error: no program was held out by both runs of any pair", file=sys.stderr)
        return 2
    names = sorted(gains)
    before_mean = np.array([np.mean([b for b, _ in gains[n]]) for n in names])
    after_mean = np.array([np.mean([a for _, a in gains[n]]) for n in names])
    print(markdown_row(["programs", "pairs", "before", "after", "gain (95% CI)"]))
    print(markdown_rule("rrrrr"))
    interval = paired_interval(after_mean, before_mean, args.seed)
    cells = [str(len(names)), str(len(args.before)), f"{before_mean.mean():.4f}"]
    print(markdown_row([*cells, f"{after_mean.mean():.4f}", interval]))
    if args.per_graph:
        print()
        print(markdown_row(["program", "pairs holding it", "before", "after"]))
        print(markdown_rule("lrrr"))
        for name, b, a in zip(names, before_mean, after_mean, strict=True):
            print(markdown_row([name, str(len(gains[name])), f"{b:.3f}", f"{a:.3f}"]))
    return 0


if __name__ == "__main__":
    run_script(main)
