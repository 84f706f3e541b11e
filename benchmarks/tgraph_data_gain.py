"""Two ``tgraph_table2.py`` work folders, trained alike on different data, scored on the
same split graph by graph: what more training data (issue 20) changed.

    python benchmarks/tgraph_data_gain.py --data datasets/configs --split valid \\
        --before runs/tgraph_valid_old --after runs/tgraph_valid_grown

For each collection and variant trained in both folders (``<work>/<collection>/<variant>/
model.pt``), the two ensembles score the split's graphs with the same test-time
augmentation (``dagopt.rank.tgraph.graph_scores``: Kendall tau for layout, eq. 10 for
tile); a row gives both means and the per-graph gain with the paired bootstrap interval
of ``dagopt.bench.bootstrap.paired_interval`` (95 %, 2,000 resamples of the graphs).
"""

import argparse
import sys
from pathlib import Path

import torch

from dagopt.bench.bootstrap import paired_interval
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.io.tpugraphs import COLLECTIONS
from dagopt.rank.tgraph import graph_scores, load_ranker
from dagopt.train.tgraph import load_graphs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder holding npz/")
    parser.add_argument("--split", default="valid", help="split to score (labelled)")
    parser.add_argument("--before", type=Path, required=True, help="work folder, old data")
    parser.add_argument("--after", type=Path, required=True, help="work folder, new data")
    parser.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=COLLECTIONS)
    parser.add_argument("--tta", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    header = ["collection", "variant", "graphs", "before", "after", "gain (95% CI)"]
    print(markdown_row(header))
    print(markdown_rule("llrrrr"))
    for collection in args.collections:
        graphs = None
        folder = collection.replace(":", "-")
        for variant in sorted(p.parent.name for p in (args.after / folder).glob("*/model.pt")):
            runs = [work / folder / variant for work in (args.before, args.after)]
            if not (runs[0] / "model.pt").is_file():
                continue
            graphs = graphs or load_graphs(args.data, collection, [args.split], deduplicate=False)
            before, after = (
                graph_scores(load_ranker(run / "model.pt"), graphs, permutations=args.tta)
                for run in runs
            )
            gain = paired_interval(after, before, args.seed)
            cells = [collection, variant, str(len(graphs)), f"{before.mean():.4f}"]
            print(markdown_row([*cells, f"{after.mean():.4f}", gain]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
