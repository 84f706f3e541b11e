"""How much any per-op mutant distribution could help BRKGA: REGAL's ceiling (paper 003).

Example (the numbers in docs/results.md):

    python benchmarks/regal_headroom.py --graphs 16

On validation placement graphs (never the held-out test seeds), two 16 GiB devices,
BRKGA at 5,000 evaluations with ``--repeats`` seeds per graph. A *teacher* is a BRKGA
run of ``--teacher-evaluations``; an *oracle* mutant distribution knows the teacher's
solution, which no policy can, and puts ``beta(c k, c (1 - k))`` (``c`` =
``--concentration``) on each gene with the teacher's key ``k``: its priority keys
(``order_keys``), and 0.75 for the op's device against 0.25 for the other device.

- *uniform*: standard BRKGA 5k;
- *teacher's priority* / *teacher's devices* / *both*: the oracle on those genes only,
  uniform on the rest;
- *inductor order* / *approx-dp order* / *KL partition*: the same centring on solutions
  any compiler can compute without search: priorities from ``dagopt.schedule``'s
  ``inductor`` order (a greedy single-device memory order) or ``approx-dp`` order (the
  approximate DP of paper 000, beam 10,000: a near-minimal single-device peak, the order
  prior of the shipped peak-memory policy), or devices from ``gp-dfs``'s Kernighan-Lin
  partition (``dagopt.place.baselines.partition``), uniform on the rest. They ask
  whether a hand-made prior could stand in for a learned one;
- *shipped policy*: the ``regal`` placer's modal action from the shipped model
  (``DAGOPT_MODEL_DIR`` overrides it).

Each row is the geometric-mean % gap from the best any row (or the teacher) found per
graph and seed. The last column is the share of ops that two teachers (other seeds)
put on the same device, under the better of the two device labellings: 50 % means
their device splits are unrelated, so a per-op device preference learned from one
good solution says nothing about another.
"""

import numpy as np

from dagopt.bench.placement import geomean_gap_percent
from dagopt.bench.script import positive_float, positive_int, run_script, script_parser
from dagopt.generate.placement import generate_placement
from dagopt.generate.seeds import validation_seeds
from dagopt.objectives.costmodel import OBJECTIVES
from dagopt.objectives.devices import GIB, Devices
from dagopt.place.base import PlacementProblem
from dagopt.place.baselines import partition
from dagopt.place.brkga import BrkgaParams, MutantDistributions, run_brkga
from dagopt.place.decode import order_keys
from dagopt.place.prior import DEFAULT_ORDER_PRIOR, order_prior_keys
from dagopt.place.regal import load_policy, policy_distributions
from dagopt.schedule import solve

ROWS = (
    "uniform",
    "teacher's priority",
    "teacher's devices",
    "both",
    "inductor order",
    "approx-dp order",
    "KL partition",
    "shipped policy",
)


def device_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Share of ops on the same device in two 2-device placements, labels matched."""
    same = float(np.mean(a == b))
    return max(same, 1.0 - same)


def measure(objective: str, args) -> tuple[dict[str, list[float]], list[float]]:
    devices = Devices.homogeneous(2, memory=16 * GIB)
    teacher_params = BrkgaParams(evaluations=args.teacher_evaluations)
    gaps: dict[str, list[float]] = {row: [] for row in ROWS}
    agreement = []
    for seed in validation_seeds(args.graphs):
        graph = generate_placement(seed=seed)
        problem = PlacementProblem(graph, devices, objective)
        teachers = [run_brkga(problem, seed=[seed, 3, t], params=teacher_params) for t in (0, 1)]
        if any(t.cost[0] for t in teachers):
            continue
        agreement.append(device_agreement(teachers[0].device_of, teachers[1].device_of))
        policy = load_policy(problem, None)
        distributions = {
            "uniform": None,
            "shipped policy": policy_distributions(
                problem, policy, decode_mode="greedy", seed=seed
            ),
        }
        teacher = teachers[0]
        split = partition(graph, devices.speeds, np.random.default_rng(seed))
        for row, centre in (
            ("teacher's priority", {"priority_keys": order_keys(teacher.order)}),
            ("teacher's devices", {"device_of": teacher.device_of}),
            ("both", {"priority_keys": order_keys(teacher.order), "device_of": teacher.device_of}),
            ("inductor order", {"priority_keys": order_keys(solve(graph, "inductor").order)}),
            ("approx-dp order", {"priority_keys": order_prior_keys(graph, DEFAULT_ORDER_PRIOR)}),
            ("KL partition", {"device_of": split}),
        ):
            distributions[row] = MutantDistributions.centred(
                graph.num_nodes, 2, args.concentration, **centre
            )
        for r in range(args.repeats):
            costs = {
                row: run_brkga(problem, seed=[seed, 4, r], distributions=d).cost
                for row, d in distributions.items()
            }
            feasible = [value for infeasible, value in costs.values() if not infeasible]
            best = min([*feasible, teachers[0].cost[1], teachers[1].cost[1]])
            for row, (infeasible, value) in costs.items():
                gaps[row].append(np.inf if infeasible else value / best)
    return gaps, agreement


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--graphs", type=positive_int, default=16, help="validation graphs")
    parser.add_argument("--repeats", type=positive_int, default=3, help="BRKGA seeds per graph")
    parser.add_argument("--teacher-evaluations", type=int, default=30000)
    parser.add_argument("--concentration", type=positive_float, default=20.0)
    args = parser.parse_args(argv)
    print(
        "| objective | "
        + " | ".join(f"{row}: gap %" for row in ROWS)
        + " | teachers' device agreement % |"
    )
    print("|---" * (len(ROWS) + 2) + "|")
    for objective in OBJECTIVES:
        gaps, agreement = measure(objective, args)
        cells = " | ".join(f"{geomean_gap_percent(gaps[row]):.2f}" for row in ROWS)
        print(f"| {objective} | {cells} | {100 * np.mean(agreement):.1f} |")
    return 0


if __name__ == "__main__":
    run_script(main)
