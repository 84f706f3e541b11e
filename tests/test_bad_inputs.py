"""Regression table of bad ``dagopt`` invocations, one row per mistake a user can make.

The promise every row checks: exit status 2, exactly one line ``error: ...`` on stderr
naming the problem, no traceback, no warning, and no file in the working directory
changed, created or removed (the inputs, and ``out.json``, an output written before).
Each row runs in a fresh directory holding ``WORKDIR_FILES`` plus the row's own files.
"""

import io
import json
import math
import shlex
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dagopt.cli.main import app
from test_cli import assert_user_error

runner = CliRunner()

NODES = [
    {"id": "a", "mem": 10, "runtime": 1.0},
    {"id": "b", "mem": 30, "runtime": 2.0},
    {"id": "c", "mem": 5, "runtime": 1.5},
    {"id": "d", "mem": 1, "runtime": 0.5},
]
EDGES = [
    {"source": "a", "target": "b"},
    {"source": "a", "target": "c"},
    {"source": "b", "target": "d"},
    {"source": "c", "target": "d"},
]


def graph(nodes=NODES, edges=EDGES, **top) -> str:
    """A node-link graph file's text (the diamond by default)."""
    return json.dumps({"directed": True, "nodes": nodes, "edges": edges, **top})


def one_node(**attributes) -> str:
    """A graph of the one node ``a`` with ``attributes`` (JSON text, spliced in as is)."""
    fields = ", ".join(f'"{key}": {value}' for key, value in {"mem": 1, **attributes}.items())
    return f'{{"directed": true, "nodes": [{{"id": "a", {fields}}}], "edges": []}}'


def order(*entries) -> str:
    return json.dumps({"graph": "g", "order": list(entries)})


def placement(devices=None, entries=("a", "b", "c", "d")) -> str:
    devices = {"a": 0, "b": 0, "c": 1, "d": 1} if devices is None else devices
    return json.dumps({"devices": devices, "order": list(entries)})


DEEP = "[" * 100_000 + "]" * 100_000
BINARY = bytes(range(256)) * 4


def onnx_model() -> bytes:
    """A valid two-node ONNX model (Relu then Sigmoid on a [2, 3] input)."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid"),
    ]
    tensors = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xy"]
    model = helper.make_model(
        helper.make_graph(nodes, "tiny", tensors[:1], tensors[1:]),
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
    )
    return model.SerializeToString()


def model_file(change: Callable[[dict], dict]) -> Callable[[], bytes]:
    """A Topoformer model file (a tiny valid one) after ``change`` of its document."""

    def build() -> bytes:
        import torch

        from dagopt.nn.checkpoint import save_model
        from dagopt.nn.encoders import EncoderConfig, PriorityModel

        config = EncoderConfig(dim=8, layers=1, heads_per_group=(1,) * 7, head_dim=4)
        with tempfile.TemporaryDirectory() as folder:
            path = save_model(Path(folder) / "model.pt", PriorityModel(config), {})
            document = torch.load(path, weights_only=True)
        buffer = io.BytesIO()
        torch.save(change(document), buffer)
        return buffer.getvalue()

    return build


def nan_weights(document: dict) -> dict:
    state = {key: value.clone() for key, value in document["state_dict"].items()}
    next(iter(state.values())).fill_(float("nan"))
    return {**document, "state_dict": state}


def example(name: str) -> Callable[[], bytes]:
    """The bytes of a shipped example file (``dagopt examples``)."""
    from dagopt.data import example_bytes

    return lambda: example_bytes(name)


def ranker(collection: str) -> Callable[[], bytes]:
    """The bytes of the TGraph model shipped for ``collection`` (conftest's copy)."""
    from dagopt.models import model_path
    from dagopt.rank.tgraph import shipped_model_name

    return lambda: model_path(shipped_model_name(collection)).read_bytes()


def one_runtime_layout() -> bytes:
    """The example layout file with every configuration's runtime made equal."""
    import dataclasses

    import numpy as np

    from dagopt.io.tpugraphs import read_tpugraphs, write_tpugraphs

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "l.npz"
        path.write_bytes(example("layout-program.npz")())
        record = read_tpugraphs(path)
        flat = np.full_like(record.config_runtime, 7)
        return write_tpugraphs(dataclasses.replace(record, config_runtime=flat), path).read_bytes()


TILE, LAYOUT = example("tile-kernel.npz"), example("layout-program.npz")
TILE_TRAIN, LAYOUT_TRAIN = "d/npz/tile/xla/train", "d/npz/layout/xla/random/train"
NEW_TGRAPH_RUN = "train tgraph --collection layout:xla:random --data d --run-dir run"

#: Files of every row's working directory: a valid graph, order and placement, an
#: output written before the command (rows write ``-o out.json`` to show it survives),
#: a text file (a path through it is no folder), JSON nested 100k deep, binary bytes.
WORKDIR_FILES: dict[str, str | bytes] = {
    "g.json": graph(),
    "o.json": order("a", "b", "c", "d"),
    "p.json": placement(),
    "out.json": '{"written": "before the command"}\n',
    "notes.txt": "not a directory\n",
    "deep.json": DEEP,
    "binary.json": BINARY,
}


@dataclass(frozen=True)
class Row:
    """One bad invocation: ``command`` (shell words, or a list), the text the error line
    must contain, and extra files (text, bytes, or a function making the bytes)."""

    name: str
    command: str | list[str]
    fragment: str
    files: dict[str, str | bytes | Callable[[], bytes]] = field(default_factory=dict)

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command) if isinstance(self.command, str) else self.command


ROWS = [
    # ------------------------------------------------ graph files (schedule reads them)
    Row("mem-400-digit-integer", "schedule big.json -m bfs", "'mem' is too large",
        {"big.json": one_node(mem="9" * 400)}),
    Row("mem-5000-digit-integer", "schedule big.json -m bfs", "unreadable JSON number",
        {"big.json": one_node(mem="9" * 5000)}),
    Row("mem-sum-overflows", "schedule big.json -m bfs", "sizes too large",
        {"big.json": graph([{"id": x, "mem": 1e308} for x in "ab"], [])}),
    Row("runtime-400-digit-integer", "place big.json -m single-device", "'runtime' is too large",
        {"big.json": one_node(runtime="7" * 400)}),
    Row("graph-nested-100k-deep", "schedule deep.json -m bfs", "JSON nested too deeply"),
    Row("edge-source-is-a-list", "schedule bad.json -m bfs",
        "edge #0: source: node id must be an integer or a string",
        {"bad.json": graph(edges=[{"source": ["a"], "target": "b"}])}),
    Row("edge-target-is-an-object", "schedule bad.json -m bfs",
        "edge #0: target: node id must be an integer or a string",
        {"bad.json": graph(edges=[{"source": "a", "target": {"id": "b"}}])}),
    Row("ids-equal-as-text", "place ids.json -m single-device -o out.json",
        "node ids 1 and '1' are the same as text",
        {"ids.json": graph([{"id": 1, "mem": 1}, {"id": "1", "mem": 1}], [])}),
    Row("nan-runtime", "place nan.json -m single-device",
        "node 'a' has a non-finite 'runtime': nan", {"nan.json": one_node(runtime="NaN")}),
    Row("infinite-runtime", "evaluate-placement inf.json p1.json",
        "node 'a' has a non-finite 'runtime': inf",
        {"inf.json": one_node(runtime="Infinity"), "p1.json": placement({"a": 0}, ["a"])}),
    Row("graph-not-utf8", "schedule binary.json -m bfs", "not UTF-8"),
    Row("graph-missing", "schedule missing.json -m bfs -o out.json", "missing.json: no such file"),
    Row("graph-is-a-directory", "schedule adir.json -m bfs",
        "adir.json: is a directory; give --out-dir DIR to run its graphs",
        {"adir.json/keep.txt": "x"}),
    Row("evaluate-order-peak-of-400-digits", "evaluate g.json r.json",
        "r.json: 'peak_memory' must be a finite number or null, got 9999",
        {"r.json": order("a", "b", "c", "d")[:-1] + ', "peak_memory": ' + "9" * 400 + "}"}),
    Row("place-out-where-nothing-can-be-written", "place g.json -m brkga -o /proc/1/x/p.json",
        "/proc/1/x/p.json: cannot write there"),
    Row("place-a-zoo-name-without-env", "place resnet-50 -m brkga",
        "resnet-50 is a zoo model, not a graph file: place it on real devices with --env"),
    Row("schedule-a-missing-file-without-suffix", "schedule nosuch -m lpmf",
        "nosuch: no such file"),
    Row("evaluate-a-directory", "evaluate adir o.json", "adir: is a directory, not a graph file",
        {"adir/keep.txt": "x"}),
    Row("place-a-directory", "place adir -m brkga",
        "adir: is a directory; give --out-dir DIR to run its graphs", {"adir/keep.txt": "x"}),
    Row("graph-suffix-unsupported", "schedule notes.txt -m bfs", "unsupported graph format '.txt'"),
    Row("graph-is-a-list", "schedule list.json -m bfs", "not a node-link graph",
        {"list.json": "[1, 2]"}),
    Row("graph-undirected", "schedule u.json -m bfs", "undirected",
        {"u.json": graph(directed=False)}),
    Row("graph-multigraph", "schedule m.json -m bfs", "multigraphs are not supported",
        {"m.json": graph(multigraph=True)}),
    Row("graph-without-edges", "schedule e.json -m bfs", "has no 'edges'",
        {"e.json": json.dumps({"nodes": NODES})}),
    Row("graph-cycle", "schedule c.json -m bfs -o out.json", "graph has a cycle",
        {"c.json": graph(edges=[*EDGES, {"source": "d", "target": "a"}])}),
    Row("graph-duplicate-id", "schedule dup.json -m bfs", "duplicate node id 'a'",
        {"dup.json": graph([NODES[0], NODES[0]], [])}),
    Row("mem-is-text", "schedule t.json -m bfs", "'mem' must be a number, got 'abc'",
        {"t.json": one_node(mem='"abc"')}),
    Row("mem-is-boolean", "schedule t.json -m bfs", "'mem' must be a number, got True",
        {"t.json": one_node(mem="true")}),
    Row("node-id-is-a-float", "schedule f.json -m bfs", "node id must be an integer or a string",
        {"f.json": graph([{"id": 1.5, "mem": 1}], [])}),
    Row("op-is-a-number", "schedule op.json -m bfs", "'op' must be a string",
        {"op.json": one_node(op=7)}),
    # ------------------------------------------------ schedule options and outputs
    Row("unknown-method", "schedule g.json -m nope", "unknown method 'nope'"),
    Row("method-without-that-option", "schedule g.json -m bfs --beam-width 3",
        "method 'bfs' has no option 'beam_width'"),
    Row("negative-time-limit", "schedule g.json -m bfs --time-limit -1", "'--time-limit'"),
    Row("nan-time-limit", "schedule g.json -m bfs --time-limit nan", "'--time-limit'"),
    Row("negative-seed", "schedule g.json -m bfs --seed -1", "'--seed'"),
    Row("seed-not-a-number", "schedule g.json -m bfs --seed x", "'--seed'"),
    Row("missing-method", "schedule g.json", "Missing option '--method'"),
    Row("output-is-the-graph", "schedule g.json -m bfs -o g.json", "is also an input"),
    Row("output-is-a-directory", "schedule g.json -m bfs -o adir", "adir: is a directory",
        {"adir/keep.txt": "x"}),
    Row("output-under-a-file", "schedule g.json -m bfs -o notes.txt/o.json",
        "notes.txt: is a file, not a directory"),
    Row("checkpoint-missing", "schedule g.json -m topoformer-greedy --checkpoint nope.pt",
        "no Topoformer model file at nope.pt"),
    Row("checkpoint-random-bytes", "schedule g.json -m topoformer-greedy --checkpoint r.pt",
        "cannot read model file", {"r.pt": BINARY}),
    Row("checkpoint-missing-keys", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "file without state_dict",
        {"k.pt": model_file(lambda d: {k: v for k, v in d.items() if k != "state_dict"})}),
    Row("checkpoint-empty-state", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "the state dict does not fit", {"k.pt": model_file(lambda d: {**d, "state_dict": {}})}),
    Row("checkpoint-empty-document", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "not a dagopt-priority-model file", {"k.pt": model_file(lambda d: {})}),
    Row("checkpoint-meta-not-a-dict", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "meta is not a dict", {"k.pt": model_file(lambda d: {**d, "meta": 5})}),
    Row("checkpoint-nan-weights", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "hold NaN or infinite values", {"k.pt": model_file(nan_weights)}),
    Row("checkpoint-bad-config", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "bad dagopt-priority-model config",
        {"k.pt": model_file(lambda d: {**d, "config": {"layers": "four"}})}),
    Row("checkpoint-huge-config", "schedule g.json -m topoformer-greedy --checkpoint k.pt",
        "the weights of a topoformer encoder of 1000000 layers",
        {"k.pt": model_file(lambda d: {**d, "config": {"layers": 10**6, "dim": 10**6}})}),
    Row("topoformer-sample-huge-samples",
        "schedule g.json -m topoformer-sample --samples 99999999999999999999",
        "samples must lie in 1..10,000,000"),
    # ------------------------------------------------ order files (evaluate)
    Row("order-nested-100k-deep", "evaluate g.json deep.json", "JSON nested too deeply"),
    Row("order-entry-is-a-list", "evaluate g.json l.json", "order entry ['a'] is not a node id",
        {"l.json": order(["a"], "b", "c", "d")}),
    Row("order-entry-is-an-object", "evaluate g.json l.json", "is not a node id",
        {"l.json": order({"a": 1}, "b", "c", "d")}),
    Row("order-unknown-node", "evaluate g.json l.json", "node 'zz' is not in graph",
        {"l.json": order("a", "b", "zz", "d")}),
    Row("order-misses-a-node", "evaluate g.json l.json", "order misses 1 of 4 nodes",
        {"l.json": order("a", "b", "d")}),
    Row("order-breaks-an-edge", "evaluate g.json l.json", "before its predecessor",
        {"l.json": order("d", "a", "b", "c")}),
    Row("order-not-an-order-file", "evaluate g.json g.json", "not an order file"),
    Row("order-not-utf8", "evaluate g.json binary.json", "not UTF-8"),
    Row("order-missing", "evaluate g.json nope.json", "nope.json: no such file"),
    # ------------------------------------------------ place
    Row("place-unknown-method", "place g.json -m nope", "unknown placement method 'nope'"),
    Row("place-set-without-equals", "place g.json -m brkga --set population",
        "--set expects key=value"),
    Row("place-set-unknown-option", "place g.json -m brkga --set nope=1",
        "method 'brkga' has no option 'nope'"),
    Row("place-set-population-text", "place g.json -m brkga --set population=abc",
        "option 'population' must be int"),
    Row("place-set-nested-100k-deep",
        ["place", "g.json", "-m", "brkga", f"--set=population={DEEP}"],
        "--set population: value nested too deeply"),
    Row("place-concentration-text", "place g.json -m brkga-prior --set concentration=x",
        "option 'concentration' must be a number"),
    Row("place-local-search-neighbours-text", "place g.json -m local-search --set neighbours=x",
        "option 'neighbours' must be int"),
    Row("place-cpsat-hint-not-a-pair", "place g.json -m cp-sat --set hint=5",
        "a hint is a pair (device_of, order)"),
    Row("place-cpsat-workers-text", "place g.json -m cp-sat --set num_workers=x",
        "option 'num_workers' must be int"),
    Row("place-tuned-params-not-a-path", "place g.json -m brkga-tuned --set params=5",
        "option 'params' must be a file path"),
    Row("place-tuned-params-bad-value", "place g.json -m brkga-tuned --set params=t.json",
        "t.json: tuned parameter 'population' must be int",
        {"t.json": json.dumps({"runtime": {"params": {"population": "x"}}})}),
    Row("place-tuned-params-nested-100k-deep",
        "place g.json -m brkga-tuned --set params=deep.json", "JSON nested too deeply"),
    Row("place-speeds-not-numbers", "place g.json -m single-device --speeds a,b",
        "--speeds must be comma-separated numbers"),
    Row("place-speeds-count", "place g.json -m single-device --speeds 1,2,3",
        "--speeds gives 3 factors for 2 devices"),
    Row("place-speed-nan", "place g.json -m single-device --speeds nan,1",
        "device speed must be finite and > 0"),
    Row("place-zero-devices", "place g.json -m single-device -d 0", "'--devices'"),
    Row("place-huge-devices", "place g.json -m single-device -d 99999999999999999999",
        "less than or equal to 1024"),
    Row("place-unknown-objective", "place g.json -m single-device --objective nope",
        "unknown objective 'nope'"),
    Row("place-no-runtimes", "place nort.json -m single-device", "no 'runtime' node attribute",
        {"nort.json": graph([{"id": "a", "mem": 1}], [])}),
    Row("place-bandwidth-underflows", "place g.json -m single-device --bandwidth 1e-320",
        "transfer times too large"),
    Row("place-output-is-the-graph", "place g.json -m single-device -o g.json",
        "is also an input"),
    Row("place-checkpoint-random-bytes", "place g.json -m regal --checkpoint r.pt",
        "cannot read model file", {"r.pt": BINARY}),
    # ------------------------------------------------ placement files (evaluate-placement)
    Row("placement-nested-100k-deep", "evaluate-placement g.json deep.json",
        "JSON nested too deeply"),
    Row("placement-order-entry-is-a-list", "evaluate-placement g.json l.json",
        "order entry ['a'] is not a node id",
        {"l.json": placement(entries=(["a"], "b", "c", "d"))}),
    Row("placement-device-out-of-range", "evaluate-placement g.json l.json",
        "is placed on device 5, but the devices are 0..1",
        {"l.json": placement({"a": 5, "b": 0, "c": 0, "d": 0})}),
    Row("placement-device-is-text", "evaluate-placement g.json l.json",
        "has device 'x', not an integer",
        {"l.json": placement({"a": "x", "b": 0, "c": 0, "d": 0})}),
    Row("placement-node-without-device", "evaluate-placement g.json l.json",
        "node 'd' has no device", {"l.json": placement({"a": 0, "b": 0, "c": 0})}),
    Row("placement-unknown-node", "evaluate-placement g.json l.json", "node 'zz' is not in graph",
        {"l.json": placement({"a": 0, "b": 0, "c": 0, "d": 0, "zz": 0})}),
    Row("placement-not-a-placement-file", "evaluate-placement g.json o.json",
        "not a placement file"),
    Row("placement-runtime-nan", "evaluate-placement nan.json p1.json",
        "non-finite 'runtime': nan",
        {"nan.json": one_node(runtime="NaN"), "p1.json": placement({"a": 0}, ["a"])}),
    # ------------------------------------------------ import / export-onnx
    Row("import-random-bytes", "import r.onnx -o out.json", "not an ONNX model",
        {"r.onnx": BINARY}),
    Row("import-missing", "import nope.onnx -o new.json", "nope.onnx: no such file"),
    Row("import-a-directory", "import adir.onnx -o new.json", "adir.onnx: cannot read",
        {"adir.onnx/keep.txt": "x"}),
    Row("import-output-is-the-model", "import m.onnx -o m.onnx", "is also an input",
        {"m.onnx": onnx_model}),
    Row("import-negative-assume-size", "import m.onnx -o new.json --assume-size -1",
        "'--assume-size'", {"m.onnx": onnx_model}),
    Row("import-output-under-a-file", "import m.onnx -o notes.txt/g.json",
        "notes.txt: is a file, not a directory",
        {"m.onnx": onnx_model}),
    Row("export-onnx-random-bytes", "export-onnx r.onnx o.json -o out.onnx", "not an ONNX model",
        {"r.onnx": BINARY}),
    Row("export-onnx-order-of-another-graph", "export-onnx m.onnx o.json -o out.onnx",
        "node 'a' is not in graph", {"m.onnx": onnx_model}),
    Row("export-onnx-order-nested-100k-deep", "export-onnx m.onnx deep.json -o out.onnx",
        "JSON nested too deeply", {"m.onnx": onnx_model}),
    # ------------------------------------------------ train
    Row("train-ordering-config-binary", "train ordering --run-dir run --config binary.json",
        "cannot read config (not JSON text)"),
    Row("train-placement-config-binary", "train placement --run-dir run --config binary.json",
        "cannot read config (not JSON text)"),
    Row("train-ordering-config-nested-100k-deep",
        "train ordering --run-dir run --config deep.json", "JSON nested too deeply"),
    Row("train-ordering-config-a-list", "train ordering --run-dir run --config l.json",
        "options must be a JSON object, got list", {"l.json": "[1]"}),
    Row("train-ordering-config-unknown-key", "train ordering --run-dir run --config c.json",
        "unknown option 'nope'", {"c.json": '{"nope": 1}'}),
    Row("train-ordering-config-wrong-type", "train ordering --run-dir run --config c.json",
        "option 'epochs' must be int", {"c.json": '{"epochs": "x"}'}),
    Row("train-ordering-config-missing", "train ordering --run-dir run --config nope.json",
        "nope.json: no such file"),
    Row("train-ordering-run-dir-is-a-file", "train ordering --run-dir notes.txt",
        "notes.txt: is a file, not a run directory"),
    Row("train-ordering-huge-encoder", "train ordering --run-dir run --config c.json",
        "the weights of a topoformer encoder of 100000 layers of width 100000 needs about",
        {"c.json": '{"encoder": {"layers": 100000, "dim": 100000}}'}),
    Row("train-placement-huge-policy", "train placement --run-dir run --config c.json",
        "the weights of a REGAL policy of width 1000000000",
        {"c.json": '{"policy": {"hidden": 1000000000}}'}),
    Row("train-ordering-resume-nothing", "train ordering --run-dir run --resume",
        "nothing to resume"),
    Row("train-ordering-zero-threads", "train ordering --run-dir run --threads 0",
        "'--threads'"),
    Row("train-placement-unknown-setting", "train placement --run-dir run --set nope=1",
        "unknown option 'nope'"),
    Row("train-placement-unknown-objective", "train placement --run-dir run --objective nope",
        "unknown objective 'nope'"),
    Row("train-placement-negative-epochs", "train placement --run-dir run --set epochs=-1",
        "training option 'epochs' must be >= 1"),
    Row("train-brkga-unknown-objective", "train brkga --objective nope --graphs 1 -o new.json",
        "unknown objective 'nope'"),
    Row("train-brkga-output-not-json", "train brkga --objective runtime --graphs 1 -o notes.json",
        "notes.json: invalid JSON", {"notes.json": "not JSON\n"}),
    Row("train-brkga-output-a-list", "train brkga --objective runtime --graphs 1 -o l.json",
        "not a tuned BRKGA parameters file", {"l.json": "[]"}),
    Row("train-brkga-zero-graphs", "train brkga --objective runtime --graphs 0", "'--graphs'"),
    # ------------------------------------------------ rank, train tgraph, tgraph-ensemble
    Row("rank-negative-seed", "rank t.npz --seed -1", "'--seed'", {"t.npz": TILE}),
    Row("rank-a-folder-without-npz", "rank adir", "adir: no TpuGraphs files (.npz)",
        {"adir/keep.txt": "x"}),
    Row("rank-model-a-directory", "rank t.npz --model adir", "adir: is a directory",
        {"t.npz": TILE, "adir/keep.txt": "x"}),
    Row("rank-unknown-collection", "rank t.npz --collection bogus", "unknown collection 'bogus'",
        {"t.npz": TILE}),
    Row("rank-unknown-collection-with-model", "rank l.npz --model m.pt --collection layout:foo",
        "unknown collection 'layout:foo'",
        {"l.npz": LAYOUT, "m.pt": ranker("layout:xla:random")}),
    Row("rank-model-of-another-collection",
        "rank l.npz --model m.pt --collection layout:nlp:random",
        "m.pt is a model of layout:xla:random, not of collection layout:nlp:random",
        {"l.npz": LAYOUT, "m.pt": ranker("layout:xla:random")}),
    Row("rank-out-a-directory", "rank t.npz --out adir", "adir: is a directory, not a file",
        {"t.npz": TILE, "adir/keep.txt": "x"}),
    Row("rank-out-under-a-file", "rank t.npz --collection tile:xla --out notes.txt/x.csv",
        "notes.txt: is a file, not a directory", {"t.npz": TILE}),
    Row("train-placement-objective-twice",
        "train placement --run-dir run --objective runtime --set objective=peak-memory",
        "--objective and --set objective=... both give objective: give one"),
    Row("train-tgraph-negative-seed", f"{NEW_TGRAPH_RUN} --set seed=-1",
        "training option 'seed' must be >= 0"),
    Row("train-tgraph-no-splits", f"{NEW_TGRAPH_RUN} --set splits=[]", "splits is empty"),
    Row("train-tgraph-a-split-twice", [*shlex.split(NEW_TGRAPH_RUN), "--set",
        'splits=["train", "train"]'], "splits names a split twice"),
    Row("generate-configs-tile-with-a-variant",
        "generate configs --collection tile --variant default -o gen",
        "--variant applies to the layout collections, not to tile"),
    Row("train-tgraph-without-collection", "train tgraph --data d --run-dir run",
        "--collection is required for a new run"),
    Row("train-tgraph-without-data", "train tgraph --collection layout:xla:random --run-dir run",
        "--data is required for a new run"),
    Row("train-tgraph-layout-file-in-tile-collection",
        "train tgraph --collection tile:xla --data d --run-dir run",
        "b.npz: a layout file in tile collection tile:xla",
        {f"{TILE_TRAIN}/a.npz": TILE, f"{TILE_TRAIN}/b.npz": LAYOUT}),
    Row("train-tgraph-tile-file-in-layout-collection", NEW_TGRAPH_RUN,
        "b.npz: a tile file in layout collection layout:xla:random",
        {f"{LAYOUT_TRAIN}/a.npz": LAYOUT, f"{LAYOUT_TRAIN}/b.npz": TILE}),
    Row("train-tgraph-one-runtime", NEW_TGRAPH_RUN,
        "layout:xla:random: nothing to rank: all 2 graphs have fewer than 2 configurations "
        "with different runtimes", {f"{LAYOUT_TRAIN}/a.npz": one_runtime_layout,
                                    f"{LAYOUT_TRAIN}/b.npz": one_runtime_layout}),
    Row("train-tgraph-more-folds-than-graphs",  # fails before fold 0 trains: no run left
        f"{NEW_TGRAPH_RUN} --set folds=3 --set train_folds=3 --set keep_folds=1",
        "fold 2 would have no validation graph: 2 graphs of layout:xla:random fill fewer "
        "than 3 folds", {f"{LAYOUT_TRAIN}/a.npz": LAYOUT, f"{LAYOUT_TRAIN}/b.npz": LAYOUT}),
    Row("train-tgraph-resume-with-set", "train tgraph --run-dir run --resume --set epochs=5",
        "run: the options given (--config, --set, ...) differ from the run's config.json",
        {"run/config.json": "{}", "run/state.pt": BINARY}),
    Row("tgraph-ensemble-a-directory", "train tgraph-ensemble adir m.pt -o new.pt",
        "adir: is a directory", {"adir/keep.txt": "x", "m.pt": ranker("layout:xla:random")}),
    Row("tgraph-ensemble-one-file-twice", "train tgraph-ensemble m.pt adir/../m.pt -o new.pt",
        "adir/../m.pt: named twice (also as m.pt)",
        {"adir/keep.txt": "x", "m.pt": ranker("layout:xla:random")}),
    Row("tgraph-ensemble-two-collections", "train tgraph-ensemble m.pt n.pt -o new.pt",
        "models of different collections: m.pt (layout:xla:random); n.pt (layout:nlp:random)",
        {"m.pt": ranker("layout:xla:random"), "n.pt": ranker("layout:nlp:random")}),
    # ------------------------------------------------ zoo, methods, demo, generate, root
    Row("zoo-unknown-model", "zoo export nope --mode inference", "unknown zoo model 'nope'"),
    Row("zoo-unknown-mode", "zoo export gpt2 --mode nope", "'--mode'"),
    Row("zoo-missing-name", "zoo export --mode inference", "Missing argument 'name'"),
    Row("zoo-list-extra-argument", "zoo list extra", "unexpected extra argument"),
    Row("methods-extra-argument", "methods extra", "unexpected extra argument"),
    Row("demo-zero-nodes", "demo --nodes 0", "'--nodes'"),
    Row("demo-negative-seed", "demo --seed -1", "'--seed'"),
    Row("demo-seed-beyond-64-bits", f"demo --seed {2**63}", "'--seed': Input should be less"),
    Row("demo-nodes-not-a-number", "demo --nodes many", "'--nodes'"),
    Row("generate-zero-nodes", "generate layered -n 0 -o gen", "'--nodes'"),
    Row("generate-negative-seed", "generate layered -n 5 --seed -1 -o gen", "'--seed'"),
    Row("generate-seed-beyond-64-bits", f"generate layered -n 5 --seed {2**63} -o gen",
        "'--seed': Input should be less"),
    Row("generate-zero-count", "generate placement -n 5 --count 0 -o gen", "'--count'"),
    Row("generate-output-is-a-file", "generate layered -n 5 -o notes.txt",
        "notes.txt: is a file, not a directory"),
    Row("generate-unknown-family", "generate nope", "No such command 'nope'"),
    Row("unknown-command", "nope", "No such command 'nope'"),
    Row("unknown-root-option", "--bogus", "No such option: --bogus"),
]  # fmt: skip


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root``: its bytes (None for a directory) and its mode."""
    found = {}
    for path in sorted(root.rglob("*")):
        data = None if path.is_dir() else path.read_bytes()
        found[str(path.relative_to(root))] = (data, path.stat().st_mode)
    return found


def write_files(root: Path, files: dict) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        content = content() if callable(content) else content
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A fresh working directory with ``WORKDIR_FILES``; ``out.json`` has mode 0o640,
    not the umask's default, so that a file put in its place shows in its mode too."""
    root = tmp_path / "work"
    root.mkdir()
    write_files(root, WORKDIR_FILES)
    (root / "out.json").chmod(0o640)
    monkeypatch.chdir(root)
    return root


def test_rows_are_named_uniquely():
    names = [row.name for row in ROWS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_bad_invocation_is_one_line_and_changes_nothing(row, workdir):
    write_files(workdir, row.files)
    before = snapshot(workdir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.invoke(app, row.argv)
    assert_user_error(result, row.fragment)
    assert "Traceback" not in result.stdout + result.stderr
    assert snapshot(workdir) == before
    shown = [w for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert not shown, [str(w.message) for w in shown]


# --------------------------------------------------------------------------- empty graphs
def test_empty_graph_is_handled_everywhere(workdir):
    """A graph without nodes is valid: every command gives the trivial answer (peak 0,
    makespan 0) rather than an error, as the library does (``Graph(0, ...)``)."""
    write_files(
        workdir,
        {
            "empty.json": graph([], []),
            "order.json": order(),
            "placement.json": placement({}, []),
        },
    )
    for command, expected in (
        ("schedule empty.json -m bfs -o new-order.json", "peak 0, lower bound 0"),
        ("evaluate empty.json order.json --profile", "peak 0, lower bound 0"),
        ("place empty.json -m single-device -o new-placement.json", "makespan 0 s"),
        ("evaluate-placement empty.json placement.json", "makespan 0 s"),
    ):
        result = runner.invoke(app, shlex.split(command))
        assert result.exit_code == 0, result.output
        assert expected in result.stdout
    assert json.loads((workdir / "new-order.json").read_text())["order"] == []
    assert json.loads((workdir / "new-placement.json").read_text())["devices"] == {}


def test_a_group_without_command_prints_its_help():
    for argv in ([], ["train"], ["generate"]):
        result = runner.invoke(app, argv)
        assert "Usage" in result.stdout and "error:" not in result.output


def test_topoformer_too_large_for_memory_is_one_line(workdir, monkeypatch):
    """The dense masks and attention bias are estimated before featurising: a graph too
    large for the memory left stops with the largest node count that fits."""
    import dagopt.resources

    monkeypatch.setattr(dagopt.resources, "available_bytes", lambda: 8e6)
    nodes = [{"id": i, "mem": 1} for i in range(600)]
    edges = [{"source": i, "target": i + 1} for i in range(599)]
    write_files(workdir, {"chain.json": graph(nodes, edges)})
    before = snapshot(workdir)
    result = runner.invoke(app, ["schedule", "chain.json", "-m", "topoformer-greedy"])
    line = assert_user_error(result, "forward pass on 600 nodes needs about")
    fits = math.isqrt(int(0.8 * 8e6 / (7 + 7 * (4 + 2) + 1)))  # masks kept, float32 bias
    assert f"graphs of up to about {fits} nodes fit" in line
    assert "topoformer-sparse-ordering" in line
    assert snapshot(workdir) == before
