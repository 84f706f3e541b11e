"""torch.compile'd zoo models: Inductor's kernel order against dagopt's, measured.

    python benchmarks/compiled_training.py                    # the 11 zoo models, 10 s
    python benchmarks/compiled_training.py --models gpt2 t5-small --time-limit 5
    python benchmarks/compiled_training.py --mode inference
    python benchmarks/compiled_training.py --models resnet-50 --channels-last
    python benchmarks/compiled_training.py --models efficientnet-b0 --channels-last \
        --contiguous-depthwise

Each zoo model (small size, random weights, dropout as configured) is compiled by
``torch.compile`` on the CPU twice (``dagopt.bench.compiled.compiled_run``): by Inductor
alone, and with dagopt's scheduler pass (``dagopt.schedule.compiled.kernel_order``:
``--method`` for ``--time-limit`` seconds per compiled graph, seed 0, then the local
search on the generated code's memory for ``--refine-limit`` seconds, 5 by default),
which keeps the least estimated peak of dagopt's order and Inductor's own heuristics'. In
``--mode training`` (the default) a run is the training step
(``dagopt.integrations.torch_compile.training_step``: ``TrainingLoss`` forward,
``backward``), in ``inference`` the forward under ``torch.no_grad()``. Columns:

- ``kernels``: Inductor's fused kernels of each compiled graph (forward / backward);
- ``Inductor est.`` / ``dagopt est.``: the peak estimate (MB; ``dagopt.io.inductor_codegen``:
  the memory the generated code holds, extern kernels' workspaces included), per graph,
  of the order each compiled model runs: Inductor's own pass runs the candidate of least
  estimate by Inductor's ``estimate_peak_memory`` (named in brackets: the given order,
  ``lpmf``, ``bfs`` or ``dfs``); with dagopt, dagopt's order, starred, where it is below
  the least of those candidates by the generated code's memory by at least
  ``--min-gain`` (default 0), else that candidate (named);
- measured peaks (``peak_site``: the CPU allocator's live bytes over one whole run,
  gradients set to ``None`` first) of the two compiled models, and the change;
- ``peak in``: where each run was at its peak (``REGIONS`` of
  ``dagopt.integrations.torch_compile``: gradient accumulation, the backward graph,
  another compiled graph, outside them), and ``gradient copies``: how many gradients
  autograd copied into their parameters' layouts in Inductor's run, their MB and the
  largest's (``--channels-last`` converts the model's 4-d weights to channels-last
  first, the layout in which Inductor returns convolution weights' gradients, and
  ``--contiguous-depthwise`` leaves its depthwise weights' strides contiguous:
  ``channels_last_weights`` of ``dagopt.integrations.torch_compile``);
- ``diff dagopt / rerun``: the largest difference of dagopt's gradients (outputs, in
  inference) from Inductor's, relative to the largest entry, beside that of Inductor's
  from a rerun of itself (each run after ``torch.manual_seed(0)``, so dropout draws the
  same masks): compiled CPU code is not always bitwise reproducible run to run, and
  reordering should change nothing beyond that;
- seconds: the first call (compiling; with dagopt, its search too) and the median of
  ``--repeats`` runs after it, run one compiled model after the other (not
  interleaved: a reset Dynamo state recompiles).
"""

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import (
    add_zoo_search_options,
    check_zoo_models,
    non_negative_float,
    positive_int,
    run_script,
    script_parser,
)

HEADER = (
    "model",
    "kernels per graph",
    "Inductor est. MB",
    "dagopt est. MB",
    "measured Inductor MB",
    "measured dagopt MB",
    "change %",
    "peak in Inductor / dagopt",
    "gradient copies: count / MB / largest MB",
    "diff dagopt / rerun",
    "compile s Inductor / dagopt",
    "run s Inductor / dagopt",
)


def _row(name: str, args) -> tuple[list[str], float]:
    from dagopt.bench.compiled import compiled_run, relative_difference
    from dagopt.integrations.torch_compile import channels_last_weights
    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    if args.channels_last:
        channels_last_weights(module, depthwise=not args.contiguous_depthwise)
    common = {"mode": args.mode, "repeats": args.repeats}
    alone = compiled_run(module, inputs, **common)
    ordered = compiled_run(
        module,
        inputs,
        method=args.method,
        time_limit=args.time_limit,
        seed=0,
        min_gain=args.min_gain,
        workspaces=args.workspaces,
        refine_limit=args.refine_limit,
        **common,
    )
    reports = ordered.reports
    change = 100 * (ordered.peak / alone.peak - 1)
    copies = alone.site.gradient_copies
    cells = [
        f"{name} ({args.mode}{', channels-last' * args.channels_last}"
        f"{', depthwise contiguous' * args.contiguous_depthwise})",
        " / ".join(str(r.kernels) for r in reports),
        " / ".join(f"{r.inductor_peak / 1e6:.3f} ({r.inductor_choice})" for r in reports),
        " / ".join(
            f"{r.chosen_peak / 1e6:.3f}{'*' if r.applied else f' ({r.best_candidate})'}"
            for r in reports
        ),
        f"{alone.peak / 1e6:.3f}",
        f"{ordered.peak / 1e6:.3f}",
        f"{change:+.2f}",
        f"{alone.site.region} / {ordered.site.region}",
        f"{len(copies)} / {sum(copies) / 1e6:.3f} / {max(copies, default=0) / 1e6:.3f}",
        f"{relative_difference(ordered.results, alone.results):.1e} / {alone.rerun_difference:.1e}",
        f"{alone.compile_seconds:.1f} / {ordered.compile_seconds:.1f}",
        f"{alone.run_seconds:.3f} / {ordered.run_seconds:.3f}",
    ]
    return cells, change


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    from dagopt.bench.compiled import MODES
    from dagopt.zoo import model_names

    add_zoo_search_options(parser, model_names())
    parser.add_argument("--mode", choices=MODES, default="training", help="what runs")
    parser.add_argument("--method", default="anytime", help="dagopt ordering method")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed runs of each")
    parser.add_argument(
        "--min-gain", type=float, default=0.0, help="the pass's min_gain (a fraction)"
    )
    parser.add_argument(
        "--refine-limit",
        type=non_negative_float,
        default=5.0,
        help="seconds per graph of the local search on the generated code's memory (0: none)",
    )
    parser.add_argument(
        "--channels-last",
        action="store_true",
        help="convert the model's 4-d weights to channels-last first",
    )
    parser.add_argument(
        "--contiguous-depthwise",
        action="store_true",
        help="with --channels-last, depthwise convolution weights keep contiguous strides",
    )
    parser.add_argument(
        "--no-workspaces",
        dest="workspaces",
        action="store_false",
        help="extern kernels' workspaces not measured nor counted",
    )
    args = parser.parse_args(argv)
    if args.contiguous_depthwise and not args.channels_last:
        parser.error("--contiguous-depthwise needs --channels-last")
    check_zoo_models(args.models)
    from dagopt.schedule import get_solver

    get_solver(args.method)
    print(markdown_row(list(HEADER)))
    print(markdown_rule("ll" + "r" * 5 + "ll" + "r" * (len(HEADER) - 9)))
    changes = []
    for name in args.models:
        row, change = _row(name, args)
        changes.append(change)
        print(markdown_row(row), flush=True)
    print(f"\nmeasured change of the peak, dagopt vs Inductor: mean {np.mean(changes):+.2f} %")
    return 0


if __name__ == "__main__":
    run_script(main)
