import numpy as np
import pytest

from dagopt.bench.datasets import layered_test_set
from dagopt.bench.ordering import (
    Run,
    markdown_table,
    read_runs_csv,
    run_methods,
    runs_csv,
    summarize,
)
from dagopt.bench.placement import (
    Optimality,
    PlacementRun,
    gap_reduction,
    gap_reduction_interval,
    head_to_head,
    open_graphs,
    placement_table,
    summarize_placement,
)
from dagopt.bench.placement import read_runs_csv as read_placement_runs
from dagopt.bench.placement import runs_csv as placement_runs_csv
from dagopt.generate.seeds import TEST_SEED_BASE, VALIDATION_SEED_BASE


def test_held_out_seeds_are_disjoint_from_validation():
    graphs = layered_test_set(30, 2)
    assert [g.name for g in graphs] == [
        f"layered-30-s{TEST_SEED_BASE}",
        f"layered-30-s{TEST_SEED_BASE + 1}",
    ]
    assert TEST_SEED_BASE > VALIDATION_SEED_BASE + 100_000


def test_gap_summary_and_resume_from_csv():
    graphs = [(40, g.name, g) for g in layered_test_set(40, 2)]
    methods = ["approx-dp", "bfs"]
    first = run_methods(graphs[:1], methods, lambda m, s: {})
    restored = read_runs_csv(runs_csv(first))
    assert restored == first
    calls = []
    runs = run_methods(
        graphs,
        methods,
        lambda m, s: {},
        done=restored,
        on_run=lambda run, graph, order: calls.append(run),
    )
    assert len(runs) == 4 and len(calls) == 2  # only the second graph ran
    summary = {s.method: s for s in summarize(runs)}
    assert summary["approx-dp"].mean_gap_percent == 0.0
    ref = {r.graph: r.peak_memory for r in runs if r.method == "approx-dp"}
    gaps = [100 * (r.peak_memory / ref[r.graph] - 1) for r in runs if r.method == "bfs"]
    assert summary["bfs"].mean_gap_percent == pytest.approx(sum(gaps) / 2)
    table = markdown_table(list(summary.values()), {40: {"bfs": (20.94, 2.43)}})
    assert "| bfs |" in table and "20.94 / 2.43" in table


def test_run_csv_keeps_float_peaks_exactly():
    run = Run(
        size=1, graph="g", method="m", peak_memory=0.1 + 0.2, seconds=1.5, proved_optimal=None
    )
    assert read_runs_csv(runs_csv([run])) == [run]


def placement_run(graph: str, method: str, value: float, infeasible: int = 0) -> PlacementRun:
    return PlacementRun("runtime", graph, 10, method, infeasible, value, 0.5, 5000, None)


def test_placement_gaps_are_geometric_means_from_the_best_known():
    runs = [
        placement_run("a", "brkga", 2.0),
        placement_run("a", "regal", 1.0),
        placement_run("b", "brkga", 3.0),
        placement_run("b", "regal", 3.0 * 1.21),
        placement_run("b", "gp-dfs", 9e9, infeasible=1),
    ]
    gaps = {s.method: s for s in summarize_placement(runs)}
    assert gaps["regal"].geomean_gap_percent == pytest.approx(10.0)  # sqrt(1 * 1.21) - 1
    assert gaps["brkga"].geomean_gap_percent == pytest.approx(100 * (2**0.5 - 1))
    assert gaps["gp-dfs"].infeasible == 1 and np.isnan(gaps["gp-dfs"].geomean_gap_percent)
    assert gap_reduction(list(gaps.values()), "runtime") == pytest.approx(
        gaps["brkga"].geomean_gap_percent / 10.0
    )
    table = placement_table(list(gaps.values()), ["brkga", "regal", "gp-dfs"])
    assert "| regal | 10.00 | 2 (0) |" in table and "| gp-dfs | nan | 1 (1) |" in table
    assert read_placement_runs(placement_runs_csv(runs)) == runs


def test_gap_reduction_interval_brackets_the_estimate_and_shrinks_with_agreement():
    rng = np.random.default_rng(1)
    runs = []
    for g in range(40):
        runs += [
            placement_run(f"g{g}", "brkga", 1.0 + rng.uniform(0.02, 0.06)),
            placement_run(f"g{g}", "regal", 1.0 + rng.uniform(0.0, 0.04)),
            placement_run(f"g{g}", "cp-sat", 1.0),
        ]
    estimate = gap_reduction(summarize_placement(runs), "runtime")
    low, high = gap_reduction_interval(runs, "runtime")
    assert 1.0 < low < estimate < high
    wide = gap_reduction_interval(runs, "runtime", level=0.99)
    assert wide[0] < low and wide[1] > high
    with pytest.raises(ValueError, match="peak-memory"):
        gap_reduction_interval(runs, "peak-memory")
    regal_best = [placement_run(f"g{g}", "regal", 1.0) for g in range(3)]
    regal_best += [placement_run(f"g{g}", "brkga", 1.1) for g in range(3)]
    assert gap_reduction_interval(regal_best, "runtime") == (np.inf, np.inf)


def test_head_to_head_counts_wins_ties_and_losses_on_graphs_both_solve():
    runs = [
        placement_run("a", "brkga", 2.0),
        placement_run("a", "regal", 1.0),
        placement_run("b", "brkga", 3.0),
        placement_run("b", "regal", 3.0),
        placement_run("c", "brkga", 1.0),
        placement_run("c", "regal", 2.0),
        placement_run("d", "brkga", 1.0),
        placement_run("d", "regal", 4.0, infeasible=1),
    ]
    pair = head_to_head(runs, "runtime")
    assert (pair.graphs, pair.wins, pair.ties, pair.losses) == (3, 1, 1, 1)
    assert pair.ratio == pytest.approx(1.0)
    runs.append(placement_run("e", "brkga", 4.0))
    runs.append(placement_run("e", "regal", 2.0))
    assert head_to_head(runs, "runtime").ratio == pytest.approx(0.5 ** (1 / 4))
    with pytest.raises(ValueError, match="peak-memory"):
        head_to_head(runs, "peak-memory")


def test_open_graphs_are_those_no_bound_or_proof_settles():
    runs = [
        placement_run("a", "brkga", 2.0),  # meets a's bound
        placement_run("a", "regal", 2.5),
        placement_run("b", "brkga", 3.0),
        placement_run("b", "regal", 3.3),
        PlacementRun("runtime", "b", 10, "cp-sat", 0, 3.0, 1.0, 0, True),  # proved
        placement_run("c", "brkga", 5.0),  # above c's bound: open
        placement_run("d", "brkga", 1.0, infeasible=1),  # nothing feasible: not counted
        PlacementRun("peak-memory", "c", 10, "brkga", 0, 1.0, 0.5, 5000, None),
    ]
    bounds = {"a": 2.0 * (1 - 1e-12), "b": 1.0, "c": 4.0, "d": 0.5}
    proved, left_open = open_graphs(runs, "runtime", bounds)
    assert proved == Optimality(graphs=3, by_bound=1, by_cp_sat=1)
    assert proved.proved == 2 and left_open == {"c"}
    assert open_graphs(runs, "peak-memory", {"c": 0.5}) == (Optimality(1, 0, 0), {"c"})
