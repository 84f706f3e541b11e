"""Fuzzing every reader of a user's file: whatever the file holds, the reader returns or
raises a ``DagoptError`` with a one-line message (which the CLI prints as ``error:``),
never another exception.

Documents are drawn near each format (the right keys with values of any JSON type,
huge integers, NaN and infinities, nesting), beside plain random text and bytes; the
binary formats (ONNX, model files) get random bytes and valid files with bytes flipped.
"""

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagopt.configs import read_config
from dagopt.errors import DagoptError
from dagopt.graph import Graph
from dagopt.io import read_graph_json, read_order, read_placement

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Any JSON value, nested a few levels.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
#: Numbers a size or runtime could hold, valid or not, or any JSON value.
numbers = st.one_of(
    st.integers(-5, 1000),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1e308, -0.0, True]),
    json_values,
)
#: Node ids: the diamond's, numbers and texts equal as text, or any JSON value.
node_ids = st.one_of(st.sampled_from(["a", "b", "c", "d", "1", 1, 0, 2.0]), json_values)


def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return path


def returns_or_raises_one_line(read: Callable[[], object]) -> None:
    """The property: ``read()`` returns, or raises a one-line ``DagoptError``."""
    try:
        read()
    except DagoptError as exc:
        assert "\n" not in str(exc), str(exc)


def dumped(document: object) -> str:
    return json.dumps(document)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """One folder for every example: each writes the file it reads (module scope, so
    that hypothesis may run many examples per test)."""
    return tmp_path_factory.mktemp("fuzz")


DIAMOND = Graph(4, [0, 0, 1, 2], [1, 2, 3, 3], mem=[10, 30, 5, 1], names=["a", "b", "c", "d"])

# --------------------------------------------------------------------------- graph files
node_records = st.fixed_dictionaries(
    {"id": node_ids},
    optional={
        "mem": numbers,
        "param_mem": numbers,
        "op": json_values,
        "runtime": numbers,
        "features": st.lists(numbers, max_size=3),
    },
)
edge_records = st.fixed_dictionaries(
    {}, optional={"source": node_ids, "target": node_ids, "bytes": numbers}
)
node_link = st.fixed_dictionaries(
    {"nodes": st.lists(node_records, max_size=5) | json_values},
    optional={
        "edges": st.lists(edge_records, max_size=6) | json_values,
        "links": st.lists(edge_records, max_size=6),
        "directed": json_values,
        "multigraph": json_values,
        "graph": json_values,
    },
)
texts = st.text(max_size=40) | st.binary(max_size=40)


@FUZZ
@given(st.one_of(node_link.map(dumped), json_values.map(dumped), texts))
def test_graph_reader(folder, content):
    path = write(folder, "graph.json", content)
    returns_or_raises_one_line(lambda: read_graph_json(path))


# --------------------------------------------------------------------------- order files
order_documents = st.fixed_dictionaries(
    {"order": st.lists(node_ids, max_size=6) | json_values},
    optional={
        "graph": json_values,
        "method": json_values,
        "peak_memory": numbers,
        "seconds": numbers,
        "proved_optimal": json_values,
    },
)


@FUZZ
@given(st.one_of(order_documents.map(dumped), json_values.map(dumped), texts))
def test_order_reader(folder, content):
    path = write(folder, "order.json", content)
    returns_or_raises_one_line(lambda: read_order(path, DIAMOND))


# --------------------------------------------------------------------------- placement files
placement_documents = st.fixed_dictionaries(
    {
        "devices": st.dictionaries(node_ids.map(str), numbers, max_size=5) | json_values,
        "order": st.lists(node_ids, max_size=6) | json_values,
    },
    optional={"graph": json_values, "method": json_values, "objective": json_values},
)


@FUZZ
@given(st.one_of(placement_documents.map(dumped), json_values.map(dumped), texts))
def test_placement_reader(folder, content):
    path = write(folder, "placement.json", content)
    returns_or_raises_one_line(lambda: read_placement(path, DIAMOND, 2))


# --------------------------------------------------------------------------- config files
def config_types() -> list[type]:
    from dagopt.nn.encoders import EncoderConfig
    from dagopt.nn.regal import RegalConfig
    from dagopt.place.brkga import BrkgaParams
    from dagopt.train.ordering import OrderingTrainConfig
    from dagopt.train.regal.config import RegalTrainConfig

    return [OrderingTrainConfig, RegalTrainConfig, EncoderConfig, RegalConfig, BrkgaParams]


def config_documents(config_type: type) -> st.SearchStrategy:
    """Objects with some of the type's field names (and one unknown) mapped to numbers,
    lists of numbers or any JSON value; nested configs get objects of their own."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(config_type)] + ["unknown"]
    values = st.one_of(numbers, st.lists(numbers, max_size=8), json_values)
    nested = st.dictionaries(st.text(max_size=12), values, max_size=4)
    return st.dictionaries(st.sampled_from(names), values | nested, max_size=6)


@FUZZ
@given(st.data())
def test_config_reader(folder, data):
    config_type = data.draw(st.sampled_from(config_types()))
    content = data.draw(
        st.one_of(config_documents(config_type).map(dumped), json_values.map(dumped), texts)
    )
    path = write(folder, "config.json", content)
    returns_or_raises_one_line(lambda: read_config(path, config_type))


def test_an_integer_option_beyond_64_bits_is_a_one_line_error(folder):
    """The example the fuzzer above found: ``population`` of 300 digits once overflowed
    in BRKGA's ``__post_init__`` (``float(population)``) instead of being refused."""
    from dagopt.place.brkga import BrkgaParams

    for population in (10**300, -(10**300), 2**63):
        path = write(folder, "config.json", json.dumps({"population": population}))
        with pytest.raises(DagoptError, match=r"'population' .*too large .*beyond 64 bits"):
            read_config(path, BrkgaParams)


# --------------------------------------------------------------------------- binary formats
def flipped(valid: bytes) -> st.SearchStrategy:
    """``valid`` with a few bytes replaced, or cut short."""
    edits = st.lists(
        st.tuples(st.integers(0, len(valid) - 1), st.integers(0, 255)), min_size=1, max_size=4
    )

    def apply(changes: list[tuple[int, int]]) -> bytes:
        data = bytearray(valid)
        for at, value in changes:
            data[at] = value
        return bytes(data)

    return edits.map(apply) | st.integers(0, len(valid) - 1).map(lambda n: valid[:n])


def tiny_onnx() -> bytes:
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid"),
    ]
    tensors = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xy"]
    graph = helper.make_graph(nodes, "tiny", tensors[:1], tensors[1:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


@FUZZ
@given(st.binary(max_size=200) | st.deferred(lambda: flipped(tiny_onnx())))
def test_onnx_reader(folder, content):
    from dagopt.io.onnx import read_onnx

    path = write(folder, "model.onnx", content)
    returns_or_raises_one_line(lambda: read_onnx(path, assume_size=4.0))


def tiny_model_file() -> bytes:
    import torch

    from dagopt.nn.checkpoint import save_model
    from dagopt.nn.encoders import EncoderConfig, PriorityModel

    torch.manual_seed(0)
    config = EncoderConfig(dim=4, layers=1, heads_per_group=(1,) * 7, head_dim=2, pe_dim=2)
    with tempfile.TemporaryDirectory() as folder:
        return save_model(Path(folder) / "model.pt", PriorityModel(config), {}).read_bytes()


@FUZZ
@given(st.binary(max_size=200) | st.deferred(lambda: flipped(tiny_model_file())))
def test_model_file_reader(folder, content):
    from dagopt.nn.checkpoint import load_model
    from dagopt.nn.encoders import PriorityModel

    path = write(folder, "model.pt", content)
    returns_or_raises_one_line(lambda: load_model(path, expected=PriorityModel))
