"""Thread pools: import order, numba's threading layer and OpenMP's waiting policy.

    python benchmarks/thread_pools.py

Each case runs in a fresh subprocess with no thread settings in its environment except
the case's own: one REINFORCE batch (8 layered graphs of 200 nodes, forward + backward,
1 torch thread) and one approx-dp run (K=10000, 500 nodes); first on an otherwise idle
machine, then while a second process keeps the cores busy (approx-dp in a loop, as when
a benchmark and a training run share a machine). Cases: dagopt imported first (OpenMP
pool, dagopt sets OMP_WAIT_POLICY=PASSIVE), torch imported first (dagopt then picks
numba's workqueue pool), and torch first with the OpenMP pool forced (what dagopt
avoids).
"""

import argparse
import json
import os
import signal
import subprocess
import sys

from dagopt.bench.script import run_script

CHILD = r"""
import json, sys, time
if sys.argv[1] == "dagopt-first":
    import dagopt
import numpy as np, torch
import dagopt, numba
torch.set_num_threads(1)
from dagopt.generate import generate_layered
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.schedule import solve
from dagopt.rl.baselines import GreedyRolloutBaseline
from dagopt.train.ordering import PeakMemoryEnv, reinforce_loss

config = EncoderConfig(dim=64, layers=3, heads_per_group=(2,) * 7, head_dim=16)
policy = PriorityModel(config)
baseline = GreedyRolloutBaseline(PriorityModel(config), PeakMemoryEnv().greedy_rewards)
graphs = [generate_layered(200, seed=i) for i in range(8)]
rng = np.random.default_rng(0)
reinforce_loss(policy, baseline, graphs, rng)[0].backward()
start = time.perf_counter()
reinforce_loss(policy, baseline, graphs, rng)[0].backward()
batch = time.perf_counter() - start
solve(generate_layered(60, seed=1), "approx-dp", beam_width=10)
dp = solve(generate_layered(500, seed=0), "approx-dp", beam_width=10_000).seconds
print(json.dumps({"batch": batch, "dp": dp, "layer": numba.threading_layer()}))
"""


CASES = {
    "dagopt first": ("dagopt-first", {}),
    "torch first": ("torch-first", {}),
    "torch first, OpenMP pool forced": ("torch-first", {"NUMBA_THREADING_LAYER": "omp"}),
}
THREAD_VARIABLES = ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")


def measure(order: str, settings: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES} | settings
    out = subprocess.run(
        [sys.executable, "-c", CHILD, order], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


LOAD = r"""
import os, time
from dagopt.generate import generate_layered
from dagopt.schedule import solve
graph = generate_layered(500, seed=1)
end, parent = time.time() + 600, os.getppid()
while time.time() < end and os.getppid() == parent:  # ends with its parent, however killed
    solve(graph, "approx-dp", beam_width=10_000)
"""


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)  # no options: --help, and an unknown argument is a usage error
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # run finally:
    print("| machine | case | numba pool | REINFORCE batch s | approx-dp K=10000 s |")
    print("|---|---|---|---|---|")
    for machine in ("idle", "busy"):
        load = subprocess.Popen([sys.executable, "-c", LOAD]) if machine == "busy" else None
        try:
            for name, (order, settings) in CASES.items():
                r = measure(order, settings)
                row = f"| {machine} | {name} | {r['layer']} | {r['batch']:.3f} | {r['dp']:.2f} |"
                print(row)
        finally:
            if load is not None:
                load.kill()
    return 0


if __name__ == "__main__":
    run_script(main)
