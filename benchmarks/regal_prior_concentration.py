"""Choose ``brkga-prior``'s concentration on validation graphs (never the test seeds).

Example (the numbers in docs/placement.md):

    python benchmarks/regal_prior_concentration.py --graphs 50

For each validation placement graph with a feasible standard BRKGA result ``H(G, U)``
(two 16 GiB devices, peak memory, 5,000 evaluations, the graph's seed), runs BRKGA with
priority mutants ``beta(c k, c (1 - k))`` around the keys ``k`` of the order prior
(``dagopt.place.prior.DEFAULT_ORDER_PRIOR``) for each ``c`` and prints the mean
``H(G, c) / H(G, U)``, the validation ratio of ``dagopt train placement``.
"""

import numpy as np

from dagopt.bench.script import positive_float, positive_int, run_script, script_parser
from dagopt.generate.placement import placement_graph
from dagopt.generate.seeds import validation_seeds
from dagopt.objectives.devices import GIB, Devices
from dagopt.place.base import PlacementProblem, cost_ratio
from dagopt.place.brkga import MutantDistributions, run_brkga
from dagopt.place.prior import DEFAULT_ORDER_PRIOR, order_prior_keys


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--graphs", type=positive_int, default=50, help="validation graphs")
    parser.add_argument(
        "--concentrations",
        type=positive_float,
        nargs="+",
        default=[7, 20, 50, 100, 300, 1000, 3000, 10000],
    )
    args = parser.parse_args(argv)
    devices = Devices.homogeneous(2, memory=16 * GIB)
    ratios: dict[float, list[float]] = {c: [] for c in args.concentrations}
    for seed in validation_seeds(args.graphs):
        graph = placement_graph(seed)
        problem = PlacementProblem(graph, devices, "peak-memory")
        infeasible, reference = run_brkga(problem, seed=seed).cost
        if infeasible:
            continue
        keys = order_prior_keys(graph, DEFAULT_ORDER_PRIOR)
        for c in args.concentrations:
            guide = MutantDistributions.centred(graph.num_nodes, 2, c, priority_keys=keys)
            ratios[c].append(
                cost_ratio(run_brkga(problem, seed=seed, distributions=guide).cost, reference)
            )
    print("| concentration | graphs | mean H(G, c) / H(G, U) |")
    print("|---|---|---|")
    for c, values in ratios.items():
        print(f"| {c:g} | {len(values)} | {np.mean(values):.4f} |")
    return 0


if __name__ == "__main__":
    run_script(main)
