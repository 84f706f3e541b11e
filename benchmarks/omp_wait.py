"""OpenMP waiting policy: numba kernels and torch in one process, ACTIVE vs PASSIVE.

    python benchmarks/omp_wait.py

Runs, in a fresh subprocess per policy, one REINFORCE batch (8 layered graphs of 200
nodes, forward + backward, 1 torch thread) and one approx-dp run (K=10000, 500 nodes),
first on an otherwise idle machine, then while a second process keeps the cores busy
(another approx-dp in a loop, as when a benchmark and a training run share a machine),
and prints the wall times side by side. dagopt sets OMP_WAIT_POLICY=PASSIVE on import
unless the variable is already set; this script shows the trade-off.
"""

import json
import os
import subprocess
import sys

CHILD = r"""
import json, time
import numpy as np, torch
torch.set_num_threads(1)
from dagopt.generate import generate_layered
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.schedule import solve
from dagopt.train.reinforce import reinforce_loss

config = EncoderConfig(dim=64, layers=3, heads_per_group=(2,) * 7, head_dim=16)
policy, baseline = PriorityModel(config), PriorityModel(config)
graphs = [generate_layered(200, seed=i) for i in range(8)]
rng = np.random.default_rng(0)
reinforce_loss(policy, baseline, graphs, rng)[0].backward()
start = time.perf_counter()
reinforce_loss(policy, baseline, graphs, rng)[0].backward()
batch = time.perf_counter() - start
solve(generate_layered(60, seed=1), "approx-dp", beam_width=10)
dp = solve(generate_layered(500, seed=0), "approx-dp", beam_width=10_000).seconds
print(json.dumps({"batch": batch, "dp": dp}))
"""


def measure(policy: str) -> dict:
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


LOAD = r"""
import time
from dagopt.generate import generate_layered
from dagopt.schedule import solve
graph = generate_layered(500, seed=1)
end = time.time() + 600
while time.time() < end:
    solve(graph, "approx-dp", beam_width=10_000)
"""


def main() -> int:
    print("| machine | OMP_WAIT_POLICY | REINFORCE batch s | approx-dp K=10000 s |")
    print("|---|---|---|---|")
    for machine in ("idle", "busy"):
        load = subprocess.Popen([sys.executable, "-c", LOAD]) if machine == "busy" else None
        try:
            for policy in ("ACTIVE", "PASSIVE"):
                r = measure(policy)
                print(f"| {machine} | {policy} | {r['batch']:.3f} | {r['dp']:.2f} |")
        finally:
            if load is not None:
                load.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
