"""Compare ordering methods on a layered graph and save the best order.

python examples/order_layered_graph.py --nodes 300 --seed 7 --out best-order.json
"""

import argparse

from dagopt.generate import generate_layered
from dagopt.io import write_order
from dagopt.objectives import lower_bound, memory_profile
from dagopt.schedule import solve

parser = argparse.ArgumentParser()
parser.add_argument("--nodes", type=int, default=300)
parser.add_argument("--seed", type=int, default=7)
parser.add_argument("--out", default="best-order.json")
args = parser.parse_args()

graph = generate_layered(args.nodes, seed=args.seed)
print(f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
print(f"lower bound on the peak: {lower_bound(graph):.4g}")

runs = [
    solve(graph, "bfs"),
    solve(graph, "random", seed=0),
    solve(graph, "inductor"),
    solve(graph, "approx-dp", beam_width=5000),
    solve(graph, "dfs-dp", seed=0, time_limit=5),
]
for schedule in runs:
    print(f"{schedule.method:>10}: peak {schedule.peak_memory:8.4g} in {schedule.seconds:.3f} s")

best = min(runs, key=lambda s: s.peak_memory)
profile = memory_profile(graph, best.order)
print(f"best: {best.method}, peak reached at step {profile.peak_step} of {graph.num_nodes}")
write_order(
    args.out,
    graph,
    best.order,
    method=best.method,
    peak_memory=best.peak_memory,
    seconds=best.seconds,
    proved_optimal=best.proved_optimal,
)
print(f"wrote {args.out}")
