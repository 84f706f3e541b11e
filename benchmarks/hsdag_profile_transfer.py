"""Paper 004 with the hardware out of the training loop: every placer trains on the
PREDICTED latency of a measured CPU + GPU profile (``--env profiled``), then the
placements it found are MEASURED on the hardware, in PyTorch.

    python benchmarks/hsdag_profile_transfer.py place --out placements.json   # any machine
    python benchmarks/hsdag_profile_transfer.py measure placements.json       # GPU machine

(``place --models`` in several processes writes several files; ``measure`` takes them all.)

``place`` trains HSDAG, Placeto and the RNN placer with Table 4's budget (``--episodes``
x 20 predicted placements) and gives BRKGA as many evaluations, on the shipped profile
of each model on ``--devices`` (``dagopt/data/hsdag-profile-MODEL-cpu-cuda0.json``), and
writes each final placement by op name with its predicted latency. ``measure`` builds
the same models in PyTorch on the same devices (the op names must match: the same
PyTorch and transformers versions export the same graph), and measures CPU-only,
GPU-only and every placement in ``--rounds`` interleaved rounds (round r measures each
once); it prints the median and 95 % interval in milliseconds, one model at a time, and
stops starting new models after ``--deadline`` seconds.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from dagopt.bench.latency_envs import (
    LEARNED_PLACERS,
    PAPER_MODELS,
    interval,
    latency_env,
    train_placers,
)
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.io.atomic import write_text_atomic


def place_all(args: argparse.Namespace) -> int:
    """Train every placer on each model's profile; write the placements."""
    result = {"devices": args.devices, "seed": args.seed, "episodes": args.episodes,
              "torch": torch.__version__, "transformers": transformers.__version__,
              "models": {}}  # fmt: skip
    for model in args.models:
        target = latency_env(model, "profiled", args.devices, seed=args.seed)
        graph, env = target.graph, target.env
        rows = {}
        methods = (*LEARNED_PLACERS, "brkga")
        for method, found, seconds in train_placers(
            graph, env, methods, episodes=args.episodes, seed=args.seed
        ):
            rows[method] = {"predicted": found.makespan, "seconds": seconds,
                            "placement": dict(zip(graph.names, found.device_of.tolist(),
                                                  strict=True))}  # fmt: skip
            print(f"{model} {method}: predicted {1e3 * found.makespan:.3f} ms, trained "
                  f"{seconds:.0f} s", flush=True)  # fmt: skip
        result["models"][model] = rows
        write_text_atomic(args.out, json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


def measure_all(args: argparse.Namespace) -> int:
    """Measure the placements of ``args.placements`` on the hardware (module docstring)."""
    files = [json.loads(Path(path).read_text()) for path in args.placements]
    devices = files[0]["devices"]
    if any(saved["devices"] != devices for saved in files):
        raise SystemExit("the placement files were trained for different devices")
    began = time.perf_counter()
    print(f"MEASURED in PyTorch {torch.__version__} on {','.join(devices)}; placements "
          f"trained on PREDICTED latency (torch {files[0]['torch']}); latencies in ms")  # fmt: skip
    models = {model: rows for saved in files for model, rows in saved["models"].items()}
    for model, rows in models.items():
        if time.perf_counter() - began > args.deadline:
            print(f"\n{model}: not measured, past the {args.deadline:.0f} s deadline")
            continue
        target = latency_env(model, "torch", devices)
        graph, env = target.graph, target.env
        names = set(graph.names)
        for method, row in rows.items():
            if set(row["placement"]) != names:
                raise SystemExit(
                    f"{model} {method}: the placement's op names differ from this export "
                    "(another PyTorch or transformers version)"
                )
        final = {"CPU-only": np.zeros(graph.num_nodes, np.int64),
                 "GPU-only": np.ones(graph.num_nodes, np.int64)}  # fmt: skip
        for method, row in rows.items():
            final[method] = np.array([row["placement"][name] for name in graph.names])
        measured: dict[str, list[float]] = {name: [] for name in final}
        for _ in range(args.rounds):
            for name, device_of in final.items():
                measured[name].append(env.evaluate(device_of, None, "runtime").makespan)
        gpu = interval(measured["GPU-only"])[0]
        print(f"\n{model} ({env.failures} failed placements)")
        print("| method | predicted | measured median [95 % interval] | vs GPU-only % |")
        print("|---|---|---|---|")
        for name, values in measured.items():
            med, low, high = interval(values)
            predicted = rows[name]["predicted"] if name in rows else None
            shown = "" if predicted is None else f"{1e3 * predicted:.3f}"
            print(f"| {name} | {shown} | {1e3 * med:.3f} [{1e3 * low:.3f}, {1e3 * high:.3f}] "
                  f"| {100 * (med / gpu - 1):+.1f} |")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    train = verbs.add_parser("place", help="train on the profiles, write placements")
    train.add_argument("--out", required=True)
    train.add_argument("--models", nargs="+", default=list(PAPER_MODELS), choices=PAPER_MODELS)
    train.add_argument("--devices", default="cpu,cuda:0")
    train.add_argument("--episodes", type=positive_int, default=100)
    train.add_argument("--seed", type=int, default=0)
    run = verbs.add_parser("measure", help="measure saved placements on the hardware")
    run.add_argument("placements", nargs="+", help="files written by place")
    run.add_argument("--rounds", type=int, default=10)
    run.add_argument("--deadline", type=float, default=float("inf"), help="seconds")
    args = parser.parse_args(argv)
    if args.verb == "place":
        args.devices = args.devices.split(",")
        return place_all(args)
    return measure_all(args)


if __name__ == "__main__":
    run_script(main)
