"""Paper 004, Table 2: HSDAG against the single devices, the framework's choice, Placeto,
the RNN placer, BRKGA, REGAL and random placements, in one latency environment.

    python benchmarks/hsdag_table2.py                       # SIMULATED CPU + GPU, 3 seeds
    python benchmarks/hsdag_table2.py --env profiled        # PREDICTED from the shipped
                                                            # CPU-only profiles (cpu,cpu)
    python benchmarks/hsdag_table2.py --env profiled --devices cpu,cuda:0  # the H100 ones
    python benchmarks/hsdag_table2.py --env torch --devices cpu,cuda:0      # GPU machine
    python benchmarks/hsdag_table2.py --env openvino --devices cpu,gpu      # GPU machine

Models (``dagopt.bench.latency_envs``): Inception-V3 (299 px), ResNet-50 (224 px) and
BERT-base (8 tokens) from the zoo with random weights. Every learned placer (HSDAG,
Placeto, RNN placer) trains on the model with Table 4's budget, 100 x 20 measured
placements (``--episodes``); BRKGA and REGAL get the same number of evaluations.

HSDAG is reported two ways: ``best seen`` is the latency its best placement had when it
was measured during training (what the paper reports), ``re-measured`` is the median
and 95 % interval of ``--rounds`` fresh measurements of every method's final placement,
interleaved (round r measures every method once). In a noisy environment the best of
2,000 noisy measurements is biased low: the gap is the winner's curse. The simulated
and profiled environments add log-normal noise (``--noise``, 5 % by default) so the
gap is visible there too. Latencies in milliseconds; speedup over CPU-only (device 0)
re-measured. The paper's own numbers (its Table 2, OpenVINO on an Intel CPU + GPU) are
printed beside ours for scale. Each trained method is reported on stderr as it ends, so
a run stopped early still shows what it reached.
"""

import argparse
import sys

import numpy as np

from dagopt.bench.latency_envs import (
    add_env_arguments,
    env_devices,
    interval,
    latency_env,
    train_placers,
)
from dagopt.bench.script import positive_int, run_script, script_parser

#: Paper 004, Table 2 (seconds): CPU-only, GPU-only, OpenVINO-CPU, OpenVINO-GPU,
#: Placeto, RNN-based (None: out of memory), HSDAG.
PAPER = {
    "inception-v3": (0.0128, 0.0120, 0.0128, 0.0138, 0.0116, 0.0128, 0.0105),
    "resnet-50": (0.0160, 0.00781, 0.0234, 0.00876, 0.00932, 0.00875, 0.00766),
    "bert-base": (0.00638, 0.00277, 0.00657, 0.00284, 0.00651, None, 0.00267),
}
PAPER_ROWS = ("CPU-only", "GPU-only", "OpenVINO-CPU", "OpenVINO-GPU", "Placeto",
              "RNN placer", "HSDAG")  # fmt: skip


def run_model(model: str, args: argparse.Namespace, seed: int) -> list[dict]:
    """Every method on ``model`` with ``seed``; rows of name, best seen, re-measured."""
    target = latency_env(model, args.env, args.devices, noise=args.noise, seed=seed)
    env, graph, n = target.env, target.graph, target.graph.num_nodes
    final: dict[str, np.ndarray] = {"CPU-only": np.zeros(n, np.int64)}
    if len(args.devices) > 1:
        final["GPU-only"] = np.ones(n, np.int64)
    methods = ["hsdag", *args.learned, *args.search]  # the search gets HSDAG's budget
    if getattr(env, "runtimes", None) is None:  # REGAL's features read op runtimes:
        methods = [m for m in methods if m != "regal"]  # simulated and profiled only
    seen, seconds = {}, {}
    for method, result, took in train_placers(
        graph, env, methods, episodes=args.episodes, seed=seed
    ):
        seconds[method] = took
        final[method] = result.device_of
        seen[method] = result.info.get("best_latency", result.makespan)
        print(f"  {model} seed {seed}: {method} trained in {took:.0f} s, best seen "
              f"{1e3 * seen[method]:.3f} ms", file=sys.stderr, flush=True)  # fmt: skip
    rng = np.random.default_rng(seed)
    randoms = [env.evaluate(rng.integers(0, env.devices.count, n), None, "runtime").makespan
               for _ in range(args.random)]  # fmt: skip
    measured: dict[str, list[float]] = {name: [] for name in final}
    auto = hasattr(env, "measure_auto")
    if auto:
        measured.update({"OpenVINO AUTO": [], "OpenVINO HETERO auto": []})
    for _ in range(args.rounds):  # interleaved: one measurement of every method per round
        for name, device_of in final.items():
            measured[name].append(env.evaluate(device_of, None, "runtime").makespan)
        if auto:
            for name, device in (("OpenVINO AUTO", "AUTO"), ("OpenVINO HETERO auto", "HETERO")):
                samples = env.measure_auto(device)
                measured[name].append(np.inf if samples is None else env.latency(samples))
    rows = [{"name": name, "seen": seen.get(name), "seconds": seconds.get(name),
             "measured": interval(values)} for name, values in measured.items()]  # fmt: skip
    rows.append({"name": "random (median)", "seen": None, "seconds": None,
                 "measured": interval(randoms)})  # fmt: skip
    for row in rows:
        row["failed"] = env.failures
    return rows


def acceptance(rows: dict[str, dict]) -> str:
    """The issue's checks on re-measured medians: HSDAG at most the best single device,
    at most 1.03 x BRKGA, at least 25 % below the median random placement, trained in
    under 2 minutes."""
    hsdag = rows["hsdag"]["measured"][0]
    single = min(rows[name]["measured"][0] for name in ("CPU-only", "GPU-only") if name in rows)
    checks = {
        "<= best single device": hsdag <= single * (1 + 1e-9),
        ">= 25 % below random median": hsdag <= 0.75 * rows["random (median)"]["measured"][0],
        "< 120 s": rows["hsdag"]["seconds"] < 120,
    }
    if "brkga" in rows:  # not run with --search
        checks["<= 1.03 x BRKGA"] = hsdag <= 1.03 * rows["brkga"]["measured"][0]
    return "acceptance: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in checks.items())


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_env_arguments(parser)
    parser.add_argument(
        "--rounds", type=positive_int, default=20, help="interleaved re-measurements"
    )
    parser.add_argument(
        "--random", type=positive_int, default=200, help="random placements measured"
    )
    parser.add_argument("--noise", type=float, default=0.05, help="simulated / profiled noise")
    parser.add_argument("--learned", nargs="*", default=["placeto", "rnn-placer"],
                        help="learned baselines trained with HSDAG's budget")  # fmt: skip
    parser.add_argument("--search", nargs="*", default=["brkga", "regal"],
                        help="search placers given HSDAG's evaluations")  # fmt: skip
    args = parser.parse_args(argv)
    args.devices = env_devices(args.env, args.devices)
    label = {
        "simulated": "SIMULATED (roofline op times, paper 003's simulator)",
        "profiled": "PREDICTED from the profiles shipped for these devices (measured op"
        " times; cpu,cpu: two CPU 'devices')",
        "torch": "MEASURED in PyTorch",
        "openvino": "MEASURED on OpenVINO HETERO",
    }
    print(f"{label[args.env]} on {','.join(args.devices)}; latencies in ms; noise "
          f"{args.noise if args.env in ('simulated', 'profiled') else 'real'}; rows named as "
          f"the paper's: CPU-only is {args.devices[0]} only, GPU-only "
          f"{args.devices[-1]} only")  # fmt: skip
    for model in args.models:
        for seed in args.seeds:
            rows = run_model(model, args, seed)
            cpu = rows[0]["measured"][0]
            print(f"\n{model}, seed {seed} ({rows[0]['failed']} failed placements)")
            print("| method | best seen in training | re-measured median [95 % interval] "
                  "| speedup % | train s |")  # fmt: skip
            print("|---|---|---|---|---|")
            for row in rows:
                med, low, high = row["measured"]
                seen = "" if row["seen"] is None else f"{1e3 * row['seen']:.3f}"
                train = "" if row["seconds"] is None else f"{row['seconds']:.0f}"
                print(f"| {row['name']} | {seen} | {1e3 * med:.3f} [{1e3 * low:.3f}, "
                      f"{1e3 * high:.3f}] | {100 * (1 - med / cpu):.1f} | {train} |")  # fmt: skip
            print(acceptance({row["name"]: row for row in rows}))
        paper = ", ".join(f"{name} {1e3 * v:.2f}" if v is not None else f"{name} OOM"
                          for name, v in zip(PAPER_ROWS, PAPER[model], strict=True))  # fmt: skip
        print(f"\npaper 004 Table 2, {model} (ms, its CPU + GPU): {paper}")
    return 0


if __name__ == "__main__":
    run_script(main)
