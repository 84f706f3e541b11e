"""Buffer updates of a joint training graph written back as soon as they are computed.

The joint trace is functional: batch norm's running statistics come out of
``_native_batch_norm_legit_functional`` as new tensors, and ``num_batches_tracked + 1``
as a new scalar, which the program returns as buffer mutations, alive to the end of
the step. Eager PyTorch writes them into the buffers as it computes them
(``native_batch_norm`` updates ``running_mean`` / ``running_var`` in place,
``BatchNorm.forward`` calls ``num_batches_tracked.add_(1)``) and holds no second copy.
``write_buffers_back`` copies each new value into its buffer right after the operator
that computes it, so it dies there, and later readers read the buffer: the graph of the
operators autograd runs holds what an eager step holds, up to the new statistics
between their operator and the copy (``docs/real_models.md``).

A copy rather than the in-place operator itself: an operator that writes a storage is
ordered before the storage's later readers, and in a ``Graph`` an edge also keeps the
operator's outputs alive, so in-place batch norm would hold its output until the
backward pass reads the running statistics. The copy creates nothing.
"""

import torch
from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind

aten = torch.ops.aten


def write_buffers_back(graph_module: torch.fx.GraphModule, signature: ExportGraphSignature) -> None:
    """Rewrite, in place, each buffer mutation of ``graph_module`` (buffers as ``get_attr``
    nodes, outputs in ``signature.output_specs`` order) into ``buffer.copy_(new)`` right
    after the node ``new`` that computes it; ``new``'s other readers and the output read
    the buffer instead.

    A mutation is rewritten only when no node after ``new`` reads the buffer's old value
    (every functional trace of a module that updates a buffer once per step); otherwise,
    a buffer updated twice in one step for instance, it stays a graph output, correct
    but held to the end.
    """
    graph = graph_module.graph
    position = {node: i for i, node in enumerate(graph.nodes)}
    attribute = {node.target: node for node in graph.nodes if node.op == "get_attr"}
    buffer_of = {
        spec.target: attribute[spec.arg.name]
        for spec in signature.input_specs
        if spec.kind == InputKind.BUFFER
    }
    values = graph.output_node().args[0]
    for new, spec in zip(values, signature.output_specs, strict=True):
        if spec.kind != OutputKind.BUFFER_MUTATION:
            continue
        buffer = buffer_of[spec.target]
        if new.op != "call_function" or not _old_value_read_before(buffer, new, position):
            continue
        new.replace_all_uses_with(buffer)
        with graph.inserting_after(new):
            copy = graph.create_node(
                "call_function", aten.copy_.default, (buffer, new), name=f"update_{buffer.name}"
            )
        copy.meta["val"] = buffer.meta["val"]
    graph_module.recompile()


def _old_value_read_before(
    buffer: torch.fx.Node, new: torch.fx.Node, position: dict[torch.fx.Node, int]
) -> bool:
    """Whether every node that reads ``buffer`` runs no later than ``new``."""
    return all(position[user] <= position[new] for user in buffer.users if user.op != "output")
