"""OpenVINO models in (dagopt.io.openvino): IR files and converted ONNX models."""

import numpy as np
import pytest

from dagopt import InputError
from dagopt.data import example_bytes
from dagopt.io import load
from dagopt.io.onnx import read_onnx

ov = pytest.importorskip("openvino")
from dagopt.io.openvino import SHAPE_KEY, convert_openvino, graph_from_openvino  # noqa: E402


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """The shipped small CNN as ONNX and as an OpenVINO IR."""
    folder = tmp_path_factory.mktemp("cnn")
    onnx_file = folder / "small-cnn.onnx"
    onnx_file.write_bytes(example_bytes("small-cnn.onnx"))
    ov.save_model(convert_openvino(str(onnx_file)), str(folder / "small-cnn.xml"))
    return onnx_file, folder / "small-cnn.xml"


def test_an_ir_reads_as_a_graph_with_weights_on_their_consumers(cnn):
    onnx_file, xml_file = cnn
    graph, reference = load(xml_file), read_onnx(onnx_file).graph
    ops = list(graph.op)
    assert ops[0] == "Parameter" and ops[-1] == "Result"
    assert "Constant" not in ops and "Convert" not in ops  # folded into param_mem
    assert ops.count("Convolution") == 6 and ops.count("MatMul") == 1
    # The same FLOPs as the ONNX reader's, the same weights give (almost) the same bytes.
    assert graph.node_data["flops"].sum() == reference.node_data["flops"].sum()
    assert 0 <= graph.param_mem.sum() - reference.param_mem.sum() < 100
    conv = ops.index("Convolution")
    assert graph.mem[conv] == 16 * 32 * 32 * 4
    assert graph.node_data[SHAPE_KEY][conv].tolist() == [1, 16, 32, 32]
    assert graph.param_mem[conv] == 16 * 3 * 3 * 3 * 4  # the f16 weights decompressed to f32
    assert graph.num_edges == len(set(zip(*graph.edges, strict=True)))


def test_dynamic_shapes_and_bad_files_are_one_line_errors(cnn, tmp_path, capfd):
    onnx_file, xml_file = cnn
    dynamic = convert_openvino(str(onnx_file), input=[-1, 3, 32, 32])
    with pytest.raises(InputError, match="dynamic shape"):
        graph_from_openvino(dynamic)
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "missing.xml")
    (tmp_path / "bad.xml").write_text("<net><layers><broken")
    with pytest.raises(InputError, match=r"malformed XML: .*line 1"):
        load(tmp_path / "bad.xml")
    (tmp_path / "other.xml").write_text("<graph/>")
    with pytest.raises(InputError, match="root element <graph>, not <net>"):
        load(tmp_path / "other.xml")
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "small-cnn.xml").write_bytes(xml_file.read_bytes())  # its .bin left behind
    with pytest.raises(InputError, match=r"not a readable OpenVINO model .*bin file") as error:
        load(no_weights / "small-cnn.xml")
    assert "\n" not in str(error.value) and "Exception from" not in str(error.value)
    assert capfd.readouterr().err == ""  # no native log lines from OpenVINO's frontends


def test_shapes_beyond_the_float_range_are_one_line():
    from openvino import opset13

    x = opset13.parameter([2**62] * 20, ov.Type.f32, name="x")  # 2**1240 elements
    with pytest.raises(InputError, match=r"tensor shapes too large: .* float range"):
        graph_from_openvino(ov.Model([opset13.relu(x)], [x], "huge"))


def test_the_graph_orders_and_places(cnn):
    from dagopt.place import place
    from dagopt.schedule import solve

    graph = load(cnn[1])
    exact = solve(graph, "exact-dp")
    assert exact.proved_optimal and exact.peak_memory <= solve(graph, "bfs").peak_memory
    result = place(graph, "brkga", runtimes=np.full(graph.num_nodes, 1e-4), evaluations=200)
    assert result.feasible
