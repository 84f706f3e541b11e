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
