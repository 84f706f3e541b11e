"""Do the time-limited ordering methods and placers stop at their limit on a large real graph?

    python benchmarks/time_limits.py                       # GPT-2 at 96 layers, 1 and 10 s
    python benchmarks/time_limits.py --graph g.json --limits 2 --methods anytime dfs-dp
    python benchmarks/time_limits.py --methods --placers brkga regal --limits 5

The graph is GPT-2's architecture at ``--layers`` layers (width 256, 4 heads, 128
tokens, random weights, untied head) exported for training with torch.export, 18,545
nodes at 96 layers (docs/results.md, "A deep real model at scale"), or a graph file
(``--graph``). Each method runs once per limit, with the graph outputs kept, after a
first call on a tiny graph (``solve``'s warm-up: kernels compiled or loaded). The table
gives the solver's time (``Schedule.seconds``, the work itself), how far past the limit
it ended and the peak. Exporting and loading the graph are reported apart. A method
whose first answer takes longer than the limit (``dfs-dp``'s first complete order)
shows it here: the limit stops searches, not the first answer.

``--placers`` (none by default) adds a second table: each placer once per limit and
objective on two devices, each op's runtime from the roofline estimate (``dagopt place
--estimate-runtime``), its search time (``Placement.seconds``; the warm-up apart), how
far past the limit it ended, its evaluations, its cost and, for the learned placers of
paper 004, the co-location groups they place.
"""

import time

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import positive_float, positive_int, run_script, script_parser
from dagopt.bench.timing import format_seconds
from dagopt.graph import Graph
from dagopt.io import load
from dagopt.objectives.runtime import DEFAULT_BANDWIDTH, DEFAULT_PEAK_FLOPS, estimate_runtimes
from dagopt.place import place
from dagopt.schedule import solve

#: Each method with the options it runs under: approx-dp's default beam (100,000) does
#: not fit in memory at 18,545 nodes.
#: The placers ``--placers`` may time: every one that searches under a time limit.
PLACERS = ("brkga", "brkga-prior", "regal", "idrs", "hsdag", "placeto", "rnn-placer")

METHOD_OPTIONS = {
    "anytime": {},
    "approx-dp": {"beam_width": 64},
    "anchored-dp": {},
    "dfs-dp": {},
    "random": {},
}


def deep_gpt2(layers: int) -> Graph:
    """The training graph of GPT-2's architecture at ``layers`` layers (module docstring)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from dagopt.io.torch import graph_from_module
    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=layers, n_embd=256, n_head=4, use_cache=False,
        attn_implementation="eager", tie_word_embeddings=False,
    )  # fmt: skip
    ids = torch.randint(0, config.vocab_size, (1, 128))
    model = tensor_forward(GPT2LMHeadModel(config), ("input_ids",), "logits")
    return graph_from_module(model, ids, mode="training", split_outputs=False).graph


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--graph", help="a graph file instead of the deep GPT-2")
    parser.add_argument("--layers", type=positive_int, default=96)
    parser.add_argument("--limits", type=positive_float, nargs="+", default=[1.0, 10.0])
    parser.add_argument(
        "--methods", nargs="*", choices=sorted(METHOD_OPTIONS), default=list(METHOD_OPTIONS)
    )
    parser.add_argument("--placers", nargs="*", choices=PLACERS, default=[])
    parser.add_argument(
        "--objectives", nargs="+", choices=("runtime", "peak-memory"), default=["runtime"]
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    graph = load(args.graph) if args.graph else deep_gpt2(args.layers)
    made = format_seconds(time.perf_counter() - began)
    print(
        f"{graph.name}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges, "
        f"{'loaded' if args.graph else 'exported'} in {made} s\n"
    )
    if args.methods:
        time_orders(graph, args.methods, args.limits)
    if args.placers:
        time_placers(graph, args.placers, args.objectives, args.limits)
    return 0


def time_orders(graph: Graph, methods: list[str], limits: list[float]) -> None:
    """The ordering table: each method once per limit, graph outputs kept."""
    print(markdown_row(["method", "limit s", "s", "past the limit s", "peak"]))
    print(markdown_rule("lrrrr"))
    for method in methods:
        for limit in limits:
            run = solve(
                graph, method, seed=0, time_limit=limit, keep_outputs=True,
                **METHOD_OPTIONS[method],
            )  # fmt: skip
            row = [method, f"{limit:g}", format_seconds(run.seconds)]
            row += [format_seconds(max(0.0, run.seconds - limit)), f"{run.peak_memory:.6g}"]
            print(markdown_row(row), flush=True)
    print()


def time_placers(
    graph: Graph, placers: list[str], objectives: list[str], limits: list[float]
) -> None:
    """The placement table: each placer once per objective and limit on two devices."""
    runtimes = estimate_runtimes(graph, peak_flops=DEFAULT_PEAK_FLOPS, bandwidth=DEFAULT_BANDWIDTH)
    header = ["placer", "objective", "limit s", "s", "past the limit s", "evaluations", "cost"]
    print(markdown_row([*header, "groups"]))
    print(markdown_rule("llrrrrrr"))
    for placer in placers:
        for objective in objectives:
            for limit in limits:
                run = place(
                    graph, placer, objective=objective, runtimes=runtimes, seed=0,
                    time_limit=limit,
                )  # fmt: skip
                row = [placer, objective, f"{limit:g}", format_seconds(run.seconds)]
                row += [format_seconds(max(0.0, run.seconds - limit)), f"{run.evaluations:,}"]
                row.append(f"{run.cost[1]:.6g}" + (" (infeasible)" if run.cost[0] else ""))
                row.append(f"{run.info['groups']:,}" if "groups" in run.info else "")
                print(markdown_row(row), flush=True)


if __name__ == "__main__":
    run_script(main)
