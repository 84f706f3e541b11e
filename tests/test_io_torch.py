"""PyTorch importer: node sizes by hand, alias and in-place rules, training graphs, errors."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from dagopt.errors import InputError
from dagopt.io.json import graph_from_node_link, graph_to_node_link
from dagopt.io.torch import TorchGraph, graph_from_module
from dagopt.objectives import peak_memory
from dagopt.objectives.runtime import estimate_runtimes

F32 = 4  # bytes per float32 element


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Shapes(nn.Module):
    """Views, a transpose, a chunk into a tuple and a reshape that must copy."""

    def forward(self, x):
        y = x * 2
        t = y.view(4, 4, 4).transpose(1, 2)
        a, b = t.chunk(2, dim=2)
        return a + b, t.reshape(4, 16).view(-1)


class Residual(nn.Module):
    """In-place ``relu_`` and ``+=`` on a linear block with a skip connection."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc1(x).relu_()
        y = self.fc2(y)
        y += x
        return y.relu_()


class ReadThenWrite(nn.Module):
    """``y`` is read by ``mul`` before ``relu_`` overwrites it."""

    def forward(self, x):
        y = x + 1
        z = y * 2
        y.relu_()
        return z + y


class WithBuffer(nn.Module):
    """Two inputs and a non-persistent buffer (a lifted constant)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.full((16,), 2.0), persistent=False)

    def forward(self, x, y):
        return x * self.scale + y


def x16() -> torch.Tensor:
    return torch.randn(4, 16, generator=torch.Generator().manual_seed(0))


def node(tg: TorchGraph, name: str) -> int:
    return tg.graph.index_of[name]


def preds(tg: TorchGraph, name: str) -> set[str]:
    return {tg.graph.names[u] for u in tg.graph.predecessors(node(tg, name))}


def test_mlp_sizes_parameters_and_edges():
    tg = graph_from_module(MLP(), (x16(),))
    g = tg.graph
    assert g.names == ("x", "linear", "relu", "linear_1", "output")
    assert g.op == (
        "input",
        "aten.linear.default",
        "aten.relu.default",
        "aten.linear.default",
        "output",
    )
    assert g.mem.tolist() == [4 * 16 * F32, 4 * 32 * F32, 4 * 32 * F32, 4 * 8 * F32, 0]
    assert g.param_mem.tolist() == [0, (32 * 16 + 32) * F32, 0, (8 * 32 + 8) * F32, 0]
    src, dst = g.edges
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert g.name == "MLP-inference"


def test_node_list_is_the_fx_execution_order():
    tg = graph_from_module(Residual(), x16(), name="res")
    fx_nodes = [n.name for n in tg.graph_module.graph.nodes if n.op != "get_attr"]
    assert list(tg.graph.names) == fx_nodes
    assert tg.graph.is_topological(np.arange(tg.graph.num_nodes))
    assert tg.graph.name == "res"
    assert tg.mode == "inference"


def test_views_and_tuple_items_are_not_counted_twice():
    tg = graph_from_module(Shapes(), x16())
    sizes = dict(zip(tg.graph.names, tg.graph.mem.tolist(), strict=True))
    assert sizes == {
        "x": 256,
        "mul": 256,
        "view": 0,
        "transpose": 0,
        "chunk": 0,
        "getitem": 0,
        "getitem_1": 0,
        "add": 4 * 4 * 2 * F32,
        "reshape": 256,  # the transposed view is not contiguous: reshape copies
        "view_1": 0,
        "output": 0,
    }
    # consumers of an alias also depend on the node that owns the storage
    assert preds(tg, "add") == {"mul", "getitem", "getitem_1"}
    assert preds(tg, "reshape") == {"mul", "transpose"}
    assert preds(tg, "output") == {"add", "reshape", "view_1"}


def test_in_place_ops_alias_their_argument():
    tg = graph_from_module(Residual(), x16())
    g = tg.graph
    sizes = dict(zip(g.names, g.mem.tolist(), strict=True))
    assert sizes == {
        "x": 256,
        "linear": 256,
        "relu_": 0,
        "linear_1": 256,
        "add_": 0,
        "relu__1": 0,
        "output": 0,
    }
    assert g.param_mem[node(tg, "linear")] == (16 * 16 + 16) * F32
    assert g.param_mem[node(tg, "relu_")] == 0
    assert preds(tg, "relu__1") == {"linear_1", "add_"}
    assert preds(tg, "output") == {"linear_1", "relu__1"}
    # by hand: during linear_1, x, linear and the new output are live with fc2's 1088 bytes
    assert peak_memory(g, np.arange(g.num_nodes), keep_outputs=True) == 3 * 256 + 1088


def test_a_write_waits_for_earlier_readers():
    tg = graph_from_module(ReadThenWrite(), x16())
    assert preds(tg, "relu_") == {"add", "mul"}
    assert tg.graph.mem[node(tg, "relu_")] == 0


def test_buffers_are_parameters_not_nodes():
    tg = graph_from_module(WithBuffer(), (x16(), x16()))
    g = tg.graph
    assert g.names == ("x", "y", "mul", "add", "output")
    assert g.param_mem[node(tg, "mul")] == 16 * F32
    assert g.param_mem.sum() == 16 * F32


def test_eval_dropout_is_the_identity():
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5), nn.ReLU())
    tg = graph_from_module(model, x16())
    assert tg.graph.op[1:] == ("aten.linear.default", "aten.relu.default", "output")
    assert torch.equal(tg.graph_module(x16())[0], model.eval()(x16()))


class DropoutThenView(nn.Module):
    """A linear layer, an eval-mode dropout, then a view of its output (Swin-T's windows)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc(x)).view(4, 2, 2, 4).relu()


def test_a_view_of_an_eval_dropout_aliases_the_dropout_input():
    tg = graph_from_module(DropoutThenView(), x16())
    sizes = dict(zip(tg.graph.names, tg.graph.mem.tolist(), strict=True))
    assert sizes == {"x": 256, "linear": 256, "view": 0, "relu": 256, "output": 0}
    assert preds(tg, "relu") == {"view", "linear"}


class DeadCopy(nn.Module):
    """Computes a copy nothing reads (Swin-T's unused reshaped hidden states)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.t().contiguous()
        return x.relu()


def test_dead_operators_are_dropped():
    tg = graph_from_module(DeadCopy(), x16())
    assert tg.graph.names == ("x", "relu", "output")
    assert torch.equal(tg.graph_module(x16())[0], x16().relu())


@pytest.mark.parametrize("core_aten", [True, False])
def test_zero_probability_dropouts_are_not_copied_in_training(core_aten):
    """Eager dropout at p = 0 returns its input; the joint trace would clone it."""
    plain = graph_from_module(MLP(), (x16(),), mode="training", core_aten=core_aten).graph
    model = nn.Sequential(MLP(), nn.Dropout(0.0))
    dropped = graph_from_module(model, (x16(),), mode="training", core_aten=core_aten).graph
    assert dropped.num_nodes == plain.num_nodes
    assert not any("clone" in op or "dropout" in op for op in dropped.op)
    live = nn.Sequential(MLP(), nn.Dropout(0.5))
    kept = graph_from_module(live, (x16(),), mode="training", core_aten=core_aten).graph
    assert kept.num_nodes > plain.num_nodes  # a real dropout draws its mask


def test_autograd_operators_keep_fused_backward_kernels():
    model = nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.Softmax(-1))
    core = graph_from_module(model, (x16(),), mode="training").graph
    eager = graph_from_module(model, (x16(),), mode="training", core_aten=False).graph
    assert "aten.native_layer_norm_backward.default" in eager.op
    assert "aten._softmax_backward_data.default" in eager.op
    assert not any(op.endswith("_backward.default") for op in core.op)
    assert eager.num_nodes < core.num_nodes


def test_autograd_operators_write_batch_norm_statistics_back_at_once():
    """Eager batch norm updates its running statistics in place: the functional trace's
    new statistics are copied into the buffers right after the operator, not held to the
    end of the step; the core ATen graph keeps them as outputs."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    x = torch.randn(2, 3, 8, 8)
    eager = graph_from_module(model, x, mode="training", split_outputs=True, core_aten=False)
    g = eager.graph
    updates = [i for i, op in enumerate(g.op) if op == "aten.copy_.default"]
    assert len(updates) == 3  # running_mean, running_var, num_batches_tracked
    output = g.num_nodes - 1
    assert all(g.mem[i] == 0 and output in g.successors(i).tolist() for i in updates)
    assert not any("_legit" in g.op[i] for i in g.predecessors(output).tolist())
    values = eager.graph_module.graph.output_node().args[0]
    specs = eager.program.graph_signature.output_specs
    mutated = [v for v, s in zip(values, specs, strict=True) if s.kind.name == "BUFFER_MUTATION"]
    assert len(mutated) == 3 and all(v.op == "get_attr" for v in mutated)
    core = graph_from_module(model, x, mode="training", split_outputs=True).graph
    assert "aten.copy_.default" not in core.op


def test_training_graph_saves_forward_activations_for_backward():
    tg = graph_from_module(MLP(), (x16(),), mode="training")
    g = tg.graph
    assert tg.mode == "training"
    assert g.name == "MLP-training"
    loss = next(i for i, op in enumerate(g.op) if op == "aten.sum.dim_IntList")
    relu = g.op.index("aten.relu.default")
    assert relu < loss
    assert any(w > loss for w in g.successors(relu).tolist())  # weight gradient of fc2
    assert any(w > loss for w in g.successors(0).tolist())  # weight gradient of fc1 reads x
    kinds = [spec.kind.name for spec in tg.program.graph_signature.output_specs]
    assert kinds == ["LOSS_OUTPUT"] + ["GRADIENT_TO_PARAMETER"] * 4
    outputs = tg.graph_module(x16())
    assert [t.shape for t in outputs[1:]] == [p.shape for p in MLP().parameters()]


def test_training_gradients_match_autograd():
    module = MLP()
    tg = graph_from_module(module, (x16(),), mode="training")
    loss, *grads = tg.graph_module(x16())
    module(x16()).sum().backward()
    assert torch.allclose(loss, module(x16()).sum())
    for grad, param in zip(grads, module.parameters(), strict=True):
        assert torch.allclose(grad, param.grad, atol=1e-6)


def test_module_mode_flag_is_restored():
    module = MLP().train()
    graph_from_module(module, x16())
    assert module.training
    graph_from_module(module.eval(), x16(), mode="training")
    assert not module.training


class TiedLanguageModel(nn.Module):
    """A token embedding whose weight is also the LM head's, and one block used twice
    under two names, as in GPT-2 / T5."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.block = nn.Linear(8, 8)
        self.again = self.block
        self.head = nn.Linear(8, 20, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(self.again(torch.relu(self.block(self.embed(tokens)))))


def _layout(module: nn.Module) -> tuple:
    return (
        [(name, id(p)) for name, p in module.named_parameters(remove_duplicate=False)],
        [(name, id(m)) for name, m in module.named_modules(remove_duplicate=False)],
        list(module.state_dict()),
    )


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_tied_weights_export_once_and_the_module_is_restored(mode):
    """``torch.export`` lifts a tied weight once per registered name and the joint trace
    then fails ("a parameter that did not receive a gradient"); the importer registers
    it once while exporting and restores the module exactly."""
    module = TiedLanguageModel()
    tokens = torch.tensor([[1, 5, 7, 3]])
    before = _layout(module)
    expected = module(tokens)
    tg = graph_from_module(module, tokens, mode=mode)
    assert _layout(module) == before
    assert not module.head._forward_pre_hooks
    assert torch.equal(module(tokens), expected)
    assert sum(tg.graph.param_mem) > 0
    if mode == "inference":
        assert torch.equal(tg.graph_module(tokens)[0], expected)
        return
    loss, *grads = tg.graph_module(tokens)
    module(tokens).sum().backward()
    assert torch.allclose(loss, expected.sum())
    distinct = list(module.parameters())  # embed.weight (tied), block.weight, block.bias
    assert len(grads) == len(distinct) == 3
    for grad, param in zip(grads, distinct, strict=True):
        assert torch.allclose(grad, param.grad, atol=1e-5)


class UnusedPooler(nn.Module):
    """A pooler the forward skips and a scale read only through ``detach``: in eager
    PyTorch neither gets a gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.pooler = nn.Linear(16, 16)
        self.scale = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(x) * self.scale(x).detach()


def test_parameters_the_loss_does_not_depend_on_get_no_gradient():
    """The joint trace wants a gradient for every parameter that requires one ("a
    parameter that did not receive a gradient"); the importer freezes those without a
    path to the loss while exporting, as eager PyTorch leaves their ``.grad`` None."""
    module = UnusedPooler()
    tg = graph_from_module(module, x16(), mode="training")
    assert all(p.requires_grad for p in module.parameters())
    _, *grads = tg.graph_module(x16())
    module(x16()).sum().backward()
    trained = [p for p in module.parameters() if p.grad is not None]
    assert trained == [module.fc.weight, module.fc.bias]
    assert len(grads) == len(trained)
    for grad, param in zip(grads, trained, strict=True):
        assert torch.allclose(grad, param.grad, atol=1e-5)
    assert "pooler" not in " ".join(tg.graph.names)


class DataDependent(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


class Boxed:
    def __init__(self, value: torch.Tensor) -> None:
        self.value = value


class ReturnsAnObject(nn.Module):
    def forward(self, x):
        return Boxed(x * 2)


@pytest.mark.parametrize(
    ("module", "inputs", "message"),
    [
        (
            DataDependent(),
            (torch.ones(3),),
            r"cannot export DataDependent-inference: the module branches on a tensor's "
            r"value at test_io_torch\.py:\d+ ",
        ),
        (ReturnsAnObject(), (torch.ones(3),), "an output is a test_io_torch.Boxed, which"),
        (MLP(), (x16(), 3), "example input #1 is a int, not a tensor"),
        (MLP(), 5, "example inputs must be a tensor or a sequence of tensors"),
        ("model", (x16(),), "expected a torch.nn.Module"),
    ],
)
def test_bad_inputs_raise_one_line_input_errors(module, inputs, message):
    with pytest.raises(InputError, match=message) as info:
        graph_from_module(module, inputs)
    assert "\n" not in str(info.value)


def test_a_transformers_cache_output_names_use_cache():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    model = transformers.LlamaModel(config)
    with pytest.raises(InputError, match="build the model with use_cache=False"):
        graph_from_module(model, torch.randint(0, 64, (1, 8)))
    config.use_cache = False
    assert graph_from_module(model, torch.randint(0, 64, (1, 8))).graph.num_nodes > 0


def test_unknown_mode_is_an_input_error():
    with pytest.raises(InputError, match="mode must be"):
        graph_from_module(MLP(), x16(), mode="eval")


def test_training_needs_a_float_output():
    class Argmax(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc(x).argmax(dim=1)

    with pytest.raises(InputError, match="floating-point output") as info:
        graph_from_module(Argmax(), x16(), mode="training")
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------- flops
class ConvNet(nn.Module):
    """Conv2d, batch norm, pooling, then a Linear layer and a matmul."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, groups=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = self.bn(self.conv(x)).relu().mean((2, 3))
        z = self.fc(y)
        return z @ z.T


def flops_of(tg: TorchGraph) -> dict[str, float]:
    return dict(zip(tg.graph.names, tg.graph.node_data["flops"].tolist(), strict=True))


def test_linear_flops_are_2_b_i_o():
    b, i, o = 4, 16, 32
    tg = graph_from_module(nn.Sequential(nn.Linear(i, o), nn.ReLU()), torch.randn(b, i))
    assert tg.graph.op[1:] == ("aten.linear.default", "aten.relu.default", "output")
    assert tg.graph.node_data["flops"].tolist() == [0, 2 * b * i * o, 0, 0]
    # training: the forward addmm and the weight gradient's mm (x needs no gradient)
    train = graph_from_module(nn.Linear(i, o), torch.randn(b, i), mode="training")
    flops = train.graph.node_data["flops"]
    by_op = {op: flops[np.array(train.graph.op) == op].tolist() for op in set(train.graph.op)}
    assert by_op["aten.addmm.default"] == by_op["aten.mm.default"] == [2 * b * i * o]
    assert flops.sum() == 2 * 2 * b * i * o


def test_conv_flops_follow_the_formula():
    x = torch.randn(2, 3, 6, 6)
    tg = graph_from_module(ConvNet(), x)
    flops = flops_of(tg)
    # 2 * output elements * (C_in / groups) * kernel elements
    assert flops["conv2d"] == 2 * (2 * 8 * 6 * 6) * 3 * 3 * 3
    assert flops["linear"] == 2 * 2 * 8 * 5
    assert flops["matmul"] == 2 * 2 * 5 * 2
    assert flops["batch_norm"] == flops["relu"] == flops["mean"] == flops["x"] == 0


def test_total_flops_match_flop_counter_mode():
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(2, 3, 6, 6)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(x)
    tg = graph_from_module(model, x)
    assert tg.graph.node_data["flops"].sum() == counter.get_total_flops() > 0
    assert tg.graph.node_data["flops"].dtype == np.float64


def test_flops_round_trip_and_make_matmuls_compute_bound():
    tg = graph_from_module(ConvNet(), torch.randn(2, 3, 6, 6))
    graph = graph_from_node_link(graph_to_node_link(tg.graph))
    np.testing.assert_array_equal(graph.node_data["flops"], tg.graph.node_data["flops"])
    fast = estimate_runtimes(graph, peak_flops=1e30, bandwidth=1e9)
    slow = estimate_runtimes(graph, peak_flops=1.0, bandwidth=1e9)
    linear = graph.index_of["linear"]
    assert slow[linear] == graph.node_data["flops"][linear] > fast[linear]
    relu = graph.index_of["relu"]
    assert slow[relu] == fast[relu] > 0  # 0 FLOPs: memory-bound either way


def test_cpu_attention_is_counted():
    """FlopCounterMode counts 0 for CPU attention kernels; the importer uses its SDPA formula."""

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(8))

        def forward(self, x):
            q = x * self.scale
            return nn.functional.scaled_dot_product_attention(q, q, q)

    x = torch.randn(2, 4, 16, 8)
    expected = 2 * (2 * 2 * 4 * 16 * 16 * 8)  # Q K^T and P V
    inference = graph_from_module(Attention(), x)
    assert inference.graph.node_data["flops"].sum() == expected
    training = graph_from_module(Attention(), x, mode="training")
    backward = training.graph.op.index(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"
    )
    # five matmuls of the size of one forward matmul (the scores are recomputed)
    assert training.graph.node_data["flops"][backward] == 5 * expected / 2
