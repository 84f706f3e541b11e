"""Run an order in PyTorch and measure the real peak of live tensor storage.

``reorder`` rebuilds the fx graph of a ``TorchGraph`` with its nodes in a dagopt
order; the fx code generator frees each value after its last use, so the new order
is what really runs. ``measure_peak`` runs a module once on CPU under a
``TorchDispatchMode`` and accounts memory at operator granularity in the terms of
``peak_memory(graph, order, keep_outputs=True)`` (``docs/real_models.md``);
``measure_training_peak`` measures an eager training step (``eager_training_step``:
forward and ``loss.backward()``) the same way.
"""

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from dagopt.errors import InputError
from dagopt.graph.shares import without_shares
from dagopt.io.torch import TorchGraph, TrainingLoss, written_arguments
from dagopt.objectives import validate_order


def reorder(torch_graph: TorchGraph, order: Sequence[int] | np.ndarray) -> torch.fx.GraphModule:
    """A copy of ``torch_graph.graph_module`` whose operations run in ``order``.

    ``order`` holds dagopt node indices and must be a topological order of
    ``torch_graph.graph`` (else ``OrderError``); the share nodes of
    ``split_outputs`` are skipped (their operator creates the storage). Graph inputs
    and ``get_attr`` nodes come first and the output last whatever their place in
    ``order``; every other node keeps its name, target and metadata, so outputs are
    bitwise those of the original on CPU.
    """
    graph = torch_graph.graph
    order = validate_order(graph, order)
    source = torch_graph.graph_module
    by_name = {node.name: node for node in source.graph.nodes}
    calls = [by_name[graph.names[v]] for v in without_shares(graph, order).tolist()]
    new = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    first = [node for node in source.graph.nodes if node.op in ("placeholder", "get_attr")]
    last = [node for node in source.graph.nodes if node.op == "output"]
    for node in first + [n for n in calls if n.op == "call_function"] + last:
        env[node] = new.node_copy(node, env.__getitem__)
    new.lint()
    return torch.fx.GraphModule(source, new)


@dataclass(frozen=True)
class MeasuredPeak:
    """Memory of one real run, per dispatched operator ``t``.

    ``peak = max_t`` of: bytes of storages created by earlier operators and still
    alive, plus the new storages operator ``t`` creates, plus the parameter and
    buffer storages it reads (none for a pure alias), plus the input tensors still
    to be read (an input counts until its last reader, to the end if returned or
    never read). ``activation_peak`` is the first two terms alone.
    """

    peak: float
    activation_peak: float
    num_ops: int


def measure_peak(
    module: torch.nn.Module, inputs: torch.Tensor | Sequence[torch.Tensor]
) -> MeasuredPeak:
    """Run ``module(*inputs)`` once under ``torch.no_grad()`` and measure its storage peak.

    Storage lifetimes are real: a storage is allocated when an operator first
    returns it and freed when its last tensor dies (``weakref.finalize`` on the
    storage). Allocations inside a kernel that never reach Python (workspaces) are
    not seen. Parameters and buffers are those of ``module``.
    """
    args = _tensor_args(inputs)
    tracker = _StorageTracker(_state_bytes(module), args)
    with torch.no_grad(), tracker:
        out = module(*args)
    return tracker.result(out)


def measure_training_peak(
    module: torch.nn.Module, inputs: torch.Tensor | Sequence[torch.Tensor]
) -> MeasuredPeak:
    """One eager training step of ``module``, measured as ``measure_peak`` measures.

    The step is the one ``graph_from_module(mode="training")`` traces: in train mode,
    ``TrainingLoss(module)(*inputs)`` and ``loss.backward()`` through PyTorch's autograd
    engine. The loss and the parameter gradients are its outputs (alive to the end).
    Like any step it leaves the gradients in ``.grad`` (set them to ``None`` first,
    ``module.zero_grad()``, for the peak of a step that creates them) and updates
    batch-norm running statistics; the module's train/eval flag is restored.
    """
    args = _tensor_args(inputs)
    tracker = _StorageTracker(_state_bytes(module), args)
    with tracker:
        loss = eager_training_step(module, args)
    gradients = [p.grad for p in module.parameters() if p.grad is not None]
    return tracker.result((loss, gradients))


def eager_training_step(
    module: torch.nn.Module,
    inputs: Sequence[torch.Tensor],
    loss_module: Callable[..., tuple[torch.Tensor]] | None = None,
) -> torch.Tensor:
    """The step ``graph_from_module(mode="training")`` traces, run by eager PyTorch: in
    train mode (the module's flag restored afterwards), ``TrainingLoss(module)(*inputs)``
    and ``loss.backward()``. Returns the loss without autograd history. ``loss_module``
    computes the loss in place of ``TrainingLoss(module)`` (a compiled one:
    ``dagopt.integrations.torch_compile.training_step``)."""
    if loss_module is None:
        loss_module = TrainingLoss(module)
    was_training = module.training
    module.train(True)
    try:
        (loss,) = loss_module(*inputs)
        loss.backward()
    finally:
        module.train(was_training)
    return loss.detach()


def _tensor_args(inputs: torch.Tensor | Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    args = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    if not all(isinstance(x, torch.Tensor) for x in args):
        raise InputError("measuring a peak needs tensor inputs")
    return args


def _state_bytes(module: torch.nn.Module) -> dict[StorageWeakRef, int]:
    """Bytes of each parameter and buffer storage of ``module``."""
    return {
        StorageWeakRef(t.untyped_storage()): t.untyped_storage().nbytes()
        for t in (*module.parameters(), *module.buffers())
    }


def _tensors(value: Any) -> list[torch.Tensor]:
    return [x for x in pytree.tree_leaves(value) if isinstance(x, torch.Tensor)]


class _StorageTracker(TorchDispatchMode):
    """Per-operator storage accounting of ``measure_peak``."""

    def __init__(self, state: dict[StorageWeakRef, int], inputs: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.state = state
        self.inputs = {
            StorageWeakRef(t.untyped_storage()): t.untyped_storage().nbytes() for t in inputs
        }
        self.last_read = dict.fromkeys(self.inputs, -1)
        self.live: dict[StorageWeakRef, int] = {}
        self.live_bytes = 0
        self.during: list[int] = []
        self.activations: list[int] = []
        self.finalizers: list[weakref.finalize] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        read = {StorageWeakRef(t.untyped_storage()) for t in _tensors((args, kwargs))}
        out = func(*args, **kwargs)
        created = False
        for tensor in _tensors(out):
            storage = tensor.untyped_storage()
            key = StorageWeakRef(storage)
            if key in read or key in self.live or key in self.state or key in self.inputs:
                continue
            created = True
            self.live[key] = storage.nbytes()
            self.live_bytes += self.live[key]
            self.finalizers.append(weakref.finalize(storage, self._free, key))
        step = len(self.during)
        for key in read.intersection(self.inputs):
            self.last_read[key] = step
        reads_data = created or bool(written_arguments(func, args, kwargs))
        params = sum(self.state[k] for k in read if k in self.state) if reads_data else 0
        self.activations.append(self.live_bytes)
        self.during.append(self.live_bytes + params)
        return out

    def _free(self, key: StorageWeakRef) -> None:
        self.live_bytes -= self.live.pop(key)

    def result(self, out: Any) -> MeasuredPeak:
        """Close the run: add the inputs still to be read at each step and take the maxima."""
        for finalizer in self.finalizers:
            finalizer.detach()
        steps = len(self.during)
        returned = {StorageWeakRef(t.untyped_storage()) for t in _tensors(out)}
        during = np.asarray(self.during, dtype=np.float64)
        for key, nbytes in self.inputs.items():
            last = steps if key in returned or self.last_read[key] < 0 else self.last_read[key]
            during[: last + 1] += nbytes
        activations = np.asarray(self.activations, dtype=np.float64)
        return MeasuredPeak(
            peak=float(during.max(initial=0.0)),
            activation_peak=float(activations.max(initial=0.0)),
            num_ops=steps,
        )
