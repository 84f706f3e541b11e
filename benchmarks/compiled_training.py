"""torch.compile'd training steps of zoo models: Inductor's kernel order against dagopt's.

    python benchmarks/compiled_training.py                    # the 11 zoo models, 10 s
    python benchmarks/compiled_training.py --models gpt2 t5-small --time-limit 5

Each zoo model (small size, random weights, dropout as configured) runs its training
step (``dagopt.integrations.torch_compile.training_step``: ``TrainingLoss`` forward,
``backward``) compiled by ``torch.compile`` on the CPU twice, from a fresh Dynamo state
and with Inductor's FX graph cache off: by Inductor alone, and with dagopt's scheduler
pass (``dagopt.schedule.compiled.kernel_order``: ``--method`` for ``--time-limit``
seconds per compiled graph, seed 0), after which Inductor keeps the least estimated
peak of dagopt's order and its own heuristics'. Columns:

- ``kernels``: Inductor's fused kernels of the forward / backward graph;
- ``Inductor est.`` / ``dagopt est.``: Inductor's own peak estimate (MB,
  ``estimate_peak_memory``) of the best order of its heuristics and of the order it
  keeps with dagopt's pass, per graph;
- measured peaks (``measured_peak``: the CPU allocator's live bytes over one whole
  step, gradients set to ``None`` first) of the two compiled steps, and the change;
- ``grad diff``: the largest gradient difference of dagopt's step from Inductor's,
  relative to the largest gradient entry, beside that of Inductor's step from a rerun
  of itself (each step run after ``torch.manual_seed(0)``, so dropout draws the same
  masks): compiled CPU steps are not always bitwise reproducible run to run (BERT-base:
  about 1e-12), and reordering should change nothing beyond that;
- seconds: the first call (compiling; with dagopt, its search too) and the median of
  ``--repeats`` steps after it, run one compiled step after the other (not
  interleaved: a reset Dynamo state recompiles).
"""

import contextlib
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

HEADER = (
    "model (training)",
    "kernels fwd / bwd",
    "Inductor est. MB fwd / bwd",
    "dagopt est. MB fwd / bwd",
    "measured Inductor MB",
    "measured dagopt MB",
    "change %",
    "grad diff dagopt / rerun",
    "compile s Inductor / dagopt",
    "step s Inductor / dagopt",
)


def _compiled_run(module, inputs, order_pass_context, repeats: int) -> dict:
    """Compile and run the training step under ``order_pass_context``; its measured peak,
    loss, gradients and seconds."""
    from dagopt.integrations.torch_compile import measured_peak, training_step

    torch._dynamo.reset()
    with order_pass_context as order_pass:
        step = training_step(module, inputs)
        module.zero_grad(set_to_none=True)
        start = time.perf_counter()
        step()
        compile_seconds = time.perf_counter() - start
        module.zero_grad(set_to_none=True)
        torch.manual_seed(0)
        peak = measured_peak(step)
        runs = []
        for _ in range(2):
            module.zero_grad(set_to_none=True)
            torch.manual_seed(0)
            step()
            runs.append([p.grad for p in module.parameters() if p.grad is not None])
        seconds = []
        for _ in range(repeats):
            module.zero_grad(set_to_none=True)
            start = time.perf_counter()
            step()
            seconds.append(time.perf_counter() - start)
    torch._dynamo.reset()
    module.zero_grad(set_to_none=True)
    return {
        "peak": peak,
        "grads": runs,
        "compile": compile_seconds,
        "step": statistics.median(seconds),
        "reports": order_pass.reports if order_pass is not None else [],
    }


def _gradient_difference(grads: list, expected: list) -> float:
    """The largest entry of ``grads - expected`` over the largest entry of ``expected``."""
    scale = max(float(e.abs().max()) for e in expected)
    worst = max(float((g - e).abs().max()) for g, e in zip(grads, expected, strict=True))
    return worst / scale


def _row(name: str, method: str, time_limit: float, repeats: int) -> tuple[list[str], float]:
    import torch._inductor.config as inductor_config

    from dagopt.schedule.compiled import kernel_order
    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    alone = inductor_config.patch(fx_graph_cache=False)
    inductor = _compiled_run(module, inputs, _yielding_none(alone), repeats)
    dagopt = _compiled_run(
        module, inputs, kernel_order(method, time_limit=time_limit, seed=0), repeats
    )
    reports = dagopt["reports"]
    change = 100 * (dagopt["peak"] / inductor["peak"] - 1)
    cells = [
        name,
        " / ".join(str(r.kernels) for r in reports),
        " / ".join(f"{r.inductor_peak / 1e6:.3f}" for r in reports),
        " / ".join(f"{r.chosen_peak / 1e6:.3f}" for r in reports),
        f"{inductor['peak'] / 1e6:.3f}",
        f"{dagopt['peak'] / 1e6:.3f}",
        f"{change:+.2f}",
        f"{_gradient_difference(dagopt['grads'][0], inductor['grads'][0]):.1e} / "
        f"{_gradient_difference(inductor['grads'][1], inductor['grads'][0]):.1e}",
        f"{inductor['compile']:.1f} / {dagopt['compile']:.1f}",
        f"{inductor['step']:.3f} / {dagopt['step']:.3f}",
    ]
    return cells, change


@contextlib.contextmanager
def _yielding_none(context):
    with context:
        yield None


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    from dagopt.zoo import model_names

    add_zoo_search_options(parser, model_names())
    parser.add_argument("--method", default="anytime", help="dagopt ordering method")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed steps of each")
    args = parser.parse_args(argv)
    check_zoo_models(args.models)
    from dagopt.schedule import get_solver

    get_solver(args.method)
    print(markdown_row(list(HEADER)))
    print(markdown_rule("ll" + "r" * (len(HEADER) - 2)))
    changes = []
    for name in args.models:
        row, change = _row(name, args.method, args.time_limit, args.repeats)
        changes.append(change)
        print(markdown_row(row), flush=True)
    print(
        f"\nmeasured change of the step's peak, dagopt vs Inductor: mean {np.mean(changes):+.2f} %"
    )
    return 0


if __name__ == "__main__":
    run_script(main)
