"""Real training steps of zoo models: eager PyTorch against the same step in dagopt orders.

    python benchmarks/training_step.py                       # the 11 zoo models, 10 s
    python benchmarks/training_step.py --models gpt2 resnet-50 --time-limit 3 --repeats 3

Each zoo model (small size, random weights, every ``nn.Dropout`` at ``p = 0``) is
exported twice as a training graph (``graph_from_module(mode="training",
split_outputs=True)``): decomposed to core ATen (``core``, the zoo's graphs) and in the
operators autograd runs (``core_aten=False``, ``ops``). ``anytime`` orders each
(``--time-limit`` seconds, seed 0, graph outputs kept) and
``dagopt.integrations.torch_step.TrainingStep`` runs it from the same parameters as
the **eager** step (``TrainingLoss(module)`` and ``loss.backward()``). Columns:

- measured peaks (``measure_training_peak``, ``measure_peak``: live tensor storage of a
  real CPU run, gradients set to ``None`` first) of eager's step and of each graph's
  traced and ``anytime`` steps, and ``anytime``'s change from eager;
- ``err``: the ``anytime`` step's largest gradient difference from eager's relative to
  the largest eager gradient entry (rounding: a core graph runs decomposed
  operators); ``random`` where the graph still draws random numbers (a functional
  dropout of non-zero probability), so the steps draw other masks;
- step times: the median of ``--repeats`` timed steps of each kind, interleaved (eager,
  then each ``anytime`` step, then again), after one untimed step of each.

Export, ordering and the numba warm-up are not timed (the two exports' seconds are a
column of their own).
"""

import statistics
import time

import numpy as np
import torch

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import (
    add_zoo_search_options,
    check_zoo_models,
    positive_int,
    run_script,
    script_parser,
)
from dagopt.integrations.torch import eager_training_step

HEADER = (
    "model (training)",
    "nodes core / ops",
    "export s",
    "eager MB",
    "core traced MB",
    "core anytime MB",
    "core vs eager %",
    "ops traced MB",
    "ops anytime MB",
    "ops vs eager %",
    "core err",
    "ops err",
    "eager step s",
    "core step s",
    "ops step s",
)


def _without_dropout(module):
    for layer in module.modules():
        if isinstance(layer, torch.nn.Dropout):
            layer.p = 0.0
    return module


def _gradients(module, run) -> list:
    """The gradients ``run()`` leaves, from ``None`` (``None`` for a parameter it skips)."""
    module.zero_grad(set_to_none=True)
    run()
    return [p.grad for p in module.parameters()]


def _gradient_error(module, inputs, step) -> str:
    """``step``'s largest gradient difference from eager's over the largest eager entry."""
    if any(
        torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())
        for node in step.graph_module.graph.nodes
    ):
        return "random"
    expected = _gradients(module, lambda: eager_training_step(module, inputs))
    got = _gradients(module, lambda: step(*inputs))  # new tensors: eager's stay as they were
    if [g is None for g in got] != [e is None for e in expected]:
        raise AssertionError("the step and eager PyTorch give gradients to other parameters")
    pairs = [(g, e) for g, e in zip(got, expected, strict=True) if e is not None]
    scale = max(float(e.abs().max()) for _, e in pairs)
    worst = max(float((g - e).abs().max()) for g, e in pairs)
    return f"{worst / scale:.1e}"


def _median_times(module, runs, repeats: int) -> list[float]:
    times: list[list[float]] = [[] for _ in runs]
    for repeat in range(repeats + 1):
        for k, run in enumerate(runs):
            module.zero_grad(set_to_none=True)
            start = time.perf_counter()
            run()
            if repeat:  # the first round warms up
                times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _steps(module, inputs, core_aten: bool, time_limit: float):
    """The graph, its export seconds, and its traced and ``anytime`` steps."""
    from dagopt.integrations.torch_step import TrainingStep
    from dagopt.io.torch import graph_from_module
    from dagopt.schedule import solve

    start = time.perf_counter()
    exported = graph_from_module(
        module, inputs, mode="training", split_outputs=True, core_aten=core_aten
    )
    seconds = time.perf_counter() - start
    graph = exported.graph
    order = solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=time_limit).order
    return graph, seconds, TrainingStep(module, exported), TrainingStep(module, exported, order)


def _row(name: str, time_limit: float, repeats: int) -> list[str]:
    from dagopt.integrations.torch import measure_peak, measure_training_peak
    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    module = _without_dropout(module)
    core = _steps(module, inputs, True, time_limit)
    ops = _steps(module, inputs, False, time_limit)
    module.zero_grad(set_to_none=True)
    eager = measure_training_peak(module, inputs).peak
    cells = [
        name,
        f"{core[0].num_nodes:,} / {ops[0].num_nodes:,}",
        f"{core[1]:.1f} / {ops[1]:.1f}",
        f"{eager / 1e6:.3f}",
    ]
    for _, _, traced, searched in (core, ops):
        peaks = [measure_peak(step.graph_module, inputs).peak for step in (traced, searched)]
        cells += [f"{p / 1e6:.3f}" for p in peaks] + [f"{100 * (peaks[1] / eager - 1):+.2f}"]
    cells += [_gradient_error(module, inputs, graph[3]) for graph in (core, ops)]
    seconds = _median_times(
        module,
        [
            lambda: eager_training_step(module, inputs),
            lambda: core[3](*inputs),
            lambda: ops[3](*inputs),
        ],
        repeats,
    )
    module.zero_grad(set_to_none=True)
    return cells + [f"{s:.3f}" for s in seconds]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    from dagopt.zoo import model_names

    add_zoo_search_options(parser, model_names())
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed steps of each")
    args = parser.parse_args(argv)
    check_zoo_models(args.models)
    print(markdown_row(list(HEADER)))
    print(markdown_rule("ll" + "r" * (len(HEADER) - 2)))
    changes: dict[str, list[float]] = {"core": [], "ops": []}
    for name in args.models:
        row = _row(name, args.time_limit, args.repeats)
        for kind in changes:
            changes[kind].append(float(row[HEADER.index(f"{kind} vs eager %")]))
        print(markdown_row(row), flush=True)
    for kind, values in changes.items():
        print(f"\n{kind} anytime vs eager, measured: mean {np.mean(values):+.2f} %", end="")
    print()
    return 0


if __name__ == "__main__":
    run_script(main)
