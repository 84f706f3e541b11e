"""Autoregressive neural ordering solvers: paper 000's decoder ablation (appendix B).

An ``ARPolicy`` (``dagopt.nn.ar_decoder``: an encoder, Topoformer or the DAG-only
variant, plus Kool et al.'s decoder) read from ``--checkpoint``, else the shipped
``topoformer-ar-ordering`` (the Table 4 ablation model, trained at a reduced budget;
``dagopt train ordering`` with ``"decoder": "autoregressive"`` makes others),
decodes the order greedily, as the best of S sampled orders, or by beam search.

The beam keeps the ``beam_width`` partial orders of highest ``sum log p`` (eq. 6)
and collapses states as section 4.2 does for the priority decoder: of the
candidates with the same scheduled node set only the one of lower peak so far
survives (then the higher log-probability). Node sets are compared by 64-bit
Zobrist hashes (XOR of one random key per node), so two different sets collide
with probability about ``2^-64`` per pair. As for ``topoformer-beam``, the greedy
order is kept as a candidate, so the result is never worse than greedy decoding.
"""

import math
import os
import time
from typing import TYPE_CHECKING

import numpy as np

from dagopt.errors import SolverError
from dagopt.graph import Graph
from dagopt.resources import check_fits
from dagopt.schedule.base import SolverResult, register
from dagopt.schedule.classic import SAMPLE_CHUNK, best_sampled, check_samples, least_peak
from dagopt.schedule.neural import beam_or_greedy, shipped_or_given_model

if TYPE_CHECKING:  # torch is imported when a neural solver first runs, not at registration
    from dagopt.nn.ar_decoder import ARPolicy
    from dagopt.nn.features import GraphInputs


def load_ar_model(checkpoint: str | os.PathLike | None) -> "ARPolicy":
    """The autoregressive model in ``checkpoint``, else the default one (``model_path``)."""
    from dagopt.nn.ar_decoder import ARPolicy

    return shipped_or_given_model(checkpoint, "topoformer-ar-ordering", ARPolicy, "autoregressive")


def _inputs(graph: Graph, model: "ARPolicy") -> "GraphInputs":
    from dagopt.nn.encoders import encoder_inputs

    model.encoder.check_fits(graph.num_nodes, graph.num_edges)
    return encoder_inputs(graph, model.config.encoder)


def _rollout(graph, model, uniforms, keep_outputs) -> np.ndarray:
    import torch

    if graph.num_nodes == 0:
        return np.zeros((1 if uniforms is None else len(uniforms), 0), dtype=np.int64)
    with torch.inference_mode():
        return model.rollout(graph, _inputs(graph, model), uniforms, keep_outputs=keep_outputs)[0]


@register("topoformer-ar-greedy", "autoregressive decoder, greedy (appendix B)", ("checkpoint",))
def solve_greedy(graph: Graph, *, keep_outputs=False, checkpoint=None, **_: object) -> SolverResult:
    return SolverResult(order=_rollout(graph, load_ar_model(checkpoint), None, keep_outputs)[0])


@register(
    "topoformer-ar-sample",
    "autoregressive decoder, best of S sampled orders (default 16)",
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
    """All ``samples`` episodes decode together, one batched step at a time; with a
    ``time_limit``, ``SAMPLE_CHUNK`` episodes at a time (``best_sampled``: the same
    uniforms, from one stream), stopping after the first chunk that ends past the limit."""
    samples = check_samples(samples)
    n = graph.num_nodes
    chunk = samples if time_limit is None else min(samples, SAMPLE_CHUNK)
    # per episode: uniforms, order, ready bookkeeping (int32 counts, bool) and log-probs
    check_fits(40.0 * chunk * n, f"{chunk:,} autoregressive episodes", "draw fewer")
    model, rng = load_ar_model(checkpoint), np.random.default_rng(seed)

    def draw(count: int) -> np.ndarray:
        return _rollout(graph, model, rng.random((count, n)), keep_outputs)

    return best_sampled(graph, draw, samples, time_limit, keep_outputs=keep_outputs, chunk=chunk)


def beam_search(
    graph: Graph,
    model: "ARPolicy",
    width: int,
    keep_outputs: bool,
    time_limit: float | None = None,
) -> tuple[np.ndarray, int]:
    """The ``width`` partial orders of highest ``sum log p`` with state collapsing (module
    docstring); returns the complete order of lowest peak (then highest log-probability)
    and the step after which ``time_limit`` ran out (0: it did not), from which on the
    beam keeps one partial order (``approx-dp``'s rule)."""
    import torch

    from dagopt.nn.ar_decoder import DecodeState

    n = graph.num_nodes
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    late = 0
    keys = np.random.default_rng(0).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    step_mem = graph.mem + graph.param_mem
    score, hashes = np.zeros(1), np.zeros(1, dtype=np.uint64)
    with torch.inference_mode():
        prep = model.prepare(_inputs(graph, model))
        state = DecodeState(graph, 1, keep_outputs=keep_outputs)
        for t in range(n):
            ready = state.ready
            lp = model.log_probs(prep, state.last, state.features(), ready).double().numpy()
            beam, node = np.nonzero(ready.numpy())
            cand_score = score[beam] + lp[beam, node]
            cand_peak = np.maximum(
                state.peak.numpy()[beam], state.live.numpy()[beam] + step_mem[node]
            )
            cand_hash = hashes[beam] ^ keys[node]
            ranked = np.lexsort((-cand_score, cand_peak, cand_hash))
            first = np.r_[True, cand_hash[ranked[1:]] != cand_hash[ranked[:-1]]]
            kept = np.sort(ranked[first])  # candidate order again, for stable ties
            top = kept[np.argsort(-cand_score[kept], kind="stable")[:width]]
            state.select(torch.from_numpy(beam[top]))
            state.push(torch.from_numpy(node[top]))
            score, hashes = cand_score[top], cand_hash[top]
            if not late and time.perf_counter() > deadline:
                width, late = 1, t + 1
    orders = state.orders()
    return least_peak(graph, orders, keep_outputs=keep_outputs)[0], late


@register(
    "topoformer-ar-beam",
    "autoregressive decoder, beam search with state collapsing (default width 16)",
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
    """``beam_search``, never worse than the greedy rollout of the same model; past
    ``time_limit`` the beam narrows to one order (``time_limit_hit_at_step`` in info)."""
    if int(beam_width) < 1:
        raise SolverError(f"beam width must be >= 1, got {beam_width}")
    model = load_ar_model(checkpoint)
    beam, late = beam_search(graph, model, int(beam_width), keep_outputs, time_limit)
    greedy = _rollout(graph, model, None, keep_outputs)[0]
    return beam_or_greedy(graph, beam, greedy, keep_outputs, late)
