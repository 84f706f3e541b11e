"""ONNX importer and writer: sizes by hand, file order, parameters, unknown shapes, subgraphs,
reordered models that pass the checker and compute the same outputs in onnxruntime, and
one-line errors through the CLI."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import typer
from onnx import TensorProto, helper, numpy_helper
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from dagopt.cli.imports import export_onnx, import_model
from dagopt.cli.main import _UserErrorGroup
from dagopt.cli.measure import measure
from dagopt.errors import InputError, OrderError
from dagopt.integrations.onnx_runtime import (
    activations,
    executed_kernels,
    file_order_options,
    measured_peak,
    onnxruntime_order,
    ran_in_order,
    size_mismatches,
)
from dagopt.io import load, read_order, write_order
from dagopt.io.json import read_graph_json, write_graph_json
from dagopt.io.onnx import OnnxGraph, read_onnx, write_onnx
from dagopt.objectives import peak_memory
from dagopt.objectives.runtime import estimate_runtimes
from dagopt.schedule import solve

F32 = 4  # bytes per float32 element
OPSET = [helper.make_opsetid("", 17)]


def make_model(nodes, inputs, outputs, initializers=(), ir_version=8) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=OPSET, ir_version=ir_version)


def tensor(name, shape, elem_type=TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def save(model: onnx.ModelProto, path) -> str:
    onnx.save(model, path)
    return str(path)


def mlp() -> onnx.ModelProto:
    """MatMul + Add + Relu on a [2, 4] input; the Relu node has no name."""
    weight = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 7, "w")
    bias = numpy_helper.from_array(np.array([0.5, -1.0, 0.25], dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Add", ["m", "b"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    return make_model(nodes, [tensor("x", [2, 4])], [tensor("y", [2, 3])], [weight, bias])


def branchy() -> onnx.ModelProto:
    """Split into three branches (a Constant, fp16 casts), Concat; outputs ``y`` and ``h``."""
    split = numpy_helper.from_array(np.array([2, 2, 2], dtype=np.int64), "split")
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32))
    nodes = [
        helper.make_node("Split", ["x", "split"], ["s0", "s1", "s2"], name="split", axis=1),
        helper.make_node("Constant", [], ["c"], name="const", value=two),
        helper.make_node("Relu", ["s0"], ["r"], name="relu"),
        helper.make_node("Mul", ["s1", "c"], ["p"], name="mul"),
        helper.make_node("Cast", ["s2"], ["h"], name="half", to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["hf"], name="float", to=TensorProto.FLOAT),
        helper.make_node("Concat", ["r", "p", "hf"], ["y"], name="concat", axis=1),
    ]
    outputs = [tensor("y", [4, 6]), tensor("h", [4, 2], TensorProto.FLOAT16)]
    return make_model(nodes, [tensor("x", [4, 6])], outputs, [split])


def with_subgraph() -> onnx.ModelProto:
    """An ``If`` whose branches read the outer tensor ``r`` and initializer ``w``; the else
    branch has an initializer of its own."""
    weight = numpy_helper.from_array(np.full(3, 2.0, dtype=np.float32), "w")
    inner = numpy_helper.from_array(np.full(3, -1.0, dtype=np.float32), "inner")
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["r", "w"], ["t"])], "then", [], [tensor("t", [3])]
    )
    else_branch = helper.make_graph(
        [helper.make_node("Add", ["r", "inner"], ["e"])],
        "else",
        [],
        [tensor("e", [3])],
        initializer=[inner],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["x"], ["n"], name="neg"),
        helper.make_node(
            "If", ["cond"], ["z"], name="if", then_branch=then_branch, else_branch=else_branch
        ),
        helper.make_node("Add", ["z", "n"], ["y"], name="add"),
    ]
    inputs = [tensor("x", [3]), tensor("cond", [], TensorProto.BOOL)]
    return make_model(nodes, inputs, [tensor("y", [3])], [weight])


def load_graph(graph, tmp_path):
    """``graph`` written as a node-link JSON file and read back."""
    return read_graph_json(write_graph_json(graph, tmp_path / "graph.json"))


def run_ort(path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def node_names(path) -> list[str]:
    return [node.name for node in onnx.load(str(path)).graph.node]


def assert_reorder_keeps_outputs(og: OnnxGraph, order, source, tmp_path, feeds) -> None:
    """The model written in ``order`` passes the full checker, lists its nodes in that
    order, which onnxruntime runs under ``file_order_options`` as ``onnxruntime_order``
    says, and computes exactly the outputs of the original."""
    out = write_onnx(og, order, tmp_path / "reordered.onnx")
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    expected = [og.model.graph.node[i].name for i in og.onnx_order(order)]
    assert node_names(out) == expected
    kernels = executed_kernels(out, feeds)
    assert ran_in_order(og, order, kernels)
    assert not ran_in_order(og, order, kernels[::-1])
    for got, want in zip(run_ort(out, feeds), run_ort(source, feeds), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- importer
def test_mlp_sizes_params_and_file_order(tmp_path):
    og = read_onnx(save(mlp(), tmp_path / "mlp.onnx"))
    graph = og.graph
    assert graph.name == "mlp"
    assert graph.names == ("x", "matmul", "add", "y", "output")  # unnamed Relu: its output
    assert graph.op == ("input", "MatMul", "Add", "Relu", "output")
    assert og.origin == ("x", 0, 1, 2, None)
    np.testing.assert_array_equal(graph.mem, [8 * F32, 6 * F32, 6 * F32, 6 * F32, 0])
    np.testing.assert_array_equal(graph.param_mem, [0, 12 * F32, 3 * F32, 0, 0])
    assert og.param_bytes == 15 * F32
    assert graph.node_data["flops"].tolist() == [0, 2 * 2 * 4 * 3, 0, 0, 0]  # 2 * M * K * N
    assert [tuple(e) for e in np.transpose(graph.edges)] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # the peak of the file order is while MatMul runs: its input, output and weight
    assert peak_memory(graph, np.arange(5), keep_outputs=True) == 8 * F32 + 6 * F32 + 12 * F32


def conv_matmul() -> onnx.ModelProto:
    """Conv (2 groups) -> batched MatMul broadcast against a 2-D weight -> Gemm (transA),
    ConvTranspose (stride 2) on the side."""
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", group=2, pads=[1, 1, 1, 1]),
        helper.make_node("MatMul", ["c", "m"], ["mm"], name="matmul"),  # [2,4,5,5] @ [5,3]
        helper.make_node("Reshape", ["mm", "shape"], ["r"], name="reshape"),
        helper.make_node("Gemm", ["r", "g"], ["y"], name="gemm", transA=1),  # r: [60, 2]
        helper.make_node("ConvTranspose", ["x", "t"], ["z"], name="deconv", strides=[2, 2]),
    ]
    inits = [
        init("w", 4, 3, 3, 3),  # C_out 4, C_in / group = 3
        init("m", 5, 3),
        numpy_helper.from_array(np.array([60, 2], dtype=np.int64), "shape"),
        init("g", 60, 7),
        init("t", 6, 2, 3, 3),  # C_in 6, C_out / group 2
    ]
    outputs = [tensor("y", [2, 7]), tensor("z", [2, 2, 11, 11])]
    return make_model(nodes, [tensor("x", [2, 6, 5, 5])], outputs, inits)


def test_flops_of_matmul_gemm_and_convolutions(tmp_path):
    path = save(conv_matmul(), tmp_path / "conv.onnx")
    og = read_onnx(path)
    flops = dict(zip(og.graph.names, og.graph.node_data["flops"].tolist(), strict=True))
    assert flops == {
        "x": 0,
        "conv": 2 * (2 * 4 * 5 * 5) * 3 * 3 * 3,  # output elements * C_in/group * kernel
        "matmul": 2 * (2 * 4 * 5) * 3 * 5,  # broadcast batch 2*4, M 5, N 3, K 5
        "reshape": 0,
        "gemm": 2 * 2 * 7 * 60,  # transA: A' = r.T is [2, 60]
        "deconv": 2 * (2 * 6 * 5 * 5) * 2 * 3 * 3,  # input elements * C_out/group * kernel
        "output": 0,
    }
    # the convolutions as PyTorch counts them (FLOPs depend on the shapes only)
    x = torch.zeros(2, 6, 5, 5)
    with FlopCounterMode(display=False) as counter:
        nn.functional.conv2d(x, torch.zeros(4, 3, 3, 3), padding=1, groups=2)
        nn.functional.conv_transpose2d(x, torch.zeros(6, 2, 3, 3), stride=2)
    assert counter.get_total_flops() == flops["conv"] + flops["deconv"]
    # read back from the graph file, then a roofline with a tiny peak: matmuls are compute-bound
    graph = load_graph(og.graph, tmp_path)
    np.testing.assert_array_equal(graph.node_data["flops"], og.graph.node_data["flops"])
    runtimes = estimate_runtimes(graph, peak_flops=1.0, bandwidth=1e12)
    gemm = graph.index_of["gemm"]
    assert runtimes[gemm] == flops["gemm"]
    assert runtimes[graph.index_of["reshape"]] < 1e-9


def test_flops_need_static_shapes(tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "x"], ["y"], name="matmul")]
    model = make_model(nodes, [tensor("x", ["n", "n"])], [tensor("y", ["n", "n"])])
    og = read_onnx(save(model, tmp_path / "sym.onnx"), assume_size=64)
    assert og.graph.node_data["flops"].tolist() == [0, 0, 0]


def test_branchy_sizes_constants_and_edges(tmp_path):
    og = read_onnx(save(branchy(), tmp_path / "branchy.onnx"))
    graph = og.graph
    assert graph.names == (
        "x",
        "split",
        "const",
        "relu",
        "mul",
        "half",
        "float",
        "concat",
        "output",
    )
    assert graph.op[1:-1] == tuple(node.op_type for node in og.model.graph.node)
    branch = 4 * 2 * F32
    mem = [24 * F32, 3 * branch, 0, branch, branch, 4 * 2 * 2, branch, 24 * F32, 0]
    np.testing.assert_array_equal(graph.mem, mem)
    # int64 split sizes (24 bytes) are read by Split; the Constant's value by Mul
    np.testing.assert_array_equal(graph.param_mem, [0, 24, 0, 0, F32, 0, 0, 0, 0])
    assert og.param_bytes == 24 + F32
    index = graph.index_of
    edges = {(graph.names[s], graph.names[t]) for s, t in zip(*graph.edges, strict=True)}
    assert edges == {
        ("x", "split"),
        ("split", "relu"),
        ("split", "mul"),
        ("const", "mul"),
        ("split", "half"),
        ("half", "float"),
        ("half", "output"),  # h is a graph output
        ("relu", "concat"),
        ("mul", "concat"),
        ("float", "concat"),
        ("concat", "output"),
    }
    assert index["output"] == graph.num_nodes - 1


def test_multiple_outputs_dead_nodes_and_packed_types(tmp_path):
    """TopK's two outputs are both counted; an unused input and a dead node feed the output
    node; a packed int4 initializer counts ceil(bits / 8) bytes."""
    k = numpy_helper.from_array(np.array([2], dtype=np.int64), "k")
    packed = helper.make_tensor("q", TensorProto.INT4, [3], [1, 2, 3])
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk"),
        helper.make_node("Abs", ["x"], ["dead"], name="dead"),
        helper.make_node("Neg", ["x"], ["z"], name="neg"),
    ]
    inputs = [tensor("x", [3, 5]), tensor("u", [7], TensorProto.UINT8)]
    outputs = [tensor("values", [3, 2]), tensor("z", [3, 5])]
    model = make_model(nodes, inputs, outputs, [k, packed], ir_version=10)
    og = read_onnx(save(model, tmp_path / "multi.onnx"))
    graph = og.graph
    assert graph.names == ("x", "u", "topk", "dead", "neg", "output")
    np.testing.assert_array_equal(graph.mem, [15 * F32, 7, 6 * F32 + 6 * 8, 15 * F32, 15 * F32, 0])
    assert og.param_bytes == 8 + 2
    assert sorted(graph.names[u] for u in graph.predecessors(5)) == ["dead", "neg", "topk", "u"]
    assert graph.out_degree[:-1].min() > 0  # every node is an ancestor of the output node


def test_unique_names_fall_back_and_number_repeats(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="act"),
        helper.make_node("Relu", ["a"], ["b"], name="act"),
        helper.make_node("Neg", ["b"], ["output"]),
    ]
    model = make_model(nodes, [tensor("x", [2])], [tensor("output", [2])])
    graph = read_onnx(save(model, tmp_path / "names.onnx")).graph
    assert graph.names == ("x", "act", "act#1", "output", "output#1")


def test_subgraph_is_an_opaque_node_with_outer_edges(tmp_path):
    og = read_onnx(save(with_subgraph(), tmp_path / "if.onnx"))
    graph = og.graph
    assert graph.names == ("x", "cond", "relu", "neg", "if", "add", "output")
    preds = {graph.names[v]: sorted(graph.names[u] for u in graph.predecessors(v)) for v in (4, 5)}
    assert preds == {"if": ["cond", "relu"], "add": ["if", "neg"]}
    # the outer weight the then branch reads plus the else branch's own initializer
    assert graph.param_mem[4] == 3 * F32 + 3 * F32
    assert og.param_bytes == 6 * F32
    np.testing.assert_array_equal(graph.mem, [3 * F32, 1, 3 * F32, 3 * F32, 3 * F32, 3 * F32, 0])


def test_symbolic_shapes_need_assume_size(tmp_path, monkeypatch):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["y"], name="neg"),
    ]
    model = make_model(nodes, [tensor("x", ["batch", 4])], [tensor("y", ["batch", 4])])
    path = save(model, tmp_path / "symbolic.onnx")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        InputError, match=r"'x' \(graph input\) has a non-static shape \[batch, 4\]"
    ):
        read_onnx(path)
    # onnxruntime's incomplete symbolic inference writes nothing to the working directory
    assert [p.name for p in tmp_path.iterdir()] == ["symbolic.onnx"]
    graph = read_onnx(path, assume_size=100).graph
    np.testing.assert_array_equal(graph.mem, [100, 100, 100, 0])
    with pytest.raises(InputError, match="assume_size must be"):
        read_onnx(path, assume_size=-1)


def test_identity_of_a_parameter_is_that_parameter(tmp_path):
    """torch's exporter writes an ``Identity`` of a shared weight; onnxruntime aliases it
    (``measured_peak`` holds nothing for it), so it weighs nothing and its readers read
    the weight, counted once."""
    weight = numpy_helper.from_array(np.ones(3, dtype=np.float32), "w")
    nodes = [
        helper.make_node("Identity", ["w"], ["w_shared"], name="shared"),
        helper.make_node("Identity", ["x"], ["x_copy"], name="copy"),
        helper.make_node("Add", ["x_copy", "w_shared"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "w"], ["y"], name="mul"),
    ]
    model = make_model(nodes, [tensor("x", [3])], [tensor("y", [3])], [weight])
    path = save(model, tmp_path / "shared.onnx")
    og = read_onnx(path)
    assert og.param_aliases == {1}
    np.testing.assert_array_equal(og.graph.mem, [3 * F32, 0, 3 * F32, 3 * F32, 3 * F32, 0])
    np.testing.assert_array_equal(og.graph.param_mem, [0, 3 * F32, 0, 3 * F32, 3 * F32, 0])
    assert og.param_bytes == 3 * F32
    feeds = {"x": np.arange(3, dtype=np.float32)}
    assert_sizes_are_the_runs(og, path, feeds)
    held = peak_memory(activations(og), onnxruntime_order(og, np.arange(6)), keep_outputs=True)
    assert measured_peak(path, feeds) == held


def in_place(n: int = 1024, dim: int | str = 1024) -> onnx.ModelProto:
    """Two branches of ``n`` floats: ``Relu`` of a ``Neg`` read by nothing else (in
    place), a ``Reshape`` of it (an alias), and a ``Relu`` whose input an ``Add`` reads
    again (allocates); ``dim`` is the inputs' and outputs' declared dimension."""
    shape = numpy_helper.from_array(np.array([n], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("Neg", ["x"], ["a"], name="a"),
        helper.make_node("Relu", ["a"], ["b"], name="b"),
        helper.make_node("Reshape", ["b", "shape"], ["c"], name="c"),
        helper.make_node("Neg", ["x"], ["d"], name="d"),
        helper.make_node("Relu", ["d"], ["e"], name="e"),
        helper.make_node("Add", ["d", "e"], ["f"], name="f"),
        helper.make_node("Add", ["c", "f"], ["y"], name="y"),
    ]
    return make_model(nodes, [tensor("x", [dim])], [tensor("y", [dim])], [shape])


def test_activations_predict_what_onnxruntime_holds_in_any_order(tmp_path):
    """``Relu`` writes into its input when nothing else reads it, ``Reshape`` returns its
    input's buffer, and a ``Relu`` whose input is read again allocates: ``activations``
    predicts ``measured_peak`` exactly, in the file's order and in others."""
    path = save(in_place(), tmp_path / "inplace.onnx")
    og = read_onnx(path)
    held = activations(og)
    kb = 1024 * F32
    np.testing.assert_array_equal(held.mem, [0, kb, 0, 0, kb, kb, kb, kb, 0])
    feeds = {"x": np.linspace(-1, 1, 1024, dtype=np.float32)}
    for seed in range(4):
        order = solve(og.graph, "random", seed=seed, samples=1).order
        out = write_onnx(og, order, tmp_path / f"order{seed}.onnx")
        predicted = peak_memory(held, onnxruntime_order(og, order), keep_outputs=True)
        assert measured_peak(out, feeds) == predicted
    # a named dynamic length: onnxruntime still knows the shapes equal
    dynamic = save(in_place(1024, "n"), tmp_path / "dynamic.onnx")
    og = read_onnx(dynamic, dims={"n": 1024})
    held = activations(og)
    np.testing.assert_array_equal(held.mem, [0, kb, 0, 0, kb, kb, kb, kb, 0])
    predicted = peak_memory(held, onnxruntime_order(og, np.arange(9)), keep_outputs=True)
    assert measured_peak(dynamic, feeds) == predicted
    # a Reshape of a weight is a view of it, held outside the allocator
    weight = numpy_helper.from_array(np.ones((4, 256), dtype=np.float32), "w")
    nodes = [
        helper.make_node("Reshape", ["w", "shape"], ["flat"], name="flat"),
        helper.make_node("Add", ["x", "flat"], ["y"], name="y"),
    ]
    initializers = [weight, numpy_helper.from_array(np.array([1024], dtype=np.int64), "shape")]
    viewed = make_model(nodes, [tensor("x", [1024])], [tensor("y", [1024])], initializers)
    path = save(viewed, tmp_path / "viewed.onnx")
    og = read_onnx(path)
    held = activations(og)
    np.testing.assert_array_equal(held.mem, [0, 0, kb, 0])
    predicted = peak_memory(held, onnxruntime_order(og, np.arange(4)), keep_outputs=True)
    assert measured_peak(path, feeds) == predicted
    # a length only the data gives (NonZero): the Relu gets a buffer of its own
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"], name="where"),
        helper.make_node("Cast", ["where"], ["c"], name="c", to=TensorProto.FLOAT),
        helper.make_node("Relu", ["c"], ["r"], name="r"),
        helper.make_node("Neg", ["r"], ["y"], name="y"),
    ]
    counted = make_model(nodes, [tensor("x", [1024])], [tensor("y", [1, "k"])])
    path = save(counted, tmp_path / "counted.onnx")
    og = read_onnx(path, run_shapes=True)  # normal draws: all 1024 nonzero, as linspace's
    held = activations(og)
    np.testing.assert_array_equal(held.mem, [0, 2 * kb, kb, kb, kb, 0])
    predicted = peak_memory(held, onnxruntime_order(og, np.arange(6)), keep_outputs=True)
    assert measured_peak(path, feeds) == predicted


def test_dims_size_symbolic_input_dimensions(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["y"], name="neg"),
    ]
    model = make_model(nodes, [tensor("x", ["batch", 4])], [tensor("y", ["batch", 4])])
    path = save(model, tmp_path / "symbolic.onnx")
    og = read_onnx(path, dims={"batch": 3})
    np.testing.assert_array_equal(og.graph.mem, [12 * F32, 12 * F32, 12 * F32, 0])
    assert og.model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    with pytest.raises(
        InputError, match=r"named 'seq' \(symbolic dimensions of the inputs: batch\)"
    ):
        read_onnx(path, dims={"batch": 3, "seq": 8})
    with pytest.raises(InputError, match="'batch' must be a whole number >= 1, got 0"):
        read_onnx(path, dims={"batch": 0})


def shape_arithmetic() -> onnx.ModelProto:
    """``x`` expanded to the shape ``Where(Equal(target, -ones), ones, target)``: the
    arithmetic torch's exporter writes for ``expand`` (BERT's position ids), which ONNX's
    data propagation leaves symbolic and onnxruntime's symbolic shape inference does not."""
    arrays = {
        "target": np.array([5, 6], dtype=np.int64),
        "two": np.array([2], dtype=np.int64),
        "minus_one": np.array(-1, dtype=np.int64),
    }
    one = numpy_helper.from_array(np.array([1], dtype=np.int64))
    nodes = [
        helper.make_node("ConstantOfShape", ["two"], ["ones"], name="ones", value=one),
        helper.make_node("Mul", ["ones", "minus_one"], ["negative"], name="negative"),
        helper.make_node("Equal", ["target", "negative"], ["unset"], name="unset"),
        helper.make_node("Where", ["unset", "ones", "target"], ["shape"], name="shape"),
        helper.make_node("Expand", ["x", "shape"], ["y"], name="expand"),
    ]
    initializers = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    return make_model(
        nodes, [tensor("x", [1, 6])], [tensor("y", ["rows", "columns"])], initializers
    )


def test_shape_arithmetic_gets_symbolic_inference_sizes(tmp_path):
    path = save(shape_arithmetic(), tmp_path / "expand.onnx")
    strict = onnx.shape_inference.infer_shapes(onnx.load(path), strict_mode=True, data_prop=True)
    kinds = {v.name: v.type for v in (*strict.graph.value_info, *strict.graph.output)}
    assert [d.HasField("dim_value") for d in kinds["y"].tensor_type.shape.dim] != [True, True]
    og = read_onnx(path)
    assert og.symbolic_sized == {"y"}
    assert read_onnx(save(mlp(), tmp_path / "mlp.onnx")).symbolic_sized == set()
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(1, 6)}
    assert_sizes_are_the_runs(og, path, feeds)
    assert og.graph.mem[og.graph.names.index("expand")] == 5 * 6 * F32


def assert_sizes_are_the_runs(og: OnnxGraph, path, feeds) -> None:
    """Every node onnxruntime runs has the output bytes the graph gives it."""
    kernels = executed_kernels(path, feeds)
    assert kernels
    assert size_mismatches(og, kernels) == []


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_exported_transformer_reads_with_the_sizes_it_runs_with(tmp_path):
    """A ``transformers`` BERT exported by torch with a dynamic batch and length: sized
    with ``dims``, its attention-mask arithmetic still needs symbolic shape inference;
    every size read is the size of the real run, and a reordered model runs in the order
    ``onnxruntime_order`` says (its ``Shape`` nodes moved first)."""
    from transformers import BertConfig, BertModel

    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32)  # fmt: skip
    module = tensor_forward(BertModel(config), ("input_ids",), "last_hidden_state").eval()
    tokens = torch.randint(0, 100, (2, 12))
    path = tmp_path / "bert.onnx"
    try:  # the TorchScript exporter needs no onnxscript; it is deprecated in recent torch
        axes = {"ids": {0: "batch", 1: "length"}}
        torch.onnx.export(
            module, (tokens,), str(path), input_names=["ids"], dynamic_axes=axes, dynamo=False
        )
    except Exception as exc:
        pytest.skip(f"torch.onnx.export (TorchScript) is not available: {exc}")
    with pytest.raises(InputError, match="--dim NAME=SIZE"):
        read_onnx(path)
    og = read_onnx(path, dims={"batch": 2, "length": 12})
    feeds = {"ids": tokens.numpy()}
    assert_sizes_are_the_runs(og, path, feeds)
    order = solve(og.graph, "random", seed=3, samples=1).order
    moved = onnxruntime_order(og, order)
    assert "Shape" in og.graph.op and not np.array_equal(moved, order)
    assert_reorder_keeps_outputs(og, order, path, tmp_path, feeds)


def test_run_shapes_size_what_no_inference_does(tmp_path):
    """``NonZero``'s output length depends on the data: only a run sizes it (normal draws
    for ``x``: all four nonzero)."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"], name="nonzero"),
        helper.make_node("Neg", ["where"], ["y"], name="neg"),
    ]
    inputs = [tensor("x", [4])]
    outputs = [tensor("y", [1, "k"], TensorProto.INT64)]
    model = make_model(nodes, inputs, outputs)
    path = save(model, tmp_path / "nonzero.onnx")
    with pytest.raises(InputError, match="--run-shapes"):
        read_onnx(path)
    og = read_onnx(path, run_shapes=True)
    assert og.run_sized == {"where", "y"} and og.symbolic_sized == set()
    np.testing.assert_array_equal(og.graph.mem, [4 * F32, 4 * 8, 4 * 8, 0])
    symbolic = make_model(nodes, [tensor("x", ["n"])], outputs)
    with pytest.raises(InputError, match=r"graph input 'x' has a non-static shape \[n\]: a run"):
        read_onnx(save(symbolic, tmp_path / "symbolic.onnx"), run_shapes=True)
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    failing = make_model(relu, inputs, [tensor("y", ["k"])])
    failing.graph.node[0].op_type = "NoSuchOp"
    failing.graph.node[0].domain = "custom.domain"
    failing.opset_import.append(helper.make_opsetid("custom.domain", 1))
    with pytest.raises(InputError, match="onnxruntime could not run the model"):
        read_onnx(save(failing, tmp_path / "failing.onnx"), run_shapes=True)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_exported_swin_reads_with_run_shapes(tmp_path):
    """A ``transformers`` Swin's window padding is computed from shapes that neither
    inference evaluates; sized from a run, every kernel has the bytes of the graph and a
    reordered model runs as ``onnxruntime_order`` says."""
    from transformers import SwinConfig, SwinModel

    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    config = SwinConfig(image_size=32, patch_size=4, embed_dim=8, depths=[1, 1],
                        num_heads=[1, 2], window_size=3)  # fmt: skip
    module = tensor_forward(SwinModel(config), ("pixel_values",), "last_hidden_state").eval()
    pixels = torch.randn(1, 3, 32, 32)
    path = tmp_path / "swin.onnx"
    try:  # the TorchScript exporter needs no onnxscript; it is deprecated in recent torch
        torch.onnx.export(module, (pixels,), str(path), input_names=["pixels"], dynamo=False)
    except Exception as exc:
        pytest.skip(f"torch.onnx.export (TorchScript) is not available: {exc}")
    with pytest.raises(InputError, match="Pad_output_0"):
        read_onnx(path)
    og = read_onnx(path, run_shapes=True)
    assert og.run_sized
    feeds = {"pixels": pixels.numpy()}
    assert_sizes_are_the_runs(og, path, feeds)
    order = solve(og.graph, "random", seed=4, samples=1).order
    assert_reorder_keeps_outputs(og, order, path, tmp_path, feeds)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_dynamo_exported_transformer_reads_with_the_sizes_it_runs_with(tmp_path):
    """torch's default exporter (``torch.export``, onnxscript) on a ``transformers``
    GPT-2: static shapes throughout, every kernel with the bytes of the graph, and a
    reordered model runs in ``onnxruntime_order`` with the same outputs."""
    pytest.importorskip("onnxscript")
    from transformers import GPT2Config, GPT2Model

    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=100, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    module = tensor_forward(GPT2Model(config), ("input_ids",), "last_hidden_state").eval()
    tokens = torch.randint(0, 100, (1, 12))
    path = tmp_path / "gpt2.onnx"
    torch.onnx.export(module, (tokens,), str(path), input_names=["ids"], dynamo=True)
    og = read_onnx(path)
    assert og.symbolic_sized == set() and og.run_sized == set()
    feeds = {"ids": tokens.numpy()}
    assert_sizes_are_the_runs(og, path, feeds)
    order = solve(og.graph, "random", seed=5, samples=1).order
    assert_reorder_keeps_outputs(og, order, path, tmp_path, feeds)


def test_onnxruntime_runs_the_file_order_under_its_options(tmp_path):
    """Two chains joined by an Add, written interleaved: onnxruntime's default session
    runs them in an order of its own, ``file_order_options`` in the file's."""
    nodes = [
        helper.make_node(op, [f"{chain}{k}"], [f"{chain}{k + 1}"], name=f"{chain}{k + 1}")
        for k in range(3)
        for chain, op in (("a", "Relu"), ("b", "Neg"))
    ]
    nodes.append(helper.make_node("Add", ["a3", "b3"], ["y"], name="add"))
    inputs = [tensor("a0", [4]), tensor("b0", [4])]
    path = save(make_model(nodes, inputs, [tensor("y", [4])]), tmp_path / "chains.onnx")
    feeds = {"a0": np.ones(4, np.float32), "b0": np.ones(4, np.float32)}
    file_order = [node.name for node in nodes]
    assert [k.name for k in executed_kernels(path, feeds, file_order_options())] == file_order
    default = [k.name for k in executed_kernels(path, feeds, ort.SessionOptions())]
    assert sorted(default) == sorted(file_order) and default != file_order


def test_unknown_types_are_named(tmp_path):
    """A custom-domain op has no shape inference: its output has no type, its consumer's
    output only the declared graph output type."""
    nodes = [
        helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="my.ops"),
        helper.make_node("Relu", ["m"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "custom", [tensor("x", [2])], [tensor("y", [None])])
    opsets = [*OPSET, helper.make_opsetid("my.ops", 1)]
    path = save(helper.make_model(graph, opset_imports=opsets, ir_version=8), tmp_path / "c.onnx")
    with pytest.raises(InputError, match=r"'m' \(output of node 'mystery'\) has no type from"):
        read_onnx(path)
    og = read_onnx(path, assume_size=12)
    assert og.graph.op == ("input", "my.ops::Mystery", "Relu", "output")
    np.testing.assert_array_equal(og.graph.mem, [2 * F32, 12, 12, 0])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda data: data[: len(data) // 2], "truncated or corrupt"),
        (lambda data: b"\xff" * 64, "truncated or corrupt"),
        (lambda data: b"", "invalid ONNX model"),
    ],
)
def test_bad_files_are_one_line_input_errors(tmp_path, content, message):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content(mlp().SerializeToString()))
    with pytest.raises(InputError, match=message) as error:
        read_onnx(path)
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="no such file"):
        read_onnx(tmp_path / "missing.onnx")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: None, "should be stored in .*, but it is not regular file"),
        (lambda data: data[:10], "exceeds available data"),
    ],
)
def test_missing_or_truncated_external_data_is_one_line(tmp_path, damage, message):
    path = tmp_path / "ext.onnx"
    onnx.save(mlp(), path, save_as_external_data=True, location="ext.bin", size_threshold=0)
    weights = tmp_path / "ext.bin"
    kept = damage(weights.read_bytes())
    weights.unlink()
    if kept is not None:
        weights.write_bytes(kept)
    with pytest.raises(InputError, match=f"ext.onnx: cannot read its external data: .*{message}"):
        read_onnx(path)


def test_shapes_beyond_the_float_range_are_one_line(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    huge = [2**62] * 20  # 2**1240 elements
    path = save(make_model(nodes, [tensor("x", huge)], [tensor("y", huge)]), tmp_path / "h.onnx")
    with pytest.raises(InputError, match=r"h.onnx: tensor shapes too large: .* float range"):
        read_onnx(path)


def test_load_dispatches_on_onnx_suffix(tmp_path):
    path = save(branchy(), tmp_path / "branchy.onnx")
    assert load(path).names == read_onnx(path).graph.names


# ------------------------------------------------------------------------------- writer
def test_reordered_branchy_model_runs_with_identical_outputs(tmp_path):
    source = save(branchy(), tmp_path / "branchy.onnx")
    og = read_onnx(source)
    feeds = {"x": np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)}
    orders = [solve(og.graph, "lpmf", keep_outputs=True).order]
    orders += [solve(og.graph, "random", seed=seed, samples=1).order for seed in range(3)]
    assert any(not np.array_equal(order, np.arange(og.graph.num_nodes)) for order in orders)
    for order in orders:
        assert_reorder_keeps_outputs(og, order, source, tmp_path, feeds)


def test_reordered_subgraph_model_runs_with_identical_outputs(tmp_path):
    source = save(with_subgraph(), tmp_path / "if.onnx")
    og = read_onnx(source)
    order = [og.graph.index_of[name] for name in ("cond", "x", "neg", "relu", "if", "add")]
    order.append(og.graph.num_nodes - 1)
    x = np.array([-1.5, 0.0, 2.0], dtype=np.float32)
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        assert_reorder_keeps_outputs(og, order, source, tmp_path, feeds)


def test_writer_rejects_orders_that_are_not_topological(tmp_path):
    og = read_onnx(save(mlp(), tmp_path / "mlp.onnx"))
    with pytest.raises(OrderError, match="before its predecessor"):
        write_onnx(og, [0, 2, 1, 3, 4], tmp_path / "bad.onnx")
    with pytest.raises(OrderError, match="misses"):
        write_onnx(og, [0, 1, 2], tmp_path / "bad.onnx")
    assert not (tmp_path / "bad.onnx").exists()


class Gated(nn.Module):
    """Two branches from the input, multiplied, then a projection."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(8, 16)
        self.fc3 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc1(x)) * torch.sigmoid(self.fc2(x)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torch_exported_model(tmp_path):
    torch.manual_seed(0)
    module = Gated().eval()
    x = torch.randn(2, 8)
    path = tmp_path / "gated.onnx"
    try:  # the TorchScript exporter needs no onnxscript; it is deprecated in recent torch
        torch.onnx.export(
            module, (x,), str(path), input_names=["x"], output_names=["y"], dynamo=False
        )
    except Exception as exc:
        pytest.skip(f"torch.onnx.export (TorchScript) is not available: {exc}")
    og = read_onnx(path)
    graph = og.graph
    params = sum(p.numel() * p.element_size() for p in module.parameters())
    assert og.param_bytes == params
    assert graph.param_mem.sum() == params  # each weight is read by one Gemm
    assert graph.op[0] == "input" and graph.op[-1] == "output"
    assert sorted(graph.op[1:-1]) == ["Gemm", "Gemm", "Gemm", "Mul", "Relu", "Sigmoid"]
    hidden = 2 * 16 * F32
    assert graph.mem[0] == 2 * 8 * F32
    assert sorted(graph.mem[1:-1]) == [2 * 4 * F32] + [hidden] * 5
    feeds = {"x": x.numpy()}
    np.testing.assert_allclose(run_ort(path, feeds)[0], module(x).detach().numpy(), atol=1e-6)
    order = solve(graph, "random", seed=1, samples=1).order
    assert_reorder_keeps_outputs(og, order, path, tmp_path, feeds)


# ---------------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    """The two commands on an app with the error handling of ``dagopt``."""
    app = typer.Typer(cls=_UserErrorGroup, add_completion=False)
    app.command("import")(import_model)
    app.command("export-onnx")(export_onnx)
    app.command("measure")(measure)
    return app


def invoke(app, *args):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0]


def test_cli_import_then_export_reordered(cli, tmp_path):
    source = save(branchy(), tmp_path / "branchy.onnx")
    result = invoke(cli, "import", source, "--out", tmp_path / "g.json")
    assert result.exit_code == 0, result.output
    og = read_onnx(source)
    peak = peak_memory(og.graph, np.arange(og.graph.num_nodes), keep_outputs=True)
    assert result.stdout.startswith("branchy: 9 nodes, 11 edges, parameters 28 bytes, ")
    assert f"file-order peak {peak:.6g}" in result.stdout
    graph = load(tmp_path / "g.json")
    assert graph.names == og.graph.names
    np.testing.assert_array_equal(graph.mem, og.graph.mem)
    schedule = solve(graph, "random", seed=2, samples=1)
    order_file = write_order(
        tmp_path / "order.json",
        graph,
        schedule.order,
        method="random",
        peak_memory=schedule.peak_memory,
        keep_outputs=False,
        seconds=schedule.seconds,
        proved_optimal=None,
    )
    out = tmp_path / "reordered.onnx"
    result = invoke(cli, "export-onnx", source, order_file, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out}: 7 ONNX nodes")
    order = read_order(order_file, og.graph).order
    assert node_names(out) == [og.model.graph.node[i].name for i in og.onnx_order(order)]


def test_cli_measure_runs_onnx_orders_in_onnxruntime(cli, tmp_path):
    """``dagopt measure MODEL.onnx ORDER``: the file's order and the order file's, each
    measured in onnxruntime beside the peak ``activations`` predicts (equal here), then
    onnxruntime's own order, measured."""
    source = save(in_place(65536, 65536), tmp_path / "inplace.onnx")
    og = read_onnx(source)
    order = solve(og.graph, "random", seed=3, samples=1).order
    order_file = write_order(
        tmp_path / "order.json",
        og.graph,
        order,
        method="random",
        peak_memory=peak_memory(og.graph, order, keep_outputs=True),
        keep_outputs=True,
        seconds=0.0,
        proved_optimal=None,
    )
    result = invoke(cli, "import", source, "--onnxruntime", "--out", tmp_path / "held.json")
    assert result.exit_code == 0, result.output
    held = load(tmp_path / "held.json")
    np.testing.assert_array_equal(held.mem, activations(og).mem)
    assert held.names == og.graph.names
    result = CliRunner().invoke(cli, ["measure", source, str(order_file)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {
        cells[1].strip(): [cell.strip() for cell in cells[2:-1]]
        for cells in (line.split("│") for line in result.stdout.splitlines() if "│" in line)
    }
    own = "onnxruntime's own order"
    assert set(rows) == {"file order", "order.json (random)", own}, result.stdout
    assert rows[own][0] == "-"  # measured only
    held = activations(og)
    for label, run in (
        ("file order", np.arange(og.graph.num_nodes)),
        ("order.json (random)", order),
    ):
        predicted = peak_memory(held, onnxruntime_order(og, run), keep_outputs=True)
        assert rows[label][:3] == [f"{predicted / 1e6:.3f}"] * 2 + ["+0.00"]


def test_cli_errors_are_one_line_with_exit_2(cli, tmp_path):
    data = mlp().SerializeToString()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    result = invoke(cli, "import", truncated, "--out", tmp_path / "g.json")
    assert_one_line_error(result, "truncated or corrupt")
    assert not (tmp_path / "g.json").exists()

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    model = make_model(nodes, [tensor("x", ["n", 3])], [tensor("y", ["n", 3])])
    symbolic = save(model, tmp_path / "symbolic.onnx")
    result = invoke(cli, "import", symbolic, "--out", tmp_path / "g.json")
    assert_one_line_error(result, "--assume-size")
    result = invoke(cli, "import", symbolic, "--out", tmp_path / "g.json", "--assume-size", 64)
    assert result.exit_code == 0, result.output
    for dims, message in (
        (["n=two"], "--dim 'n=two': give NAME=SIZE"),
        (["n=2", "n=3"], "--dim 'n' given twice"),
        (["m=2"], "named 'm' (symbolic dimensions of the inputs: n)"),
    ):
        options = [arg for dim in dims for arg in ("--dim", dim)]
        result = invoke(cli, "import", symbolic, "--out", tmp_path / "d.json", *options)
        assert_one_line_error(result, message)
    result = invoke(cli, "import", symbolic, "--out", tmp_path / "d.json", "--dim", "n=2")
    assert result.exit_code == 0, result.output
    result = invoke(cli, "import", symbolic, "--out", tmp_path / "r.json", "--run-shapes")
    assert_one_line_error(result, "a run to size tensors needs static numeric inputs")
    options = ("--dim", "n=2", "--run-shapes")
    result = invoke(cli, "import", symbolic, "--out", tmp_path / "r.json", *options)
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(load(tmp_path / "d.json").mem, [6 * F32, 6 * F32, 0])

    source = save(mlp(), tmp_path / "mlp.onnx")
    bad_order = tmp_path / "order.json"
    bad_order.write_text(json.dumps({"order": ["x", "add", "matmul", "y", "output"]}))
    result = invoke(cli, "export-onnx", source, bad_order, "--out", tmp_path / "out.onnx")
    assert_one_line_error(result, "before its predecessor")
