"""Write a small SYNTHETIC TpuGraphs layout file, read it back, pre-process and score it.

The data is random (``dagopt.generate.tpugraphs``): it has the published file format
and says nothing about TPUs; it is for format tests only. With the real dataset, point
``collection_files`` at the folder that holds ``npz/`` instead (``docs/tpugraphs.md``).

    PYTHONPATH=src python examples/tpugraphs_roundtrip.py
"""

import tempfile
from pathlib import Path

import numpy as np

from dagopt.generate.tpugraphs import synthetic_layout_record
from dagopt.io.tpugraphs import (
    collection_dir,
    read_submission,
    read_tpugraphs,
    submission_id,
    tpugraphs_graph,
    write_submission,
    write_tpugraphs,
)
from dagopt.objectives.ranking import kendall_tau, top_configs
from dagopt.rank.preprocess import (
    compress_layout_configs,
    deduplicate_configs,
    pad_layout_with_minus_one,
    prune_layout,
)


def main() -> None:
    record = synthetic_layout_record(0, num_nodes=300, num_configurable=12, num_configs=64)
    with tempfile.TemporaryDirectory() as root:
        folder = collection_dir(root, "layout:xla:random", "train")
        path = write_tpugraphs(record, folder / "synthetic-net.npz")
        back = read_tpugraphs(path)
        same = all(
            np.array_equal(getattr(record, key), getattr(back, key))
            for key in ("node_feat", "edge_index", "node_config_feat", "config_runtime")
        )
        print(f"SYNTHETIC {path.relative_to(root)}: read back identical = {same}")

        graph = tpugraphs_graph(back)
        print(f"{graph}; first ops {graph.op[:4]}; output bytes of node 0: {graph.mem[0]:.0f}")

        pruned, kept = prune_layout(back, hops=1)
        unique, configs = deduplicate_configs(pruned)
        feat = pad_layout_with_minus_one(unique.node_feat)
        codes = compress_layout_configs(unique.node_config_feat)
        print(
            f"pruned to {kept.size} of {back.node_feat.shape[0]} nodes, {configs.size} unique "
            f"configurations, layout columns of node 0: {feat[0, 134:].tolist()}, "
            f"configs {unique.node_config_feat.nbytes} -> {codes.nbytes} bytes"
        )

        # a stand-in model: the runtime plus noise (lower score = predicted faster)
        noise = np.random.default_rng(1).normal(0, 2e5, size=back.num_configs)
        scores = back.config_runtime + noise
        print(f"Kendall tau of the stand-in model: {kendall_tau(scores, back.config_runtime):.3f}")

        csv = write_submission(
            Path(root) / "submission.csv",
            {submission_id("layout:xla:random", back.name): top_configs(scores)},
        )
        print(f"{csv.name}: {list(read_submission(csv))}")


if __name__ == "__main__":
    main()
