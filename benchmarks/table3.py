"""Paper 000, Table 3 at reduced budget: encoder variants trained alike, then compared.

    python benchmarks/table3.py --epochs 20 --graph-nodes 100 --test-nodes 500 1000 \
        --graphs 5 --run-root runs/table3

Each variant (MLP, fully connected transformer, GAT forward, GAT forward+backward,
Topoformer on DAG edges, full Topoformer) is trained with the same configuration
(``--base-config``, by default the shipped model's, with ``epochs``,
``graph_nodes`` and ``epoch_graphs`` overridden) in ``RUN_ROOT/<kind>``; an
interrupted run resumes there.
Then every trained model decodes the held-out graphs greedily, by sampling and by
beam search, and the table gives the mean % gap from approx-dp (``--beam-widths``)
with a 95 % confidence interval, beside the paper's numbers.
"""

import json
import sys
from pathlib import Path

import numpy as np

from dagopt.bench.datasets import layered_test_set
from dagopt.bench.markdown import markdown_row, markdown_rule, mean_ci
from dagopt.bench.script import add_reduced_training_arguments, run_script, script_parser
from dagopt.schedule import solve
from dagopt.train.ordering import OrderingTrainConfig, train_ordering
from dagopt.train.rundir import MODEL_FILE, STATE_FILE

KINDS = ["mlp", "transformer", "gat-forward", "gat-bidirectional", "topoformer-dag", "topoformer"]
DECODERS = ["topoformer-greedy", "topoformer-sample", "topoformer-beam"]
# Paper 000, Table 3: beam-search % gap from approx. DP at 500 / 1000 nodes.
PAPER_BEAM_GAP = {
    "mlp": (6.5, 2.43),
    "transformer": (6.52, 2.09),
    "gat-forward": (4.22, 0.60),
    "gat-bidirectional": (3.55, 0.39),
    "topoformer-dag": (3.68, 0.35),
    "topoformer": (3.08, 0.05),
}


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_reduced_training_arguments(parser, epochs=20, epoch_graphs=500)
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--run-root", default="runs/table3")
    args = parser.parse_args(argv)
    if len(args.beam_widths) not in (1, len(args.test_nodes)):
        parser.error("--beam-widths needs one value or one per test size")
    widths = dict(zip(args.test_nodes, args.beam_widths * len(args.test_nodes), strict=False))

    base = json.loads(Path(args.base_config).read_text())
    base.update(epochs=args.epochs, graph_nodes=args.graph_nodes, epoch_graphs=args.epoch_graphs)
    root = Path(args.run_root)
    for kind in args.kinds:
        data = dict(base, encoder=dict(base["encoder"], kind=kind))
        config = OrderingTrainConfig.from_dict(data)
        run = root / kind
        done = (run / STATE_FILE).exists()
        history = train_ordering(run, config, resume=done)  # other options: refused
        print(f"{kind}: trained {len(history)} epochs", file=sys.stderr)

    header = ["encoder", "decoding"]
    for size in args.test_nodes:
        header += [f"{size}: gap % (95% CI)", f"{size}: time s"]
    header.append("paper beam gap % 500 / 1000")
    print(markdown_row(header))
    print(markdown_rule("l" * len(header)))
    tests = {size: layered_test_set(size, args.graphs) for size in args.test_nodes}
    refs = {
        size: [solve(g, "approx-dp", beam_width=widths[size]).peak_memory for g in graphs]
        for size, graphs in tests.items()
    }
    for kind in args.kinds:
        model = root / kind / MODEL_FILE
        for decoder in DECODERS:
            row = [kind, decoder.removeprefix("topoformer-")]
            for size, graphs in tests.items():
                runs = [solve(g, decoder, seed=0, checkpoint=model) for g in graphs]
                gaps = [
                    100 * (r.peak_memory / ref - 1) for r, ref in zip(runs, refs[size], strict=True)
                ]
                row += [mean_ci(gaps), f"{np.mean([r.seconds for r in runs]):.3g}"]
            paper = PAPER_BEAM_GAP[kind]
            row.append(f"{paper[0]} / {paper[1]}" if decoder.endswith("beam") else "")
            print(markdown_row(row))
    return 0


if __name__ == "__main__":
    run_script(main)
