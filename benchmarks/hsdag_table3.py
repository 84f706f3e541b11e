"""Paper 004, Table 3: HSDAG with each feature group switched off, and graph parsing
repeated until it converges (the authors' released code) instead of one level.

    python benchmarks/hsdag_table3.py                        # SIMULATED CPU + GPU
    python benchmarks/hsdag_table3.py --env profiled         # PREDICTED, CPU-only profiles
    python benchmarks/hsdag_table3.py --env torch --devices cpu,cuda:0     # GPU machine

Every variant trains with Table 4's budget (100 x 20 placements) in the same
environment (``dagopt.bench.latency_envs``; no noise unless ``--noise``), on seeds 0, 1,
2; the table gives the latency of the best placement (ms, median over the seeds) and
the speedup over CPU-only. Paper rows: "w/o output shape" (``ablate=output_shape``),
"w/o node ID" (the positional encoding of the topological index,
``ablate=positional``), "w/o graph structural features" (fractal dimension and
degrees, ``ablate=fractal,degrees``); beyond the paper: without the op type, and
``parsing_levels=null``.
"""

import statistics

import numpy as np

from dagopt.bench.latency_envs import (
    KINDS,
    PAPER_MODELS,
    add_env_arguments,
    env_devices,
    latency_env,
)
from dagopt.bench.script import run_script, script_parser
from dagopt.place import place

#: (row, hsdag options, paper 004 Table 3 seconds for Inception-V3, ResNet, BERT).
VARIANTS = (
    ("Original", {}, (0.0105, 0.00766, 0.00267)),
    ("w/o output shape", {"ablate": "output_shape"}, (0.0117, 0.00768, 0.00278)),
    ("w/o node ID", {"ablate": "positional"}, (0.0117, 0.00768, 0.00279)),
    ("w/o graph structural features", {"ablate": "fractal,degrees"}, (0.0109, 0.00766, 0.00268)),
    ("w/o op type (beyond the paper)", {"ablate": "op_type"}, None),
    ("parsing until convergence (released code)", {"parsing_levels": None}, None),
)
PAPER_CPU = (0.0128, 0.0160, 0.00638)


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_env_arguments(parser)
    parser.add_argument("--noise", type=float, default=0.0)
    args = parser.parse_args(argv)
    devices = env_devices(args.env, args.devices)
    print(f"paper 004 Table 3 in the {args.env} environment on {','.join(devices)} "
          f"({KINDS[args.env]}); latency in ms (median over seeds) and speedup % over "
          "CPU-only")  # fmt: skip
    print("| variant | " + " | ".join(f"{m} ms | speedup % | paper ms" for m in args.models) + " |")
    print("|---|" + "---|---|---|" * len(args.models))
    table: dict[str, list[str]] = {name: [] for name, _, _ in VARIANTS}
    cpu_rows = []
    for model in args.models:
        index = list(PAPER_MODELS).index(model)
        target = latency_env(model, args.env, devices, noise=args.noise)
        n = target.graph.num_nodes
        cpu = target.env.evaluate(np.zeros(n, np.int64), None, "runtime").makespan
        for name, options, paper in VARIANTS:
            latencies = [
                place(target.graph, "hsdag", cost_model=target.env, seed=seed,
                      episodes=args.episodes, **options).info["best_latency"]
                for seed in args.seeds
            ]  # fmt: skip
            latency = statistics.median(latencies)
            theirs = "" if paper is None else f"{1e3 * paper[index]:.2f}"
            table[name].append(f"{1e3 * latency:.3f} | {100 * (1 - latency / cpu):.1f} | {theirs}")
        cpu_rows.append(f"{1e3 * cpu:.3f} | 0 | {1e3 * PAPER_CPU[index]:.2f}")
    for name, cells in [("CPU-only", cpu_rows), *table.items()]:
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    run_script(main)
