"""Ordering guides on real training graphs: each guide's greedy order and ``anytime --guide``.

Example (the numbers in docs/results.md, "Guides trained on a graph mix"):

    python benchmarks/guide_mix.py --limit 10 \
        --guides topoformer-sparse-ordering runs/mix/model.pt \
        --zoo gpt2/small/training llama-small/small/training

For every zoo graph (``model/size/mode``, exported once and cached; graph outputs kept
alive as PyTorch does) and every guide (a priority model file or a shipped model name,
``dagopt.schedule.neural.load_model``): the % change from Inductor's best peak of
the guide's greedy order (paper 000, 4.2) and of ``anytime`` within ``--limit`` seconds
with that guide, next to ``anytime`` without a guide. Rows go to ``--out`` (CSV) after
each graph; a rerun with the same guides and limit skips the graphs already there
(others are refused; ``--fresh`` starts over).
"""

import csv
import io
import time
from pathlib import Path

from dagopt.bench.realgraphs import change_percent, solve_outputs_kept, zoo_key_graph
from dagopt.bench.script import (
    claim_results,
    positive_float,
    run_script,
    script_parser,
    zoo_graph_key,
)
from dagopt.io.atomic import write_text_atomic
from dagopt.objectives import peak_memory
from dagopt.schedule.neural import guide_order

FIELDS = ("graph", "nodes", "guide", "greedy_pct", "guide_seconds", "anytime_pct", "start")


def graph_rows(key: str, guides: list[str], limit: float) -> list[dict]:
    """The rows of one graph: no guide, then each guide."""
    graph = zoo_key_graph(key)
    base = solve_outputs_kept(graph, "inductor").peak_memory
    rows = []
    for guide in ["", *guides]:
        options = {"guide": guide} if guide else {}
        run = solve_outputs_kept(graph, "anytime", time_limit=limit, **options)
        greedy, seconds = "", ""
        if guide:
            start = time.perf_counter()
            order = guide_order(graph, guide)
            seconds = f"{time.perf_counter() - start:.3g}"
            greedy = f"{change_percent(peak_memory(graph, order, keep_outputs=True), base):.3f}"
        rows.append(
            {
                "graph": key,
                "nodes": graph.num_nodes,
                "guide": guide or "none",
                "greedy_pct": greedy,
                "guide_seconds": seconds,
                "anytime_pct": f"{change_percent(run.peak_memory, base):.3f}",
                "start": run.info.get("start", ""),
            }
        )
    return rows


def write_rows(path: Path, rows: list[dict]) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, text.getvalue())


def table(rows: list[dict], guides: list[str], limit: float) -> str:
    """Markdown: per graph, anytime without a guide, then each guide's greedy order and
    anytime with it (% vs Inductor's best)."""
    head = ["graph", "nodes", f"anytime {limit:g} s"]
    for guide in guides:
        head += [f"{guide}: greedy", f"{guide}: anytime {limit:g} s"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for key in dict.fromkeys(r["graph"] for r in rows):
        by_guide = {r["guide"]: r for r in rows if r["graph"] == key}
        cells = [key, by_guide["none"]["nodes"], by_guide["none"]["anytime_pct"]]
        for guide in guides:
            cells += [by_guide[guide]["greedy_pct"], by_guide[guide]["anytime_pct"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--zoo", type=zoo_graph_key, nargs="+", required=True, help="zoo graphs, model/size/mode"
    )
    parser.add_argument("--guides", nargs="+", required=True, help="model files or names")
    parser.add_argument("--limit", type=positive_float, default=10.0, help="anytime seconds")
    parser.add_argument("--out", type=Path, default=Path("bench-out/guide-mix.csv"))
    parser.add_argument("--fresh", action="store_true", help="ignore rows already in --out")
    args = parser.parse_args()
    options = {"guides": args.guides, "limit": args.limit}
    resumed = claim_results(args.out, options, fresh=args.fresh)
    rows = list(csv.DictReader(args.out.open())) if resumed else []
    for key in args.zoo:
        if any(r["graph"] == key for r in rows):
            continue
        rows += graph_rows(key, args.guides, args.limit)
        write_rows(args.out, rows)
        print(f"{key}: done", flush=True)
    print(table([r for r in rows if r["graph"] in args.zoo], args.guides, args.limit))


if __name__ == "__main__":
    run_script(main)
