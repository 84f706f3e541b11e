"""Inference time of TGraph model files side by side: a merged ensemble of more seeds
against one of fewer, say (issue 20, docs/results.md "Six seeds merged").

    git show e75999f:src/dagopt/models/tgraph-layout-xla-random/model.pt > /tmp/three.pt
    python benchmarks/tgraph_model_speed.py --data datasets/configs \\
        --collection layout:xla:random --split test \\
        --models /tmp/three.pt src/dagopt/models/tgraph-layout-xla-random/model.pt

Each model scores every configuration of every graph of the split (``dagopt.rank.tgraph.
predict``, ``--tta`` permutations, as ``dagopt rank``), one thread; loading the models
and the graphs is done once before timing and reported apart. Graph by graph, each model
in turn, so load on the shared machine falls on all of them alike; a cell is the least
of ``--repeats`` runs (``dagopt.bench.timing.best_of``).
"""

import sys
import time
from pathlib import Path

import torch

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import best_of
from dagopt.io.tpugraphs import COLLECTIONS, collection_dir, read_tpugraphs
from dagopt.rank.tgraph import load_ranker, predict, prepare


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="folder holding npz/")
    parser.add_argument("--collection", choices=COLLECTIONS, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--models", type=Path, nargs="+", required=True, help="model files")
    parser.add_argument("--tta", type=positive_int, default=10, help="test-time permutations")
    parser.add_argument("--repeats", type=positive_int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    began = time.perf_counter()
    files = sorted(collection_dir(args.data, args.collection, args.split).glob("*.npz"))
    if not files:
        print(
            f"error: no .npz under {args.data} for {args.collection} {args.split}", file=sys.stderr
        )
        return 2
    records = {path.stem: prepare(read_tpugraphs(path)) for path in files}
    models = [load_ranker(path) for path in args.models]
    loading = time.perf_counter() - began
    print(f"loading {len(models)} models and {len(records)} graphs: {loading:.1f} s")
    print(markdown_row(["graph", "configurations", *(f"{p} (s)" for p in args.models)]))
    print(markdown_rule("lr" + "r" * len(models)))
    for name, record in records.items():
        seconds = [
            best_of(args.repeats, lambda m=model, r=record: predict(m, r, permutations=args.tta))
            for model in models
        ]
        cells = [name, str(record.num_configs), *(f"{s:.2f}" for s in seconds)]
        print(markdown_row(cells), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
