"""The shipped measured configuration dataset, per collection (docs/configs_dataset.md).

Reads every ``.npz`` under ``--root`` (``read_tpugraphs``: the files are valid TpuGraphs
files) and the collections' ``measurements.json`` sidecars, and prints one markdown row
per collection: graphs per split, configurations, the retest Kendall tau between the two
halves of the timing rounds (the ceiling a model can reach), the runtime spread (slowest
/ fastest configuration of a graph, from the files), the 1-minute load average while
measuring, and the size on disk. Tile rows add the best tiling's speed-up over TVM's
default schedule (``config_runtime_normalizers``).

    PYTHONPATH=src python benchmarks/configs_dataset.py
"""

import argparse
import json
import platform
from pathlib import Path

import numpy as np

from dagopt.io.tpugraphs import COLLECTIONS, SPLITS, TileRecord, collection_dir, read_tpugraphs


def _range(values: np.ndarray, digits: int = 2) -> str:
    if values.size == 0:
        return "-"
    low, mid, high = np.nanmin(values), np.nanmedian(values), np.nanmax(values)
    return f"{mid:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def collection_row(root: Path, collection: str) -> str | None:
    files = {s: sorted(collection_dir(root, collection, s).glob("*.npz")) for s in SPLITS}
    if not any(files.values()):
        return None
    sidecar = collection_dir(root, collection, "train").parent / "measurements.json"
    figures = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("datasets/configs"))
    args = parser.parse_args(argv)
    print(f"machine: {cpu_model()}; medians [min, max] over the graphs\n")
    print(
        "| collection | graphs train / valid / test | configurations (per graph) "
        "| retest tau | tau >= 0.8 | runtime spread | best tiling vs default "
        "| load (1 min) | MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for collection in COLLECTIONS:
        row = collection_row(args.root, collection)
        if row:
            print(row)


if __name__ == "__main__":
    main()
