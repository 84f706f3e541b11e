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
- *inductor order* / *KL partition*: the same centring on solutions any compiler can
  compute without search: priorities from ``dagopt.schedule``'s ``inductor`` order (the
  best single-device memory order) or devices from ``gp-dfs``'s Kernighan-Lin
  partition (``dagopt.place.baselines.partition``), uniform on the rest. They ask
  whether a hand-made prior could stand in for a learned one;
- *shipped policy*: the ``regal`` placer's modal action from ``checkpoints/``.

Each row is the geometric-mean % gap from the best any row (or the teacher) found per
graph and seed. The last column is the share of ops that two teachers (other seeds)
put on the same device, under the better of the two device labellings: 50 % means
their device splits are unrelated, so a per-op device preference learned from one
good solution says nothing about another.
"""

import argparse

import numpy as np

from dagopt.bench.placement import geomean_gap_percent
from dagopt.generate.placement import generate_placement
from dagopt.generate.seeds import validation_seeds
from dagopt.objectives.placement import GIB, OBJECTIVES, Devices
from dagopt.place.base import PlacementProblem
from dagopt.place.baselines import partition
from dagopt.place.brkga import BrkgaParams, MutantDistributions, run_brkga
from dagopt.place.decode import order_keys
from dagopt.place.regal import load_policy, policy_distributions
from dagopt.schedule import solve

ROWS = (
    "uniform",
    "teacher's priority",
    "teacher's devices",
    "both",
    "inductor order",
    "KL partition",
    "shipped policy",
)


def centred(
    n: int, devices: int, concentration: float, *, order=None, device_of=None
) -> MutantDistributions:
    """Mutant distributions centred on the keys of ``order`` and/or ``device_of``.

    The genes of whichever is given get ``beta(c k, c (1 - k))``; the rest stay uniform.
    """
    keys = np.full((n, devices + 1), 0.5)
    chosen = np.zeros(devices + 1, dtype=bool)
    if device_of is not None:
        keys[:, :devices] = np.where(np.arange(devices)[None, :] == device_of[:, None], 0.75, 0.25)
        chosen[:devices] = True
    if order is not None:
        keys[:, -1] = order_keys(order)
        chosen[-1] = True
    alpha = np.where(chosen, concentration * keys, 1.0)
    beta = np.where(chosen, concentration * (1.0 - keys), 1.0)
    return MutantDistributions(alpha, beta)


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
            ("teacher's priority", {"order": teacher.order}),
            ("teacher's devices", {"device_of": teacher.device_of}),
            ("both", {"order": teacher.order, "device_of": teacher.device_of}),
            ("inductor order", {"order": solve(graph, "inductor").order}),
            ("KL partition", {"device_of": split}),
        ):
            distributions[row] = centred(graph.num_nodes, 2, args.concentration, **centre)
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graphs", type=int, default=16, help="validation graphs")
    parser.add_argument("--repeats", type=int, default=3, help="BRKGA seeds per graph")
    parser.add_argument("--teacher-evaluations", type=int, default=30000)
    parser.add_argument("--concentration", type=float, default=20.0)
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
    raise SystemExit(main())
