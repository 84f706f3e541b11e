"""TpuGraphs ``.npz`` files: bit-exact round trips, the Graph view, collection folders,
submission CSVs, and a table of bad files that must each be a one-line ``InputError``.

Every record here is SYNTHETIC (``dagopt.generate.tpugraphs``): it has the published
arrays, shapes and dtypes, and random values.
"""

import dataclasses
import io
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dagopt.errors import InputError
from dagopt.generate.tpugraphs import synthetic_layout_record, synthetic_tile_record
from dagopt.io import load
from dagopt.io.tpugraphs import (
    HLO_OPCODES,
    LayoutRecord,
    TileRecord,
    collection_dir,
    collection_files,
    read_submission,
    read_tpugraphs,
    submission_id,
    tensor_bytes,
    tpugraphs_graph,
    write_submission,
    write_tpugraphs,
)


def arrays_of(record) -> dict[str, np.ndarray]:
    return {
        f.name: getattr(record, f.name)
        for f in dataclasses.fields(record)
        if f.name != "name" and getattr(record, f.name) is not None
    }


def assert_bit_exact(a, b) -> None:
    assert type(a) is type(b)
    left, right = arrays_of(a), arrays_of(b)
    assert left.keys() == right.keys()
    for key in left:
        assert left[key].dtype == right[key].dtype, key
        assert left[key].shape == right[key].shape, key
        assert left[key].tobytes() == right[key].tobytes(), key


def layout(**changes) -> LayoutRecord:
    return dataclasses.replace(
        synthetic_layout_record(1, num_nodes=40, num_configurable=6), **changes
    )


def tile(**changes) -> TileRecord:
    return dataclasses.replace(synthetic_tile_record(2), **changes)


RECORDS = {
    "tile": tile,
    "tile-unlabelled": lambda: synthetic_tile_record(3, labelled=False),
    "layout-(1,k)-splits": layout,
    "layout-(k,)-splits": lambda: layout(node_splits=layout().node_splits.reshape(-1)),
    "layout-no-splits": lambda: layout(node_splits=None),
    "layout-unlabelled": lambda: synthetic_layout_record(
        4, num_nodes=30, num_configurable=5, labelled=False
    ),
    "layout-other-dtypes": lambda: layout(
        node_opcode=layout().node_opcode.astype(np.uint8),
        edge_index=layout().edge_index.astype(np.int64),
        node_config_ids=layout().node_config_ids.astype(np.int64),
        config_runtime=layout().config_runtime.astype(np.int64),
        node_feat=layout().node_feat.astype(np.float64),
    ),
    "layout-no-configs": lambda: layout(
        node_config_feat=layout().node_config_feat[:0], config_runtime=layout().config_runtime[:0]
    ),
}


@pytest.mark.parametrize("compressed", [False, True], ids=["savez", "savez_compressed"])
@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_write_read_is_bit_exact(kind, compressed, tmp_path):
    record = RECORDS[kind]()
    path = write_tpugraphs(record, tmp_path / "model.4x4.fp16.npz", compressed=compressed)
    back = read_tpugraphs(path)
    assert_bit_exact(record, back)
    assert back.name == "model.4x4.fp16"
    with np.load(path, allow_pickle=False) as archive:  # the file holds what numpy wrote
        assert sorted(archive.files) == sorted(arrays_of(record))


def test_records_are_read_only_without_touching_the_callers_arrays():
    feat = synthetic_tile_record(0).node_feat.copy()
    record = tile(node_feat=feat)
    assert feat.flags.writeable and not record.node_feat.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "other"


def test_graph_reverses_edges_into_data_flow_and_names_opcodes():
    record = layout()
    graph = tpugraphs_graph(record)
    consumer, producer = record.edge_index[:, 0], record.edge_index[:, 1]
    src, dst = graph.edges
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == sorted(
        zip(producer.tolist(), consumer.tolist(), strict=True)
    )
    assert graph.is_topological(np.arange(graph.num_nodes))  # files list nodes in topo order
    assert graph.op[int(record.node_config_ids[0])] in {"convolution", "dot", "reshape"}
    assert graph.node_data["configurable"].sum() == record.node_config_ids.size
    assert graph.name == record.name


def test_opcode_table_and_unknown_ids():
    assert (HLO_OPCODES[26], HLO_OPCODES[34], HLO_OPCODES[75]) == ("convolution", "dot", "reshape")
    assert HLO_OPCODES[63] == "parameter" and HLO_OPCODES[120] == "tan" and 0 not in HLO_OPCODES
    record = tile(node_opcode=np.full(20, 200, dtype=np.int32))
    assert set(tpugraphs_graph(record).op) == {"200"}


def test_mem_is_element_count_times_element_size():
    feat = np.zeros((3, 140), dtype=np.float32)
    feat[0, [13, 21, 22, 27, 28]] = [1, 8, 4, 12, 32]  # f32 [8, 4]
    feat[1, [15, 28]] = [1, 1]  # bf16 scalar
    feat[2, [18, 28]] = [1, 1]  # tuple
    np.testing.assert_array_equal(tensor_bytes(feat), [128.0, 2.0, 0.0])


def test_load_dispatches_npz(tmp_path):
    path = write_tpugraphs(layout(), tmp_path / "g.npz")
    graph = load(path)
    assert graph.num_nodes == 40 and graph.name == "g"


# ---------------------------------------------------------------- bad files
def with_arrays(base, **changes):
    def build():
        arrays = arrays_of(base())
        for key, value in changes.items():
            if value is None:
                arrays.pop(key)
            else:
                arrays[key] = value(arrays) if callable(value) else value
        return arrays

    return build


def set_item(key, index, value):
    def change(arrays):
        array = arrays[key].copy()
        array[index] = value
        return array

    return change


BAD_FILES = {
    "node_feat-width": (with_arrays(tile, node_feat=lambda a: a["node_feat"][:, :139]), "(?, 140)"),
    "node_feat-int": (with_arrays(tile, node_feat=lambda a: a["node_feat"].astype(int)), "float"),
    "node_feat-nan": (with_arrays(tile, node_feat=set_item("node_feat", (0, 5), np.nan)), "NaN"),
    "node_feat-missing": (with_arrays(tile, node_feat=None), "missing array 'node_feat'"),
    "opcode-length": (
        with_arrays(tile, node_opcode=lambda a: a["node_opcode"][:-1]),
        "one per node",
    ),
    "opcode-negative": (with_arrays(tile, node_opcode=set_item("node_opcode", 0, -3)), "negative"),
    "edge-width": (with_arrays(tile, edge_index=lambda a: a["edge_index"][:, :1]), "(?, 2)"),
    "edge-id-too-big": (
        with_arrays(tile, edge_index=set_item("edge_index", (0, 1), 20)),
        "outside 0..19",
    ),
    "edge-id-negative": (
        with_arrays(tile, edge_index=set_item("edge_index", (1, 0), -1)),
        "node id -1",
    ),
    "edge-float": (with_arrays(tile, edge_index=lambda a: a["edge_index"] * 1.0), "integer"),
    "config_feat-width": (
        with_arrays(tile, config_feat=lambda a: a["config_feat"][:, :23]),
        "(?, 24)",
    ),
    "config_feat-3d": (with_arrays(tile, config_feat=lambda a: a["config_feat"][None]), "(?, 24)"),
    "tile-runtime-nan": (
        with_arrays(tile, config_runtime=lambda a: np.where(np.arange(30) == 2, np.nan, 1.0)),
        "NaN",
    ),
    "tile-runtime-zero": (
        with_arrays(tile, config_runtime=set_item("config_runtime", 0, 0)),
        "<= 0",
    ),
    "tile-runtime-length": (
        with_arrays(tile, config_runtime=lambda a: a["config_runtime"][:-1]),
        "one per configuration",
    ),
    "tile-normalizers-missing": (
        with_arrays(tile, config_runtime_normalizers=None),
        "come together",
    ),
    "tile-normalizers-2d": (
        with_arrays(
            tile, config_runtime_normalizers=lambda a: a["config_runtime_normalizers"][None]
        ),
        "expected (c,)",
    ),
    "layout-value-6": (
        with_arrays(layout, node_config_feat=set_item("node_config_feat", (0, 0, 0), 6)),
        "outside",
    ),
    "layout-value--2": (
        with_arrays(layout, node_config_feat=set_item("node_config_feat", (1, 2, 3), -2)),
        "outside",
    ),
    "layout-value-half": (
        with_arrays(layout, node_config_feat=set_item("node_config_feat", (0, 1, 0), 0.5)),
        "outside",
    ),
    "layout-value-nan": (
        with_arrays(layout, node_config_feat=set_item("node_config_feat", (0, 1, 0), np.nan)),
        "outside",
    ),
    "layout-width": (
        with_arrays(layout, node_config_feat=lambda a: a["node_config_feat"][..., :17]),
        "(?, ?, 18)",
    ),
    "layout-nc-mismatch": (
        with_arrays(layout, node_config_feat=lambda a: a["node_config_feat"][:, :-1]),
        "axis 1",
    ),
    "config-ids-out-of-range": (
        with_arrays(layout, node_config_ids=set_item("node_config_ids", 0, 40)),
        "outside 0..39",
    ),
    "config-ids-repeated": (
        with_arrays(
            layout,
            node_config_ids=lambda a: np.sort(
                np.r_[a["node_config_ids"][1:2], a["node_config_ids"][1:]]
            ),
        ),
        "twice",
    ),
    "layout-runtime-nan": (
        with_arrays(layout, config_runtime=lambda a: np.where(np.arange(50) == 0, np.nan, 1.0)),
        "NaN",
    ),
    "layout-runtime-length": (
        with_arrays(layout, config_runtime=lambda a: a["config_runtime"][:10]),
        "one per configuration",
    ),
    "splits-shape": (with_arrays(layout, node_splits=lambda a: np.zeros((2, 3), int)), "(1, k)"),
    "splits-out-of-range": (
        with_arrays(layout, node_splits=lambda a: np.array([[0, 40]])),
        "outside",
    ),
    "layout-missing-ids": (
        with_arrays(layout, node_config_ids=None),
        "missing array 'node_config_ids'",
    ),
    "no-configurations": (
        with_arrays(layout, node_config_ids=None, node_config_feat=None),
        "not a TpuGraphs",
    ),
    "unknown-array": (with_arrays(tile, extra=np.zeros(3)), "unknown array 'extra'"),
    "tile-and-layout": (with_arrays(tile, node_config_ids=np.zeros(1, int)), "mixes tile"),
    "bool-opcodes": (with_arrays(tile, node_opcode=lambda a: a["node_opcode"] > 40), "integer"),
}


def save_npz(path, arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_is_a_one_line_input_error(case, tmp_path):
    build, fragment = BAD_FILES[case]
    path = save_npz(tmp_path / "bad.npz", build())
    with pytest.raises(InputError) as info:
        read_tpugraphs(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    assert fragment in message


def not_npz_files(tmp_path):
    good = write_tpugraphs(tile(), tmp_path / "good.npz").read_bytes()
    pickled = io.BytesIO()
    np.savez(pickled, node_feat=np.array([{"a": 1}], dtype=object))
    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("node_feat.npy", b"not an array")
    return {
        "text": b"ID,TopConfigs\n",
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "pickled-object-array": pickled.getvalue(),
        "npy-not-npz": npy.getvalue(),
        "zip-of-garbage": zipped.getvalue(),
    }


@pytest.mark.parametrize(
    "case", ["text", "empty", "truncated", "pickled-object-array", "npy-not-npz", "zip-of-garbage"]
)
def test_not_an_npz_is_a_one_line_input_error(case, tmp_path):
    path = tmp_path / "bad.npz"
    path.write_bytes(not_npz_files(tmp_path)[case])
    with pytest.raises(InputError) as info:
        read_tpugraphs(path)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_tpugraphs(tmp_path / "absent.npz")


def test_cyclic_edges_are_a_graph_error_naming_the_record():
    from dagopt.errors import GraphError

    record = tile(edge_index=np.array([[1, 0], [0, 1]], dtype=np.int32))
    with pytest.raises(GraphError, match="synthetic-tile: graph has a cycle"):
        tpugraphs_graph(record)


# ---------------------------------------------------------------- fuzzing the reader
KEYS = [
    "node_feat",
    "node_opcode",
    "edge_index",
    "config_feat",
    "config_runtime",
    "config_runtime_normalizers",
    "node_config_ids",
    "node_config_feat",
    "node_splits",
    "junk",
]
DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64, np.bool_]
WIDTHS = [0, 1, 2, 3, 18, 24, 140]


@st.composite
def random_array(draw):
    shape = tuple(draw(st.lists(st.sampled_from(WIDTHS), max_size=3)))
    if np.prod(shape) > 5000:
        shape = shape[:1]
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    return draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(dtype, allow_nan=True)))


@st.composite
def random_arrays(draw):
    """A valid file's arrays (or none) with up to three arrays removed, added or replaced
    by random ones, so the checks behind the first are reached too."""
    base = draw(st.sampled_from(["tile", "layout", "none"]))
    arrays = {} if base == "none" else arrays_of({"tile": tile, "layout": layout}[base]())
    for key in draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True)):
        if key in arrays and draw(st.booleans()):
            del arrays[key]
        else:
            arrays[key] = draw(random_array())
    return arrays


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays=random_arrays())
def test_fuzz_random_arrays_give_a_record_or_an_input_error(arrays, tmp_path_factory):
    path = save_npz(tmp_path_factory.mktemp("fuzz") / "f.npz", arrays)
    try:
        record = read_tpugraphs(path)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert_bit_exact(record, read_tpugraphs(write_tpugraphs(record, path)))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzz_garbage_and_corrupted_files_give_a_record_or_an_input_error(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    good = bytearray(write_tpugraphs(tile(), folder / "good.npz").read_bytes())
    choice = data.draw(st.sampled_from(["random", "flip", "cut"]))
    if choice == "random":
        blob = data.draw(st.binary(max_size=2000))
    elif choice == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            good[data.draw(st.integers(0, len(good) - 1))] = data.draw(st.integers(0, 255))
        blob = bytes(good)
    else:
        blob = bytes(good[: data.draw(st.integers(0, len(good)))])
    path = folder / "f.npz"
    path.write_bytes(blob)
    try:
        read_tpugraphs(path)
    except InputError as exc:
        assert "\n" not in str(exc)


# ---------------------------------------------------------------- collections and submissions
def test_collection_folders_follow_the_dataset_layout(tmp_path):
    assert collection_dir(tmp_path, "tile:xla", "train") == tmp_path / "npz/tile/xla/train"
    folder = collection_dir(tmp_path, "layout:nlp:default", "test")
    assert folder == tmp_path / "npz/layout/nlp/default/test"
    for name in ("b", "a"):
        write_tpugraphs(layout(), folder / f"{name}.npz")
    assert [p.stem for p in collection_files(tmp_path, "layout:nlp:default", "test")] == ["a", "b"]
    with pytest.raises(InputError, match="no such folder"):
        collection_files(tmp_path, "layout:xla:random", "valid")
    with pytest.raises(InputError, match="unknown collection"):
        collection_dir(tmp_path, "layout:xla", "train")
    with pytest.raises(InputError, match="unknown split"):
        collection_dir(tmp_path, "tile:xla", "validation")


def test_submission_round_trip(tmp_path):
    rankings = {
        submission_id("tile:xla", "alexnet_train_batch_32_-1bae27a41d70f4fc"): [3, 0, 4, 1, 2],
        submission_id("layout:xla:random", "resnet50.4x4.fp16"): np.arange(1000)[::-1],
        submission_id("layout:nlp:default", "name:with:colons"): np.array([1, 0], dtype=np.int32),
    }
    path = write_submission(tmp_path / "submission.csv", rankings)
    lines = path.read_text().splitlines()
    assert lines[0] == "ID,TopConfigs"
    assert lines[1] == "tile:xla:alexnet_train_batch_32_-1bae27a41d70f4fc,3;0;4;1;2"
    back = read_submission(path)
    assert list(back) == list(rankings)
    for key, ranking in rankings.items():
        np.testing.assert_array_equal(back[key], ranking)


BAD_SUBMISSIONS = {
    "header": ("Id,TopConfigs\ntile:xla:a,1;2\n", "first line"),
    "no-collection": ("ID,TopConfigs\nfoo:a,1;2\n", "COLLECTION:NAME"),
    "empty-name": ("ID,TopConfigs\ntile:xla:,1\n", "COLLECTION:NAME"),
    "three-cells": ("ID,TopConfigs\ntile:xla:a,1,2\n", "2 comma-separated cells"),
    "negative": ("ID,TopConfigs\ntile:xla:a,1;-2\n", "indices >= 0"),
    "empty-ranking": ("ID,TopConfigs\ntile:xla:a,\n", "indices >= 0"),
    "unicode-digit": ("ID,TopConfigs\ntile:xla:a,1;²\n", "indices >= 0"),
    "duplicate-id": ("ID,TopConfigs\ntile:xla:a,1\ntile:xla:a,2\n", "duplicate ID"),
}


@pytest.mark.parametrize("case", sorted(BAD_SUBMISSIONS))
def test_bad_submission_is_a_one_line_input_error(case, tmp_path):
    text, fragment = BAD_SUBMISSIONS[case]
    path = tmp_path / "s.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=fragment):
        read_submission(path)


def test_submission_writer_rejects_bad_rows(tmp_path):
    with pytest.raises(InputError, match="COLLECTION:NAME"):
        write_submission(tmp_path / "s.csv", {"tile:xla": [1]})
    with pytest.raises(InputError, match="non-empty"):
        write_submission(tmp_path / "s.csv", {"tile:xla:a": []})
    with pytest.raises(InputError, match="negative"):
        write_submission(tmp_path / "s.csv", {"tile:xla:a": [0, -1]})
    with pytest.raises(InputError, match="cannot be a submission ID"):
        submission_id("tile:xla", "a,b")


def test_the_graph_carries_the_node_features():
    from dagopt.io.tpugraphs import tpugraphs_graph

    record = synthetic_layout_record(seed=3)
    graph = tpugraphs_graph(record)
    assert graph.node_data["node_feat"].shape == (graph.num_nodes, 140)
    assert np.array_equal(graph.node_data["node_feat"], record.node_feat)
