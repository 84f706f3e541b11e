"""Compare ordering methods on a layered graph, next to lower bounds, and save the best order
(proved optimal by the branch bound when it can be).

python examples/order_layered_graph.py --nodes 300 --seed 6 --out best-order.json
"""

import argparse

from dagopt.generate import generate_layered
from dagopt.io import write_order
from dagopt.objectives import (
    branch_bound,
    cut_bound,
    lower_bound,
    meets_bound,
    memory_profile,
    must_live_bound,
)
from dagopt.schedule import solve

parser = argparse.ArgumentParser()
parser.add_argument("--nodes", type=int, default=300)
parser.add_argument("--seed", type=int, default=6)
parser.add_argument("--out", default="best-order.json")
args = parser.parse_args()

graph = generate_layered(args.nodes, seed=args.seed)
print(f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
bound = cut_bound(graph)
print(
    f"lower bounds on the peak: working set {lower_bound(graph):.4g}, "
    f"must-live {must_live_bound(graph):.4g}, cut {bound.bound:.4g} ({bound.cuts} min cuts)"
)

runs = [
    solve(graph, "bfs"),
    solve(graph, "random", seed=0),
    solve(graph, "inductor"),
    solve(graph, "approx-dp", beam_width=5000),
    solve(graph, "dfs-dp", seed=0, time_limit=5),
    solve(graph, "anytime", seed=0, time_limit=10),
]
for schedule in runs:
    above = 100 * (schedule.peak_memory / bound.bound - 1)
    print(
        f"{schedule.method:>10}: peak {schedule.peak_memory:9.6g} ({above:5.2f} % above the cut "
        f"bound) in {schedule.seconds:.3f} s, proved optimal: "
        f"{'yes' if schedule.proved_optimal else 'no'}"
    )

# the first (cheapest) method of the least peak; peaks equal up to float rounding (sums of
# the same sizes in another order) count as equal
least = min(s.peak_memory for s in runs)
best = next(s for s in runs if meets_bound(s.peak_memory, least))
profile = memory_profile(graph, best.order)
print(f"best: {best.method}, peak reached at step {profile.peak_step} of {graph.num_nodes}")
# branch and bound on precedences from the cut bound, stopping if it meets the best peak
proof = branch_bound(graph, upper=best.peak_memory, time_limit=30)
if best.proved_optimal:
    verdict = f"optimal (proved by {best.method} itself)"
elif proof.optimal:
    verdict = "optimal (proved by the branch bound)"
else:
    verdict = f"at most {100 * (best.peak_memory / proof.bound - 1):.2f} % above optimal"
print(f"branch bound {proof.bound:.6g} ({proof.expanded} subproblems): the best order is {verdict}")
write_order(
    args.out,
    graph,
    best.order,
    method=best.method,
    peak_memory=best.peak_memory,
    keep_outputs=False,
    seconds=best.seconds,
    proved_optimal=best.proved_optimal or proof.optimal,
)
print(f"wrote {args.out}")
