"""dagopt inside ``torch.compile``: the graph of Inductor's kernels predicts Inductor's own
peak estimate (plus the measured workspaces of extern kernels), the scheduler pass's
order is what the compiled code runs (measured by the CPU allocator), and the compiled
step computes the same bits."""

import functools

import numpy as np
import pytest
import torch
import torch._inductor.config as inductor_config
from torch import nn
from torch._inductor.ir import MultiOutput
from torch._inductor.memory import estimate_peak_memory
from typer.testing import CliRunner

from dagopt.bench.compiled import compiled_run
from dagopt.cli.main import app
from dagopt.errors import GraphError, InputError
from dagopt.graph.shares import SHARE_KEY
from dagopt.integrations.extern_kernels import PROFILER_RUNNING, extern_workspaces
from dagopt.integrations.torch_compile import (
    channels_last_weights,
    measured_peak,
    peak_site,
    training_step,
    transient_bytes,
)
from dagopt.io.inductor import (
    INPUTS_NODE,
    OUTPUTS_NODE,
    _input_groups,
    current_scheduler_graph,
)
from dagopt.objectives import peak_memory
from dagopt.schedule.compiled import KernelOrderPass, kernel_order
from dagopt.zoo.multibranch import BasicConv2d, inception_v1
from dags import priority_topological
from scheduler_passes import with_scheduler_pass


def tiny_gpt2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """One GPT-2 block, no dropout: Inductor's own orders of its backward kernels are
    not the least-peak ones."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=1, n_embd=64, n_head=2, vocab_size=500, n_positions=32, bos_token_id=0,
        eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0,
    )  # fmt: skip
    module = tensor_forward(GPT2LMHeadModel(config), ("input_ids",), "logits")
    return module, (torch.randint(0, config.vocab_size, (1, 32)),)


def small_cnn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Convolutions (whose backward is one kernel with several outputs) and batch norm."""
    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10),
    )  # fmt: skip
    return module, (torch.randn(2, 3, 16, 16),)


def run_step(module: nn.Module, step) -> dict:
    """Compile (first call), then the measured peak, then the loss and gradients of one
    more step from zero gradients."""
    step()
    for p in module.parameters():
        p.grad = None
    peak = measured_peak(step)
    for p in module.parameters():
        p.grad = None
    loss = step()
    return {"peak": peak, "loss": loss, "grads": [p.grad.clone() for p in module.parameters()]}


@pytest.fixture(scope="module")
def gpt2_runs():
    """The tiny GPT-2's training step compiled by Inductor alone and with dagopt's pass."""
    module, inputs = tiny_gpt2()
    torch._dynamo.reset()
    with inductor_config.patch(fx_graph_cache=False):
        default = run_step(module, training_step(module, inputs))
    torch._dynamo.reset()
    with kernel_order("anytime", time_limit=2.0, seed=0) as order_pass:
        ordered = run_step(module, training_step(module, inputs))
    torch._dynamo.reset()
    return default, ordered, order_pass.reports


def test_pass_orders_every_compiled_graph(gpt2_runs):
    _, _, reports = gpt2_runs
    assert [r.graph.split(" (")[1] for r in reports] == ["forward)", "backward)"]
    for r in reports:
        assert r.nodes > r.kernels > 0
        # the refinement starts from the better of anytime's order and Inductor's best,
        # and keeps only moves that do not raise the generated code's peak
        assert r.dagopt_peak <= min(r.search_peak, r.best_candidate_peak) <= r.inductor_peak
    assert [r.applied for r in reports] == [False, True]  # the forward: no gain at all


def test_dagopt_order_lowers_the_measured_peak(gpt2_runs):
    default, ordered, reports = gpt2_runs
    backward = reports[1]
    assert backward.dagopt_peak < backward.inductor_peak  # this block's backward has room
    # the step's peak is the backward's: the allocator measures what Inductor estimates,
    # plus the loss (a float32 scalar) that is live through the backward
    assert default["peak"] == backward.inductor_peak + 8
    assert ordered["peak"] == backward.dagopt_peak + 8


def test_compiled_step_in_dagopt_order_computes_the_same_bits(gpt2_runs):
    default, ordered, _ = gpt2_runs
    assert torch.equal(default["loss"], ordered["loss"])
    assert all(torch.equal(a, b) for a, b in zip(default["grads"], ordered["grads"], strict=True))


def is_multi_output(kernel) -> bool:
    """A ``MultiOutput`` node: takes one output of a multi-output kernel out of its tuple."""
    return isinstance(getattr(kernel, "node", None), MultiOutput)


def multi_outputs_early(kernels) -> list:
    """``kernels`` with each ``MultiOutput`` node right after the node whose tuple it reads."""
    extractors = [k for k in kernels if is_multi_output(k)]
    order = []

    def emit(kernel):
        order.append(kernel)
        for x in extractors:
            if kernel in x.mpi_node.pred_nodes and x not in order:
                emit(x)

    for kernel in kernels:
        if not is_multi_output(kernel):
            emit(kernel)
    return order


def multi_outputs_late(kernels) -> list:
    """``kernels`` with each ``MultiOutput`` node as late as its readers allow."""
    order, pending = [], []
    for kernel in kernels:
        if is_multi_output(kernel):
            pending.append(kernel)
            continue
        for x in [x for x in pending if x in kernel.mpi_node.pred_nodes]:
            pending.remove(x)
            order.append(x)
        order.append(kernel)
    return order + pending


def compile_small_cnn_step(scheduler_pass) -> None:
    """Compile and run the small CNN's training step with ``scheduler_pass`` as Inductor's
    post-fusion pass (Inductor's own peak-memory pass off)."""
    module, inputs = small_cnn()
    with with_scheduler_pass(scheduler_pass):
        training_step(module, inputs)()


def test_scheduler_graph_peak_is_inductors_estimate():
    """On Inductor's order, and on random orders with each kernel's storages right before
    it and its ``MultiOutput`` nodes right after it, the graph's peak is
    ``estimate_peak_memory``'s; anywhere else an upper bound."""
    seen = []

    def check(kernels):
        sched = current_scheduler_graph(kernels)
        graph = sched.graph
        given, _ = estimate_peak_memory(kernels, sched.freeable_inputs, sched.graph_outputs)
        assert peak_memory(graph, np.arange(graph.num_nodes)) == given
        rng = np.random.default_rng(0)
        for _ in range(20):
            order = priority_topological(graph, rng.random(graph.num_nodes))
            kernels_run = sched.kernels_in_order(order)
            early = multi_outputs_early(kernels_run)
            estimate, _ = estimate_peak_memory(early, sched.freeable_inputs, sched.graph_outputs)
            assert peak_memory(graph, order) >= peak_memory(graph, sched.node_order(kernels_run))
            assert peak_memory(graph, sched.node_order(kernels_run)) >= estimate
            assert peak_memory(graph, sched.node_order(early)) == estimate
        seen.append(sched)
        return kernels

    compile_small_cnn_step(check)
    assert len(seen) == 2
    backward = seen[1].graph
    assert INPUTS_NODE in backward.index_of and OUTPUTS_NODE in backward.index_of
    # convolution backward: one kernel allocating input and weight gradients, each a
    # storage of that kernel
    shares = np.asarray(backward.node_data[SHARE_KEY])
    assert shares.max() >= 2


def sort_then_matmul(x: torch.Tensor):
    """A multi-output kernel (``sort``, a fallback whose values and indices Inductor takes
    out of one tuple), the values read soon (into a buffer of another size, so the
    generated code cannot reuse their storage), the indices only returned."""
    values, indices = torch.sort(x, dim=1)
    half = values[:, : x.shape[1] // 2].sin()
    return (half @ half.T).sum(), indices


def test_multi_output_tuples_hold_their_outputs_as_the_generated_code_does():
    """Run the ``MultiOutput`` node of the indices last: the generated code holds the sort's
    tuple, and the values in it, until then. The graph's peak is the measured one in
    both orders; Inductor's estimate frees the values after their reader regardless."""
    x = torch.randn(512, 256)
    runs = {}
    for arrange in (list, multi_outputs_late):
        seen = []

        def reorder(kernels, arrange=arrange, seen=seen):
            sched = current_scheduler_graph(kernels)
            order = arrange(kernels)
            estimate, _ = estimate_peak_memory(order, sched.freeable_inputs, sched.graph_outputs)
            seen.append((peak_memory(sched.graph, sched.node_order(order)), estimate))
            return order

        with with_scheduler_pass(reorder):
            compiled = torch.compile(sort_then_matmul)
            compiled(x)
            measured = measured_peak(functools.partial(compiled, x))
        runs[arrange.__name__] = (*seen[0], measured)
    graph_peak, estimate, measured = runs["list"]
    assert graph_peak == estimate == measured
    graph_peak, estimate, measured = runs["multi_outputs_late"]
    values = 512 * 256 * 4
    assert graph_peak == measured == estimate + values


def upsampled_step() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Convolutions around a bilinear upsampling: its backward scatter-adds into zeros in
    place (a buffer mutation), which the kernels after it read."""
    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.GELU(),
        nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.GroupNorm(2, 4),
        nn.Conv2d(4, 1, 1),
    )
    return module, (torch.randn(2, 3, 32, 32),)


def test_the_graph_keeps_every_dependency_inductor_has_mutations_included():
    missing = []

    def record(kernels):
        sched = current_scheduler_graph(kernels)
        index = {op: k for k, kernel in enumerate(kernels) for op in kernel.get_operation_names()}
        reaches = sched.graph.closure_matrix[np.ix_(sched.kernel_nodes, sched.kernel_nodes)]
        for k, kernel in enumerate(kernels):
            needed = {index[op] for op in kernel.ancestors if op in index} - {k}
            missing.extend(u for u in needed if not reaches[u, k])
        return kernels

    module, inputs = upsampled_step()
    with with_scheduler_pass(record):
        training_step(module, inputs)()
    assert missing == []


def lpmf_step_site(module, inputs):
    """The pass's reports (LPMF, no refinement) of ``module``'s compiled training step and
    ``peak_site`` of a step after the compiling one, gradients set to ``None`` first."""
    torch._dynamo.reset()
    with kernel_order("lpmf", refine_limit=0) as order_pass:
        step = training_step(module, inputs)
        step()
        module.zero_grad(set_to_none=True)
        site = peak_site(step)
    torch._dynamo.reset()
    return order_pass.reports, site


def backward_scheduler_graph(module, inputs):
    """The ``SchedulerGraph`` of the backward graph of ``module``'s compiled training step."""
    backward = {}

    def record(kernels):
        from torch._inductor.virtualized import V

        if V.graph.is_backward:
            backward["sched"] = current_scheduler_graph(kernels)
        return kernels

    with with_scheduler_pass(record):
        training_step(module, inputs)()
    return backward["sched"]


class HalfConvAttention(nn.Module):
    """A backward whose inputs are views: the half of a ``chunk`` a convolution reads
    (its storage is the whole tensor), and the query, key and value split from one
    projection (one storage for the three)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)
        self.qkv = nn.Linear(16, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept, rest = (x * 2.0).chunk(2, dim=1)
        y = torch.cat([kept, self.conv(rest)], dim=1).flatten(2).transpose(1, 2)
        q, k, v = self.qkv(y).split(16, dim=-1)
        return torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v


def test_inputs_that_are_views_hold_their_storages():
    torch.manual_seed(0)
    module, inputs = HalfConvAttention(), (torch.randn(2, 16, 4, 4),)
    sched = backward_scheduler_graph(module, inputs)
    nodes, mem = sched.input_nodes, sched.graph.mem
    reads = {name: buffer.mpi_buffer.size_free for name, buffer in sched.input_buffers.items()}
    half = next(name for name in nodes if name.startswith("getitem"))
    assert mem[nodes[half]] == 2 * reads[half]  # the chunk's half holds the whole
    split = [name for name in nodes if name.startswith("permute")]
    assert len(split) == 3 and len({nodes[name] for name in split}) == 1
    assert mem[nodes[split[0]]] == sum(reads[name] for name in split)
    reports, site = lpmf_step_site(module, inputs)
    # the step peaks in the backward graph, the loss (8 bytes) alive
    assert site.peak == reports[1].chosen_peak + 8


def test_an_input_no_kernel_reads_is_held_to_the_end():
    """Average pooling's backward needs only its input's shape: AOTAutograd saves the
    convolution's output for it, the backward graph reads nothing of it, and the
    generated code holds it until its call returns."""
    torch.manual_seed(0)
    module, inputs = nn.Sequential(nn.Conv2d(3, 8, 1), nn.AvgPool2d(2)), (torch.randn(2, 3, 8, 8),)
    sched = backward_scheduler_graph(module, inputs)
    v = sched.input_nodes["convolution"]
    assert sched.graph.mem[v] == 2 * 8 * 8 * 8 * 4
    assert not sched.input_buffers["convolution"].mpi_buffer.succ_nodes
    assert sched.graph.index_of[OUTPUTS_NODE] in sched.graph.successors(v).tolist()
    reports, site = lpmf_step_site(module, inputs)
    assert site.peak == reports[1].chosen_peak + 8  # the loss's 8 bytes


def test_input_groups_hold_a_storage_once_and_a_parameters_not_at_all():
    sizes = {"q": 100, "k": 100, "half": 50, "view_of_weight": 40}  # Inductor's bytes read
    storages = {
        "q": ("qkv", 300),
        "k": ("qkv", 300),
        "half": ("whole", 100),
        "view_of_weight": ("weight", 40),
        "primals_1": ("weight", 40),  # a parameter: an input that is not freeable
    }
    inputs = [*sizes, "primals_1"]
    assert _input_groups(sizes, inputs, storages) == [
        (["q", "k"], 300),
        (["half"], 100),
        (["view_of_weight"], 0),
    ]
    assert _input_groups(sizes, inputs, None) == [([name], size) for name, size in sizes.items()]


def test_refined_orders_of_a_mutating_backward_compute_the_same_bits():
    module, inputs = upsampled_step()
    compiled = torch.compile(module)

    def step():
        compiled(*inputs).sum().backward()

    torch._dynamo.reset()
    with inductor_config.patch(fx_graph_cache=False):
        default = run_step(module, step)
    torch._dynamo.reset()
    with kernel_order("anytime", time_limit=1.0, seed=0, refine_limit=1.0) as order_pass:
        ordered = run_step(module, step)
    torch._dynamo.reset()
    assert [r.applied for r in order_pass.reports] == [False, True]  # the backward's
    assert all(torch.equal(a, b) for a, b in zip(default["grads"], ordered["grads"], strict=True))


def test_transient_bytes_counts_what_each_call_frees_before_it_returns():
    def prepared(scratch: int, kept: int):
        def call():
            temporary = torch.empty(scratch, dtype=torch.uint8)
            del temporary
            return torch.empty(kept, dtype=torch.uint8)

        return lambda: call

    # the most live in the call, less what it returns (held to the end of its window)
    assert transient_bytes([prepared(1000, 300), prepared(0, 500), prepared(4000, 0)]) == [
        700,
        0,
        4000,
    ]


def test_measured_workspaces_keep_the_estimate_below_the_measured_peak():
    """The small CNN's step peaks inside a convolution backward, above Inductor's estimate
    by what that kernel allocates inside itself (how much depends on the process's
    thread settings and caches): the measured workspaces raise the estimate of the given
    order, and the estimate of the order run stays at or below the measured peak with
    them (the order run may differ: the pass chooses by the estimates)."""
    module, inputs = small_cnn()
    runs = {}
    for workspaces in (False, True):
        torch._dynamo.reset()
        with kernel_order("anytime", time_limit=1.0, seed=0, workspaces=workspaces) as order_pass:
            peak = run_step(module, training_step(module, inputs))["peak"]
        runs[workspaces] = (order_pass.reports[1], peak)
    torch._dynamo.reset()
    (plain, _), (counted, counted_peak) = runs[False], runs[True]
    assert counted.measured_kernels > 0 and counted.unmeasured == ()
    assert plain.given_peak < counted.given_peak
    assert counted.chosen_peak <= counted_peak


def test_scheduler_graph_counts_a_workspace_while_its_kernel_runs():
    seen = []

    def check(kernels):
        plain = current_scheduler_graph(kernels)
        size = 10**6
        counted = current_scheduler_graph(kernels, workspaces={k.get_name(): size for k in kernels})
        given = plain.node_order(kernels)
        # every kernel gets the same workspace, so the peak (at a kernel) rises by it
        assert peak_memory(counted.graph, counted.node_order(kernels)) == (
            peak_memory(plain.graph, given) + size
        )
        assert counted.graph.num_nodes == plain.graph.num_nodes + len(kernels)
        with pytest.raises(GraphError, match="which is not a kernel of this graph"):
            current_scheduler_graph(kernels, workspaces={"no-such-kernel": 1})
        with pytest.raises(GraphError, match="below 0"):
            current_scheduler_graph(kernels, workspaces={kernels[0].get_name(): -1})
        seen.append(len(kernels))
        return kernels

    compile_small_cnn_step(check)
    assert len(seen) == 2


def test_extern_workspaces_run_every_extern_call_and_leave_the_random_state():
    """Dropout's random draw and the matmul are extern calls: both are run (on fresh
    tensors) and measured, and the global random state is as it was, so the compiled
    function draws what it would have drawn without the pass."""
    seen = []

    def record(kernels):
        before = torch.random.get_rng_state()
        seen.append((extern_workspaces(kernels), torch.random.get_rng_state()))
        assert torch.equal(before, seen[-1][1])
        return kernels

    torch._dynamo.reset()
    with inductor_config.patch(_post_fusion_custom_pass=record, fx_graph_cache=False):
        torch.compile(lambda x, w: torch.nn.functional.dropout(x, 0.5) @ w)(
            torch.randn(8, 8), torch.randn(8, 8)
        )
    torch._dynamo.reset()
    ((found, _),) = seen
    assert len(found.bytes) == 2 and found.unmeasured == ()


def test_pass_refuses_to_run_under_inductors_own_peak_memory_pass():
    torch._dynamo.reset()
    with (
        inductor_config.patch(_post_fusion_custom_pass=KernelOrderPass(), fx_graph_cache=False),
        pytest.raises(Exception, match="turn Inductor's reorder_for_peak_memory off"),
    ):
        torch.compile(sort_then_matmul)(torch.randn(8, 4))
    torch._dynamo.reset()


def test_measured_peak_counts_live_cpu_bytes():
    def run():
        a = torch.empty(1000, dtype=torch.float32)
        b = torch.empty(500, dtype=torch.float32)
        del a
        c = torch.empty(200, dtype=torch.float32)
        return b, c

    assert measured_peak(run) == 6000


def test_measured_peak_refuses_to_run_inside_a_profiler_session():
    with (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]),
        pytest.raises(RuntimeError, match="profiler session is already running"),
    ):
        measured_peak(lambda: torch.empty(100))


def test_measured_peak_fails_when_a_profiler_inside_the_run_ends_its_session():
    def run():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            pass
        return torch.empty(100)

    with pytest.raises(RuntimeError, match="session ended during the measured call"):
        measured_peak(run)


def small_convolutions(channels_last: bool) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Three 3 x 3 convolutions, their weights contiguous or channels-last."""
    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 8, 3, padding=1),
    )  # fmt: skip
    if channels_last:
        channels_last_weights(module)
    return module, (torch.randn(2, 3, 16, 16),)


@pytest.mark.parametrize("depthwise", [True, False])
def test_channels_last_weights_labels_depthwise_weights_as_asked(depthwise):
    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Conv2d(16, 32, 3), nn.Conv2d(32, 32, 5, groups=32), nn.Conv2d(32, 8, 1),
        nn.BatchNorm2d(8),
    )  # fmt: skip
    before = {name: p.detach().clone() for name, p in module.named_parameters()}
    channels_last_weights(module, depthwise=depthwise)
    strides = {name: p.stride() for name, p in module.named_parameters()}
    assert strides["0.weight"] == (144, 1, 48, 16)
    assert strides["1.weight"] == ((25, 1, 5, 1) if depthwise else (25, 25, 5, 1))
    assert strides["2.weight"] == (32, 1, 32, 32)  # 1 x 1: channels-last strides either way
    assert strides["3.weight"] == (1,)
    assert all(torch.equal(p, before[name]) for name, p in module.named_parameters())


def test_a_depthwise_weight_labelled_channels_last_costs_its_backward_a_large_scratch():
    """Why ``channels_last_weights`` can keep depthwise weights contiguous: labelled
    channels-last, the CPU convolution backward of EfficientNet-B0's 5 x 5 convolutions
    over 1152 channels allocates about 30x the memory."""
    inputs = torch.randn(2, 1152, 2, 2)
    peaks = {}
    for depthwise in (None, True, False):
        torch.manual_seed(0)
        module = nn.Conv2d(1152, 1152, 5, padding=2, groups=1152)
        if depthwise is not None:
            channels_last_weights(module, depthwise=depthwise)
        peaks[depthwise] = measured_peak(lambda: module(inputs).sum().backward())  # noqa: B023
    assert peaks[False] == peaks[None] < peaks[True] / 10


@pytest.mark.parametrize("channels_last", [False, True])
def test_peak_site_counts_the_gradients_autograd_copies_into_their_weights_layout(channels_last):
    """Inductor returns convolution weights' gradients channels-last; ``AccumulateGrad``
    copies each into a contiguous weight's layout, not into a channels-last one's."""
    module, inputs = small_convolutions(channels_last)
    torch._dynamo.reset()
    step = training_step(module, inputs)
    step()
    module.zero_grad(set_to_none=True)
    site = peak_site(step)
    torch._dynamo.reset()
    weights = [4 * layer.weight.numel() for layer in module if isinstance(layer, nn.Conv2d)]
    assert sorted(site.gradient_copies) == ([] if channels_last else sorted(weights))
    assert site.region == "backward graph" and site.peak == measured_peak(step)


@pytest.mark.parametrize("channels_last", [False, True])
def test_backward_estimate_counts_the_copies_its_forward_saved(channels_last):
    """Inductor's layout optimization saves channels-last copies of the weights (and of
    the input image) for the backward graph, under the inputs' names, which Inductor's
    estimate takes for parameters; the generated code frees them, and the estimate of
    the chosen order meets the measured peak (within the 8 bytes of the loss's
    gradient, which the step makes outside the graphs)."""
    module, inputs = small_convolutions(channels_last)
    (_, backward), site = lpmf_step_site(module, inputs)
    assert backward.graph.endswith("(backward)") and site.region == "backward graph"
    assert 0 <= site.peak - backward.chosen_peak <= 8


def test_peak_site_says_where_the_run_was_at_its_peak():
    """A 3 x 3 convolution's gradient, copied after the backward graph has returned the
    1 x 1 one's (a larger gradient, in the same layout either way): the step's peak."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1024, 256, 1, bias=False), nn.Conv2d(256, 64, 3, bias=False))
    inputs = (torch.randn(1, 1024, 3, 3),)
    torch._dynamo.reset()
    step = training_step(module, inputs)
    step()
    module.zero_grad(set_to_none=True)
    at_copy = peak_site(step)
    compiled = torch.compile(module)
    with torch.no_grad():
        compiled(*inputs)
        inference = peak_site(lambda: compiled(*inputs))
    torch._dynamo.reset()
    assert at_copy.region == "gradient accumulation"
    assert at_copy.gradient_copies == (4 * module[1].weight.numel(),)
    assert inference.region == "compiled graph" and inference.gradient_copies == ()
    outside = peak_site(lambda: torch.empty(100))
    assert outside.region == "outside compiled graphs" and outside.operator == "aten::empty"


def test_a_first_call_compiles_inside_measured_peak_without_measuring_extern_kernels():
    """The pass measures extern kernels with the profiler, which would end
    ``measured_peak``'s session (a peak of 0 before): it leaves them unmeasured there."""
    x = torch.randn(8, 4)
    torch._dynamo.reset()
    with kernel_order("lpmf", refine_limit=0) as order_pass:
        compiled = torch.compile(sort_then_matmul)
        first = measured_peak(functools.partial(compiled, x))
        second = measured_peak(functools.partial(compiled, x))
    torch._dynamo.reset()
    [report] = order_pass.reports
    assert report.measured_kernels == 0 and report.unmeasured
    assert {why for _, why in report.unmeasured} == {PROFILER_RUNNING}
    assert first >= second > 0


def test_pass_keeps_inductors_order_below_its_min_gain(gpt2_runs):
    default, _, reports = gpt2_runs
    gain = 1 - reports[1].dagopt_peak / reports[1].best_candidate_peak  # about 0.13
    module, inputs = tiny_gpt2()
    torch._dynamo.reset()
    with kernel_order("anytime", time_limit=2.0, seed=0, min_gain=gain + 0.05) as order_pass:
        kept = run_step(module, training_step(module, inputs))
    torch._dynamo.reset()
    assert [r.applied for r in order_pass.reports] == [False, False]
    assert [r.chosen_peak for r in order_pass.reports] == [r.best_candidate_peak for r in reports]
    assert kept["peak"] == default["peak"]


def test_pass_checks_its_method_and_options():
    with pytest.raises(InputError, match="no-such-method"):
        KernelOrderPass("no-such-method")
    with pytest.raises(InputError, match="beam_width"):
        KernelOrderPass("lpmf", options={"beam_width": 10})
    with pytest.raises(InputError, match="min_gain must be in"):
        KernelOrderPass(min_gain=1.0)


def test_zoo_compile_prints_estimates_and_measured_peaks():
    result = CliRunner().invoke(
        app, ["zoo", "compile", "llama-small", "--mode", "inference", "--time-limit", "1"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("llama-small (small, inference), torch.compile on the CPU")
    assert "(inference): " in lines[1] and "extern workspaces measured), estimate of" in lines[1]
    assert "MB (in compiled graph" in lines[2]
    measured = lines[2].split("measured peak: Inductor alone ")[1]
    alone, ordered = (float(x.split(" MB")[0]) for x in measured.split(", with dagopt "))
    assert 0 < ordered <= alone
    assert lines[3].startswith("results: largest difference from Inductor alone 0.0e+00")


@pytest.mark.slow
@pytest.mark.parametrize("channels_last", [False, True])
def test_zoo_compile_shows_the_gradient_copies_a_channels_last_model_avoids(channels_last):
    args = ["resnet-50", "--mode", "training", "--time-limit", "1", "--refine-limit", "0"]
    args += ["--channels-last"] * channels_last
    result = CliRunner().invoke(app, ["zoo", "compile", *args])
    assert result.exit_code == 0, result.output
    copies = [line for line in result.stdout.splitlines() if "gradient accumulation copied" in line]
    measured = next(line for line in result.stdout.splitlines() if "measured peak" in line)
    if channels_last:
        assert copies == [] and "(in backward graph" in measured
    else:
        assert copies[0].startswith("gradient accumulation copied 17 gradients")
        assert "(in gradient accumulation" in measured


@pytest.mark.slow
def test_inductor_alone_runs_the_candidate_its_own_estimate_picks():
    """Inductor's pass picks among its candidates by its estimate, which leaves extern
    kernels' workspaces out: on two of GoogLeNet's Inception modules it runs the given
    order, where BFS's holds less in the generated code. The report's ``inductor_peak``
    is the estimate of the order Inductor alone runs, and the measurements say so."""
    torch.manual_seed(0)
    module = nn.Sequential(
        BasicConv2d(3, 528, 1),
        inception_v1(528, 256, 160, 320, 32, 128, 128),  # GoogLeNet's 4e
        inception_v1(832, 256, 160, 320, 32, 128, 128),  # and 5a
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )
    inputs = (torch.randn(2, 3, 4, 4),)
    alone = compiled_run(module, inputs, repeats=1)
    kept = compiled_run(module, inputs, method="lpmf", min_gain=0.99, refine_limit=0, repeats=1)
    backward = kept.reports[1]
    assert not backward.applied
    assert (backward.inductor_choice, backward.best_candidate) == ("given", "bfs")
    assert backward.best_candidate_peak < backward.inductor_peak
    # both steps peak in their backward graphs, the loss (8 bytes) alive
    assert alone.peak == backward.inductor_peak + 8
    assert kept.peak == backward.best_candidate_peak + 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-model", "--mode", "training"], "unknown zoo model 'no-such-model'"),
        (["gpt2", "--mode", "training", "--method", "nope"], "unknown method 'nope'"),
        (
            ["resnet-50", "--mode", "training", "--contiguous-depthwise"],
            "--contiguous-depthwise needs --channels-last",
        ),
    ],
)
def test_zoo_compile_refuses_bad_arguments_before_building(args, message):
    result = CliRunner().invoke(app, ["zoo", "compile", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_compiled_run_refuses_an_unknown_mode():
    module, inputs = small_cnn()
    with pytest.raises(InputError, match="mode must be one of training, inference"):
        compiled_run(module, inputs, mode="eval")
