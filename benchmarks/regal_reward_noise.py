"""How noisy REGAL's reward is, and how much room its mutant distributions have.

Example (the numbers in docs/results.md and docs/placement.md):

    python benchmarks/regal_reward_noise.py --graphs 20

On validation placement graphs (never the held-out test seeds), two 16 GiB devices,
BRKGA at 5,000 evaluations, every ratio is ``cost / H(G, U)``, standard BRKGA's cost
with the graph's seed (the reference REGAL training uses, 003 section 2.3):

- *another BRKGA seed*: standard BRKGA with seeds ``graph seed + 1..k``;
- *one op skewed*: the graph's seed, uniform mutants except one op's priority gene,
  drawn from ``beta(5, 1)`` (ops spread over the graph, one run each);
- *priority by latest start*: every op's priority gene from ``beta(5 r, 5 (1 - r))``
  (each parameter at least 0.2), ``r`` the op's rank by earliest latest start on the
  critical path, in ``(0, 1)``: a hand-set distribution, not a learned one;
- *shipped policy*: the ``regal`` placer's modal action from the shipped model
  (``DAGOPT_MODEL_DIR`` overrides it).

These two rows are paired instead: BRKGA with the distribution over standard BRKGA
with the same seed, averaged over the seeds ``graph seed + 1..k``. The graph's own seed
is left out because the shipped models were chosen by their validation ratio with it.

The first two rows give the spread (standard deviation) of the ratio: how much one
BRKGA result moves for reasons other than a good action. The last column counts the
distinct ``(alpha, beta)`` pairs the shipped policy's modal action gives the ops, per
gene, averaged over graphs: 1 means every op gets the same distribution (a "centred"
policy's priority gene counts about one per op, as each op has its own centre). The
column before it is the median over ops and graphs of the priority gene's
concentration ``alpha + beta``: how sharp the policy's priority mutants are.
"""

import numpy as np

from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.generate.placement import generate_placement
from dagopt.generate.seeds import validation_seeds
from dagopt.nn.regal import REGAL_NODE_FEATURES, regal_inputs
from dagopt.objectives.costmodel import OBJECTIVES
from dagopt.objectives.devices import GIB, Devices
from dagopt.place.base import PlacementProblem, cost_ratio
from dagopt.place.brkga import MutantDistributions, run_brkga
from dagopt.place.regal import load_policy, policy_distributions

LATEST_START = REGAL_NODE_FEATURES.index("latest_start")


def _latest_start_priority(problem: PlacementProblem, concentration: float):
    """Mutant distributions whose priority gene favours ops that must start early."""
    latest = regal_inputs(problem.graph, problem.runtimes, problem.devices).x[:, LATEST_START]
    n = latest.shape[0]
    rank = (np.argsort(np.argsort(-latest.numpy())) + 0.5) / n
    uniform = MutantDistributions.uniform(n, problem.num_devices)
    alpha, beta = uniform.alpha.copy(), uniform.beta.copy()
    alpha[:, -1] = np.maximum(concentration * rank, 0.2)
    beta[:, -1] = np.maximum(concentration * (1 - rank), 0.2)
    return MutantDistributions(alpha, beta)


def _one_op_skewed(problem: PlacementProblem, op: int) -> MutantDistributions:
    uniform = MutantDistributions.uniform(problem.graph.num_nodes, problem.num_devices)
    alpha = uniform.alpha.copy()
    alpha[op, -1] = 5.0
    return MutantDistributions(alpha, uniform.beta)


def _ratio(problem, reference: float | None, seed: int, distributions=None) -> float:
    return cost_ratio(run_brkga(problem, seed=seed, distributions=distributions).cost, reference)


def _paired_ratio(problem, uniform: list, seeds: range, distributions) -> float:
    """Mean over ``seeds`` of BRKGA's cost with ``distributions`` over standard BRKGA's
    cost ``uniform`` with the same seed (no reference where that is infeasible)."""
    references = [None if infeasible else value for infeasible, value in uniform]
    return float(
        np.mean(
            [_ratio(problem, r, s, distributions) for s, r in zip(seeds, references, strict=True)]
        )
    )


def measure(objective: str, graphs: int, repeats: int) -> dict[str, list[float]]:
    devices = Devices.homogeneous(2, memory=16 * GIB)
    rows: dict[str, list[float]] = {
        "another BRKGA seed": [],
        "one op skewed": [],
        "priority by latest start": [],
        "shipped policy": [],
        "distinct actions": [],
        "priority concentration": [],
    }
    for seed in validation_seeds(graphs):
        problem = PlacementProblem(generate_placement(seed=seed), devices, objective)
        infeasible, reference = run_brkga(problem, seed=seed).cost
        if infeasible:
            continue
        n = problem.graph.num_nodes
        other_seeds = range(seed + 1, seed + repeats + 1)
        uniform = [run_brkga(problem, seed=s).cost for s in other_seeds]
        rows["another BRKGA seed"] += [cost_ratio(c, reference) for c in uniform]
        rows["one op skewed"] += [
            _ratio(problem, reference, seed, _one_op_skewed(problem, int(v)))
            for v in np.linspace(0, n - 1, repeats).astype(int)
        ]
        policy = load_policy(problem, None)
        learned = policy_distributions(problem, policy, decode_mode="greedy", seed=seed)
        for row, distributions in (
            ("priority by latest start", _latest_start_priority(problem, 5.0)),
            ("shipped policy", learned),
        ):
            rows[row].append(_paired_ratio(problem, uniform, other_seeds, distributions))
        pairs = np.stack([learned.alpha, learned.beta], axis=-1)
        distinct = [len(np.unique(pairs[:, j], axis=0)) for j in range(pairs.shape[1])]
        rows["distinct actions"].append(float(np.mean(distinct)))
        rows["priority concentration"] += (learned.alpha[:, -1] + learned.beta[:, -1]).tolist()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--graphs", type=positive_int, default=20, help="validation graphs")
    parser.add_argument(
        "--repeats", type=positive_int, default=4, help="runs per graph for the spreads"
    )
    parser.add_argument("--objectives", nargs="+", default=OBJECTIVES, choices=OBJECTIVES)
    args = parser.parse_args(argv)
    print(
        "| objective | another BRKGA seed: sd % | one op skewed: sd % | "
        "priority by latest start: mean ratio | shipped policy: mean ratio | "
        "shipped policy: priority concentration | distinct actions per gene |"
    )
    print("|---|---|---|---|---|---|---|")
    for objective in args.objectives:
        rows = measure(objective, args.graphs, args.repeats)
        print(
            f"| {objective} | {100 * np.std(rows['another BRKGA seed']):.2f} "
            f"| {100 * np.std(rows['one op skewed']):.2f} "
            f"| {np.mean(rows['priority by latest start']):.4f} "
            f"| {np.mean(rows['shipped policy']):.4f} "
            f"| {np.median(rows['priority concentration']):.3g} "
            f"| {np.mean(rows['distinct actions']):.2f} |"
        )
    return 0


if __name__ == "__main__":
    run_script(main)
