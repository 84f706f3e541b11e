"""Statistics of the graph generators, as reported in docs/generators.md.

    python benchmarks/generator_stats.py

Layered graphs (paper 000, appendix A): 100 graphs of 500 nodes, seeds 0-99. Placement
graphs (paper 003, section 3.1): 100 graphs with the default parameters, seeds 0-99.
"""

import argparse
import math

import numpy as np

from dagopt.bench.script import run_script
from dagopt.generate import generate_layered
from dagopt.generate.placement import DEFAULT_PARAMS, generate_placement
from dagopt.generate.seeds import VALIDATION_SEED_BASE
from dagopt.objectives import lower_bound
from dagopt.objectives.devices import GIB, Devices
from dagopt.objectives.placement import simulate_batch
from dagopt.schedule import solve
from dagopt.schedule.priority import sample_orders

RHO_S = 0.14


def layered_stats() -> None:
    layers, per_layer, skip_share, merged, m_l, p_l = [], [], [], [], [], []
    for seed in range(100):
        g = generate_layered(500, seed=seed)
        layer = g.node_data["layer"].astype(int)
        src, dst = g.edges
        span = layer[dst] - layer[src]
        adjacent, skips = int((span == 1).sum()), int((span >= 2).sum())
        count = layer.max() + 1
        drawn = math.ceil(adjacent * RHO_S / (1 - RHO_S)) if count >= 3 else 0
        layers.append(count)
        per_layer.append(500 / count)
        skip_share.append(skips / (adjacent + skips))
        merged.append(1 - skips / drawn if drawn else 0.0)
        first = np.unique(layer, return_index=True)[1]
        m_l.extend(g.mem[first])
        p_l.extend(g.param_mem[first])
    print("Layered graphs: 100 graphs of 500 nodes, seeds 0-99\n")
    print("| quantity | measured |\n|---|---|")
    print(f"| layers, mean (range) | {np.mean(layers):.1f} ({min(layers)}-{max(layers)}) |")
    print(f"| nodes per layer, mean of 500 / layers | {np.mean(per_layer):.1f} |")
    print(f"| skip-edge share | {np.mean(skip_share):.3f} |")
    print(f"| skip draws merged as duplicates | {100 * np.mean(merged):.1f}% |")
    print(f"| cost mean per layer, m_l / p_l | {np.mean(m_l):.2f} / {np.mean(p_l):.2f} |\n")


def critical_path(g) -> float:
    runtime = g.node_data["runtime"]
    finish = np.zeros(g.num_nodes)
    for v in g.topological_order:
        preds = g.predecessors(v)
        finish[v] = runtime[v] + (finish[preds].max() if preds.size else 0.0)
    return float(finish.max())


def placement_stats() -> None:
    rows = {k: [] for k in ("ops", "edges per op", "total GiB", "peak GiB", "parallelism")}
    runtimes, over, capped, feasible = [], 0, 0, []
    devices = Devices.homogeneous(2)
    for seed in range(100):
        g = generate_placement(seed=seed)
        n = g.num_nodes
        peak = min(solve(g, m).peak_memory for m in ("dfs", "bfs", "lpmf")) / GIB
        rows["ops"].append(n)
        rows["edges per op"].append(g.num_edges / n)
        rows["total GiB"].append((g.mem.sum() + g.param_mem.sum()) / GIB)
        rows["peak GiB"].append(peak)
        rows["parallelism"].append(g.node_data["runtime"].sum() / critical_path(g))
        runtimes.extend(g.node_data["runtime"])
        over += peak > 16
        capped += math.isclose(lower_bound(g), DEFAULT_PARAMS.max_working_set, rel_tol=1e-9)
        rng = np.random.default_rng(VALIDATION_SEED_BASE + seed)
        orders, _ = sample_orders(g, np.zeros(n), 100, rng)
        placement = rng.integers(0, 2, size=(100, n))
        feasible.append(simulate_batch(g, devices, placement, orders).feasible.mean())
    print("Placement graphs: 100 graphs, default parameters, seeds 0-99\n")
    print("| quantity | min | 25% | median | 75% | max |\n|---|---|---|---|---|---|")
    for name, values in rows.items():
        q = np.percentile(values, [0, 25, 50, 75, 100])
        print(f"| {name} | " + " | ".join(f"{x:.3g}" for x in q) + " |")
    print(f"\n- mean ops per graph: {np.mean(rows['ops']):.0f}")
    print(f"- median op runtime: {1000 * np.median(runtimes):.2f} ms")
    print(f"- graphs above 16 GiB on one device with all three orders: {over}%")
    print(f"- graphs where the working-set cap binds: {capped} of 100")
    print(
        "- random two-device solutions (uniform placement, uniformly random topological "
        f"order, 100 per graph) that fit: median {100 * np.median(feasible):.0f}%, "
        f"10th percentile {100 * np.percentile(feasible, 10):.0f}%, "
        f"graphs below half: {100 * np.mean(np.array(feasible) < 0.5):.0f}%"
    )


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)  # no options: --help, and an unknown argument is a usage error
    layered_stats()
    placement_stats()
    return 0


if __name__ == "__main__":
    run_script(main)
