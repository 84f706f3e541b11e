"""The autoregressive decoder ablation of paper 000 (eq. 6, appendix B, Table 4).

The decoder of Kool et al. 2019 (the paper's reference [6], section 3.2) adapted to
topological orders. The node embeddings ``h`` come once from an ``Encoder``; step
``t`` then picks ``sigma_t`` from ``p(sigma_t | sigma_{1:t-1}, h, G)`` (eq. 6):

- context ``q_c = W_g mean(h) + W_l h_{sigma_{t-1}} + W_m m_t``, where the last node
  is a learned placeholder at ``t = 1`` and ``m_t`` the memory state before the step,
  ``(I_{t-1}, max_{s<t} M_s) / LB`` and ``t / n`` (eq. 2-3; ``LB`` the largest working
  set of ``dagopt.objectives.lower_bound``, so the features are about 1);
- a multi-head glimpse: ``q_c`` attends over the node embeddings, output ``W_o``;
- a single-head pointer ``u_j = C tanh(q_g . k_j / sqrt(d))`` with ``C = 10``;
- every node outside the ready set ``S(sigma_{1:t-1}, G)`` is masked (appendix B),
  and ``p = softmax(u)``.

The keys, values and the context's node and graph terms are computed once per graph
(``ARPolicy.prepare``); a step is one batched attention of ``B`` queries. ``rollout``
decodes ``B`` episodes of one graph at once (greedy, or sampled from uniforms drawn
up front); ``order_log_prob`` scores a given order in one teacher-forced pass, since
the context of every step follows from the order alone. ``DecodeState`` is the
ready-set and memory bookkeeping of ``B`` partial orders, vectorised over dense
predecessor rows; beam search (``dagopt.schedule.neural_ar``) drives it step by step.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.graph.order import ready_masks
from dagopt.nn.checkpoint import model_format
from dagopt.nn.encoders import Encoder, EncoderConfig
from dagopt.nn.features import GraphInputs
from dagopt.objectives import lower_bound
from dagopt.objectives.memory import memory_profile

#: The memory-state features of the context: live and peak memory over ``LB``, ``t / n``.
MEMORY_FEATURES = 3


@dataclass(frozen=True)
class ARConfig(Config):
    """An encoder plus Kool et al.'s decoder: ``glimpse_heads`` heads (8 in [6]) that
    divide ``encoder.dim``, and the pointer's tanh clipping ``clip`` (``C = 10``)."""

    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    glimpse_heads: int = 8
    clip: float = 10.0

    def __post_init__(self) -> None:
        heads, dim = int(self.glimpse_heads), self.encoder.dim
        if heads < 1 or dim % heads:
            raise InputError(f"glimpse_heads must divide the encoder dim {dim}, got {heads}")
        if not (math.isfinite(self.clip) and self.clip > 0):
            raise InputError(f"the pointer clipping C must be > 0, got {self.clip}")


@dataclass(frozen=True)
class Prepared:
    """Per-graph terms of the decoder, computed once (``ARPolicy.prepare``)."""

    graph_query: torch.Tensor  # (d,)    W_g mean(h)
    last_query: torch.Tensor  # (n + 1, d) W_l h_j, the placeholder's row last
    glimpse_keys: torch.Tensor  # (H, n, d / H)
    glimpse_values: torch.Tensor  # (H, n, d / H)
    pointer_keys: torch.Tensor  # (n, d)


@model_format("dagopt-ar-ordering-model", ARConfig)
class ARPolicy(nn.Module):
    """Encoder plus the autoregressive decoder of the module docstring."""

    def __init__(self, config: ARConfig) -> None:
        super().__init__()
        self.config = config
        d = config.encoder.dim
        self.encoder = Encoder(config.encoder)
        self.keys = nn.Linear(d, 3 * d, bias=False)  # glimpse keys, values, pointer keys
        self.graph_context = nn.Linear(d, d, bias=False)
        self.last_context = nn.Linear(d, d, bias=False)
        self.memory_context = nn.Linear(MEMORY_FEATURES, d, bias=False)
        self.placeholder = nn.Parameter(torch.empty(d).uniform_(-1, 1))
        self.glimpse_out = nn.Linear(d, d, bias=False)

    def prepare(self, inputs: GraphInputs) -> Prepared:
        """Embed the graph and project the keys and context terms, once per graph."""
        h = self.encoder(inputs)
        heads = self.config.glimpse_heads
        n, d = h.shape
        gk, gv, pk = self.keys(h).chunk(3, dim=-1)
        split = (n, heads, d // heads)
        return Prepared(
            graph_query=self.graph_context(h.mean(0)),
            last_query=self.last_context(torch.cat([h, self.placeholder[None]])),
            glimpse_keys=gk.reshape(split).transpose(0, 1),
            glimpse_values=gv.reshape(split).transpose(0, 1),
            pointer_keys=pk,
        )

    def log_probs(
        self, prep: Prepared, last: torch.Tensor, memory: torch.Tensor, ready: torch.Tensor
    ) -> torch.Tensor:
        """``log p(. | sigma_{1:t-1})`` ``(B, n)`` of ``B`` steps: ``last`` ``(B,)`` the
        last node (``-1`` before the first), ``memory`` ``(B, 3)`` the memory features,
        ``ready`` ``(B, n)`` bool the ready sets; non-ready nodes get ``-inf``."""
        heads = self.config.glimpse_heads
        query = prep.graph_query + prep.last_query[last] + self.memory_context(memory)
        b, d = query.shape
        q = query.view(b, heads, d // heads).transpose(0, 1)  # (H, B, d / H)
        blocked = ~ready.unsqueeze(0)
        compat = q @ prep.glimpse_keys.transpose(1, 2) / math.sqrt(d // heads)
        attention = torch.softmax(compat.masked_fill(blocked, float("-inf")), dim=-1)
        glimpse = self.glimpse_out((attention @ prep.glimpse_values).transpose(0, 1).reshape(b, d))
        logits = self.config.clip * torch.tanh(glimpse @ prep.pointer_keys.T / math.sqrt(d))
        return torch.log_softmax(logits.masked_fill(~ready, float("-inf")), dim=-1)

    def order_log_prob(
        self, graph: Graph, inputs: GraphInputs, order: np.ndarray, *, keep_outputs: bool = False
    ) -> torch.Tensor:
        """Differentiable ``log p(order | G)`` (eq. 6), every step in one teacher-forced
        pass: the context of step ``t`` follows from ``order[:t]``."""
        n = graph.num_nodes
        order = np.asarray(order, dtype=np.int64)
        profile = memory_profile(graph, order, keep_outputs=keep_outputs)
        live = np.concatenate(([0.0], profile.after[:-1]))
        peak = np.concatenate(([0.0], np.maximum.accumulate(profile.during)[:-1]))
        memory = memory_features(live, peak, np.arange(n), n, memory_scale(graph))
        last = torch.from_numpy(np.concatenate(([-1], order[:-1])))
        ready = torch.from_numpy(ready_masks(graph, order))
        lp = self.log_probs(self.prepare(inputs), last, memory, ready)
        return lp[torch.arange(n), torch.from_numpy(order)].sum()

    @torch.no_grad()
    def rollout(
        self,
        graph: Graph,
        inputs: GraphInputs,
        uniforms: np.ndarray | None = None,
        *,
        keep_outputs: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Decode orders of ``graph``: one greedy order (``uniforms`` None; ties to the
        lower index), or one sampled order per row of ``uniforms`` ``(B, n)`` in
        ``[0, 1)`` (inverse CDF). Returns ``(orders (B, n), log-probabilities (B,))``."""
        prep = self.prepare(inputs)
        count = 1 if uniforms is None else uniforms.shape[0]
        state = DecodeState(graph, count, keep_outputs=keep_outputs)
        total = torch.zeros(count, dtype=torch.float64)
        rows = torch.arange(count)
        for t in range(graph.num_nodes):
            lp = self.log_probs(prep, state.last, state.features(), state.ready)
            if uniforms is None:
                picks = lp.argmax(dim=1)
            else:
                picks = inverse_cdf(lp, torch.from_numpy(uniforms[:, t]), state.ready)
            total += lp[rows, picks].double()
            state.push(picks)
        return state.orders(), total.numpy()


def memory_scale(graph: Graph) -> float:
    """``LB``, the memory features' unit: the graph's ``lower_bound`` (at least tiny)."""
    return max(lower_bound(graph), np.finfo(np.float64).tiny)


def memory_features(live, peak, step, n: int, scale: float) -> torch.Tensor:
    """The context's memory state ``(B, 3)``: live and peak memory before the step over
    ``scale``, and the step over ``n``."""
    columns = [np.asarray(live) / scale, np.asarray(peak) / scale, np.asarray(step) / n]
    return torch.from_numpy(np.stack(np.broadcast_arrays(*columns), axis=1).astype(np.float32))


def inverse_cdf(lp: torch.Tensor, uniforms: torch.Tensor, ready: torch.Tensor) -> torch.Tensor:
    """One node per row of ``lp`` drawn by inverting the CDF at ``uniforms``; rounding
    past the last ready node picks that node."""
    cdf = lp.double().exp().cumsum(dim=1)
    picks = torch.searchsorted(cdf, (uniforms * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    last_ready = ready.shape[1] - 1 - ready.flip(1).int().argmax(dim=1)
    return torch.minimum(picks, last_ready)


class DecodeState:
    """``B`` partial orders of one graph: ready sets, live and peak memory (eq. 2-3,
    as ``dagopt.objectives.memory``), the last node; vectorised over dense ``(n, n)``
    predecessor rows, ``O(B n)`` per step."""

    def __init__(self, graph: Graph, count: int, *, keep_outputs: bool = False) -> None:
        n = graph.num_nodes
        self.scale = memory_scale(graph)
        src, dst = (torch.from_numpy(e.astype(np.int64)) for e in graph.edges)
        self.preds = torch.zeros(n, n, dtype=torch.int32)  # preds[v, u]: u -> v
        self.preds[dst, src] = 1
        self.mem = torch.from_numpy(graph.mem.astype(np.float64))
        self.step_mem = self.mem + torch.from_numpy(graph.param_mem.astype(np.float64))
        freed_at_once = (graph.out_degree == 0) & (not keep_outputs)  # sinks, eq. (3)
        self.sink_freed = torch.where(torch.from_numpy(freed_at_once), self.mem, 0.0)
        self.missing = torch.from_numpy(graph.in_degree.astype(np.int32)).repeat(count, 1)
        self.pending = torch.from_numpy(graph.out_degree.astype(np.int32)).repeat(count, 1)
        self.done = torch.zeros(count, n, dtype=torch.bool)
        self.live = torch.zeros(count, dtype=torch.float64)
        self.peak = torch.zeros(count, dtype=torch.float64)
        self.last = torch.full((count,), -1, dtype=torch.int64)
        self.order = torch.full((count, n), -1, dtype=torch.int64)
        self.steps = 0

    @property
    def ready(self) -> torch.Tensor:
        """``(B, n)``: the ready set ``S(sigma_{1:t-1}, G)`` of every partial order."""
        return (self.missing == 0) & ~self.done

    def features(self) -> torch.Tensor:
        n = self.order.shape[1]
        return memory_features(self.live.numpy(), self.peak.numpy(), self.steps, n, self.scale)

    def push(self, picks: torch.Tensor) -> None:
        """Run node ``picks[b]`` (ready) in partial order ``b``."""
        rows = torch.arange(picks.numel())
        preds = self.preds[picks]
        self.peak = torch.maximum(self.peak, self.live + self.step_mem[picks])
        self.pending -= preds
        freed = (self.mem * ((preds > 0) & (self.pending == 0))).sum(dim=1)
        self.live = self.live + self.mem[picks] - freed - self.sink_freed[picks]
        self.missing -= self.preds[:, picks].T
        self.done[rows, picks] = True
        self.last = picks
        self.order[:, self.steps] = picks
        self.steps += 1

    def select(self, index: torch.Tensor) -> None:
        """Keep the partial orders ``index`` (with repeats), in that order."""
        for name in ("missing", "pending", "done", "live", "peak", "last", "order"):
            setattr(self, name, getattr(self, name)[index])

    def orders(self) -> np.ndarray:
        """The partial orders so far, ``(B, t)``."""
        return self.order[:, : self.steps].numpy()
