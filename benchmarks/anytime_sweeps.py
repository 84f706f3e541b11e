"""What one sweep of `anytime`'s node moves costs and does on a large graph.

From Inductor's best order, each sweep scores every node's moves (``node_moves``),
applies the improving ones over disjoint stretches (``disjoint_moves``), then the ones
it passed over that still improve on the new order: the table gives the sweep's
scoring time, the nodes with an improving move, the moves applied, and the peak after
them. A layered graph of a validation seed by default (``--split test`` for a held-out
one), or a zoo model's training graph (``--zoo``, split outputs). ``--to-optimum`` goes
on sweeping to a local optimum of node moves and says after how many sweeps.

    python benchmarks/anytime_sweeps.py                       # 20,000 nodes, 6 sweeps
    python benchmarks/anytime_sweeps.py --nodes 100000 --sweeps 4
    python benchmarks/anytime_sweeps.py --zoo inception-v3/small/training --to-optimum
"""

import time

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.realgraphs import zoo_key_graph
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
    parser.add_argument("--zoo", metavar="MODEL/SIZE/MODE", help="a zoo graph instead")
    parser.add_argument("--to-optimum", action="store_true", help="sweep to a local optimum")
    args = parser.parse_args(argv)
    if args.zoo:
        graph = zoo_key_graph(args.zoo, split_outputs=True)
        name = args.zoo
    else:
        seed = (validation_seeds if args.split == "validation" else test_seeds)(1)[0]
        graph = generate_layered(args.nodes, seed=seed)
        name = f"layered graph of {args.nodes:,} nodes, seed {seed}"
    search = Search(graph, solve(graph, "inductor").order, keep_outputs=False)
    search.node_moves()  # loads the compiled kernels: set-up, not a sweep
    search.descend(0, 0, np.inf)  # and the descent's: no move
    print(f"{name}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges; "
          f"Inductor's peak {search.peak:.6g}")  # fmt: skip
    print(markdown_row(["sweep", "scoring s", "nodes with a move", "moves applied", "peak"]))
    print(markdown_rule("rrrrr"))
    began = time.perf_counter()
    sweep = 0
    while sweep < args.sweeps or args.to_optimum:
        sweep += 1
        if sweep <= args.sweeps:
            start = time.perf_counter()
            target, _, _ = search.node_moves()
            seconds = time.perf_counter() - start
        applied = search.descend(1, sweep, np.inf)  # one sweep: its moves are >= 1
        if sweep <= args.sweeps:
            row = [str(sweep), f"{seconds:.3f}", str(int((target >= 0).sum())), str(applied)]
            print(markdown_row([*row, f"{search.peak:.6g}"]), flush=True)
        if applied == 0:
            break
    if args.to_optimum:
        print(f"local optimum of node moves after {sweep} sweeps (the last applying none), "
              f"peak {search.peak:.6g}, {time.perf_counter() - began:.2f} s in all")  # fmt: skip
    return 0


if __name__ == "__main__":
    run_script(main)
