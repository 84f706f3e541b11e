"""Table 2 helpers: runs on real-graph keys, size buckets, per-graph checks, tables, plot,
and measured vs predicted peaks of a reordered module."""

import numpy as np
import pytest
import torch
from torch import nn

from dagopt.bench.ordering import Run, read_runs_csv, runs_csv
from dagopt.bench.realgraphs import (
    EAGER,
    TRACED,
    BucketSummary,
    bucket_label,
    bucket_table,
    change_percent,
    graph_results,
    graph_table,
    measure_orders,
    measure_runs,
    measurement_table,
    plot_methods,
    run_graph_methods,
    summarize_buckets,
    zoo_key,
    zoo_key_graph,
)
from dagopt.graph import Graph
from dagopt.graph.shares import share_nodes
from dagopt.io.torch import graph_from_module
from dagopt.objectives import peak_memory
from dagopt.schedule import solve
from dagopt.zoo import ZooModule


def run(graph: str, nodes: int, method: str, peak: float, seconds: float = 1.0) -> Run:
    return Run(
        size=nodes,
        graph=graph,
        method=method,
        peak_memory=peak,
        seconds=seconds,
        proved_optimal=None,
    )


def synthetic_runs() -> list[Run]:
    """Three graphs: two below 500 nodes, one of 1500 (the last bucket)."""
    peaks = {
        "a/small/inference": (100, {"traced": 100.0, "inductor": 90.0, "approx-dp": 80.0}),
        "b/small/training": (400, {"traced": 200.0, "inductor": 200.0, "approx-dp": 250.0}),
        "c/large/training": (1500, {"traced": 50.0, "inductor": 40.0, "approx-dp": 40.0}),
    }
    return [
        run(key, nodes, method, peak, seconds=0.0 if method == TRACED else 2.0)
        for key, (nodes, by_method) in peaks.items()
        for method, peak in by_method.items()
    ]


def test_keys_and_bucket_labels():
    assert zoo_key("bert-base", "small", "training") == "bert-base/small/training"
    labels = [bucket_label(n) for n in (1, 499, 500, 1499, 1500, 9000)]
    assert labels == ["< 500", "< 500", "500-1499", "500-1499", ">= 1500", ">= 1500"]
    assert bucket_label(7, ()) == "all"
    assert change_percent(90.0, 100.0) == pytest.approx(-10.0)


def test_bucket_means_per_graph_then_per_bucket():
    results = graph_results(synthetic_runs())
    summaries = {(s.bucket, s.method): s for s in summarize_buckets(results)}
    assert {b for b, _ in summaries} == {"< 500", ">= 1500"}
    small_dp = summaries[("< 500", "approx-dp")]
    assert small_dp.graphs == 2
    # a: 80 vs 100 = -20 %, b: 250 vs 200 = +25 %
    assert small_dp.vs_traced_percent == pytest.approx((-20.0 + 25.0) / 2)
    assert small_dp.vs_reference_percent == 0.0
    small_inductor = summaries[("< 500", "inductor")]
    # vs approx-dp: 90 / 80 = +12.5 %, 200 / 250 = -20 %
    assert small_inductor.vs_reference_percent == pytest.approx((12.5 - 20.0) / 2)
    assert small_inductor.mean_seconds == 2.0
    large = summaries[(">= 1500", "inductor")]
    assert (large.graphs, large.vs_traced_percent) == (1, pytest.approx(-20.0))
    overall = summarize_buckets(results, ())
    assert {s.bucket for s in overall} == {"all"} and all(s.graphs == 3 for s in overall)


def test_best_dagopt_against_peer_and_tables():
    results = {r.graph: r for r in graph_results(synthetic_runs())}
    assert results["a/small/inference"].matches_peer
    assert not results["b/small/training"].matches_peer  # approx-dp 250 > inductor 200
    assert results["c/large/training"].matches_peer  # a tie counts
    assert results["a/small/inference"].best_dagopt.method == "approx-dp"
    anytime = run("b/small/training", 400, "anytime", 190.0)
    with_anytime = graph_results([*synthetic_runs(), anytime])
    assert with_anytime[1].best_dagopt.method == "anytime" and with_anytime[1].matches_peer
    table = graph_table(list(results.values()), [TRACED, "inductor", "approx-dp"])
    assert "| b/small/training | 400 | 0.00 | 0.00 / 2 | 25.00 / 2 | approx-dp | NO |" in table
    buckets = bucket_table(summarize_buckets(list(results.values())))
    assert buckets.splitlines()[0].startswith("| method | < 500 (n=2): % vs traced |")
    assert "| traced | 0.00 | 2.50 | - |" in buckets


def test_run_graph_methods_resumes_and_reports_orders():
    rng = np.random.default_rng(0)
    pairs = [(i, j) for i in range(12) for j in range(i + 1, 12) if rng.random() < 0.3]
    src, dst = [i for i, _ in pairs], [j for _, j in pairs]
    graph = Graph(12, src, dst, mem=rng.integers(1, 9, 12), name="g")
    methods = [TRACED, "inductor", "approx-dp"]
    seen = []
    runs = run_graph_methods(
        [("g/small/inference", graph)],
        methods,
        lambda m: {"beam_width": 10} if m == "approx-dp" else {},
        on_run=lambda r, g, order: seen.append((r.method, order)),
    )
    assert [r.method for r in runs] == methods and runs[0].size == 12
    traced = dict(seen)[TRACED]
    assert runs[0].peak_memory == peak_memory(graph, traced, keep_outputs=True)
    assert runs[0].seconds == 0.0
    for r, (_, order) in zip(runs, seen, strict=True):
        assert r.peak_memory == peak_memory(graph, order, keep_outputs=True)
    restored = read_runs_csv(runs_csv(runs))
    again = run_graph_methods([("g/small/inference", graph)], methods, lambda m: {}, done=restored)
    assert again == restored


def test_measure_orders_agrees_with_prediction_on_a_small_module():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    x = torch.randn(4, 16)
    exported = graph_from_module(model, x, mode="training")
    order = solve(exported.graph, "approx-dp", keep_outputs=True, beam_width=50).order
    m = measure_orders(exported, (x,), order, key="mlp/small/training", method="approx-dp")
    traced = np.arange(exported.graph.num_nodes)
    assert m.predicted_traced == peak_memory(exported.graph, traced, keep_outputs=True)
    assert m.predicted_best == peak_memory(exported.graph, order, keep_outputs=True)
    assert m.measured_traced == pytest.approx(m.predicted_traced, rel=0.01)
    assert m.measured_best == pytest.approx(m.predicted_best, rel=0.01)
    assert m.lower == (m.measured_best < m.measured_traced)
    assert "| mlp/small/training |" in measurement_table([m])


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_measure_runs_adds_an_eager_run_of_the_module(mode):
    """Traced and given orders run for real beside their predictions; the last run is
    the module in eager PyTorch, which for a graph of the operators autograd runs is the
    traced order's peak (the batch-norm statistics written back as eager writes them)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 3))
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad() if mode == "inference" else torch.enable_grad():
        exported = graph_from_module(model, x, mode=mode, split_outputs=True, core_aten=False)
    order = solve(exported.graph, "approx-dp", keep_outputs=True, beam_width=50).order
    model.train()
    runs = measure_runs(ZooModule(model, (x,), exported), [("searched", order)])
    assert [r.label for r in runs] == [TRACED, "searched", EAGER]
    for r in runs[:2]:
        assert r.measured == r.predicted
    assert runs[1].predicted == peak_memory(exported.graph, order, keep_outputs=True)
    assert runs[2].predicted is None
    assert runs[2].measured == pytest.approx(runs[0].measured, rel=0.001)
    assert model.training  # the flag is restored
    assert (model[0].weight.grad is not None) == (mode == "training")


def test_plot_is_a_png(tmp_path):
    summaries = [
        BucketSummary("all", TRACED, 2, 0.0, 5.0, 0.0),
        BucketSummary("all", "inductor", 2, -3.0, 2.0, 0.01),
        BucketSummary("all", "approx-dp", 2, -5.0, 0.0, 10.0),
    ]
    path = tmp_path / "fig" / "table2.png"
    plot_methods(summaries, path)
    assert path.read_bytes().startswith(b"\x89PNG")


def test_benchmark_zoo_graphs_are_joint_unless_told(tmp_path):
    """The recorded tables are on paper 000's graphs: ``zoo_key_graph`` reads a training
    graph with one node per operator, and the split one (the importers' default) on
    request."""
    key = "whisper-tiny-encoder/small/training"
    joint = zoo_key_graph(key, tmp_path)
    split = zoo_key_graph(key, tmp_path, split_outputs=True)
    assert share_nodes(joint).size == 0
    assert split.num_nodes == joint.num_nodes + share_nodes(split).size > joint.num_nodes
