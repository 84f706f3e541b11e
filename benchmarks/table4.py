"""Paper 000, Table 4 at reduced budget: priority (NAR) vs autoregressive decoders.

    python benchmarks/table4.py --epochs 4 --epoch-graphs 250 --graph-nodes 100 \
        --test-nodes 500 1000 --graphs 5 --beam-widths 10000 --run-root runs/table4

Three models are trained with the same configuration (``--base-config``, by default
the shipped model's, with ``epochs``, ``graph_nodes`` and ``epoch_graphs``
overridden; same graphs, seed and baseline), in ``RUN_ROOT/<name>``, where an
interrupted run resumes:

- ``gnn-ar``: the ``--gnn-kind`` encoder (default ``topoformer-dag``, attention only
  along the DAG's edges and their reverses: Kool et al.'s transformer encoder with
  message passing restricted to the input graph, as appendix B describes) plus the
  autoregressive decoder (``dagopt.nn.ar_decoder``);
- ``topoformer-ar``: Topoformer plus the autoregressive decoder;
- ``topoformer-nar``: Topoformer plus the priority decoder (the paper's model).

Every model then decodes the held-out graphs greedily, as the best of S samples and
by beam search of width S (``--decode-widths``, one per test size; the paper's 16 at
500 nodes and 8 at 1000), and the table gives the mean % gap from approx-dp
(``--beam-widths``) and the mean run time, each with a 95 % confidence interval,
beside the paper's Table 4. Training uses ``--threads`` torch threads (default 1).
"""

import json
import sys
from pathlib import Path

import torch

from dagopt.bench.datasets import layered_test_set
from dagopt.bench.markdown import markdown_row, markdown_rule, mean_ci
from dagopt.bench.script import (
    add_reduced_training_arguments,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.nn.encoders import KINDS
from dagopt.schedule import solve
from dagopt.train.ordering import OrderingTrainConfig, train_ordering
from dagopt.train.rundir import MODEL_FILE, STATE_FILE

#: name -> (encoder kind, or None for ``--gnn-kind``; decoder; solver prefix).
MODELS = {
    "gnn-ar": (None, "autoregressive", "topoformer-ar-"),
    "topoformer-ar": ("topoformer", "autoregressive", "topoformer-ar-"),
    "topoformer-nar": ("topoformer", "priority", "topoformer-"),
}
DECODINGS = ("greedy", "sample", "beam")
# Paper 000, Table 4: (% gap, run time s) at 500 and at 1000 nodes, per model and decoding.
PAPER = {
    ("gnn-ar", "greedy"): ("6.13 ± 0.58", "1.66", "1.84 ± 0.39", "3.34"),
    ("gnn-ar", "sample"): ("4.71 ± 0.56", "1.76", "1.38 ± 0.37", "3.59"),
    ("gnn-ar", "beam"): ("4.87 ± 0.61", "4.01", "2.09 ± 0.41", "7.90"),
    ("topoformer-ar", "greedy"): ("4.43 ± 0.55", "1.53", "0.53 ± 0.35", "3.05"),
    ("topoformer-ar", "sample"): ("3.33 ± 0.51", "1.7", "0.05 ± 0.35", "3.38"),
    ("topoformer-ar", "beam"): ("3.14 ± 0.52", "4.27", "0.13 ± 0.36", "7.90"),
    ("topoformer-nar", "greedy"): ("4.31 ± 0.56", "1.04", "0.47 ± 0.36", "1.53"),
    ("topoformer-nar", "sample"): ("3.35 ± 0.52", "1.21", "0.09 ± 0.35", "1.78"),
    ("topoformer-nar", "beam"): ("3.08 ± 0.51", "4.15", "0.2 ± 0.36", "5.57"),
}


def per_size(values: list[int], sizes: list[int], flag: str, parser) -> dict[int, int]:
    """One value for every test size, or one value for all."""
    if len(values) not in (1, len(sizes)):
        parser.error(f"{flag} needs one value or one per test size")
    return dict(zip(sizes, values * len(sizes), strict=False))


def train(args, base: dict, name: str) -> Path:
    """Train (or resume) model ``name`` in ``RUN_ROOT/name``; returns its model file."""
    kind, decoder, _ = MODELS[name]
    encoder = dict(base["encoder"], kind=kind or args.gnn_kind)
    config = OrderingTrainConfig.from_dict(dict(base, encoder=encoder, decoder=decoder))
    run = Path(args.run_root) / name
    done = (run / STATE_FILE).exists()
    history = train_ordering(run, config, resume=done)  # other options: refused
    print(f"{name}: trained {len(history)} epochs", file=sys.stderr)
    return run / MODEL_FILE


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_reduced_training_arguments(parser, epochs=4, epoch_graphs=250)
    parser.add_argument("--decode-widths", type=positive_int, nargs="+", default=[16, 8])
    parser.add_argument("--gnn-kind", default="topoformer-dag", choices=KINDS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--run-root", default="runs/table4")
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args(argv)
    sizes = args.test_nodes
    ref_widths = per_size(args.beam_widths, sizes, "--beam-widths", parser)
    widths = per_size(args.decode_widths, sizes, "--decode-widths", parser)
    torch.set_num_threads(args.threads)

    base = json.loads(Path(args.base_config).read_text())
    base.update(epochs=args.epochs, graph_nodes=args.graph_nodes, epoch_graphs=args.epoch_graphs)
    models = {name: train(args, base, name) for name in args.models}

    header = ["model", "decoding"]
    for size in sizes:
        header += [f"{size}: gap % (95% CI)", f"{size}: time s"]
    header += ["paper 500: gap %", "paper 500: s", "paper 1000: gap %", "paper 1000: s"]
    print(markdown_row(header))
    print(markdown_rule("l" * len(header)))
    tests = {size: layered_test_set(size, args.graphs) for size in sizes}
    refs = {
        size: [solve(g, "approx-dp", beam_width=ref_widths[size]).peak_memory for g in graphs]
        for size, graphs in tests.items()
    }
    for name, model in models.items():
        prefix = MODELS[name][2]
        for decoding in DECODINGS:
            row = [name, decoding]
            for size, graphs in tests.items():
                options = {"samples": widths[size]} if decoding == "sample" else {}
                options |= {"beam_width": widths[size]} if decoding == "beam" else {}
                runs = [
                    solve(g, prefix + decoding, seed=0, checkpoint=model, **options) for g in graphs
                ]
                pairs = zip(runs, refs[size], strict=True)
                gaps = [100 * (r.peak_memory / ref - 1) for r, ref in pairs]
                row += [mean_ci(gaps), mean_ci(r.seconds for r in runs)]
            row += list(PAPER[name, decoding])
            print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
