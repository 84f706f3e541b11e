"""The same programs timed twice, on two machines or two days (docs/configs_dataset.md,
"One machine per collection"): how far one measurement's ranking carries to the other,
and what the shipped TGraph models score on each.

    python benchmarks/configs_remeasure.py --recorded datasets/configs-check \\
        --remeasured datasets/configs-check-retimed --shipped \\
        --collections layout:xla:random layout:xla:default

For every collection, the programs of ``--split`` that both roots hold (by file name):
the median ratio of the remeasured to the recorded runtimes, Kendall's tau between the
two measurements where the two files hold the same configurations (``random``
collections draw them from the program's seed; a ``default`` collection's genetic search
follows the runtimes it measures, so its configurations differ), each root's retest
ceiling (mean ``retest_tau`` of its sidecar) and, with ``--shipped``, the shipped
model's tau on each (``graph_scores``, 10-permutation test-time augmentation; the mean
over the programs; minutes per collection). Each root's machine is what its sidecar
records, where it does. ``--per-graph`` lists every program.
"""

from pathlib import Path

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import run_script, script_parser
from dagopt.errors import InputError
from dagopt.io.tpugraphs import COLLECTIONS, SPLITS, collection_dir, read_tpugraphs
from dagopt.models import model_path
from dagopt.objectives.ranking import kendall_tau
from dagopt.rank.configs.build import read_sidecar, timed_on
from dagopt.rank.tgraph import graph_scores, load_ranker, prepare, shipped_model_name


def paired_files(recorded: Path, remeasured: Path, collection: str, split: str):
    """``(recorded, remeasured)`` paths of the programs both roots hold."""
    old, new = (
        {p.name: p for p in collection_dir(root, collection, split).glob("*.npz")}
        for root in (recorded, remeasured)
    )
    names = sorted(old.keys() & new.keys())
    if not names:
        raise InputError(f"{collection} {split}: no program is in both roots")
    return [(old[n], new[n]) for n in names]


def compare(
    recorded: Path, remeasured: Path, collection: str, split: str, shipped: bool
) -> tuple[list[dict], tuple[dict, dict]]:
    """One row per program (name, runtime ratio, cross tau, retests and, with
    ``shipped``, the shipped model's tau on each measurement) and the two roots'
    sidecars."""
    model = load_ranker(model_path(shipped_model_name(collection))) if shipped else None
    figures = (read_sidecar(recorded, collection), read_sidecar(remeasured, collection))
    rows = []
    for old_path, new_path in paired_files(recorded, remeasured, collection, split):
        old, new = read_tpugraphs(old_path), read_tpugraphs(new_path)
        same = np.array_equal(old.node_config_feat, new.node_config_feat)
        scores = graph_scores(model, [prepare(old), prepare(new)]) if model else [np.nan] * 2
        rows.append(
            {
                "program": old_path.stem,
                "ratio": float(np.median(new.config_runtime) / np.median(old.config_runtime)),
                "cross_tau": kendall_tau(old.config_runtime, new.config_runtime)
                if same
                else np.nan,
                "retest": [f.get(old_path.stem, {}).get("retest_tau", np.nan) for f in figures],
                "model": list(scores),
            }
        )
    return rows, figures


def summary_row(collection: str, rows: list[dict]) -> list[str]:
    cross = np.array([r["cross_tau"] for r in rows])
    retest = np.array([r["retest"] for r in rows], dtype=float)
    model = np.array([r["model"] for r in rows])
    tau = "-"
    if not np.isnan(cross).all():
        tau = f"{np.nanmedian(cross):.3f} [{np.nanmin(cross):.3f}, {np.nanmax(cross):.3f}]"
    return [
        collection,
        str(len(rows)),
        f"{np.median([r['ratio'] for r in rows]):.2f}",
        tau,
        " / ".join("-" if np.isnan(c).all() else f"{np.nanmean(c):.3f}" for c in retest.T),
        "-" if np.isnan(model).all() else f"{model[:, 0].mean():.3f} / {model[:, 1].mean():.3f}",
    ]


def program_row(row: dict) -> list[str]:
    """One program's cells of the ``--per-graph`` table."""
    retest = " / ".join(f"{v:.3f}" for v in row["retest"])
    recorded, remeasured = (f"{v:.3f}" for v in row["model"])
    return [
        row["program"],
        f"{row['ratio']:.2f}",
        f"{row['cross_tau']:.3f}",
        retest,
        recorded,
        remeasured,
    ]


def main(argv: list[str] | None = None) -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--recorded", type=Path, required=True)
    parser.add_argument("--remeasured", type=Path, required=True)
    parser.add_argument("--collections", nargs="+", choices=COLLECTIONS, required=True)
    parser.add_argument("--split", choices=SPLITS, default="test")
    parser.add_argument("--shipped", action="store_true", help="score the shipped models too")
    parser.add_argument("--per-graph", action="store_true")
    args = parser.parse_args(argv)
    results = {
        c: compare(args.recorded, args.remeasured, c, args.split, args.shipped)
        for c in args.collections
    }
    header = [
        "collection",
        "programs",
        "runtime ratio (median)",
        "tau recorded vs remeasured: median [min, max]",
        "retest ceiling recorded / remeasured",
        "shipped model tau recorded / remeasured",
    ]
    print(markdown_row(header))
    print(markdown_rule("lrrrrr"))
    for collection, (rows, _) in results.items():
        print(markdown_row(summary_row(collection, rows)))
    print()
    for collection, (rows, figures) in results.items():
        names = [r["program"] for r in rows]
        recorded, remeasured = (timed_on(f, names) for f in figures)
        print(f"- {collection}: recorded: {recorded}; remeasured: {remeasured}")
    if args.per_graph:
        for collection, (rows, _) in results.items():
            print(f"\n{collection}\n")
            header = ["program", "ratio", "cross tau", "retest", "model recorded", "remeasured"]
            print(markdown_row(header))
            print(markdown_rule("lrrrrr"))
            for r in rows:
                print(markdown_row(program_row(r)))


if __name__ == "__main__":
    run_script(main)
