"""Speed of the multi-device cost model (paper 003, A.1) on placement graphs.

    python benchmarks/placement_speed.py            # 50-400 ops, 2 and 4 devices
    python benchmarks/placement_speed.py --repeat 5

One row per graph and device count: the time of one ``simulate`` call (validation
included), the time per evaluation of ``simulate_batch`` at population sizes 100 and
1000, and the time of BRKGA's budget of 5000 evaluations as 50 batches of 100 (A.2).
Target: well under 0.2 ms per evaluation at 200 ops. Placements are uniformly random;
orders sort the ops by layer, then randomly within a layer (a topological order, as
edges of these graphs only go to later layers).
"""

import numpy as np

from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import best_of
from dagopt.generate.placement import generate_placement
from dagopt.generate.seeds import TEST_SEED_BASE
from dagopt.objectives.devices import Devices
from dagopt.objectives.placement import simulate, simulate_batch

SIZES = (50, 100, 200, 400)
DEVICE_COUNTS = (2, 4)
BUDGET, POPULATION = 5000, 100


def random_rows(graph, count: int, rows: int, rng: np.random.Generator):
    """``rows`` random placements over ``count`` devices and random layer-wise orders."""
    n = graph.num_nodes
    layer = graph.node_data["layer"]
    device_of = rng.integers(0, count, size=(rows, n))
    orders = np.array([np.lexsort((rng.random(n), layer)) for _ in range(rows)])
    return device_of, orders


def measure(graph, devices: Devices, device_of, orders, repeat: int) -> tuple[float, ...]:
    """Seconds: one ``simulate`` call, a batch of ``POPULATION``, a batch of all rows, and
    ``BUDGET`` evaluations as batches of ``POPULATION``."""
    head = (device_of[:POPULATION], orders[:POPULATION])
    single = best_of(repeat, lambda: simulate(graph, devices, device_of[0], orders[0]))
    small = best_of(repeat, lambda: simulate_batch(graph, devices, *head))
    large = best_of(repeat, lambda: simulate_batch(graph, devices, device_of, orders))

    def budget() -> None:
        for _ in range(BUDGET // POPULATION):
            simulate_batch(graph, devices, *head)

    return single, small, large, best_of(1, budget)


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--repeat", type=positive_int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    warm = generate_placement(20, seed=0)  # compile the kernels outside the timings
    simulate_batch(warm, Devices(), *random_rows(warm, 2, 2, rng))
    simulate(warm, Devices(), np.zeros(20, dtype=np.int64), np.arange(20))

    print("| ops | edges | devices | simulate() µs | batch 100 µs/eval | batch 1000 µs/eval "
          "| 5000 evals s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for i, n in enumerate(SIZES):
        graph = generate_placement(n, seed=TEST_SEED_BASE + i)
        for count in DEVICE_COUNTS:
            rows = random_rows(graph, count, 1000, rng)
            single, small, large, total = measure(
                graph, Devices.homogeneous(count), *rows, args.repeat
            )
            print(
                f"| {n} | {graph.num_edges} | {count} | {single * 1e6:.1f} "
                f"| {small / POPULATION * 1e6:.2f} | {large / 1000 * 1e6:.2f} | {total:.3f} |"
            )
    return 0


if __name__ == "__main__":
    run_script(main)
