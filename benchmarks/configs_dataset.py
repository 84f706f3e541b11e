"""The shipped measured configuration dataset, per collection (docs/configs_dataset.md).

Reads every ``.npz`` under ``--root`` (``read_tpugraphs``: the files are valid TpuGraphs
files) and the collections' ``measurements.json`` sidecars, and prints one markdown row
per collection: graphs per split, configurations, the retest Kendall tau between the two
halves of the timing rounds (the ceiling a model can reach), the runtime spread (slowest
/ fastest configuration of a graph, from the files), the 1-minute load average while
measuring, and the size on disk. Tile rows add the best tiling's speed-up over TVM's
default schedule (``config_runtime_normalizers``). Below the table, the machines the
sidecars name per collection (graphs measured before the machine was recorded count as
"not recorded"): runtimes of one collection must come from one CPU. ``--since COMMIT``
restricts every row to the graphs measured after a commit (those whose file that commit
lacks), so a batch added to the dataset can be described on its own; ``--until COMMIT``
to the graphs that commit already had.

    PYTHONPATH=src python benchmarks/configs_dataset.py
    PYTHONPATH=src python benchmarks/configs_dataset.py --since 5550ba7
"""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dagopt.bench.script import run_script, script_parser
from dagopt.integrations.tvm.measure import cpu
from dagopt.io.tpugraphs import COLLECTIONS, SPLITS, TileRecord, collection_dir, read_tpugraphs
from dagopt.rank.configs.build import read_sidecar, timed_on


def _range(values: np.ndarray, digits: int = 2) -> str:
    if values.size == 0:
        return "-"
    low, mid, high = np.nanmin(values), np.nanmedian(values), np.nanmax(values)
    return f"{mid:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def files_at(root: Path, commit: str) -> set[Path]:
    """The dataset files (paths under ``root``) in ``commit``'s tree."""
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", commit, "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if listing.returncode:
        print(f"error: {commit}: {listing.stderr.strip()}", file=sys.stderr)
        raise SystemExit(2)
    files = {Path(line) for line in listing.stdout.splitlines()}
    if not files:  # a folder git does not track (a copy under runs/): nothing to compare
        print(f"error: {commit} has no files under {root}", file=sys.stderr)
        raise SystemExit(2)
    return files


def split_files(
    root: Path, collection: str, keep: Callable[[Path], bool] | None = None
) -> dict[str, list[Path]]:
    """The collection's files per split (those whose path under ``root`` ``keep``
    accepts, when given)."""
    return {
        s: sorted(
            p
            for p in collection_dir(root, collection, s).glob("*.npz")
            if keep is None or keep(p.relative_to(root))
        )
        for s in SPLITS
    }


def collection_row(collection: str, files: dict[str, list[Path]], figures: dict) -> str:
    """The collection's row over its graphs ``files`` (per split, none empty overall),
    with ``figures`` its sidecar."""
    records = [read_tpugraphs(p) for s in SPLITS for p in files[s]]
    configs = np.array([r.num_configs for r in records])
    spread = np.array([r.config_runtime.max() / r.config_runtime.min() for r in records])
    names = [r.name for r in records]
    tau = np.array([figures[n]["retest_tau"] for n in names if n in figures], dtype=float)
    load = np.array(
        [figures[n][k] for n in names if n in figures for k in ("load_before", "load_after")]
    )
    speedup = "-"
    if isinstance(records[0], TileRecord):
        best = [float((r.config_runtime_normalizers / r.config_runtime).max()) for r in records]
        speedup = _range(np.array(best))
    size = sum(p.stat().st_size for s in SPLITS for p in files[s]) / 2**20
    splits = " / ".join(str(len(files[s])) for s in SPLITS)
    return (
        f"| {collection} | {splits} | {configs.sum()} ({configs.min()}-{configs.max()}) "
        f"| {_range(tau)} | {(tau >= 0.8).mean():.0%} | {_range(spread)} | {speedup} "
        f"| {_range(load, 1)} | {size:.2f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--root", type=Path, default=Path("datasets/configs"))
    commit = parser.add_mutually_exclusive_group()
    commit.add_argument("--since", metavar="COMMIT", help="only graphs measured after COMMIT")
    commit.add_argument("--until", metavar="COMMIT", help="only graphs COMMIT already had")
    args = parser.parse_args(argv)
    keep = None
    if args.since or args.until:
        old = files_at(args.root, args.since or args.until)
        keep = (lambda path: path not in old) if args.since else (lambda path: path in old)
    print(f"machine: {cpu()}; medians [min, max] over the graphs\n")
    print(
        "| collection | graphs train / valid / test | configurations (per graph) "
        "| retest tau | tau >= 0.8 | runtime spread | best tiling vs default "
        "| load (1 min) | MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    machines = []  # how many graphs each machine timed, per collection, as its sidecar says
    for collection in COLLECTIONS:
        files = split_files(args.root, collection, keep)
        if not any(files.values()):
            continue
        figures = read_sidecar(args.root, collection)
        print(collection_row(collection, files, figures))
        names = [p.stem for paths in files.values() for p in paths]
        machines.append(f"- {collection}: {timed_on(figures, names)}")
    print("\ntimed on:", *machines, sep="\n")


if __name__ == "__main__":
    run_script(main)
