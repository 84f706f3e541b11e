"""Saved PyTorch programs (``torch.export.save``, ``.pt2``): graphs in, reordered programs out.

A ``.pt2`` archive holds an ``ExportedProgram``: its ATen graph, its weights and the
example inputs it was exported with. ``read_exported_program`` reads it as the
``TorchGraph`` of the program as saved (``mode="inference"``: the forward, with the
train/eval behaviour it was exported with), or of the joint forward + backward graph
of that forward (``mode="training"``, traced again on the saved example inputs), by
the importer's rules (``dagopt.io.torch``). ``write_exported_program`` writes the
program with its operators in a dagopt order, so ``torch.export.load(path).module()``
runs that order (``docs/real_models.md``, "Saved programs").
"""

import heapq
import io
import logging
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.export.experimental import _copy_graph_module_and_signature
from torch.export.graph_signature import InputKind
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from dagopt.errors import DagoptWarning, InputError
from dagopt.graph import validate_order
from dagopt.graph.shares import without_shares
from dagopt.io.archive import check_zip_file
from dagopt.io.atomic import write_bytes_atomic
from dagopt.io.torch import (
    DROPOUTS,
    Mode,
    TorchGraph,
    export_program,
    first_line,
    graph_from_program,
    kept_when_dead,
    quiet,
)

#: Operators whose ``training`` argument (at this position) says whether a saved
#: forward normalises with batch statistics (train mode) or running ones (eval mode).
_BATCH_NORMS = {
    torch.ops.aten.batch_norm.default: 5,
    torch.ops.aten.native_batch_norm.default: 5,
    torch.ops.aten._native_batch_norm_legit.default: 5,
}


@dataclass(frozen=True)
class SavedProgram:
    """A ``.pt2`` file read as a graph.

    ``torch_graph.graph`` is named ``<file stem>-<mode>``; ``inputs`` are the example
    inputs saved with the program (positional tensors), or ``None`` if it has none;
    ``torch_graph.program`` is the program as saved (inference) or its joint forward +
    backward program (training).
    """

    torch_graph: TorchGraph
    inputs: tuple[torch.Tensor, ...] | None


def read_exported_program(
    path: str | os.PathLike,
    *,
    mode: Mode = "inference",
    split_outputs: bool = True,
    core_aten: bool = True,
) -> SavedProgram:
    """Read the ``ExportedProgram`` saved in ``path`` (``torch.export.save``) as a graph.

    ``mode="inference"`` takes the saved graph as it is. ``mode="training"`` exports the
    joint forward + backward graph of the saved forward on its saved example inputs, as
    ``graph_from_module(mode="training")`` does for a module (``split_outputs`` and
    ``core_aten`` are its options); the forward keeps the train/eval behaviour it was
    saved with (a ``DagoptWarning`` says when its dropouts or batch norms are in eval
    mode). A missing or unreadable file, a program without example inputs (training)
    or one the importer cannot read is one ``InputError``.
    """
    if mode not in ("inference", "training"):
        raise InputError(f"mode must be 'inference' or 'training', got {mode!r}")
    file = Path(path)
    program = _load(file)
    if program.range_constraints:
        symbols = ", ".join(sorted(str(symbol) for symbol in program.range_constraints))
        raise InputError(
            f"{file}: the program was exported with dynamic shapes ({symbols}); the graph "
            "needs static sizes: export it without dynamic_shapes"
        )
    inputs = _saved_inputs(program, file)
    try:
        torch_graph = _torch_graph(
            program, inputs, f"{file.stem}-{mode}", mode, split_outputs, core_aten
        )
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    return SavedProgram(torch_graph=torch_graph, inputs=inputs)


def _torch_graph(
    program: torch.export.ExportedProgram,
    inputs: tuple[torch.Tensor, ...] | None,
    name: str,
    mode: Mode,
    split_outputs: bool,
    core_aten: bool,
) -> TorchGraph:
    """The graph ``read_exported_program`` reads, named ``name``."""
    if mode == "training":
        if inputs is None:
            raise InputError(
                "the program has no positional example inputs, which a training graph is "
                "traced on (torch.export.save keeps those export was given)"
            )
        if _in_eval_mode(program):
            warnings.warn(
                "the saved forward runs dropout or batch norm in eval mode; its training "
                "graph differentiates that forward (export the model in train mode for its "
                "training behaviour)",
                DagoptWarning,
                stacklevel=3,
            )
        program = export_program(program.module(), inputs, "training", name, core_aten)
    else:
        _propagate_fake_values(program, inputs)
    return graph_from_program(program, mode, name, split_outputs, core_aten)


def _propagate_fake_values(
    program: torch.export.ExportedProgram, inputs: tuple[torch.Tensor, ...] | None
) -> None:
    """Compute the fake values (``node.meta["val"]``) of a loaded program's nodes again.

    ``torch.export.load`` gives every node a fake tensor of its own storage, so a view
    or an in-place result no longer shares its input's storage, which is how the
    importer tells an alias from an allocation. Running the graph on fake copies of its
    parameters, buffers, constants and example inputs (``FakeTensorProp``) makes each
    value share storage exactly as the real tensors do, as export's own values did.
    An input without an example gets a fresh tensor of its recorded shape and strides.
    """
    mode = FakeTensorMode()
    given = iter(inputs or ())
    args = []
    for spec, node in zip(program.graph_signature.input_specs, _placeholders(program), strict=True):
        if spec.kind == InputKind.USER_INPUT:
            value = next(given, None)
            if value is None:
                recorded = node.meta["val"]
                with mode:
                    args.append(
                        torch.empty_strided(recorded.shape, recorded.stride(), dtype=recorded.dtype)
                    )
                continue
        elif spec.target in program.state_dict:
            value = program.state_dict[spec.target]
        else:
            value = program.constants[spec.target]
        args.append(mode.from_tensor(value))
    try:
        with quiet():
            FakeTensorProp(program.graph_module, mode).propagate_dont_convert_inputs(*args)
    except Exception as exc:  # an operator without a fake-tensor kernel, a custom object...
        raise InputError(f"the program does not run on fake tensors: {first_line(exc)}") from None


def _placeholders(program: torch.export.ExportedProgram) -> list[torch.fx.Node]:
    """The program's placeholder nodes, in the order of its signature's input specs."""
    return [node for node in program.graph.nodes if node.op == "placeholder"]


def write_exported_program(
    saved: SavedProgram, order: Sequence[int] | np.ndarray, path: str | os.PathLike
) -> Path:
    """Save the program of ``saved`` (read in inference mode) with its operators in
    ``order``, a topological order of its graph (else ``OrderError``), replacing
    ``path`` atomically; returns ``path``.

    Operators whose result nothing reads and that write nothing are dropped, as the
    graph drops them (``torch.fx``'s dead code elimination); the other operators the
    graph leaves out (eval-mode dropouts, which return their input; metadata asserts)
    run as soon as their inputs are computed, and the share nodes of ``split_outputs``
    are skipped (their operator creates the storage). Every data dependency is kept,
    so the program computes the same outputs; its placeholders and output stay first
    and last.
    """
    torch_graph = saved.torch_graph
    if torch_graph.mode != "inference":
        raise InputError(
            "only a program read as saved (inference mode) is written back; a training "
            "graph runs in an order as reorder(saved.torch_graph, order) "
            "(dagopt.integrations.torch)"
        )
    graph = torch_graph.graph
    order = validate_order(graph, order)
    rank = {
        graph.names[v]: step
        for step, v in enumerate(without_shares(graph, order).tolist())
        if graph.op[v] not in ("input", "output")
    }
    # A copy of the graph, the weights shared: ``saved`` itself stays as it was read.
    graph_module, signature = _copy_graph_module_and_signature(torch_graph.program)
    fx_graph = graph_module.graph
    fx_graph.eliminate_dead_code(is_impure_node=kept_when_dead)
    output = fx_graph.output_node()
    for node in _in_rank_order(fx_graph, rank):
        output.prepend(node)
    fx_graph.lint()
    graph_module.recompile()
    buffer = io.BytesIO()
    with quiet():
        torch.export.save(torch_graph.program._update(graph_module, signature), buffer)
    return write_bytes_atomic(path, buffer.getvalue())


def _in_rank_order(fx_graph: torch.fx.Graph, rank: dict[str, int]) -> list[torch.fx.Node]:
    """The graph's ``call_function`` nodes in a topological order that runs the ranked
    ones by rank and every unranked one as soon as its inputs have run (Kahn's
    algorithm with those priorities)."""
    calls = [node for node in fx_graph.nodes if node.op == "call_function"]
    missing = set(rank) - {node.name for node in calls}
    if missing:
        raise InputError(f"the program has no operator {sorted(missing)[0]!r} of the order")
    waiting = {node: sum(u.op == "call_function" for u in node.all_input_nodes) for node in calls}
    ready: list[tuple[int, int, torch.fx.Node]] = []
    position = {node: i for i, node in enumerate(calls)}

    def push(node: torch.fx.Node) -> None:
        heapq.heappush(ready, (rank.get(node.name, -1), position[node], node))

    for node in calls:
        if waiting[node] == 0:
            push(node)
    placed: list[torch.fx.Node] = []
    while ready:
        _, _, node = heapq.heappop(ready)
        placed.append(node)
        for user in node.users:
            if user in waiting:
                waiting[user] -= 1
                if waiting[user] == 0:
                    push(user)
    ranked = [node.name for node in placed if node.name in rank]
    if ranked != sorted(rank, key=rank.__getitem__):
        raise InputError("the order does not follow the saved program's data dependencies")
    return placed


def _load(file: Path) -> torch.export.ExportedProgram:
    """``torch.export.load``; every failure is one ``InputError``."""
    check_zip_file(file, "a saved program", "not a torch.export program (not a zip archive)")
    capture = _LoadErrors()
    try:
        with quiet(), capture:
            return torch.export.load(file)
    except Exception as exc:  # the loader raises many types for a foreign or broken archive
        reason = _reason(capture.errors[0] if capture.errors else exc)
        raise InputError(f"{file}: torch.export cannot load it: {reason}") from None


class _LoadErrors(logging.Handler):
    """The exceptions ``torch.export.load`` logs (with a traceback) before it raises a
    generic "error when deserializing the saved file" that names none of them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[BaseException] = []
        self.logger = logging.getLogger("torch.export")

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])

    def __enter__(self) -> "_LoadErrors":
        self.saved = (self.logger.level, self.logger.propagate)
        self.logger.setLevel(logging.WARNING)
        self.logger.propagate = False
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.logger.removeHandler(self)
        level, self.logger.propagate = self.saved
        self.logger.setLevel(level)


def _reason(exc: BaseException) -> str:
    """One line for a load failure; a node the deserializer failed on is named by its
    operator (its message would print the whole serialized node)."""
    node = re.match(r"Failed deserializing node Node\(target='([^']+)'", str(exc))
    if node is not None:
        return f"its {node[1]} node does not deserialize (a torch.export limitation)"
    return first_line(exc)


def _saved_inputs(
    program: torch.export.ExportedProgram, file: Path
) -> tuple[torch.Tensor, ...] | None:
    """The positional example inputs saved with ``program``; ``None`` if there are none.
    Keyword or non-tensor example inputs are an ``InputError``."""
    if program.example_inputs is None:
        return None
    args, kwargs = program.example_inputs
    if kwargs:
        raise InputError(
            f"{file}: the program takes keyword inputs ({', '.join(kwargs)}); "
            "export it with positional ones"
        )
    for i, value in enumerate(args):
        if not isinstance(value, torch.Tensor):
            raise InputError(
                f"{file}: example input #{i} is a {type(value).__name__}, not a tensor"
            )
    return tuple(args)


def _in_eval_mode(program: torch.export.ExportedProgram) -> bool:
    """Whether a dropout or batch norm of the saved forward runs in eval mode."""
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in DROPOUTS:
            train = node.kwargs["train"] if "train" in node.kwargs else node.args[2]
            if not train:
                return True
        index = _BATCH_NORMS.get(node.target)
        if index is not None and not node.args[index]:
            return True
        if node.target is torch.ops.aten._native_batch_norm_legit_no_training.default:
            return True
    return False
