"""Saved PyTorch programs (``.pt2``): read as the graphs ``graph_from_module`` builds,
written back in a dagopt order that the loaded program then runs, on the command line too."""

import json
import warnings

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from dagopt.cli.main import app
from dagopt.errors import DagoptWarning, InputError, OrderError
from dagopt.graph.shares import share_nodes
from dagopt.integrations.torch import measure_peak
from dagopt.io import load, read_order
from dagopt.io.torch import graph_from_module
from dagopt.io.torch_program import read_exported_program, write_exported_program
from dagopt.objectives import peak_memory
from dagopt.schedule import solve

runner = CliRunner()
# torch.export.load of torch 2.13 unpickles a pytree spec through a deprecated check.
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)`:FutureWarning")


class Branches(torch.nn.Module):
    """Two wide branches that the traced order computes side by side: running one
    branch to its end before the other lowers the peak. Views and an in-place ReLU
    allocate nothing, in the graph as in a run."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ModuleList(torch.nn.Linear(16, 256) for _ in range(2))
        self.down = torch.nn.ModuleList(torch.nn.Linear(256, 16) for _ in range(2))
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.exp(x)  # dead: export keeps it, the graph and a written program drop it
        wide = [self.drop(torch.relu_(up(x))) for up in self.up]
        wide = [w.view(-1, 16, 16).transpose(1, 2).transpose(1, 2).view(-1, 256) for w in wide]
        return self.down[0](wide[0]) + self.down[1](wide[1])


class BatchNormNet(torch.nn.Module):
    """A convolution, batch norm and pooling: multi-output operators in training."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.norm = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
        return self.head(y.mean((2, 3)))


def saved(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], path, *, train=False):
    """``module`` exported in train or eval mode and saved to ``path``."""
    module.train(train)
    torch.export.save(torch.export.export(module, inputs), path)
    return path


@pytest.fixture
def branches(tmp_path):
    torch.manual_seed(0)
    module, inputs = Branches(), (torch.randn(8, 16),)
    return module.eval(), inputs, saved(module, inputs, tmp_path / "branches.pt2")


def assert_same_graph(a, b) -> None:
    assert a.names == b.names
    assert a.op == b.op
    np.testing.assert_array_equal(a.mem, b.mem)
    np.testing.assert_array_equal(a.param_mem, b.param_mem)
    assert sorted(zip(*a.edges, strict=True)) == sorted(zip(*b.edges, strict=True))


def test_a_saved_program_reads_as_graph_from_module_reads_the_module(branches):
    module, inputs, path = branches
    program = read_exported_program(path)
    assert program.torch_graph.graph.name == "branches-inference"
    assert program.torch_graph.mode == "inference"
    assert len(program.inputs) == 1 and torch.equal(program.inputs[0], inputs[0])
    assert_same_graph(program.torch_graph.graph, graph_from_module(module, inputs).graph)
    assert load(path).names == program.torch_graph.graph.names


def test_views_and_in_place_results_of_a_loaded_program_are_aliases(tmp_path):
    """``torch.export.load`` gives each node a fake value of its own storage; read as
    saved, an attention layer's views, transposes and in-place results still allocate
    nothing, as in the graph of the module."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
    inputs = (torch.randn(2, 8, 32),)
    with torch.no_grad():
        path = saved(layer, inputs, tmp_path / "layer.pt2")
        expected = graph_from_module(layer, inputs).graph
    program = read_exported_program(path)
    graph = program.torch_graph.graph
    assert_same_graph(graph, expected)
    views = [
        v for v, op in enumerate(graph.op) if op in ("aten.view.default", "aten.transpose.int")
    ]
    assert views and not graph.mem[views].any()


def test_a_written_program_runs_the_order_and_its_measured_peak_is_the_predicted_one(
    branches, tmp_path
):
    module, inputs, path = branches
    program = read_exported_program(path)
    graph = program.torch_graph.graph
    traced = peak_memory(graph, np.arange(graph.num_nodes), keep_outputs=True)
    best = solve(graph, "exact-dp", keep_outputs=True)
    assert best.peak_memory < traced
    out = write_exported_program(program, best.order, tmp_path / "best.pt2")
    loaded = torch.export.load(out).module()
    with torch.no_grad():
        assert torch.equal(loaded(*inputs), module(*inputs))
    assert measure_peak(loaded, inputs).peak == best.peak_memory
    assert measure_peak(torch.export.load(path).module(), inputs).peak == traced
    # Read back, the written program's own order is the order it was written in.
    again = read_exported_program(out).torch_graph.graph
    assert list(again.names) == [graph.names[v] for v in best.order]
    targets = {str(node.target) for node in torch.export.load(out).graph.nodes}
    assert "aten.exp.default" in {str(n.target) for n in torch.export.load(path).graph.nodes}
    assert "aten.exp.default" not in targets


def test_a_core_aten_program_is_read_written_and_run_as_predicted(tmp_path):
    """A program decomposed to core ATen before it was saved (``run_decompositions``:
    batch norm's three outputs, max pooling's indices) reads, writes back and runs with
    its measured peak the predicted one."""
    torch.manual_seed(0)
    module, inputs = BatchNormNet().eval(), (torch.randn(2, 3, 12, 12),)
    with torch.no_grad():
        program = torch.export.export(module, inputs).run_decompositions()
    torch.export.save(program, tmp_path / "core.pt2")
    saved = read_exported_program(tmp_path / "core.pt2")
    graph = saved.torch_graph.graph
    assert "aten.max_pool2d_with_indices.default" in graph.op
    order = solve(graph, "random", seed=1, samples=1, keep_outputs=True).order
    out = write_exported_program(saved, order, tmp_path / "ordered.pt2")
    loaded = torch.export.load(out).module()
    assert measure_peak(loaded, inputs).peak == peak_memory(graph, order, keep_outputs=True)
    with torch.no_grad():
        assert torch.equal(loaded(*inputs), module(*inputs))


def test_training_graphs_of_a_saved_forward_are_those_of_the_module(tmp_path):
    torch.manual_seed(0)
    module, inputs = BatchNormNet(), (torch.randn(2, 3, 12, 12),)
    path = saved(module, inputs, tmp_path / "net.pt2", train=True)
    for split_outputs in (False, True):
        program = read_exported_program(path, mode="training", split_outputs=split_outputs)
        assert program.torch_graph.mode == "training"
        assert program.torch_graph.graph.name == "net-training"
        expected = graph_from_module(module, inputs, mode="training", split_outputs=split_outputs)
        assert_same_graph(program.torch_graph.graph, expected.graph)


def test_a_training_graph_of_an_eval_mode_forward_warns(branches):
    _, _, path = branches
    with pytest.warns(DagoptWarning, match="eval mode"):
        read_exported_program(path, mode="training")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_exported_program(path)


def test_bad_programs_and_orders_are_input_errors(branches, tmp_path):
    module, inputs, path = branches
    with pytest.raises(InputError, match="no such file"):
        read_exported_program(tmp_path / "missing.pt2")
    with pytest.raises(InputError, match="is a directory"):
        read_exported_program(tmp_path)
    text = tmp_path / "text.pt2"
    text.write_text("not a program")
    with pytest.raises(InputError, match="not a zip archive"):
        read_exported_program(text)
    with pytest.raises(InputError, match="cannot load it"):
        torch.save({"weights": torch.zeros(2)}, tmp_path / "state.pt2")
        read_exported_program(tmp_path / "state.pt2")
    with pytest.raises(InputError, match="mode must be"):
        read_exported_program(path, mode="eval")

    class Keyword(torch.nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    keyword = tmp_path / "keyword.pt2"
    program = torch.export.export(Keyword(), (torch.ones(2),), {"scale": torch.ones(2)})
    torch.export.save(program, keyword)
    with pytest.raises(InputError, match="keyword inputs"):
        read_exported_program(keyword)

    dynamic = tmp_path / "dynamic.pt2"
    batch = torch.export.Dim("batch")
    program = torch.export.export(module, inputs, dynamic_shapes=({0: batch},))
    torch.export.save(program, dynamic)
    with pytest.raises(InputError, match="dynamic shapes"):
        read_exported_program(dynamic)

    program = read_exported_program(path)
    graph = program.torch_graph.graph
    with pytest.raises(OrderError):
        write_exported_program(program, np.arange(graph.num_nodes)[::-1], tmp_path / "r.pt2")
    assert not (tmp_path / "r.pt2").exists()
    training = read_exported_program(
        saved(module, inputs, tmp_path / "t.pt2", train=True), mode="training"
    )
    with pytest.raises(InputError, match="reorder"):
        write_exported_program(
            training, np.arange(training.torch_graph.graph.num_nodes), tmp_path / "r.pt2"
        )


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_import_schedule_export_and_measure_a_saved_program(branches, tmp_path):
    _, _, path = branches
    result = invoke("import", path, "--out", tmp_path / "g.json")
    assert result.exit_code == 0, result.output
    graph = read_exported_program(path).torch_graph.graph
    traced = peak_memory(graph, np.arange(graph.num_nodes), keep_outputs=True)
    assert result.stdout.startswith(f"branches-inference: {graph.num_nodes} nodes")
    assert f"file-order peak {traced:.6g}" in result.stdout
    assert load(tmp_path / "g.json").names == graph.names

    order_path = tmp_path / "order.json"
    result = invoke("schedule", path, "--method", "exact-dp", "--keep-outputs", "--out", order_path)
    assert result.exit_code == 0, result.output
    order = read_order(order_path, graph).order
    out = tmp_path / "reordered.pt2"
    result = invoke("export-pt2", path, order_path, "--out", out)
    assert result.exit_code == 0, result.output
    assert list(read_exported_program(out).torch_graph.graph.names) == [
        graph.names[v] for v in order
    ]

    args = ["measure", str(path), str(order_path)]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    best = peak_memory(graph, order, keep_outputs=True)
    rows = {
        cells[1].strip(): [cell.strip() for cell in cells[2:-1]]
        for cells in (line.split("│") for line in result.stdout.splitlines() if "│" in line)
    }
    assert set(rows) == {"traced", "order.json (exact-dp)", "eager PyTorch"}, result.stdout
    assert rows["traced"][:3] == [f"{traced / 1e6:.3f}", f"{traced / 1e6:.3f}", "+0.00"]
    assert rows["order.json (exact-dp)"][:3] == [f"{best / 1e6:.3f}", f"{best / 1e6:.3f}", "+0.00"]
    assert rows["eager PyTorch"][1:] == [f"{traced / 1e6:.3f}", "-", "+0.00", "+0.00"]

    result = invoke("import", path, "--mode", "training", "--out", tmp_path / "t.json")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("branches-training: ")

    net = saved(BatchNormNet(), (torch.randn(2, 3, 12, 12),), tmp_path / "net.pt2", train=True)
    for outputs in ("--split-outputs", "--joint-outputs"):
        result = invoke("import", net, "--mode", "training", outputs, "--out", tmp_path / "n.json")
        assert result.exit_code == 0, result.output
        shares = share_nodes(load(tmp_path / "n.json"))  # batch norm's saved statistics
        assert bool(shares.size) == (outputs == "--split-outputs")


def test_cli_errors_are_one_line_with_exit_2(branches, tmp_path):
    _, _, path = branches
    text = tmp_path / "text.pt2"
    text.write_text("not a program")
    onnx_order = tmp_path / "order.json"
    onnx_order.write_text(json.dumps({"order": ["nope"]}))
    cases = [
        (("import", text, "--out", tmp_path / "g.json"), "not a zip archive"),
        (
            ("import", tmp_path / "m.onnx", "--mode", "training", "--out", tmp_path / "g.json"),
            ".pt2",
        ),
        (("import", path, "--assume-size", 4, "--out", tmp_path / "g.json"), "--assume-size"),
        (("import", tmp_path / "m.onnx", "--joint-outputs", "--out", tmp_path / "g.json"), ".pt2"),
        (("export-pt2", tmp_path / "m.onnx", onnx_order, "--out", tmp_path / "r.pt2"), ".pt2"),
        (("export-pt2", path, onnx_order, "--out", tmp_path / "r.pt2"), "nope"),
        (("measure", path, tmp_path / "missing.json"), "no such order file"),
        (("measure", tmp_path / "m.xml"), "zoo measure"),
        (("measure", path, "--dim", "n=1"), "--dim and --run-shapes apply to ONNX models"),
        (("measure", tmp_path / "m.onnx", "--mode", "training"), ".pt2 programs"),
        (("measure", path, onnx_order), "nope"),
    ]
    for args, fragment in cases:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], (
            args,
            result.stderr,
        )
    assert not (tmp_path / "g.json").exists() and not (tmp_path / "r.pt2").exists()


def test_a_program_that_does_not_run_on_fake_tensors_is_an_input_error(branches, monkeypatch):
    """Recomputing a loaded program's values can fail (an operator without a fake-tensor
    kernel): one ``InputError`` naming the file, not a traceback from inside torch."""
    import dagopt.io.torch_program as torch_program

    class NoFakeKernel:
        def __init__(self, *args) -> None:
            pass

        def propagate_dont_convert_inputs(self, *args):
            raise NotImplementedError("aten::foo has no fake kernel\nmore detail")

    monkeypatch.setattr(torch_program, "FakeTensorProp", NoFakeKernel)
    _, _, path = branches
    with pytest.raises(
        InputError, match=r"branches\.pt2: .*fake tensors: aten::foo has no fake kernel$"
    ):
        read_exported_program(path)
