"""Neural ordering at scale: the sparse Topoformer on 20k- and 100k-node layered graphs
(issue 21, items 3-4).

Per graph size, in fresh processes (``in_fresh_process``: each its own peak RSS and
one-time set-up): the featurisation steps of ``topoformer-sparse`` timed one by one
(node features, the positional encodings of the model's ``pe``, the sparse Topoformer
graphs ``sparse_groups`` with the transitive reduction), then all of them together as
the model reads them (``encoder_inputs``, on a fresh copy of the graph), one encoder
forward pass,
greedy decoding, the greedy order's peak against Inductor's best; then ``anytime``
without and with ``guide`` (the same model's greedy order as a second start). The
set-up (imports, loading the model, numba compilation or cache loading, torch's first
call: a whole pass on a 50-node graph) is reported apart from the work. Graphs are
held-out layered graphs (test seeds, paper 000's generator); generating one is not
counted. torch runs ``--threads`` threads (default 1, as the machine is shared).

    python benchmarks/neural_scale.py                       # 20k at 10 s, 100k at 60 s
    python benchmarks/neural_scale.py --sizes 20000 --limits 10 --checkpoint runs/sparse/model.pt
"""

import time

from dagopt.bench.datasets import add_scale_arguments, scale_runs
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.realgraphs import change_percent
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.bench.timing import format_seconds, in_fresh_process, peak_rss_mb
from dagopt.generate.layered import generate_layered
from dagopt.schedule import solve

DEFAULT_MODEL = "topoformer-sparse-ordering"


def _timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def featurise_and_decode(size: int, seed: int, checkpoint: str, threads: int) -> dict:
    """Set-up, then each step of the neural greedy order, timed; peaks and peak RSS."""
    start = time.perf_counter()
    import torch

    torch.set_num_threads(threads)

    from dagopt.nn.encoders import encoder_inputs
    from dagopt.nn.features import laplacian_pe, node_features
    from dagopt.nn.masks import sparse_groups
    from dagopt.objectives import peak_memory
    from dagopt.schedule.neural import guide_order, load_model
    from dagopt.schedule.priority import greedy_order

    model = load_model(checkpoint)
    guide_order(generate_layered(50, seed=seed), checkpoint)  # compiles / loads kernels
    setup = time.perf_counter() - start
    graph = generate_layered(size, seed=seed)
    config = model.config
    row = {"edges": graph.num_edges, "setup_s": setup, "pe": config.pe}
    model.encoder.check_fits(graph.num_nodes, graph.num_edges)
    _, row["features_s"] = _timed(node_features, graph)
    _, row["pe_s"] = _timed(lambda: laplacian_pe(graph, config.pe_dim, kind=config.pe))
    _, row["groups_s"] = _timed(sparse_groups, graph)
    graph = generate_layered(size, seed=seed)  # fresh: no cached reduction
    inputs, row["inputs_s"] = _timed(encoder_inputs, graph, config)
    with torch.inference_mode():
        y, row["forward_s"] = _timed(model, inputs)
    order, row["greedy_s"] = _timed(greedy_order, graph, y.double().numpy())
    row["greedy_peak"] = peak_memory(graph, order)
    row["inductor_peak"] = solve(graph, "inductor").peak_memory
    row["rss_mb"] = peak_rss_mb()
    return row


def run_anytime(size: int, seed: int, limit: float, guide: str | None, threads: int) -> dict:
    """``anytime`` with ``limit`` seconds, guided or not; its peak, start and RSS."""
    if guide is not None:
        import torch

        torch.set_num_threads(threads)
    graph = generate_layered(size, seed=seed)
    options = {} if guide is None else {"guide": guide}
    result = solve(graph, "anytime", seed=0, time_limit=limit, **options)
    return {
        "peak": result.peak_memory,
        "seconds": result.seconds,
        "setup_s": result.setup_seconds,
        "start": result.info["start"],
        "guide_s": result.info.get("guide seconds"),
        "rss_mb": peak_rss_mb(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_scale_arguments(parser)
    parser.add_argument(
        "--checkpoint", default=DEFAULT_MODEL, help="priority model file or shipped name"
    )
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    runs = scale_runs(parser, args)
    header = ["graph", "nodes", "edges", "setup s", "features s", "PE s", "PE"]
    header += ["groups s", "all inputs s", "forward s", "greedy s", "greedy % vs inductor"]
    header += ["peak RSS MB"]
    print(markdown_row(header))
    print(markdown_rule("lrrrrrlrrrrrr"))
    inductor = {}
    for size, _, seed in runs:
        r = in_fresh_process(featurise_and_decode, size, seed, args.checkpoint, args.threads)
        inductor[size, seed] = r["inductor_peak"]
        change = change_percent(r["greedy_peak"], r["inductor_peak"])
        row = [f"layered seed {seed}", f"{size:,}", f"{r['edges']:,}"]
        row += [format_seconds(r[k]) for k in ("setup_s", "features_s", "pe_s")] + [r["pe"]]
        row += [format_seconds(r[k]) for k in ("groups_s", "inputs_s", "forward_s", "greedy_s")]
        row += [f"{change:+.2f}", f"{r['rss_mb']:.0f}"]
        print(markdown_row(row), flush=True)
    print()
    header = ["graph", "nodes", "method", "peak", "% vs inductor", "start", "guide s", "s"]
    header += ["setup s", "peak RSS MB"]
    print(markdown_row(header))
    print(markdown_rule("lrlrrlrrrr"))
    for size, limit, seed in runs:
        for label, guide in (("anytime", None), ("anytime --guide", args.checkpoint)):
            r = in_fresh_process(run_anytime, size, seed, limit, guide, args.threads)
            row = [f"layered seed {seed}", f"{size:,}", f"{label} {limit:g} s", f"{r['peak']:.6g}"]
            row += [f"{change_percent(r['peak'], inductor[size, seed]):+.3f}", r["start"]]
            row += ["" if r["guide_s"] is None else format_seconds(r["guide_s"])]
            row += [format_seconds(r[k]) for k in ("seconds", "setup_s")]
            row += [f"{r['rss_mb']:.0f}"]
            print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
