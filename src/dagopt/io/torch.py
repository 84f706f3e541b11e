"""PyTorch importer: an ``nn.Module`` and example inputs -> ``Graph`` via ``torch.export``.

The module is traced by ``torch.export.export`` (inference: the eval-mode forward as
traced, in-place ops kept; training: the joint forward + backward graph of
``torch.export.experimental._export_forward_backward``, in core ATen or, with
``core_aten=False``, in the operators autograd runs, buffer updates written back at
once). Sizes come from the fake tensors in ``node.meta["val"]``, which share a storage
exactly when the real tensors do. The rules (``docs/real_models.md``):

- nodes: every graph input, every executed ``call_function`` and the fx ``output``
  node, in the fx graph's own order (``np.arange(n)`` is the traced order);
  parameters, buffers and lifted constants are not nodes, nor are dead operators
  (nothing reads their result and they write nothing: dropped as compilers drop them);
- ``mem``: bytes of the storages a node creates; an output that aliases an existing
  storage (view, reshape without copy, ``getitem``, in-place op result, a view of a
  dropout eager PyTorch runs as the identity) adds 0;
- edges: ``u -> v`` for every fx input ``u`` of ``v``, plus ``owner -> v`` for the
  node that created each storage ``v`` reads, so a storage stays alive while any
  alias of it is used; a write to a storage is ordered after its earlier readers
  and before its later ones;
- ``param_mem``: bytes of the distinct parameter / buffer storages a node reads; a
  pure alias (creates nothing, writes nothing) reads no data and gets 0;
- the ``output`` node (``mem`` 0) reads every graph output, and every node is one of
  its ancestors, so outputs stay alive to the end as in PyTorch;
- ``node_data["flops"]``: FLOPs of each ATen op by ``torch.utils.flop_counter``'s own
  formulas (``op_flops``), from the shapes in ``meta["val"]``; the model is not run.
  Ops without a formula (elementwise, reductions, views) count 0, as in
  ``FlopCounterMode``: they are memory-bound and the roofline's bytes term dominates.
"""

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch.export.experimental import (
    _copy_graph_module_and_signature,
    _export_forward_backward,
    _remove_detach_pass,
)
from torch.export.exported_program import _decompose_exported_program
from torch.export.graph_signature import InputKind, OutputKind
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree
from torch.utils import flop_counter

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.shares import SHARE_KEY, SHARE_SEPARATOR
from dagopt.io.torch_buffers import write_buffers_back
from dagopt.io.torch_tied import registered_once

Mode = Literal["inference", "training"]
STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
aten = torch.ops.aten
# The eager kernels of these return their input itself when ``train`` is false or the
# probability is 0 (ATen's ``_dropout_impl``), while their decompositions clone it; the
# importer drops them there (``_eager_identity``), as no eager run copies anything.
DROPOUTS = (
    aten.dropout.default,
    aten.feature_dropout.default,
    aten.alpha_dropout.default,
    aten.feature_alpha_dropout.default,
)
# CPU attention kernels ``FlopCounterMode`` has no formula for (it counts 0 for a CPU
# ``scaled_dot_product_attention``); they take the same query / key / value (and
# grad_out) leading arguments as the fused kernels, so torch's SDPA formulas apply.
_EXTRA_FORMULAS = {
    aten._scaled_dot_product_flash_attention_for_cpu: flop_counter.sdpa_flop,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: flop_counter.sdpa_backward_flop,
}


@dataclass(frozen=True)
class TorchGraph:
    """A module's ``Graph`` and the runnable fx module it was read from.

    ``graph.names[i]`` is the name of the fx node of dagopt node ``i`` in
    ``graph_module``. ``graph_module(*example_inputs)`` returns the flat tuple of the
    program's outputs (training: updated buffers, the loss, then the parameter
    gradients, in the order of ``program.graph_signature.output_specs``); parameters
    and buffers are ``get_attr`` nodes sharing the module's storage.
    """

    graph: Graph
    graph_module: torch.fx.GraphModule
    program: torch.export.ExportedProgram
    mode: Mode


def graph_from_module(
    module: torch.nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    *,
    mode: Mode = "inference",
    name: str | None = None,
    split_outputs: bool = True,
    core_aten: bool = True,
) -> TorchGraph:
    """Export ``module`` on ``example_inputs`` and build its ``Graph`` (rules in the module doc).

    ``mode="training"`` differentiates a scalar loss: the module's output if it is a
    0-d tensor, else the sum of all elements of its floating-point outputs. The
    module's train/eval flag is restored afterwards. A module that cannot be
    exported, a non-tensor input or a symbolic shape raises ``InputError``.

    An operator with several new output storages (batch norm's output and saved
    statistics, dropout's output and mask, a convolution's input, weight and bias
    gradients) frees each of them on its own in a real run. By default
    (``split_outputs=True``) each storage after the first gets its own node,
    ``<fx name>.<j>`` (node data ``share`` = ``j``, 0 for the operators), that creates
    it: it runs before the operator (an edge to it) after the operator's predecessors,
    and storage ``j``'s readers depend on it, so the storage lives until its own last
    reader. The peak is then exact when each share runs right before its operator (as
    in the traced order) and an upper bound otherwise; share nodes are not fx nodes
    (``reorder`` skips them) and placement joins them to their operators
    (``dagopt.graph.shares.join_shares``). ``split_outputs=False`` gives
    paper 000's graph, one node per operator, whose outputs are freed together when the
    last of them dies: a training graph's peak can then come out high, up to 80 % on
    the architectures of ``docs/real_models.md``, and a search minimises the wrong peak.

    A training graph is decomposed to core ATen (``core_aten=True``, as
    ``_export_forward_backward`` gives it, the operator set compilers consume); its
    backward runs a fused kernel such as layer norm's or softmax's backward as several
    operators, whose temporaries an eager step never holds. ``core_aten=False`` keeps
    the operators PyTorch's autograd runs and writes each updated buffer back right
    after computing it (``dagopt.io.torch_buffers``), as eager batch norm does, so the
    traced order is an eager training step, peak and numbers alike
    (``docs/real_models.md``, "Training in a dagopt order"). Inference graphs are never decomposed.
    """
    if not isinstance(module, torch.nn.Module):
        raise InputError(f"expected a torch.nn.Module, got {type(module).__name__}")
    if mode not in ("inference", "training"):
        raise InputError(f"mode must be 'inference' or 'training', got {mode!r}")
    inputs = _as_inputs(example_inputs)
    label = name or f"{type(module).__name__}-{mode}"
    was_training = module.training
    module.train(mode == "training")
    try:
        program = export_program(module, inputs, mode, label, core_aten)
    finally:
        module.train(was_training)
    return graph_from_program(program, mode, label, split_outputs, core_aten)


def graph_from_program(
    program: torch.export.ExportedProgram,
    mode: Mode,
    name: str,
    split_outputs: bool,
    core_aten: bool,
) -> TorchGraph:
    """The ``TorchGraph`` of an exported program (``export_program``'s, or one read from a
    file), by the rules of the module doc; ``graph_from_module`` documents the options."""
    graph_module, aliases = _runnable(program)
    if mode == "training" and not core_aten:
        write_buffers_back(graph_module, program.graph_signature)
    graph = _graph_from_fx(graph_module, name, split_outputs, aliases)
    return TorchGraph(graph=graph, graph_module=graph_module, program=program, mode=mode)


def _as_inputs(example_inputs: Any) -> tuple[torch.Tensor, ...]:
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if not isinstance(example_inputs, Iterable) or isinstance(example_inputs, str | bytes):
        raise InputError(
            f"example inputs must be a tensor or a sequence of tensors, got "
            f"{type(example_inputs).__name__}"
        )
    inputs = tuple(example_inputs)
    for i, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):
            raise InputError(f"example input #{i} is a {type(value).__name__}, not a tensor")
    return inputs


class TrainingLoss(torch.nn.Module):
    """The training objective of ``mode="training"``: ``module``'s output if it is a 0-d
    tensor, else the sum of all elements of its floating-point outputs."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor]:
        out = self.module(*inputs)
        if isinstance(out, torch.Tensor) and out.ndim == 0:
            return (out,)
        leaves = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]
        sums = [x.sum() for x in leaves if x.is_floating_point()]
        if not sums:
            raise InputError("training mode needs a floating-point output to differentiate")
        loss = sums[0]
        for term in sums[1:]:
            loss = loss + term
        return (loss,)


def export_program(
    module: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    mode: Mode,
    label: str,
    core_aten: bool,
) -> torch.export.ExportedProgram:
    """``torch.export.export`` of the forward (inference) or of the joint forward +
    backward of ``TrainingLoss(module)`` (training), tied weights registered once
    (``dagopt.io.torch_tied``), with ``module`` in whatever train/eval state it is in;
    any failure becomes one ``InputError``."""
    try:
        with quiet(), registered_once(module):
            if mode == "inference":
                return torch.export.export(module, inputs)
            return _export_joint(TrainingLoss(module), inputs, core_aten)
    except InputError:
        raise
    except Exception as exc:  # export raises many unrelated types for untraceable code
        raise InputError(f"cannot export {label}: {_export_failure(exc)}") from None


def _export_failure(exc: BaseException) -> str:
    """The first line of export's error, or what to change for two failures that line
    does not explain:

    - an output of a class ``torch.export`` cannot flatten (pytree's "Found <class ...>
      in output, which is not a known type"): return tensors; a ``transformers`` model
      returns its key-value cache unless built with ``use_cache=False``;
    - a Python branch on a tensor's value ("Could not guard on data-dependent
      expression"), such as ``transformers``' random layer drop in train mode: the
      model's line that branched, which export names at the end of its message.
    """
    text = str(exc)
    found = re.match(r"Found <class '([\w.]+)'> in output, which is not a known type", text)
    if found is not None:
        message = f"an output is a {found[1]}, which torch.export cannot return; return tensors"
        if found[1].startswith("transformers.") and found[1].endswith("Cache"):
            message += " (a transformers cache: build the model with use_cache=False)"
        return message
    if text.startswith("Could not guard on data-dependent expression"):
        call = re.search(r'raised this error:\s+File "([^"]+)", line (\d+)', text)
        where = f" at {Path(call[1]).name}:{call[2]}" if call else ""
        return (
            f"the module branches on a tensor's value{where} (a Python condition on tensor "
            "data, such as a random layer drop in train mode), which torch.export cannot trace"
        )
    return first_line(exc)


def _export_joint(
    loss: torch.nn.Module, inputs: tuple[torch.Tensor, ...], core_aten: bool
) -> torch.export.ExportedProgram:
    """The joint forward + backward program of ``loss``, in core ATen or in the ATen
    operators autograd runs (``_joint_eager_operators``).

    Dropouts that eager PyTorch runs as the identity (probability 0) are read through
    first (``_without_eager_identities``). Parameters the loss does not depend on (an
    unused pooler or head, a weight read only through ``detach``) get no gradient in
    eager PyTorch, but the joint trace requires one for every parameter that requires
    grad; the forward is exported again with those frozen (``requires_grad`` off,
    restored afterwards), so they stay graph inputs that no node reads and have no
    gradient output.
    """
    program = torch.export.export(loss, inputs)
    gradless = [program.state_dict[target] for target in _gradless_parameters(program)]
    gradless = [parameter for parameter in gradless if parameter.requires_grad]
    if gradless:
        try:
            for parameter in gradless:
                parameter.requires_grad_(False)
            program = torch.export.export(loss, inputs)
        finally:
            for parameter in gradless:
                parameter.requires_grad_(True)
    program = _without_eager_identities(program)
    if core_aten:
        return _export_forward_backward(program, joint_loss_index=0)
    return _joint_eager_operators(program)


def _joint_eager_operators(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``_export_forward_backward`` without its core ATen decomposition table: the joint
    trace records the ATen operators autograd dispatches, fused backward kernels
    included, as an eager ``loss.backward()`` runs them."""
    program = _decompose_exported_program(
        program,
        cia_to_decomp={},
        python_decomp_table={},
        joint_loss_index=0,
        decompose_custom_triton_ops=False,
    )
    graph_module, signature = _copy_graph_module_and_signature(program)
    _remove_detach_pass(graph_module, signature)
    return program._update(graph_module, signature)


def _without_eager_identities(
    program: torch.export.ExportedProgram,
) -> torch.export.ExportedProgram:
    """``program`` (changed in place) with the dropouts eager PyTorch runs as the identity
    (``_eager_identity``) read through, before the joint trace decomposes them into
    clones; one that is itself a program output is kept (the signature names it)."""
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if _eager_identity(node) and all(user.op != "output" for user in node.users):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    program.graph_module.recompile()
    return program


def _gradless_parameters(program: torch.export.ExportedProgram) -> list[str]:
    """Targets of the parameters with no path to the loss (the user output) through
    floating-point values other than ``detach`` (which stops gradients)."""
    signature = program.graph_signature
    outputs = program.graph.output_node().args[0]
    stack = [
        node
        for node, spec in zip(outputs, signature.output_specs, strict=True)
        if spec.kind == OutputKind.USER_OUTPUT and isinstance(node, torch.fx.Node)
    ]
    reached: set[str] = set()
    while stack:
        node = stack.pop()
        if node.name in reached:
            continue
        reached.add(node.name)
        if node.target is not aten.detach.default:
            stack.extend(u for u in node.all_input_nodes if _may_carry_gradient(u))
    return [
        spec.target
        for spec in signature.input_specs
        if spec.kind == InputKind.PARAMETER and spec.arg.name not in reached
    ]


def _may_carry_gradient(node: torch.fx.Node) -> bool:
    """Whether ``node``'s value could carry a gradient: a floating-point tensor among its
    outputs, or no recorded value (then it is assumed to)."""
    if "val" not in node.meta:
        return True
    return any(
        isinstance(leaf, torch.Tensor) and leaf.is_floating_point()
        for leaf in pytree.tree_leaves(node.meta["val"])
    )


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence export's warnings, its log records and the partial graph it prints on failure."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def state_bytes(graph_module: torch.nn.Module) -> int:
    """Bytes of the distinct storages of a module's parameters and buffers (a
    ``TorchGraph.graph_module``'s: the program's parameters, buffers and constants)."""
    storages = {}
    for tensor in (*graph_module.parameters(), *graph_module.buffers()):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's message (its type name if it has none),
    cut to 200 characters: what a one-line ``InputError`` quotes."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _runnable(
    program: torch.export.ExportedProgram,
) -> tuple[torch.fx.GraphModule, dict[StorageWeakRef, StorageWeakRef]]:
    """Copy of the program's graph where parameters, buffers and constants are ``get_attr``
    nodes (detached, sharing storage), only the user inputs remain placeholders, dropouts
    with ``train=False`` are removed (they return their input) and so are dead operators.

    Returned with it: the storage each removed dropout's output stands for. The trace
    gave that output a fake storage of its own (a clone's), which the values of the
    views taken of it still carry; eager PyTorch returns the input itself, so the output
    is an alias of the input's storage (``_graph_from_fx`` reads it so). An operator
    whose result nothing uses and that writes nothing (Swin's unused reshaped hidden
    states, an unused ``unsqueeze``) is dropped, as ``torch.fx``'s dead code elimination
    and every compiler drop it; kept, it would be a sink whose memory stays to the end.
    """
    state: dict[str, torch.Tensor] = {}
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        if spec.kind not in STATE_KINDS:
            raise InputError(f"unsupported graph input {spec.arg.name!r} ({spec.kind.name})")
        source = program.state_dict if spec.target in program.state_dict else program.constants
        state[spec.arg.name] = source[spec.target].detach()
    root = torch.nn.Module()
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    aliases: dict[StorageWeakRef, StorageWeakRef] = {}
    for node in program.graph.nodes:
        if node.op not in ("placeholder", "call_function", "output"):
            raise InputError(f"unsupported fx node {node.name!r} ({node.op})")
        if node.op == "placeholder" and node.name in state:
            root.register_buffer(node.name, state[node.name])
            env[node] = graph.get_attr(node.name)
            env[node].meta = dict(node.meta)
        elif _eager_identity(node):
            env[node] = env[node.args[0]]
            (source,) = _storages(_value(node.args[0]), node.args[0])
            (output,) = _storages(_value(node), node)
            aliases[output] = aliases.get(source, source)
        elif node.target is torch.ops.aten._assert_tensor_metadata.default:
            continue  # a no-op check left by ``.to(dtype)``; it computes nothing
        else:
            env[node] = graph.node_copy(node, env.__getitem__)
    graph.eliminate_dead_code(is_impure_node=kept_when_dead)
    return torch.fx.GraphModule(root, graph), aliases


def kept_when_dead(node: torch.fx.Node) -> bool:
    """Whether dead code elimination keeps ``node`` when nothing reads its result: every
    node but an operator call, and an operator that writes or has another side effect."""
    return node.op != "call_function" or node.is_impure()


def _eager_identity(node: torch.fx.Node) -> bool:
    """Whether ``node`` is a dropout that eager PyTorch runs as the identity: in eval
    mode, or with probability 0 (``dropout=0.0`` in many ``transformers`` configs)."""
    if node.op != "call_function" or node.target not in DROPOUTS:
        return False
    probability = node.kwargs["p"] if "p" in node.kwargs else node.args[1]
    train = node.kwargs["train"] if "train" in node.kwargs else node.args[2]
    return not train or probability == 0


def written_arguments(target: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
    """The arguments an operator writes to, from its schema (``Tensor(a!)`` annotations)."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return []
    written: list[Any] = []
    for i, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if argument.name in kwargs:
            written.extend(pytree.tree_leaves(kwargs[argument.name]))
        elif not argument.kwarg_only and i < len(args):
            written.extend(pytree.tree_leaves(args[i]))
    return written


def _storages(value: Any, node: torch.fx.Node) -> dict[StorageWeakRef, int]:
    """Storages (and their bytes) of the tensors in a node's fake value; symbolic is an error."""
    found: dict[StorageWeakRef, int] = {}
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.SymInt | torch.SymFloat | torch.SymBool):
            raise InputError(f"node {node.name!r} has a symbolic value; export with static shapes")
        if isinstance(leaf, torch.Tensor):
            storage = leaf.untyped_storage()
            nbytes = storage.nbytes()
            if not isinstance(nbytes, int):
                raise InputError(f"node {node.name!r} has a symbolic shape {tuple(leaf.shape)}")
            found[StorageWeakRef(storage)] = nbytes
    return found


def _value(node: torch.fx.Node) -> Any:
    if node.op in ("placeholder", "call_function", "get_attr") and "val" not in node.meta:
        raise InputError(f"fx node {node.name!r} has no tensor metadata ('val')")
    return node.meta.get("val")


def _op_name(node: torch.fx.Node) -> str:
    if node.op == "placeholder":
        return "input"
    if node.op == "output":
        return "output"
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    return getattr(node.target, "__name__", str(node.target))


def _formula(packet: torch._ops.OpOverloadPacket) -> Any:
    """torch's FLOP formula of an op packet (called with tensors and ``out_val=``), or None."""
    if packet in flop_counter.flop_registry:
        return flop_counter.flop_registry[packet]
    return _EXTRA_FORMULAS.get(packet)


def _raw_formulas() -> dict[Any, Any]:
    """The extra formulas as ``FlopCounterMode(custom_mapping=...)`` wants them (unwrapped)."""
    return {packet: getattr(f, "__wrapped__", f) for packet, f in _EXTRA_FORMULAS.items()}


def _on_meta(value: Any) -> Any:
    """A fresh meta tensor of the same shape, strides and dtype (other values unchanged)."""
    if not isinstance(value, torch.Tensor):
        return value
    return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")


def op_flops(node: torch.fx.Node) -> float:
    """FLOPs of the ATen op of fx node ``node``, from the fake tensors in ``meta["val"]``.

    An op with a formula in ``torch.utils.flop_counter.flop_registry`` (``mm``,
    ``addmm``, ``bmm``, ``baddbmm``, ``convolution``, the SDPA kernels and their
    backward ops...) gets that formula of its argument and output shapes, called as
    ``FlopCounterMode`` calls it. A composite op without one (``linear``, ``conv2d``,
    ``matmul``, ``einsum``, ``scaled_dot_product_attention``...; inference graphs keep
    them) is decomposed on meta tensors of the same shapes under ``FlopCounterMode``,
    which is what it counts in eager mode: nothing is computed. Any other op, and
    every node that is not an ATen op call (inputs, ``getitem``, ``output``), counts
    0, as in ``FlopCounterMode``.
    """
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return 0.0
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda u: u.meta.get("val"))
    formula = _formula(target._overloadpacket)
    if formula is not None:
        return float(formula(*args, **kwargs, out_val=node.meta.get("val")))
    if not target.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd):
        return 0.0
    args, kwargs = pytree.tree_map(_on_meta, (args, kwargs))
    try:
        with flop_counter.FlopCounterMode(display=False, custom_mapping=_raw_formulas()) as mode:
            target(*args, **kwargs)
    except (NotImplementedError, RuntimeError):  # an op without meta kernels: no count
        return 0.0
    return float(mode.get_total_flops())


def _graph_from_fx(
    gm: torch.fx.GraphModule,
    name: str,
    split_outputs: bool,
    aliases: dict[StorageWeakRef, StorageWeakRef],
) -> Graph:
    """Apply the node, size, alias, parameter and ordering rules of the module doc; with
    ``split_outputs``, each new storage of an operator after its first is created by a
    share node ``<name>.<j>`` just before it (``graph_from_module``). A fake storage in
    ``aliases`` is read as the storage it stands for (``_runnable``)."""

    def storages(node: torch.fx.Node) -> dict[StorageWeakRef, int]:
        return {aliases.get(k, k): b for k, b in _storages(_value(node), node).items()}

    index: dict[torch.fx.Node, int] = {}
    owner: dict[StorageWeakRef, int] = {}  # storage -> node that created it
    state: dict[StorageWeakRef, int] = {}  # parameter / buffer storage -> bytes
    last_write: dict[StorageWeakRef, int] = {}
    readers: dict[StorageWeakRef, list[int]] = {}  # readers since the last write
    names: list[str] = []
    ops: list[str] = []
    mem: list[int] = []
    param_mem: list[int] = []
    flops: list[float] = []
    share: list[int] = []  # j for the share node of storage j, 0 for an fx node
    src: list[int] = []
    dst: list[int] = []
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            state.update(storages(node))
            continue
        read: dict[StorageWeakRef, int] = {}
        for u in node.all_input_nodes:
            read.update(storages(u))
        created = {} if node.op == "output" else storages(node)
        new = {k: b for k, b in created.items() if k not in owner and k not in state}
        shares = list(new)[1:] if split_outputs else []
        for j, k in enumerate(shares, 1):
            owner[k] = len(names)
            names.append(f"{node.name}{SHARE_SEPARATOR}{j}")
            ops.append(f"{_op_name(node)}{SHARE_SEPARATOR}{j}")
            mem.append(new.pop(k))
            param_mem.append(0)
            flops.append(0.0)
            share.append(j)
        v = index[node] = len(names)
        names.append(node.name)
        ops.append(_op_name(node))
        flops.append(op_flops(node))  # after the checks above: shapes are static
        share.append(0)
        owner.update(dict.fromkeys(new, v))
        written = [
            k
            for u in written_arguments(node.target, node.args, node.kwargs)
            if isinstance(u, torch.fx.Node)
            for k in storages(u)
        ]
        mem.append(sum(new.values()))
        reads_data = bool(new) or bool(written)
        param_mem.append(sum(state[k] for k in read if k in state) if reads_data else 0)
        before = {index[u] for u in node.all_input_nodes if u in index}
        before |= {owner.get(k) for k in read} | {last_write.get(k) for k in read}
        for k in written:
            before.update(readers.pop(k, ()))
            last_write[k] = v
        for k in read:
            if k not in written:
                readers.setdefault(k, []).append(v)
        before -= {None, v}
        for p in range(v - len(shares), v):
            src.extend([*before, p])
            dst.extend([p] * len(before) + [v])
        src.extend(before)
        dst.extend([v] * len(before))
    node_data = {"flops": np.asarray(flops, dtype=np.float64)}
    if any(share):
        node_data[SHARE_KEY] = np.asarray(share, dtype=np.int64)
    return Graph(
        len(names),
        src,
        dst,
        mem=mem,
        param_mem=param_mem,
        op=ops,
        names=names,
        name=name,
        node_data=node_data,
    )
