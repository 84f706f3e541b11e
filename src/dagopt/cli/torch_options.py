"""Options of the commands that read PyTorch models as graphs (``zoo``, ``import``,
``measure``): the graph's mode and the importer's two variants (``graph_from_module``)."""

from enum import StrEnum
from typing import Annotated

import typer


class Mode(StrEnum):
    """Graph of the forward pass, or of the joint forward + backward pass."""

    inference = "inference"
    training = "training"


ModeOption = Annotated[Mode, typer.Option(help="Forward graph, or forward + backward.")]

SplitOutputsOption = Annotated[
    bool,
    typer.Option(
        "--split-outputs/--joint-outputs",
        help="Each output of a multi-output op (batch norm, dropout, gradients) gets its "
        "own node and lifetime, training-graph peaks as measured; --joint-outputs: one "
        "node per op (paper 000's graphs, placement's form; docs/real_models.md).",
    ),
]
CoreAtenOption = Annotated[
    bool,
    typer.Option(
        help="Training graphs in core ATen (as compilers take them); --no-core-aten keeps "
        "the operators autograd runs, so the traced order is an eager step "
        "(docs/real_models.md, 'Training in a dagopt order')."
    ),
]
