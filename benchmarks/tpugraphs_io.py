"""Load time of TpuGraphs layout files of 10,000 nodes x 1,000 configurations (target: < 1 s).

Writes a SYNTHETIC layout file (``dagopt.generate.tpugraphs``: random graph, layouts and
runtimes, the published dtypes) uncompressed and compressed, then reports the best of
``--repeats`` wall-clock times of ``read_tpugraphs`` (every array read and checked) and of
``tpugraphs_graph`` (the ``Graph``), and the memory the base-7 compression of
``node_config_feat`` saves (paper 002, section 2.2.3).

    PYTHONPATH=src python benchmarks/tpugraphs_io.py
    PYTHONPATH=src python benchmarks/tpugraphs_io.py --configurable 10000
"""

import tempfile
import time
from pathlib import Path

from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.generate.tpugraphs import synthetic_layout_record
from dagopt.io.tpugraphs import read_tpugraphs, tpugraphs_graph, write_tpugraphs
from dagopt.rank.preprocess import compress_layout_configs


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--nodes", type=positive_int, default=10_000)
    parser.add_argument("--configurable", type=int, default=1_000, help="configurable nodes")
    parser.add_argument("--configs", type=positive_int, default=1_000)
    parser.add_argument("--repeats", type=positive_int, default=5)
    args = parser.parse_args(argv)

    record = synthetic_layout_record(
        0,
        num_nodes=args.nodes,
        num_configurable=args.configurable,
        num_configs=args.configs,
        name="synthetic-benchmark",
    )
    print(
        f"SYNTHETIC layout file: {args.nodes} nodes, {args.configurable} configurable, "
        f"{args.configs} configurations"
    )
    with tempfile.TemporaryDirectory() as folder:
        for compressed in (False, True):
            path = write_tpugraphs(record, Path(folder) / "g.npz", compressed=compressed)
            size = path.stat().st_size / 2**20
            seconds = best_time(lambda p=path: read_tpugraphs(p), args.repeats)
            kind = "np.savez_compressed" if compressed else "np.savez"
            print(f"read_tpugraphs ({kind}, {size:.1f} MiB): {seconds:.3f} s")
    seconds = best_time(lambda: tpugraphs_graph(record), args.repeats)
    print(f"tpugraphs_graph: {seconds:.3f} s")
    codes = compress_layout_configs(record.node_config_feat)
    raw = record.node_config_feat.nbytes
    print(
        f"node_config_feat: {raw / 2**20:.1f} MiB float32 -> {codes.nbytes / 2**20:.1f} MiB "
        f"base-7 codes ({1 - codes.nbytes / raw:.1%} saved, {raw / codes.nbytes:.1f}x)"
    )


if __name__ == "__main__":
    run_script(main)
