"""A training step of a PyTorch module that runs its joint forward + backward graph in a
dagopt order: the peak-memory orders of ``docs/results.md`` used for real training.

``graph_from_module(module, inputs, mode="training")`` traces the step eager PyTorch
takes (``TrainingLoss(module)(*inputs)`` then ``loss.backward()``) as one fx graph whose
outputs are the updated buffers, the loss and the parameter gradients.
``TrainingStep`` runs that graph in any topological order (``reorder``) and hands its
outputs back to the module as ``loss.backward()`` would: gradients into ``.grad``
(accumulated onto existing ones), batch-norm statistics into their buffers (a graph of
the operators autograd runs updates them in place itself, as eager does), so an
optimizer steps the module as after an eager step (``docs/real_models.md``, "Training
in a dagopt order").
"""

from collections.abc import Sequence

import numpy as np
import torch
from torch.export.graph_signature import InputKind, OutputKind

from dagopt.errors import InputError
from dagopt.integrations.torch import reorder
from dagopt.io.torch import TorchGraph

#: ``graph_from_module`` exports ``TrainingLoss(module)``: state targets carry this prefix.
_LOSS_PREFIX = "module."


class TrainingStep:
    """One training step of ``module`` on inputs of the exported shapes, run in ``order``.

    ``torch_graph`` is ``graph_from_module(module, example_inputs, mode="training")``
    (``split_outputs`` either way); ``order`` a topological order of its graph (default
    the traced one). The graph reads the module's parameters and buffers in place, so
    the step follows optimizer updates; a module whose tensors were replaced since the
    export (``load_state_dict(assign=True)``, ``.to(...)``) is refused (``InputError``).
    Calling the step returns the loss (a 0-d tensor without autograd history).

    The numbers are eager PyTorch's: bitwise for a graph of the operators autograd runs
    (``core_aten=False``), up to floating-point rounding for a core ATen graph, whose
    decomposed operators can round differently. Random
    operators (dropout) draw from the global generator in the order they run, so a
    reordered step draws the same distribution as eager with other masks.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        torch_graph: TorchGraph,
        order: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        if torch_graph.mode != "training":
            raise InputError(f"a training step needs a training graph, got {torch_graph.mode!r}")
        self.module = module
        self.graph_module = (
            torch_graph.graph_module if order is None else reorder(torch_graph, order)
        )
        signature = torch_graph.program.graph_signature
        state = _state_of(module)
        for spec in signature.input_specs:
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                exported = getattr(torch_graph.graph_module, spec.arg.name)
                tensor = _lookup(state, spec.target)
                if exported.untyped_storage().data_ptr() != tensor.untyped_storage().data_ptr():
                    raise InputError(
                        f"{_module_name(spec.target)!r} is no longer the tensor the graph "
                        "was exported with; export the module again"
                    )
        self._buffers: list[tuple[int, torch.Tensor]] = []
        self._gradients: list[tuple[int, torch.nn.Parameter]] = []
        self._loss = -1
        values = self.graph_module.graph.output_node().args[0]
        for i, spec in enumerate(signature.output_specs):
            if spec.kind == OutputKind.BUFFER_MUTATION:
                if values[i].op != "get_attr":  # else the graph updated the buffer itself
                    self._buffers.append((i, _lookup(state, spec.target)))
            elif spec.kind == OutputKind.GRADIENT_TO_PARAMETER:
                self._gradients.append((i, _lookup(state, spec.target)))
            elif spec.kind == OutputKind.LOSS_OUTPUT:
                self._loss = i
            else:
                raise InputError(f"unsupported output {spec.arg.name!r} ({spec.kind.name})")
        placeholders = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
        self._inputs = [(tuple(n.meta["val"].shape), n.meta["val"].dtype) for n in placeholders]

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Run the step: returns the loss; gradients and buffers go to the module."""
        self._check(inputs)
        with torch.no_grad():
            outputs = self.graph_module(*inputs)
            for i, buffer in self._buffers:
                buffer.copy_(outputs[i])
            for i, parameter in self._gradients:
                if parameter.grad is None:
                    parameter.grad = outputs[i]
                else:
                    parameter.grad += outputs[i]
        return outputs[self._loss]

    def _check(self, inputs: Sequence[torch.Tensor]) -> None:
        if len(inputs) != len(self._inputs):
            raise InputError(f"the step takes {len(self._inputs)} inputs, got {len(inputs)}")
        for k, (value, (shape, dtype)) in enumerate(zip(inputs, self._inputs, strict=True)):
            if not isinstance(value, torch.Tensor):
                raise InputError(f"input #{k} is a {type(value).__name__}, not a tensor")
            if tuple(value.shape) != shape or value.dtype != dtype:
                raise InputError(
                    f"input #{k} is {value.dtype} {tuple(value.shape)}; the graph was "
                    f"exported for {dtype} {shape}"
                )


def _state_of(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's parameters and buffers by name, tied names included."""
    return {
        **dict(module.named_parameters(remove_duplicate=False)),
        **dict(module.named_buffers(remove_duplicate=False)),
    }


def _module_name(target: str) -> str:
    """The module's name of the exported state ``target``."""
    return target.removeprefix(_LOSS_PREFIX)


def _lookup(state: dict[str, torch.Tensor], target: str) -> torch.Tensor:
    name = _module_name(target)
    if name not in state:
        raise InputError(f"{name!r} is not a parameter or buffer of the module")
    return state[name]
