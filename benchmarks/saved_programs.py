"""Saved PyTorch programs (.pt2) through dagopt: read, ordered, written back, run for real.

    python benchmarks/saved_programs.py                       # the default models, 10 s
    python benchmarks/saved_programs.py --models resnet-50 gpt2 --time-limit 3

Each zoo model (small size, random weights) is exported with ``torch.export.export`` and
saved with ``torch.export.save``, as a user would hand a model to dagopt, twice: in eval
mode and in train mode. The eval-mode file is read as saved (``read_exported_program``),
ordered by ``anytime`` (``--time-limit`` seconds, seed 0), written back in that order
(``write_exported_program``), and both files are run from disk
(``torch.export.load(...).module()``, ``measure_peak``). The train-mode file is read as
the training graph of its forward with each operator output apart
(``mode="training", split_outputs=True``), ordered the same way, and its joint graph is
run in both orders (``reorder``, ``measure_peak``). Printed per graph: nodes, the file's
size, the seconds ``read_exported_program`` took (torch's load, and the joint trace in
training), the traced and the ``anytime`` order's predicted peak (``peak_memory``,
outputs kept) and measured peak, and the measured change. Building and exporting the
model are not timed.
"""

import tempfile
import time
from pathlib import Path

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import (
    add_zoo_search_options,
    check_zoo_models,
    run_script,
    script_parser,
)

MODELS = ("resnet-50", "mobilenet-v2", "inception-v3", "swin-tiny", "gpt2", "bert-base")
HEADER = (
    "model",
    "graph",
    "nodes",
    "file MB",
    "read s",
    "traced predicted MB",
    "traced measured MB",
    "anytime predicted MB",
    "anytime measured MB",
    "measured change %",
)


def _saved(name: str, train: bool, folder: Path) -> tuple[Path, tuple]:
    """Model ``name`` exported in train or eval mode and saved under ``folder``."""
    import torch

    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    module.train(train)
    with torch.no_grad() if not train else torch.enable_grad():
        program = torch.export.export(module, tuple(inputs))
    path = folder / f"{name}-{'train' if train else 'eval'}.pt2"
    torch.export.save(program, path)
    return path, tuple(inputs)


def _rows(name: str, time_limit: float, folder: Path) -> list[list[str]]:
    import torch

    from dagopt.integrations.torch import measure_peak, reorder
    from dagopt.io.torch_program import read_exported_program, write_exported_program
    from dagopt.objectives import peak_memory
    from dagopt.schedule import solve

    rows = []
    for train in (False, True):
        path, inputs = _saved(name, train, folder)
        start = time.perf_counter()
        saved = read_exported_program(
            path, mode="training" if train else "inference", split_outputs=train
        )
        seconds = time.perf_counter() - start
        graph = saved.torch_graph.graph
        traced = np.arange(graph.num_nodes)
        searched = solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=time_limit)
        if train:
            measured = [
                measure_peak(reorder(saved.torch_graph, order), inputs).peak
                for order in (traced, searched.order)
            ]
        else:
            written = write_exported_program(saved, searched.order, folder / f"{name}-any.pt2")
            measured = [
                measure_peak(torch.export.load(file).module(), inputs).peak
                for file in (path, written)
            ]
        cells = [
            name,
            "training, split (joint graph run)" if train else "inference (.pt2 files run)",
            f"{graph.num_nodes:,}",
            f"{path.stat().st_size / 1e6:.1f}",
            f"{seconds:.2f}",
        ]
        for order, real in zip((traced, searched.order), measured, strict=True):
            cells += [
                f"{peak_memory(graph, order, keep_outputs=True) / 1e6:.3f}",
                f"{real / 1e6:.3f}",
            ]
        cells.append(f"{100 * (measured[1] / measured[0] - 1):+.2f}")
        rows.append(cells)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_zoo_search_options(parser, MODELS)
    args = parser.parse_args(argv)
    check_zoo_models(args.models)
    print(markdown_row(list(HEADER)))
    print(markdown_rule("ll" + "r" * (len(HEADER) - 2)))
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models:
            for row in _rows(name, args.time_limit, Path(folder)):
                print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
