"""A training step run in a dagopt order trains the module as eager PyTorch does."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from dagopt.errors import InputError
from dagopt.integrations.torch import measure_peak, measure_training_peak
from dagopt.integrations.torch_step import TrainingStep
from dagopt.io.torch import TrainingLoss, graph_from_module
from dagopt.objectives import peak_memory
from dagopt.schedule import solve


def small_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(288, 4)
    )


def encoder() -> nn.Module:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def searched_order(graph, seconds: float = 1.0) -> np.ndarray:
    return solve(graph, "anytime", keep_outputs=True, seed=0, time_limit=seconds).order


@pytest.mark.parametrize(("core_aten", "tolerance"), [(True, 1e-5), (False, 0.0)])
def test_a_reordered_step_trains_as_eager_pytorch(core_aten, tolerance):
    """Bitwise for the operators autograd runs, batch-norm statistics included."""
    model = small_cnn()
    eager = copy.deepcopy(model).train()
    x = torch.randn(2, 3, 8, 8)
    exported = graph_from_module(model, x, mode="training", split_outputs=True, core_aten=core_aten)
    order = searched_order(exported.graph)
    assert not np.array_equal(order, np.arange(exported.graph.num_nodes))
    step = TrainingStep(model, exported, order)
    ours = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    theirs = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    for _ in range(3):
        ours.zero_grad()
        theirs.zero_grad()
        loss = step(x)
        (expected,) = TrainingLoss(eager)(x)
        expected.backward()
        assert loss.requires_grad is False
        torch.testing.assert_close(loss, expected.detach(), rtol=tolerance, atol=tolerance)
        ours.step()
        theirs.step()
    for (name, value), other in zip(
        model.state_dict().items(), eager.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(value, other, rtol=10 * tolerance, atol=tolerance, msg=name)
    assert int(model[1].num_batches_tracked) == 3


def test_the_step_accumulates_gradients_as_backward_does():
    model = small_cnn()
    x = torch.randn(2, 3, 8, 8)
    step = TrainingStep(model, graph_from_module(model, x, mode="training"))
    step(x)
    once = [p.grad.clone() for p in model.parameters()]
    step(x)  # no zero_grad: added to .grad, as a second backward would
    for parameter, first in zip(model.parameters(), once, strict=True):
        torch.testing.assert_close(parameter.grad, 2 * first)


def test_a_searched_step_measures_below_the_eager_step():
    model = encoder()
    x = torch.randn(2, 16, 64)
    exported = graph_from_module(model, x, mode="training", split_outputs=True)
    order = searched_order(exported.graph, seconds=2.0)
    step = TrainingStep(model, exported, order)
    measured = measure_peak(step.graph_module, x).peak
    assert measured == peak_memory(exported.graph, order, keep_outputs=True)
    model.zero_grad(set_to_none=True)
    model.eval()
    eager = measure_training_peak(model, x)
    assert measured < eager.peak
    assert not model.training  # the flag is restored
    assert all(p.grad is not None for p in model.parameters())


def test_measure_training_peak_counts_the_gradients_to_the_end():
    model = nn.Linear(256, 256, bias=False)
    x = torch.randn(4, 256)
    peak = measure_training_peak(model, x).peak
    weight = 256 * 256 * 4
    assert peak >= weight + x.nbytes  # the gradient, and the input read by the backward


def test_the_step_refuses_what_it_cannot_run():
    model = small_cnn()
    x = torch.randn(2, 3, 8, 8)
    exported = graph_from_module(model, x, mode="training")
    with pytest.raises(InputError, match="training graph"):
        TrainingStep(model, graph_from_module(model, x, mode="inference"))
    with pytest.raises(InputError, match="no longer the tensor"):
        TrainingStep(copy.deepcopy(model), exported)
    step = TrainingStep(model, exported)
    with pytest.raises(InputError, match=r"exported for torch.float32 \(2, 3, 8, 8\)"):
        step(torch.randn(1, 3, 8, 8))
    with pytest.raises(InputError, match="takes 1 inputs"):
        step(x, x)
    with pytest.raises(InputError, match="not a parameter or buffer"):
        TrainingStep(nn.Linear(2, 2), exported)


def test_the_traced_autograd_graph_is_the_eager_step():
    """``core_aten=False``: the traced order measures eager's peak (within what autograd's
    own bookkeeping holds: 2 % here) and gives its gradients."""
    model = encoder()
    x = torch.randn(2, 16, 64)
    exported = graph_from_module(model, x, mode="training", split_outputs=True, core_aten=False)
    step = TrainingStep(model, exported)
    traced = measure_peak(step.graph_module, x).peak
    order = np.arange(exported.graph.num_nodes)
    assert traced == peak_memory(exported.graph, order, keep_outputs=True)
    model.zero_grad(set_to_none=True)
    assert measure_training_peak(model, x).peak == pytest.approx(traced, rel=0.03)
    eager = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    step(x)
    for parameter, expected in zip(model.parameters(), eager, strict=True):
        torch.testing.assert_close(parameter.grad, expected, rtol=1e-6, atol=1e-7)
