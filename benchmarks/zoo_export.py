"""Export every zoo model at each size in both modes; print the catalogue table of docs/zoo.md.

    python benchmarks/zoo_export.py [--models NAME ...] [--sizes small large] [--cache-dir DIR]

Every export runs afresh (``refresh=True``, one at a time in this process) into
``--cache-dir`` (by default a temporary directory), so the times are real export
times: building the model with random weights, ``torch.export`` and the ``Graph``, one
node per operator (``split_outputs=False``, the graphs of the recorded tables). Prints
one markdown row per model and size: nodes and export seconds in inference and training
mode, and the parameter bytes the graph reads.
"""

import sys
import tempfile

from dagopt.bench.markdown import markdown_row
from dagopt.bench.script import run_script, script_parser
from dagopt.zoo import MODELS, SIZES, export_zoo, get_model, model_names

MODES = ("inference", "training")


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--models", nargs="+", default=model_names(), choices=model_names())
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=SIZES)
    parser.add_argument("--cache-dir", default=None, help="default: a temporary directory")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dagopt-zoo-") as scratch:
        cache_dir = args.cache_dir or scratch
        print(
            "| model | size | input | inference nodes | inference s "
            "| training nodes | training s | parameters (MB) |"
        )
        print("|---|---|---|---:|---:|---:|---:|---:|")
        for name in (m.name for m in MODELS if m.name in args.models):
            model = get_model(name)
            for size in args.sizes:
                cells = []
                for mode in MODES:
                    print(f"exporting {name} ({size}, {mode})", file=sys.stderr, flush=True)
                    result = export_zoo(
                        name,
                        size=size,
                        mode=mode,
                        cache_dir=cache_dir,
                        refresh=True,
                        split_outputs=False,
                    )
                    cells += [f"{result.graph.num_nodes:,}", f"{result.seconds:.1f}"]
                megabytes = result.param_bytes / 1e6
                row = [name, size, model.inputs[size], *cells, f"{megabytes:.1f}"]
                print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
