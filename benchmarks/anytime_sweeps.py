"""What one sweep of `anytime`'s node moves costs and does on a large layered graph.

From Inductor's best order, each sweep scores every node's moves (``node_moves``) and
applies the improving ones over disjoint stretches (``disjoint_moves``): the table gives
the sweep's scoring time, the nodes with an improving move, the moves applied, and the
peak after them. Validation seeds by default (``--split test`` for held-out ones).

    python benchmarks/anytime_sweeps.py                       # 20,000 nodes, 6 sweeps
    python benchmarks/anytime_sweeps.py --nodes 100000 --sweeps 4
"""

import time

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.generate.layered import generate_layered
from dagopt.generate.seeds import test_seeds, validation_seeds
from dagopt.schedule import solve
from dagopt.schedule.anytime import Search


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--nodes", type=positive_int, default=20_000)
    parser.add_argument("--sweeps", type=positive_int, default=6)
    parser.add_argument("--split", choices=("validation", "test"), default="validation")
    args = parser.parse_args(argv)
    seed = (validation_seeds if args.split == "validation" else test_seeds)(1)[0]
    graph = generate_layered(args.nodes, seed=seed)
    search = Search(graph, solve(graph, "inductor").order, keep_outputs=False)
    search.node_moves()  # loads the compiled kernels: set-up, not a sweep
    print(f"layered graph of {args.nodes:,} nodes, seed {seed}, {graph.num_edges:,} edges; "
          f"Inductor's peak {search.peak:.6g}")  # fmt: skip
    print(markdown_row(["sweep", "scoring s", "nodes with a move", "moves applied", "peak"]))
    print(markdown_rule("rrrrr"))
    for sweep in range(1, args.sweeps + 1):
        start = time.perf_counter()
        target, _, _ = search.node_moves()
        seconds = time.perf_counter() - start
        applied = search.descend(1, sweep, np.inf)  # one sweep: its moves are >= 1
        row = [str(sweep), f"{seconds:.3f}", str(int((target >= 0).sum())), str(applied)]
        row.append(f"{search.peak:.6g}")
        print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
