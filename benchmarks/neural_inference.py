"""Inference cost of the neural ordering solvers: seconds per graph and peak memory.

    python benchmarks/neural_inference.py                  # 500, 1000, 2000 nodes
    python benchmarks/neural_inference.py --checkpoint runs/mine/model.pt

Each graph size runs in a fresh subprocess (so its peak RSS is its own): the three
``topoformer-*`` solvers (width/samples 16) on one held-out layered graph, after one
warm-up call that loads the model and compiles the kernels. Prints seconds per solver
and the subprocess's peak RSS.
"""

import json
import subprocess
import sys

from dagopt.bench.script import positive_int, run_script, script_parser

CHILD = r"""
import json, resource, sys
from dagopt.bench.datasets import layered_test_set
from dagopt.generate import generate_layered
from dagopt.schedule import solve
size, checkpoint = int(sys.argv[1]), sys.argv[2] or None
options = {"checkpoint": checkpoint} if checkpoint else {}
methods = ["topoformer-greedy", "topoformer-sample", "topoformer-beam"]
for method in methods:
    solve(generate_layered(50, seed=1), method, seed=0, **options)
graph = layered_test_set(size, 1)[0]
seconds = {m: solve(graph, m, seed=0, **options).seconds for m in methods}
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
print(json.dumps({"graph": graph.name, "seconds": seconds, "rss_gib": rss}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--checkpoint", default="")
    args = parser.parse_args(argv)
    print("| graph | greedy s | sample s | beam s | peak RSS GiB |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(size), args.checkpoint],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        s = r["seconds"]
        print(
            f"| {r['graph']} | {s['topoformer-greedy']:.3f} | {s['topoformer-sample']:.3f} "
            f"| {s['topoformer-beam']:.3f} | {r['rss_gib']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    run_script(main)
