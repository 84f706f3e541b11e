"""Two sets of ``tgraph_table2.py`` work folders, trained alike but for one change (more
training data, issue 20; or a training option), scored on the same split graph by graph.

    python benchmarks/tgraph_data_gain.py --data datasets/configs --split valid \\
        --before runs/tgraph_valid_old --after runs/tgraph_valid_grown
    python benchmarks/tgraph_data_gain.py --data datasets/configs --split valid \\
        --collections tile:xla --per-graph \\
        --before runs/old runs/old_s1 runs/old_s2 --after runs/new runs/new_s1 runs/new_s2

For each collection and variant trained in every folder (``<work>/<collection>/<variant>/
model.pt``), each ensemble scores the split's graphs with the same test-time
augmentation (``dagopt.rank.tgraph.graph_scores``: Kendall tau for layout, eq. 10 for
tile). Several folders on a side (e.g. the same run with other ``--seed`` values) are
averaged graph by graph, so training noise does not decide the comparison. A row gives
both means and the per-graph gain with the paired bootstrap interval of
``dagopt.bench.bootstrap.paired_interval`` (95 %, 2,000 resamples of the graphs);
``--per-graph`` then lists every graph's score in each folder and each folder's mean
(one seed's score, where a side holds several seeds); ``--graphs-matching``
scores only the graphs whose name matches a regular expression (a subset of a split,
such as the programs at some sequence lengths). ``--variants B A`` compares variant ``B``
of the ``--before`` folders with variant ``A`` of the ``--after`` ones (say the TpuGraphs
baseline with TGraph) instead of each variant with itself.
"""

import re
import sys
from pathlib import Path

import numpy as np
import torch

from dagopt.bench.bootstrap import paired_interval
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import pattern, positive_int, run_script, script_parser
from dagopt.errors import InputError
from dagopt.io.tpugraphs import COLLECTIONS
from dagopt.rank.tgraph import graph_scores, load_ranker
from dagopt.train.tgraph import load_graphs


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="folder holding npz/")
    parser.add_argument("--split", default="valid", help="split to score (labelled)")
    parser.add_argument("--before", type=Path, nargs="+", required=True, help="work folders")
    parser.add_argument("--after", type=Path, nargs="+", required=True, help="work folders")
    parser.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=COLLECTIONS)
    parser.add_argument("--tta", type=positive_int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-graph", action="store_true", help="then every graph's scores")
    parser.add_argument(
        "--graphs-matching", type=pattern, help="only graphs whose name matches (re.search)"
    )
    parser.add_argument(
        "--variants", nargs=2, metavar=("BEFORE", "AFTER"), help="compare these two variants"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    works = [*args.before, *args.after]
    for work in works:
        if not work.is_dir():
            raise InputError(f"{work}: no such folder (a tgraph_table2.py --work folder)")
    header = ["collection", "variant", "graphs", "before", "after", "gain (95% CI)"]
    print(markdown_row(header))
    print(markdown_rule("llrrrr"))
    listings = []
    for collection in args.collections:
        graphs = None
        folder = collection.replace(":", "-")
        trained = sorted(p.parent.name for p in (args.after[0] / folder).glob("*/model.pt"))
        for pair in [tuple(args.variants)] if args.variants else [(v, v) for v in trained]:
            variant = pair[0] if pair[0] == pair[1] else " -> ".join(pair)
            runs = [w / folder / pair[0] for w in args.before]
            runs += [w / folder / pair[1] for w in args.after]
            missing = [run for run in runs if not (run / "model.pt").is_file()]
            if missing:
                if args.variants:
                    print(f"{collection}: no model in {missing[0]}, skipped", file=sys.stderr)
                continue
            graphs = graphs or _selected(
                load_graphs(args.data, collection, [args.split], deduplicate=False),
                args.graphs_matching,
            )
            scores = np.array(
                [
                    graph_scores(load_ranker(run / "model.pt"), graphs, permutations=args.tta)
                    for run in runs
                ]
            )
            before = scores[: len(args.before)].mean(axis=0)
            after = scores[len(args.before) :].mean(axis=0)
            gain = paired_interval(after, before, args.seed)
            cells = [collection, variant, str(len(graphs)), f"{before.mean():.4f}"]
            print(markdown_row([*cells, f"{after.mean():.4f}", gain]), flush=True)
            listings.append((collection, variant, runs, graphs, scores))
    if not listings:
        raise InputError(
            "no collection and variant has a model in every folder: --before and --after "
            "take tgraph_table2.py --work folders (WORK/<collection>/<variant>/model.pt)"
        )
    for collection, variant, works, graphs, scores in listings if args.per_graph else []:
        print(f"\n{collection} {variant}, per graph:\n")
        print(markdown_row(["graph", *(str(w) for w in works)]))
        print(markdown_rule("l" + "r" * len(works)))
        for graph, row in zip(graphs, scores.T, strict=True):
            print(markdown_row([graph.name, *(f"{x:.3f}" for x in row)]))
        print(markdown_row(["mean", *(f"{x:.4f}" for x in scores.mean(axis=1))]))
    return 0


def _selected(graphs: list, pattern: re.Pattern | None) -> list:
    """``graphs`` whose name ``pattern`` finds (all of them without one); none is an error."""
    chosen = [g for g in graphs if pattern is None or pattern.search(g.name)]
    if not chosen:
        raise InputError(f"no graph name matches {pattern.pattern!r}")
    return chosen


if __name__ == "__main__":
    run_script(main)
