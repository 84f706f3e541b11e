"""Scaling out: wall time of a batch of independent graphs on 1 and 2 workers.

Example (the table in docs/scaling.md):

    python benchmarks/scaling.py --graphs 8 --evaluations 20000 --beam-width 10000

Two workloads run through ``dagopt.executor`` exactly as the benchmarks do
(``run_placement_methods`` / ``run_methods``): BRKGA (single-threaded numba) on
held-out placement graphs, and approx-dp (whose numba kernels already use every core
of a serial run) on held-out layered graphs. Each runs on 1 and 2 local processes
(1: in this process, as a plain run) and on a local Ray instance (loopback) with 1
and 2 CPUs; every worker first places or orders one small graph, so the times leave
out start-up and compiling; each time is the best of ``--repeat`` runs. Prints the
wall times side by side with the speed-up and checks that every configuration gives
the serial results. The machine's load average
before and after is printed too: other work on the cores lowers the speed-up.

Last, the share of a Topoformer REINFORCE update spent on its peak-memory rewards
(the part workers could take): one batch's loss and backward pass against the peak
memory of its graphs' orders.
"""

import os
import time

import numpy as np

from dagopt.bench.datasets import layered_test_set, placement_test_set
from dagopt.bench.ordering import run_methods
from dagopt.bench.placement import run_placement_methods
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import best_of
from dagopt.executor import Executor
from dagopt.generate import generate_layered
from dagopt.generate.placement import generate_placement


def brkga_runs(graphs, executor: Executor, evaluations: int) -> list:
    def options(method, graph):
        return {"evaluations": evaluations}

    runs = run_placement_methods(graphs, ["brkga"], "runtime", options, executor=executor)
    return [(r.graph, r.value) for r in runs]


def approx_dp_runs(graphs, executor: Executor, beam_width: int) -> list:
    cases = [(g.num_nodes, g.name, g) for g in graphs]
    runs = run_methods(
        cases, ["approx-dp"], lambda m, s: {"beam_width": beam_width}, executor=executor
    )
    return [(r.graph, r.peak_memory) for r in runs]


def wall_time(run, graphs, warm, executor: Executor, repeat: int) -> tuple[float, list]:
    """The least seconds of ``repeat`` runs of ``run`` on ``graphs`` (other work on the
    cores only adds), after warming the workers on small graphs (``warm(seed)``): four per
    worker, so that a Ray worker that starts late gets some too."""
    run([warm(seed) for seed in range(4 * executor.jobs)], executor)
    results: list = []
    seconds = best_of(repeat, lambda: results.append(run(graphs, executor)))
    assert all(r == results[0] for r in results), "a rerun changed the results"
    return seconds, results[0]


def topoformer_reward_share(graphs: int = 8, nodes: int = 100) -> tuple[float, float]:
    """Seconds of one Topoformer REINFORCE batch (loss and backward) and of the
    peak-memory rewards of as many orders."""
    import torch

    from dagopt.nn.encoders import PriorityModel
    from dagopt.objectives import peak_memory
    from dagopt.rl.baselines import ExponentialBaseline
    from dagopt.train.ordering import OrderingTrainConfig, reinforce_loss

    config = OrderingTrainConfig()
    torch.manual_seed(0)
    policy = PriorityModel(config.encoder, alpha=config.alpha)
    batch = [generate_layered(nodes, seed=s) for s in range(graphs)]
    rng = np.random.default_rng(0)
    reinforce_loss(policy, ExponentialBaseline(), batch[:1], rng)[0].backward()  # warm-up
    start = time.perf_counter()
    reinforce_loss(policy, ExponentialBaseline(), batch, rng)[0].backward()
    update = time.perf_counter() - start
    orders = [g.topological_order for g in batch]
    peak_memory(batch[0], orders[0])
    start = time.perf_counter()
    for graph, order in zip(batch, orders, strict=True):
        peak_memory(graph, order)
    return update, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--graphs", type=positive_int, default=8, help="independent graphs per workload"
    )
    parser.add_argument(
        "--evaluations", type=positive_int, default=20_000, help="BRKGA evaluations"
    )
    parser.add_argument("--layered-nodes", type=int, default=200)
    parser.add_argument("--beam-width", type=positive_int, default=20_000, help="approx-dp K")
    parser.add_argument("--repeat", type=positive_int, default=3, help="best of this many runs")
    parser.add_argument("--no-ray", action="store_true", help="local processes only")
    args = parser.parse_args(argv)

    placement = placement_test_set(args.graphs)
    layered = layered_test_set(args.layered_nodes, args.graphs)
    workloads = {
        f"brkga {args.evaluations} evaluations, {args.graphs} placement graphs": (
            lambda gs, ex: brkga_runs(gs, ex, args.evaluations),
            placement,
            lambda seed: generate_placement(20, seed=seed),
        ),
        f"approx-dp K={args.beam_width}, {args.graphs} layered graphs of {args.layered_nodes}": (
            lambda gs, ex: approx_dp_runs(gs, ex, args.beam_width),
            layered,
            lambda seed: generate_layered(20, seed=seed),
        ),
    }
    backends = [("local processes", None)] + ([] if args.no_ray else [("Ray (local)", "local")])
    load_before = os.getloadavg()
    rows, serial = [], {}
    for backend, ray in backends:
        for name, (run, graphs, warm) in workloads.items():
            times, results = [], []
            for jobs in (1, 2):
                if ray is not None:
                    import ray as ray_module

                    ray_module.shutdown()  # a fresh instance with `jobs` CPUs
                executor = Executor(jobs=jobs, ray=ray, whole_cores=True)
                seconds, result = wall_time(run, graphs, warm, executor, args.repeat)
                times.append(seconds)
                results.append(result)
            serial.setdefault(name, results[0])
            same = "yes" if results[0] == results[1] == serial[name] else "NO"
            rows.append((name, backend, times[0], times[1], times[0] / times[1], same))
    load_after = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs; load average (1, 5, 15 min) before {load_before}, "
        f"after {load_after}\n"
    )
    print("| workload | backend | 1 worker s | 2 workers s | speed-up | same results |")
    print("|---|---|---|---|---|---|")
    for name, backend, one, two, ratio, same in rows:
        print(f"| {name} | {backend} | {one:.2f} | {two:.2f} | {ratio:.2f}x | {same} |")
    update, rewards = topoformer_reward_share()
    print(
        f"\nTopoformer REINFORCE, 8 graphs of 100 nodes: loss + backward {update:.3f} s, "
        f"peak-memory rewards {rewards * 1e3:.3f} ms ({100 * rewards / update:.3f}% of the update)"
    )
    return 0


if __name__ == "__main__":
    run_script(main)
