"""Speed targets of the foundation (issue: approx-dp, heuristics, objective, graph structure).

    python benchmarks/speed.py            # everything, about two minutes on 2 cores
    python benchmarks/speed.py --quick    # skip approx-dp K=100000 on 500 nodes

Prints one row per measurement: what, graph, seconds (best of --repeat), the target.
Graphs are held-out layered graphs (``dagopt.bench.datasets``).
"""

from dagopt.bench.datasets import layered_test_set
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import best_of
from dagopt.generate import generate_layered
from dagopt.graph import Graph
from dagopt.objectives import peak_memory
from dagopt.schedule import solve

HEURISTICS = ["bfs", "dfs", "random", "lpmf", "inductor-bfs", "inductor-dfs", "inductor"]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the K=100000 DP run")
    parser.add_argument("--repeat", type=positive_int, default=3)
    args = parser.parse_args(argv)

    warm = generate_layered(80, seed=1)  # compile the numba kernels outside the timings
    for method in [*HEURISTICS, "approx-dp"]:
        solve(warm, method, seed=0)
    big = layered_test_set(2000, 1)[0]
    order = solve(big, "bfs").order
    rows = []

    def fresh_structure() -> None:
        src, dst = big.edges
        g = Graph(big.num_nodes, src, dst, mem=big.mem, param_mem=big.param_mem)
        _ = g.closure_matrix, g.transitive_reduction

    structure = best_of(args.repeat, fresh_structure)
    rows.append(("build Graph + closure + reduction", big.name, structure, 1.0))
    evaluation = best_of(20, lambda: peak_memory(big, order))
    rows.append(("peak evaluation of an order", big.name, evaluation, 0.005))
    for method in HEURISTICS:
        seconds = best_of(args.repeat, lambda m=method: solve(big, m, seed=0))
        rows.append((method, big.name, seconds, 0.5))
    rows.append(
        ("approx-dp K=1000", big.name, solve(big, "approx-dp", beam_width=1000).seconds, 30.0)
    )
    if not args.quick:
        g500 = layered_test_set(500, 1)[0]
        rows.append(("approx-dp K=100000", g500.name, solve(g500, "approx-dp").seconds, 300.0))
    print("| measurement | graph | seconds | target s | ok |")
    print("|---|---|---|---|---|")
    for what, graph, seconds, target in rows:
        ok = "yes" if seconds <= target else "NO"
        print(f"| {what} | {graph} | {seconds:.4g} | {target:g} | {ok} |")
    return 0


if __name__ == "__main__":
    run_script(main)
