"""Neural topological ordering solvers (paper 000, section 4): Topoformer priorities
decoded greedily, by sampling, or by beam search with state collapsing.

One forward pass of the priority model gives ``y`` (eq. 7, normalised by eq. 17);
the decoders of ``dagopt.schedule.priority`` and ``dagopt.schedule.dp`` turn it into
orders. The model comes from ``--checkpoint`` or is the shipped
``topoformer-ordering`` (``dagopt.models.model_path``; ``DAGOPT_MODEL_DIR`` overrides it).
"""

import os
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dagopt.errors import SolverError
from dagopt.graph import Graph
from dagopt.models import MODEL_FILES, missing_model, model_path
from dagopt.objectives import peak_memory
from dagopt.registry import time_left
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.classic import best_sampled, check_samples, sampler
from dagopt.schedule.dp import state_dp
from dagopt.schedule.priority import greedy_order

if TYPE_CHECKING:  # torch is imported when a neural solver first runs, not at registration
    from dagopt.nn.encoders import PriorityModel


@lru_cache(maxsize=4)
def _cached_model(path: str, expected: type):
    from dagopt.nn.checkpoint import load_model as load_model_file

    return load_model_file(path, expected=expected)[0]


def shipped_or_given_model(
    checkpoint: str | os.PathLike | None, default: str, expected: type, what: str
):
    """The ``expected`` model in ``checkpoint`` (a file, or a shipped model's name:
    ``dagopt.models.MODEL_FILES``), else the shipped model ``default`` (``model_path``);
    loaded once per file. A missing file is an ``InputError``."""
    shipped = default if checkpoint is None else None
    path = model_path(default) if checkpoint is None else Path(checkpoint)
    if not path.is_file() and str(checkpoint) in MODEL_FILES:
        shipped, path = str(checkpoint), model_path(str(checkpoint))
    if not path.is_file():
        raise missing_model(what, path, shipped)
    return _cached_model(str(path.resolve()), expected)


def beam_or_greedy(
    graph: Graph, beam: np.ndarray, greedy: np.ndarray, keep_outputs: bool, late: int
) -> SolverResult:
    """A beam search's order, or the greedy order of the same model where its peak is
    lower: a beam decoder is never worse than greedy decoding. ``late``: the step after
    which the search ran out of time (0: it did not), kept in info."""
    chosen = (
        "greedy"
        if peak_memory(graph, greedy, keep_outputs=keep_outputs)
        < peak_memory(graph, beam, keep_outputs=keep_outputs)
        else "beam"
    )
    return SolverResult(
        order=greedy if chosen == "greedy" else beam,
        info={"chosen": chosen, "time_limit_hit_at_step": late},
    )


def load_model(checkpoint: str | os.PathLike | None) -> "PriorityModel":
    """The priority model in ``checkpoint`` (a file or a shipped model's name), else the
    default one (``model_path``)."""
    from dagopt.nn.encoders import PriorityModel

    return shipped_or_given_model(checkpoint, "topoformer-ordering", PriorityModel, "Topoformer")


def predict_priorities(graph: Graph, model: "PriorityModel") -> np.ndarray:
    """Normalised priorities ``y`` of every node (eq. 7 and 17), one forward pass."""
    import torch

    from dagopt.nn.encoders import encoder_inputs

    if graph.num_nodes == 0:
        return np.zeros(0)
    model.encoder.check_fits(graph.num_nodes, graph.num_edges)
    with torch.inference_mode():
        y = model(encoder_inputs(graph, model.config))
    return y.double().numpy()


def guide_order(graph: Graph, guide: str | os.PathLike) -> np.ndarray:
    """The greedy order (4.2) of the priority model ``guide`` (a file or shipped name)."""
    return greedy_order(graph, _priorities(graph, guide))


def _priorities(graph: Graph, checkpoint) -> np.ndarray:
    return predict_priorities(graph, load_model(checkpoint))


@register("topoformer-greedy", "Topoformer priorities, greedy decoding (4.2)", ("checkpoint",))
def solve_greedy(graph: Graph, *, checkpoint=None, **_: object) -> SolverResult:
    return SolverResult(order=greedy_order(graph, _priorities(graph, checkpoint)))


@register(
    "topoformer-sample",
    "Topoformer priorities, best of S sampled orders (default 16)",
    ("checkpoint", "samples"),
)
def solve_sample(
    graph: Graph,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    checkpoint=None,
    samples: int = 16,
    **_: object,
) -> SolverResult:
    """The least-peak of ``samples`` orders sampled from the priorities (eq. 8,
    ``best_sampled``: drawn in chunks, stopped by ``time_limit``)."""
    check_samples(samples)
    y = _priorities(graph, checkpoint)
    draw = sampler(graph, y, seed)
    return best_sampled(graph, draw, samples, time_limit, keep_outputs=keep_outputs)


@register(
    "topoformer-beam",
    "Topoformer priorities, beam search with state collapsing (default width 16)",
    ("checkpoint", "beam_width"),
)
def solve_beam(
    graph: Graph,
    *,
    time_limit: float | None = None,
    keep_outputs: bool = False,
    checkpoint=None,
    beam_width: int = 16,
    **_: object,
) -> SolverResult:
    """Beam search ranked by log-probability (eq. 8); of two partial orders with the same
    node set the lower peak survives. The greedy order is kept as a candidate, so the
    result is never worse than greedy decoding of the same priorities. Past
    ``time_limit`` (priorities included) the beam narrows to one order, as in
    ``approx-dp`` (``time_limit_hit_at_step`` in info)."""
    if int(beam_width) < 1:
        raise SolverError(f"beam width must be >= 1, got {beam_width}")
    start = time.perf_counter()
    y = _priorities(graph, checkpoint)
    beam, _, info = state_dp(
        graph, beam_width=int(beam_width), keep_outputs=keep_outputs,
        time_limit=time_left(time_limit, start), priorities=y,
    )  # fmt: skip
    late = info["time_limit_hit_at_step"]
    return beam_or_greedy(graph, beam, greedy_order(graph, y), keep_outputs, late)
