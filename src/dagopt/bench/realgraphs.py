"""Paper 000, Table 2 on the model zoo: ordering methods on real graphs, grouped by size.

Every zoo graph is keyed ``model/size/mode`` (``zoo_key``). Each method's peak is taken
with ``keep_outputs=True``, as PyTorch keeps the graph outputs, and compared with the
traced order (``np.arange(n)``, method ``"traced"``: what eager PyTorch runs, for a
training graph when exported with ``core_aten=False``) and with
``approx-dp`` on the same graph. Runs are ``dagopt.bench.ordering.Run`` records whose
``size`` is the graph's node count, so ``runs_csv`` / ``read_runs_csv`` store and resume
them. ``measure_orders`` runs the traced and a reordered fx module and measures their
real peaks beside the predicted ones; ``measure_runs`` does so for any orders and adds
an eager PyTorch run of the module (``dagopt zoo measure``).
"""

import io
import os
import tempfile
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.ordering import Run, run_methods
from dagopt.bench.timing import format_seconds
from dagopt.graph import Graph
from dagopt.io.atomic import write_bytes_atomic
from dagopt.objectives import peak_memory
from dagopt.schedule import Schedule, solve

if TYPE_CHECKING:  # torch is imported only to build and measure real modules
    import torch

    from dagopt.io.onnx import OnnxGraph
    from dagopt.io.torch import TorchGraph
    from dagopt.io.torch_program import SavedProgram
    from dagopt.zoo import ZooModule

#: The order the model was traced in (graph inputs first): what eager PyTorch runs (a
#: training graph's when exported with ``core_aten=False``, ``docs/real_models.md``).
TRACED = "traced"
#: The reference of the paper's Table 2.
REFERENCE = "approx-dp"
#: The best-of peer that dagopt's best method must match or beat.
PEER = "inductor"
#: dagopt's own methods; the best of those run on a graph is its "best dagopt" order.
DAGOPT_METHODS = (
    "approx-dp",
    "anchored-dp",
    "anytime",
    "topoformer-greedy",
    "topoformer-sample",
    "topoformer-beam",
)
#: Node-count bucket edges: ``< 500``, ``500-1499``, ``>= 1500``.
DEFAULT_EDGES = (500, 1500)


def zoo_key(name: str, size: str, mode: str) -> str:
    """The graph key of a zoo export, e.g. ``bert-base/small/training``."""
    return f"{name}/{size}/{mode}"


def zoo_key_graph(
    key: str,
    cache_dir: str | os.PathLike | None = None,
    *,
    split_outputs: bool = False,
    core_aten: bool = True,
) -> Graph:
    """The zoo graph of key ``model/size/mode`` (exported once and cached, ``docs/zoo.md``)
    as the benchmarks take it: by default paper 000's graph, one node per operator
    (``split_outputs=False``: the form of their recorded tables); ``split_outputs`` and
    ``core_aten`` are ``export_zoo_graph``'s."""
    from dagopt.zoo import export_zoo_graph, parse_zoo_key

    name, size, mode = parse_zoo_key(key)
    return export_zoo_graph(
        name,
        size=size,
        mode=mode,
        cache_dir=cache_dir,
        split_outputs=split_outputs,
        core_aten=core_aten,
    )


def change_percent(peak: float, base: float) -> float:
    """% change of ``peak`` from ``base`` (negative: less memory)."""
    return 100.0 * (peak / base - 1.0)


def solve_outputs_kept(graph: Graph, method: str, *, seed: int = 0, **options: Any) -> Schedule:
    """``solve`` with the graph outputs kept alive (as PyTorch does); ``TRACED`` is the
    graph's own order, taking no time."""
    if method != TRACED:
        return solve(graph, method, seed=seed, keep_outputs=True, **options)
    order = np.arange(graph.num_nodes)
    peak = peak_memory(graph, order, keep_outputs=True)
    return Schedule(order=order, peak_memory=peak, method=TRACED, seconds=0.0)


def run_graph_methods(
    graphs: Iterable[tuple[str, Graph]],
    methods: Sequence[str],
    options: Callable[[str], dict[str, Any]],
    **kwargs: Any,
) -> list[Run]:
    """``run_methods`` on ``(key, graph)`` pairs of real graphs: sized by node count,
    outputs kept, ``TRACED`` allowed among ``methods``; ``options(method)`` gives the
    solver options."""
    cases = ((graph.num_nodes, key, graph) for key, graph in graphs)
    return run_methods(
        cases, methods, lambda method, _: options(method), solver=solve_outputs_kept, **kwargs
    )


@dataclass(frozen=True)
class GraphResult:
    """Every method's run on one graph (``runs`` by method name)."""

    graph: str
    nodes: int
    runs: dict[str, Run]

    def change(self, method: str, base: str = TRACED) -> float:
        """% change of ``method``'s peak from ``base``'s on this graph."""
        return change_percent(self.runs[method].peak_memory, self.runs[base].peak_memory)

    @property
    def best_dagopt(self) -> Run:
        """The run of least peak among ``DAGOPT_METHODS`` (the first of them on ties)."""
        ours = [self.runs[m] for m in DAGOPT_METHODS if m in self.runs]
        return min(ours, key=lambda r: r.peak_memory)

    @property
    def matches_peer(self) -> bool:
        """Whether the best dagopt order's peak is at most ``PEER``'s."""
        return self.best_dagopt.peak_memory <= self.runs[PEER].peak_memory


def graph_results(runs: Iterable[Run]) -> list[GraphResult]:
    """Runs grouped by graph, in order of first appearance."""
    grouped: dict[str, dict[str, Run]] = {}
    for run in runs:
        grouped.setdefault(run.graph, {})[run.method] = run
    return [
        GraphResult(graph=key, nodes=next(iter(by_method.values())).size, runs=by_method)
        for key, by_method in grouped.items()
    ]


@dataclass(frozen=True)
class BucketSummary:
    """Means over the graphs of one node-count bucket for one method."""

    bucket: str
    method: str
    graphs: int
    vs_traced_percent: float
    vs_reference_percent: float
    mean_seconds: float


def bucket_label(nodes: int, edges: Sequence[int] = DEFAULT_EDGES) -> str:
    """The bucket of a graph of ``nodes`` nodes: ``< e0``, ``e0-(e1-1)``, ..., ``>= e_last``;
    ``"all"`` when there are no edges."""
    if not edges:
        return "all"
    i = bisect_right(edges, nodes)
    if i == 0:
        return f"< {edges[0]}"
    if i == len(edges):
        return f">= {edges[-1]}"
    return f"{edges[i - 1]}-{edges[i] - 1}"


def summarize_buckets(
    results: Iterable[GraphResult], edges: Sequence[int] = DEFAULT_EDGES
) -> list[BucketSummary]:
    """Per bucket (smallest first) and method: mean % change from the traced order and from
    ``REFERENCE`` on the same graph, and mean run time. Every graph needs both runs."""
    edges = sorted(edges)
    groups: dict[tuple[int, str], list[tuple[GraphResult, Run]]] = {}
    for result in results:
        index = bisect_right(edges, result.nodes)
        for method, run in result.runs.items():
            groups.setdefault((index, method), []).append((result, run))
    summaries = []
    for index, method in sorted(groups, key=lambda k: k[0]):
        group = groups[(index, method)]
        summaries.append(
            BucketSummary(
                bucket=bucket_label(group[0][0].nodes, edges),
                method=method,
                graphs=len(group),
                vs_traced_percent=float(np.mean([g.change(method) for g, _ in group])),
                vs_reference_percent=float(
                    np.mean([g.change(method, REFERENCE) for g, _ in group])
                ),
                mean_seconds=float(np.mean([r.seconds for _, r in group])),
            )
        )
    return summaries


def bucket_table(summaries: list[BucketSummary]) -> str:
    """Markdown: one row per method; per bucket the mean % vs traced, % vs approx-dp, time."""
    buckets = list(dict.fromkeys(s.bucket for s in summaries))
    methods = list(dict.fromkeys(s.method for s in summaries))
    cell = {(s.bucket, s.method): s for s in summaries}
    count = {s.bucket: s.graphs for s in summaries}
    header = ["method"]
    for bucket in buckets:
        label = f"{bucket} (n={count[bucket]})"
        header += [f"{label}: % vs traced", f"% vs {REFERENCE}", "time s"]
    lines = [markdown_row(header), markdown_rule("l" + "r" * (len(header) - 1))]
    for method in methods:
        row = [method]
        for bucket in buckets:
            s = cell.get((bucket, method))
            if s is None:
                row += ["-", "-", "-"]
                continue
            time = "-" if method == TRACED else format_seconds(s.mean_seconds)
            row += [f"{s.vs_traced_percent:.2f}", f"{s.vs_reference_percent:.2f}", time]
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def graph_table(results: list[GraphResult], methods: Sequence[str]) -> str:
    """Markdown: one row per graph: nodes, traced peak, each solver's % vs traced and run
    time, the best dagopt method and whether its peak is at most ``PEER``'s."""
    solvers = [m for m in methods if m != TRACED]
    header = ["graph", "nodes", "traced MB", *(f"{m} % / s" for m in solvers)]
    header += ["best dagopt", f"<= {PEER}"]
    lines = [markdown_row(header), markdown_rule("l" + "r" * (len(header) - 3) + "ll")]
    for result in results:
        row = [result.graph, f"{result.nodes:,}", f"{result.runs[TRACED].peak_memory / 1e6:.2f}"]
        for method in solvers:
            run = result.runs[method]
            row.append(f"{result.change(method):.2f} / {format_seconds(run.seconds)}")
        row += [result.best_dagopt.method, "yes" if result.matches_peer else "NO"]
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def plot_methods(summaries: list[BucketSummary], path: str | os.PathLike) -> None:
    """Paper Figure 3: mean % change against mean run time (log axis), one point per method.

    ``summaries`` are over all graphs (``summarize_buckets(..., edges=())``). Left: %
    change from the traced order; right: % gap from ``REFERENCE``, as in the paper. The
    traced order takes no time and is the left panel's 0 line. Written atomically as PNG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [s for s in summaries if s.method != TRACED]
    markers = "osD^vP*X"
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
    panels = (
        ("% change of peak vs traced order", "vs_traced_percent"),
        (f"% gap of peak from {REFERENCE}", "vs_reference_percent"),
    )
    for ax, (ylabel, field) in zip(axes, panels, strict=True):
        ax.axhline(0.0, color="0.6", linewidth=0.8)
        for i, s in enumerate(points):
            seconds = max(s.mean_seconds, 1e-6)
            marker = markers[i % len(markers)]
            ax.scatter(seconds, getattr(s, field), s=50, marker=marker, label=s.method)
        ax.set_xscale("log")
        ax.margins(x=0.1, y=0.1)
        ax.set_xlabel("mean run time [s] (log)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center")
    graphs = points[0].graphs if points else 0
    fig.suptitle(f"Peak memory vs run time on {graphs} zoo graphs (outputs kept)")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    write_bytes_atomic(path, buffer.getvalue())


def predicted_and_measured(
    torch_graph: "TorchGraph", inputs: Sequence["torch.Tensor"], order: np.ndarray
) -> tuple[float, float]:
    """The peak of ``torch_graph`` run in ``order``: predicted (``peak_memory``, outputs
    kept) and measured on a real run of the reordered fx module (``measure_peak``)."""
    from dagopt.integrations.torch import measure_peak, reorder

    predicted = peak_memory(torch_graph.graph, order, keep_outputs=True)
    return predicted, measure_peak(reorder(torch_graph, order), inputs).peak


@dataclass(frozen=True)
class Measurement:
    """Predicted (``peak_memory(..., keep_outputs=True)``) and measured (``measure_peak``)
    peaks of the traced order and of a reordered run of one graph, in bytes."""

    graph: str
    nodes: int
    method: str
    predicted_traced: float
    measured_traced: float
    predicted_best: float
    measured_best: float

    @property
    def lower(self) -> bool:
        """Whether the reordered run's measured peak is below the traced run's."""
        return self.measured_best < self.measured_traced


def measure_orders(
    torch_graph: "TorchGraph",
    inputs: Sequence["torch.Tensor"],
    order: np.ndarray,
    *,
    key: str,
    method: str,
) -> Measurement:
    """Run ``torch_graph`` in its traced order and in ``order`` (found by ``method``),
    measure each real peak and predict it with the objective."""
    traced = predicted_and_measured(torch_graph, inputs, np.arange(torch_graph.graph.num_nodes))
    best = predicted_and_measured(torch_graph, inputs, order)
    return Measurement(
        graph=key,
        nodes=torch_graph.graph.num_nodes,
        method=method,
        predicted_traced=traced[0],
        measured_traced=traced[1],
        predicted_best=best[0],
        measured_best=best[1],
    )


#: The label of an eager PyTorch run of the module in ``measure_runs``.
EAGER = "eager"
#: The labels of an ONNX model's runs in its file's order and in onnxruntime's own.
FILE_ORDER = "file order"
OWN_ORDER = "onnxruntime's own order"


@dataclass(frozen=True)
class RealRun:
    """One real run of a model: its label, predicted peak (``None`` for eager PyTorch,
    which runs no dagopt order) and measured peak, in bytes."""

    label: str
    predicted: float | None
    measured: float


def graph_runs(
    torch_graph: "TorchGraph",
    inputs: Sequence["torch.Tensor"],
    orders: Sequence[tuple[str, np.ndarray]],
) -> list[RealRun]:
    """Run ``torch_graph`` in its traced order, then in each labelled order
    (``predicted_and_measured``)."""
    labelled = [(TRACED, np.arange(torch_graph.graph.num_nodes)), *orders]
    return [
        RealRun(label, *predicted_and_measured(torch_graph, inputs, order))
        for label, order in labelled
    ]


def saved_program_runs(
    saved: "SavedProgram", orders: Sequence[tuple[str, np.ndarray]]
) -> list[RealRun]:
    """``graph_runs`` of a saved program's graph on its saved example inputs, then, for a
    program read as saved (inference), the file's own module as eager PyTorch runs it
    (``program.module()`` under ``torch.no_grad()``)."""
    from dagopt.integrations.torch import measure_peak

    runs = graph_runs(saved.torch_graph, saved.inputs, orders)
    if saved.torch_graph.mode == "inference":
        module = saved.torch_graph.program.module()
        runs.append(RealRun(EAGER, None, measure_peak(module, saved.inputs).peak))
    return runs


def onnx_runs(
    onnx_graph: "OnnxGraph",
    held: Graph,
    path: Path,
    feeds: Mapping[str, np.ndarray],
    orders: Sequence[tuple[str, np.ndarray]],
) -> list[RealRun]:
    """The ONNX model at ``path`` run in onnxruntime in its file's order, then written
    in each labelled order and run (``measured_peak``), each beside the peak that
    ``held`` (``activations(onnx_graph)``) predicts for the order onnxruntime runs
    (``onnxruntime_order``); last, the file run in onnxruntime's own execution order
    (measured only)."""
    from dagopt.integrations.onnx_runtime import measured_peak, onnxruntime_order
    from dagopt.io.onnx import write_onnx

    runs = []
    with tempfile.TemporaryDirectory(prefix="dagopt-measure-") as folder:
        for label, order in [(FILE_ORDER, np.arange(held.num_nodes)), *orders]:
            file = path
            if label != FILE_ORDER:
                file = write_onnx(onnx_graph, order, Path(folder) / "ordered.onnx")
            predicted = peak_memory(held, onnxruntime_order(onnx_graph, order), keep_outputs=True)
            runs.append(RealRun(label, predicted, measured_peak(file, feeds)))
    return [*runs, RealRun(OWN_ORDER, None, measured_peak(path, feeds, own_order=True))]


def measure_runs(built: "ZooModule", orders: Sequence[tuple[str, np.ndarray]]) -> list[RealRun]:
    """Run ``built``'s graph in its traced order and in each labelled order, then the
    module itself as eager PyTorch runs it: the forward under ``torch.no_grad()`` in
    eval mode (inference), or a training step, forward, loss and ``loss.backward()``
    (``measure_training_peak``). The module's train flag is restored; a training step
    leaves its gradients in ``.grad``."""
    from dagopt.integrations.torch import measure_peak, measure_training_peak

    runs = graph_runs(built.torch_graph, built.inputs, orders)
    torch_graph, inputs, module = built.torch_graph, built.inputs, built.module
    if torch_graph.mode == "training":
        module.zero_grad(set_to_none=True)
        eager = measure_training_peak(module, inputs)
    else:
        was_training = module.training
        try:
            eager = measure_peak(module.eval(), inputs)
        finally:
            module.train(was_training)
    return [*runs, RealRun(EAGER, None, eager.peak)]


def measurement_table(measurements: list[Measurement]) -> str:
    """Markdown: per graph, predicted and measured MB of the traced and the reordered run
    with the measured-vs-predicted difference, and the measured change from reordering."""
    header = [
        "graph",
        "nodes",
        "order",
        "traced predicted MB",
        "traced measured MB",
        "diff %",
        "reordered predicted MB",
        "reordered measured MB",
        "diff %",
        "measured change %",
        "lower",
    ]
    lines = [markdown_row(header), markdown_rule("lrl" + "r" * 7 + "l")]
    for m in measurements:
        lines.append(
            markdown_row(
                [
                    m.graph,
                    f"{m.nodes:,}",
                    m.method,
                    f"{m.predicted_traced / 1e6:.3f}",
                    f"{m.measured_traced / 1e6:.3f}",
                    f"{change_percent(m.measured_traced, m.predicted_traced):+.2f}",
                    f"{m.predicted_best / 1e6:.3f}",
                    f"{m.measured_best / 1e6:.3f}",
                    f"{change_percent(m.measured_best, m.predicted_best):+.2f}",
                    f"{change_percent(m.measured_best, m.measured_traced):+.2f}",
                    "yes" if m.lower else "NO",
                ]
            )
        )
    return "\n".join(lines) + "\n"
