"""Ordering at scale: inductor and anytime on 20k- and 100k-node layered graphs (issue 21).

Each (graph, method) runs in a fresh process, so the reported memory is that run's own
peak resident set (``ru_maxrss`` of the child: the graph, the solver and Python, torch
not imported). Graphs are held-out layered graphs (test seeds, paper 000's generator);
generating one is timed apart. The table gives the peak, its % change from Inductor's
best order, the solver's time (``Schedule.seconds``: the work itself), its one-time set-up apart
(loading the compiled kernels, ``Schedule.setup_seconds``) and the child's peak RSS.

    python benchmarks/ordering_scale.py                      # 20k at 10 s, 100k at 60 s
    python benchmarks/ordering_scale.py --sizes 20000 --limits 10 --graphs 2
"""

import time

from dagopt.bench.datasets import add_scale_arguments, scale_runs
from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.realgraphs import change_percent
from dagopt.bench.script import run_script, script_parser
from dagopt.bench.timing import format_seconds, in_fresh_process, peak_rss_mb
from dagopt.generate.layered import generate_layered
from dagopt.schedule import solve


def run_one(size: int, seed: int, method: str, time_limit: float | None) -> dict:
    """Generate the graph, solve it once; the child's timings, peak and ``ru_maxrss``."""
    start = time.perf_counter()
    graph = generate_layered(size, seed=seed)
    generate_seconds = time.perf_counter() - start
    options = {} if time_limit is None else {"time_limit": time_limit}
    schedule = solve(graph, method, seed=0, **options)
    return {
        "edges": graph.num_edges,
        "generate_s": generate_seconds,
        "setup_s": schedule.setup_seconds,
        "seconds": schedule.seconds,
        "peak": schedule.peak_memory,
        "rss_mb": peak_rss_mb(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_scale_arguments(parser)
    args = parser.parse_args(argv)
    runs = scale_runs(parser, args)
    header = ["graph", "nodes", "edges", "generate s", "method", "peak", "% vs inductor"]
    header += ["s", "setup s", "peak RSS MB"]
    print(markdown_row(header))
    print(markdown_rule("lrrrlrrrrr"))
    for size, limit, seed in runs:
        inductor = in_fresh_process(run_one, size, seed, "inductor", None)
        results = [
            ("inductor", inductor),
            (f"anytime {limit:g} s", in_fresh_process(run_one, size, seed, "anytime", limit)),
        ]
        for label, run in results:
            row = [f"layered seed {seed}", f"{size:,}", f"{run['edges']:,}"]
            row += [format_seconds(run["generate_s"]), label, f"{run['peak']:.6g}"]
            row += [f"{change_percent(run['peak'], inductor['peak']):.3f}"]
            row += [format_seconds(run["seconds"]), format_seconds(run["setup_s"])]
            row += [f"{run['rss_mb']:.0f}"]
            print(markdown_row(row), flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
