"""REGAL's contextual bandit (paper 003, section 2.3 and appendix A.3, eq. 1).

A GNN reads a computation graph with op and tensor attributes (section 2.1) and gives,
for every op ``v`` and chromosome gene ``j`` (``0..d-1`` device affinities, ``d`` the
scheduling priority, as in ``dagopt.place.decode``), two categorical distributions that
together pick the gene's ``beta(alpha, beta)`` mutant distribution. That is
``k = 2 (d + 1) |V|`` actions per graph (section 2.3). How a pair of choices becomes
``(alpha, beta)`` is the config's ``parameterisation``:

- ``"alpha-beta"`` (the paper): the first categorical picks ``alpha`` from ``choices``,
  the second ``beta``;
- ``"centred"`` (beyond the paper): the first picks a concentration ``c`` from
  ``choices``, the second a shift ``s`` from ``shifts`` of the mean away from the gene's
  centre ``m0`` (0.5, or for the priority gene the ``order_prior`` key of the op);
  the gene gets ``beta(c m, c (1 - m))`` with ``m = clip(m0 + s)``.

A separate GNN gives the REINFORCE baseline ``b(G)``.

- ``regal_inputs`` featurises a graph (``REGAL_NODE_FEATURES``, ``REGAL_EDGE_FEATURES``);
  ``batch_inputs`` concatenates several graphs into one disjoint graph.
- ``RegalEncoder`` is eq. 1's message passing; ``RegalPolicy`` adds the ``2 (d + 1)``
  logit heads; ``RegalBaseline`` the mean-pooled value head.
- ``beta_grid`` gives the ``(alpha, beta)`` of every pair of choices of every gene;
  ``sample_actions``, ``action_log_prob``, ``action_entropy`` and
  ``action_distributions`` turn logits into actions, their log-probability and the
  ``beta(alpha, beta)`` parameters BRKGA samples mutants from (``MutantDistributions``).
- ``key_log_likelihood`` reads the categoricals as one mixture density over keys, for
  the imitation warm start of ``dagopt.train.placement``.

Modules and featurisation only: the search and the training loop live elsewhere.
"""

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import scatter

from dagopt.errors import InputError, reject_unknown_keys
from dagopt.graph import Graph
from dagopt.graph.paths import longest_paths
from dagopt.objectives.devices import Devices
from dagopt.objectives.placement import op_runtimes
from dagopt.place.prior import check_order_prior

#: The values ``alpha`` and ``beta`` may take (section 2.3: "We discretize the possible
#: values"). The paper does not list its grid; this one is roughly geometric over two
#: decades and holds 1.0, so ``beta(1, 1)``, standard BRKGA's uniform mutant, is one of
#: the actions. Pairs reach both skews (``beta(20, 1)`` near 1, ``beta(1, 20)`` near 0)
#: and both concentrations (``beta(0.2, 0.2)`` at the ends, ``beta(20, 20)`` near 0.5).
BETA_CHOICES: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
#: How a gene's two categoricals give its ``beta(alpha, beta)`` (module docstring).
PARAMETERISATIONS = ("alpha-beta", "centred")
#: The default ``shifts`` of the ``"centred"`` parameterisation: offsets of a gene's
#: mean from its centre, finest near 0 where a good order prior leaves little to move.
CENTRE_SHIFTS: tuple[float, ...] = (-0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2)
#: ``"centred"`` means are clipped to ``[MEAN_CLIP, 1 - MEAN_CLIP]`` so that both beta
#: parameters stay > 0.
MEAN_CLIP = 0.01
#: Per parameterisation, the choice of each categorical the untrained policy favours
#: (``RegalConfig.init_prob_one``): ``beta(1, 1)``, standard BRKGA's uniform mutant, or
#: the broad ``beta(2 m0, 2 (1 - m0))`` around the centre (uniform at ``m0 = 0.5``).
NEUTRAL_CHOICES = {"alpha-beta": (1.0, 1.0), "centred": (2.0, 0.0)}

#: Columns of ``RegalInputs.x``; all scale-free, so one model serves graphs of any size.
REGAL_NODE_FEATURES = (
    "runtime_log_rel_mean",  # log1p(runtime / mean runtime)
    "runtime_share",  # runtime / (total runtime / d): the op's share of a device's fair load
    "mem_rel_limit",  # output bytes / smallest device memory limit
    "param_rel_limit",  # parameter bytes / limit
    "input_rel_limit",  # bytes of the op's inputs (its predecessors' outputs) / limit
    "mem_log_rel_mean",  # log1p(bytes / graph mean), for the three sizes above
    "param_log_rel_mean",
    "input_log_rel_mean",
    "log_in_degree",  # log1p(in-degree)
    "log_out_degree",
    "depth",  # longest path from a source, in edges, / the graph's longest path
    "height",  # longest path to a sink, in edges, / the graph's longest path
    "earliest_start",  # runtime-weighted critical-path start times / critical path length
    "latest_start",
    "log10_num_nodes",  # graph-level, broadcast to every op
    "bytes_rel_total_memory",  # all outputs and parameters / the devices' total memory
    "critical_path_share",  # critical path / (total runtime / d)
)
#: The op feature a ``RegalConfig.order_prior`` adds: the op's priority key in the
#: prior's order (``dagopt.place.decode.order_keys``: 1 for the first op, near 0 last).
ORDER_PRIOR_FEATURE = "order_prior_key"
#: Columns of ``RegalInputs.edge_attr``: the tensor an edge carries (its source's output).
REGAL_EDGE_FEATURES = ("bytes_rel_limit", "bytes_log_rel_mean")


@dataclass(frozen=True)
class RegalConfig:
    """Hyper-parameters of the REGAL policy and baseline networks (A.3, eq. 1).

    ``num_devices`` is ``d`` (the model is fixed to it, section 2.3); ``hidden`` the
    width of every embedding and MLP; ``rounds`` is ``T``; ``mlp_layers`` the linear
    layers per MLP; ``parameterisation`` one of ``PARAMETERISATIONS`` (module
    docstring); ``choices`` the discretised ``alpha`` / ``beta`` values
    (``"alpha-beta"``) or concentrations (``"centred"``); ``shifts`` the mean shifts
    of ``"centred"``; ``share_weights`` reuses one message-passing layer in every
    round (eq. 1 writes its MLPs without a round index), else each round has its own
    (the default); ``init_prob_one`` the initial probability of each categorical's
    ``NEUTRAL_CHOICES`` value (the rest spread evenly), so the untrained policy stays
    near standard BRKGA; ``order_prior`` (beyond the paper; ``None``: the paper's
    features only) names a ``dagopt.schedule`` method and its options, e.g.
    ``{"method": "approx-dp", "beam_width": 10000}``, whose single-device memory order
    becomes one more op feature, ``ORDER_PRIOR_FEATURE``
    (``dagopt.place.prior.order_prior_keys``).
    """

    num_devices: int = 2
    hidden: int = 64
    rounds: int = 4
    mlp_layers: int = 2
    choices: tuple[float, ...] = BETA_CHOICES
    share_weights: bool = False
    init_prob_one: float = 0.5
    order_prior: dict | None = None
    parameterisation: str = "alpha-beta"
    shifts: tuple[float, ...] = CENTRE_SHIFTS

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(float(c) for c in self.choices))
        object.__setattr__(self, "shifts", tuple(float(s) for s in self.shifts))
        if self.parameterisation not in PARAMETERISATIONS:
            raise InputError(
                f"parameterisation must be one of {', '.join(PARAMETERISATIONS)}, "
                f"got {self.parameterisation!r}"
            )
        if self.order_prior is not None:
            check_order_prior(self.order_prior)
        sizes = (self.num_devices, self.hidden, self.rounds, self.mlp_layers)
        if min(sizes) < 1:
            raise InputError(
                f"REGAL sizes must be >= 1: num_devices={self.num_devices}, "
                f"hidden={self.hidden}, rounds={self.rounds}, mlp_layers={self.mlp_layers}"
            )
        c = self.choices
        if len(c) < 2 or len(set(c)) != len(c) or not all(math.isfinite(x) and x > 0 for x in c):
            raise InputError(f"choices need >= 2 distinct finite values > 0, got {c}")
        h = self.shifts
        if len(h) < 1 or len(set(h)) != len(h) or not all(-1 < x < 1 for x in h):
            raise InputError(f"shifts need >= 1 distinct values in (-1, 1), got {h}")
        if not 0 < self.init_prob_one < 1:
            raise InputError(f"init_prob_one must lie in (0, 1), got {self.init_prob_one}")

    @property
    def node_features(self) -> tuple[str, ...]:
        """The columns of ``RegalInputs.x`` this model reads."""
        extra = (ORDER_PRIOR_FEATURE,) if self.order_prior is not None else ()
        return (*REGAL_NODE_FEATURES, *extra)

    @property
    def head_choices(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The values a gene's first and second categorical range over."""
        if self.parameterisation == "centred":
            return self.choices, self.shifts
        return self.choices, self.choices

    def to_dict(self) -> dict:
        """A JSON-ready dict; ``RegalConfig.from_dict`` inverts it."""
        return {**asdict(self), "choices": list(self.choices), "shifts": list(self.shifts)}

    @classmethod
    def from_dict(cls, data: dict) -> "RegalConfig":
        reject_unknown_keys(data, cls, "REGAL config key")
        return cls(**data)


# ------------------------------------------------------------------------------ features
@dataclass(frozen=True)
class RegalInputs:
    """Tensors for one graph, or several concatenated by ``batch_inputs``.

    ``x``: float32 ``(n, F)`` op features; ``edge_index``: long ``(2, E)`` edges
    ``src -> dst`` (PyG layout); ``edge_attr``: float32 ``(E, Fe)``; ``ptr``: for a
    batch, long ``(G + 1,)`` node offsets of its graphs (``None`` for one graph).
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    edge_attr: torch.Tensor
    ptr: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]

    @property
    def num_graphs(self) -> int:
        return 1 if self.ptr is None else self.ptr.numel() - 1

    @property
    def batch(self) -> torch.Tensor:
        """Long ``(n,)``: the graph of each node (all 0 for one graph)."""
        if self.ptr is None:
            return torch.zeros(self.num_nodes, dtype=torch.long, device=self.x.device)
        counts = self.ptr.diff()
        return torch.repeat_interleave(torch.arange(counts.numel(), device=counts.device), counts)


def _ratio(a, b) -> np.ndarray:
    """``a / b``, 0 where ``b <= 0`` (zero runtimes, zero sizes, an empty graph)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return np.divide(a, b, out=np.zeros(a.shape), where=b > 0)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0


def regal_inputs(
    graph: Graph,
    runtimes: np.ndarray | None,
    devices: Devices,
    prior_keys: np.ndarray | None = None,
) -> RegalInputs:
    """Featurise ``graph`` for REGAL: op and tensor attributes (003 section 2.1).

    Node columns are ``REGAL_NODE_FEATURES``, then ``ORDER_PRIOR_FEATURE`` when
    ``prior_keys`` (``dagopt.place.prior.order_prior_keys``, one per op) are given;
    edge columns are ``REGAL_EDGE_FEATURES``.
    Sizes are taken relative to the smallest device memory limit (what decides
    feasibility) and, as ``log1p``, to the graph's mean; runtimes relative to the mean
    and to one device's fair share ``total / d``; depth, height and the critical-path
    start times are normalised by the graph's longest path. Any ratio with a zero
    denominator is 0, so every graph (one op, zero runtimes, zero sizes) gives finite
    features. ``runtimes`` are seconds per op on a speed-1 device, or per op and device
    (``None``: the graph's ``runtime`` attribute), read through ``op_runtimes``.
    """
    n = graph.num_nodes
    d = devices.count
    runtime = op_runtimes(graph, runtimes, devices)  # (n, d): each op's fastest device
    src, dst = (np.asarray(a, dtype=np.int64) for a in graph.edges)
    mem, param = graph.mem, graph.param_mem
    inputs = np.bincount(dst, weights=mem[src], minlength=n)
    limit = float(devices.memory_limits.min())

    depth, earliest = longest_paths(graph.succ_ptr, graph.succ_idx, graph.in_degree, runtime)
    height, after = longest_paths(graph.pred_ptr, graph.pred_idx, graph.out_degree, runtime)
    critical = float((earliest + runtime).max(initial=0.0))
    longest = float(depth.max(initial=0))
    total_runtime = float(runtime.sum())
    fair_share = total_runtime / d

    node = [
        np.log1p(_ratio(runtime, _mean(runtime))),
        _ratio(runtime, fair_share),
        mem / limit,
        param / limit,
        inputs / limit,
        np.log1p(_ratio(mem, _mean(mem))),
        np.log1p(_ratio(param, _mean(param))),
        np.log1p(_ratio(inputs, _mean(inputs))),
        np.log1p(graph.in_degree),
        np.log1p(graph.out_degree),
        _ratio(depth, longest),
        _ratio(height, longest),
        _ratio(earliest, critical),
        _ratio(np.maximum(critical - after - runtime, 0.0), critical),
        np.full(n, math.log10(max(n, 1))),
        np.full(n, (mem.sum() + param.sum()) / devices.memory_limits.sum()),
        np.full(n, float(_ratio(critical, fair_share))),
    ]
    if prior_keys is not None:
        prior_keys = np.asarray(prior_keys, dtype=np.float64)
        if prior_keys.shape != (n,):
            raise InputError(f"prior_keys need shape ({n},), got {prior_keys.shape}")
        node.append(prior_keys)
    edge = [mem[src] / limit, np.log1p(_ratio(mem[src], _mean(mem)))]
    x = np.stack(node, axis=1).reshape(n, len(node))
    edge_attr = np.stack(edge, axis=1).reshape(src.size, len(REGAL_EDGE_FEATURES))
    return RegalInputs(
        x=torch.from_numpy(x.astype(np.float32)),
        edge_index=torch.from_numpy(np.stack([src, dst]).reshape(2, -1)),
        edge_attr=torch.from_numpy(edge_attr.astype(np.float32)),
    )


def batch_inputs(items: list[RegalInputs]) -> tuple[RegalInputs, torch.Tensor]:
    """Concatenate single graphs into one disjoint graph; also return its ``ptr``.

    Node rows and edge columns are stacked with each graph's edges offset by its first
    node, so node ``i`` of graph ``g`` is row ``ptr[g] + i``. Policy logits of the batch
    are the graphs' logits stacked over nodes; ``RegalBaseline`` pools per graph.
    """
    if not items:
        raise InputError("batch_inputs needs at least one graph")
    if any(item.ptr is not None for item in items):
        raise InputError("batch_inputs takes single graphs, not batches")
    counts = torch.tensor([item.num_nodes for item in items], dtype=torch.long)
    ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    edge_index = torch.cat([item.edge_index + ptr[g] for g, item in enumerate(items)], dim=1)
    batched = RegalInputs(
        x=torch.cat([item.x for item in items]),
        edge_index=edge_index,
        edge_attr=torch.cat([item.edge_attr for item in items]),
        ptr=ptr,
    )
    return batched, ptr


# ------------------------------------------------------------------------------ modules
def mlp(in_dim: int, hidden: int, out_dim: int, layers: int) -> nn.Sequential:
    """``layers`` linear layers ``in_dim -> hidden -> ... -> out_dim`` with ReLU between."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    modules: list[nn.Module] = []
    for i in range(layers):
        if i:
            modules.append(nn.ReLU())
        modules.append(nn.Linear(dims[i], dims[i + 1]))
    return nn.Sequential(*modules)


class RegalLayer(MessagePassing):
    """One round ``t`` of eq. 1 (003 A.3), messages in both edge directions::

        m_e  = MLP_msg ([h_{e_s}, h_{e_t}, h_e])    summed at the target e_t
        m'_e = MLP'_msg([h_{e_s}, h_{e_t}, h_e])    summed at the source e_s
        h_v <- LayerNorm(h_v + MLP_node([h_v, sum_{e_t = v} m_e + sum_{e_s = v} m'_e]))

    The residual connection and LayerNorm around eq. 1's ``MLP_node`` keep embeddings
    at one scale over the rounds. Both sums are one ``propagate`` over the edges and
    their reverses (``aggr="add"``).
    """

    def __init__(self, hidden: int, mlp_layers: int) -> None:
        super().__init__(aggr="add")
        self.forward_message = mlp(3 * hidden, hidden, hidden, mlp_layers)
        self.backward_message = mlp(3 * hidden, hidden, hidden, mlp_layers)
        self.update_node = mlp(2 * hidden, hidden, hidden, mlp_layers)
        self.norm = nn.LayerNorm(hidden)

    def forward(
        self, h: torch.Tensor, edge_index: torch.Tensor, h_edge: torch.Tensor
    ) -> torch.Tensor:
        both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        summed = self.propagate(both, x=h, h_edge=h_edge)
        return self.norm(h + self.update_node(torch.cat([h, summed], dim=-1)))

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, h_edge: torch.Tensor) -> torch.Tensor:
        # Columns 0..E-1 are the edges (j = e_s, i = e_t), E..2E-1 their reverses
        # (j = e_t, i = e_s): both MLPs read [h_{e_s}, h_{e_t}, h_e].
        e = h_edge.shape[0]
        forward = self.forward_message(torch.cat([x_j[:e], x_i[:e], h_edge], dim=-1))
        backward = self.backward_message(torch.cat([x_i[e:], x_j[e:], h_edge], dim=-1))
        return torch.cat([forward, backward])


class RegalEncoder(nn.Module):
    """Node embeddings ``h_v = h_v^(T)`` of eq. 1 (003 A.3), shape ``(n, hidden)``.

    ``h_v^(0) = MLP_n(x_v)``, ``h_e = MLP_e(x_e)``, then ``T = rounds`` ``RegalLayer``
    rounds, with separate weights per round unless ``config.share_weights``.
    """

    def __init__(self, config: RegalConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.embed_node = mlp(len(c.node_features), c.hidden, c.hidden, c.mlp_layers)
        self.embed_edge = mlp(len(REGAL_EDGE_FEATURES), c.hidden, c.hidden, c.mlp_layers)
        count = 1 if c.share_weights else c.rounds
        self.layers = nn.ModuleList(RegalLayer(c.hidden, c.mlp_layers) for _ in range(count))

    def forward(self, inputs: RegalInputs) -> torch.Tensor:
        h = self.embed_node(inputs.x)
        h_edge = self.embed_edge(inputs.edge_attr)
        for t in range(self.config.rounds):
            h = self.layers[t % len(self.layers)](h, inputs.edge_index, h_edge)
        return h


class RegalPolicy(nn.Module):
    """The bandit ``B(G)`` of 003 section 2.3: logits of ``2 (d + 1) |V|`` categoricals.

    ``MLP_{a,j}`` and ``MLP_{b,j}`` (gene ``j = 0..d``, shared across nodes, eq. 1)
    map each node's embedding to logits over the gene's first and second categorical
    (``config.head_choices``; ``alpha`` and ``beta`` in the paper). The heads' last
    layers start with zero weights and a bias giving each categorical's
    ``NEUTRAL_CHOICES`` value probability ``config.init_prob_one`` (uniform if that
    value is not a choice), so the untrained policy leans towards broad mutants.
    """

    def __init__(self, config: RegalConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.encoder = RegalEncoder(c)
        genes = c.num_devices + 1
        self.first_heads, self.second_heads = (
            nn.ModuleList(mlp(c.hidden, c.hidden, len(values), c.mlp_layers) for _ in range(genes))
            for values in c.head_choices
        )
        neutral = NEUTRAL_CHOICES[c.parameterisation]
        for heads, values, favoured in zip(
            (self.first_heads, self.second_heads), c.head_choices, neutral, strict=True
        ):
            prior = torch.zeros(len(values))
            if favoured in values:
                prior.fill_(math.log((1 - c.init_prob_one) / (len(values) - 1)))
                prior[values.index(favoured)] = math.log(c.init_prob_one)
            for head in heads:
                nn.init.zeros_(head[-1].weight)
                with torch.no_grad():
                    head[-1].bias.copy_(prior)

    def forward(self, inputs: RegalInputs) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of the first and second categoricals, ``(n, d + 1, len(values))`` each."""
        h = self.encoder(inputs)
        logits_first = torch.stack([head(h) for head in self.first_heads], dim=1)
        logits_second = torch.stack([head(h) for head in self.second_heads], dim=1)
        return logits_first, logits_second


class RegalBaseline(nn.Module):
    """``b(G) = MLP_b(mean_v MLP_g(h_v))`` with its own encoder (003 section 2.3, A.3).

    The output bias starts at ``initial`` (default -1, the reward of BRKGA with uniform
    mutants, section 2.3), so the first advantages are small.
    """

    def __init__(self, config: RegalConfig, *, initial: float = -1.0) -> None:
        super().__init__()
        c = config
        self.config = c
        self.encoder = RegalEncoder(c)
        self.node_head = mlp(c.hidden, c.hidden, c.hidden, c.mlp_layers)
        self.graph_head = mlp(c.hidden, c.hidden, 1, c.mlp_layers)
        nn.init.constant_(self.graph_head[-1].bias, initial)

    def forward(
        self,
        inputs: RegalInputs,
        batch: torch.Tensor | None = None,
        num_graphs: int | None = None,
    ) -> torch.Tensor:
        """A scalar for one graph; ``(num_graphs,)`` for a batch.

        The batch is ``batch`` (node to graph) if given, else ``inputs.ptr``'s; without
        ``num_graphs`` a given ``batch`` counts ``batch.max() + 1`` graphs. A graph of
        no nodes pools to zeros.
        """
        single = batch is None and inputs.ptr is None
        if batch is None:
            batch, count = inputs.batch, inputs.num_graphs
        else:
            count = int(batch.max()) + 1 if batch.numel() else 0
        count = count if num_graphs is None else num_graphs
        pooled = scatter(self.node_head(self.encoder(inputs)), batch, 0, count, reduce="mean")
        values = self.graph_head(pooled).squeeze(-1)
        return values[0] if single else values


# ------------------------------------------------------------------------------ actions
@dataclass(frozen=True)
class RegalAction:
    """Sampled choice indices, long ``(n, d + 1)`` each: gene ``j`` of op ``v`` takes
    the pair ``(first_index[v, j], second_index[v, j])`` of ``beta_grid``."""

    first_index: torch.Tensor
    second_index: torch.Tensor


def gene_centres(config: RegalConfig, inputs: RegalInputs) -> torch.Tensor:
    """float64 ``(n, d + 1)``: each gene's centre for ``"centred"``, 0.5 except the
    priority gene of a policy with an ``order_prior``, which is centred on the op's
    prior key (the ``ORDER_PRIOR_FEATURE`` column of ``inputs.x``)."""
    centres = torch.full((inputs.num_nodes, config.num_devices + 1), 0.5, dtype=torch.float64)
    if config.order_prior is not None:
        column = config.node_features.index(ORDER_PRIOR_FEATURE)
        centres[:, -1] = inputs.x[:, column].double().cpu()
    return centres


def beta_grid(config: RegalConfig, inputs: RegalInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alpha, beta)`` of every pair of choices of every gene, float64
    ``(n, d + 1, len(first values), len(second values))`` each (module docstring)."""
    first, second = (torch.tensor(v, dtype=torch.float64) for v in config.head_choices)
    shape = (inputs.num_nodes, config.num_devices + 1, first.numel(), second.numel())
    if config.parameterisation == "alpha-beta":
        return first[:, None].expand(shape), second[None, :].expand(shape)
    mean = (gene_centres(config, inputs)[..., None, None] + second).clamp(MEAN_CLIP, 1 - MEAN_CLIP)
    concentration = first[:, None]
    return (concentration * mean).expand(shape), (concentration * (1 - mean)).expand(shape)


def _sample(logits: torch.Tensor, generator: torch.Generator | None, greedy: bool):
    if greedy:
        return logits.argmax(-1)
    probs = torch.softmax(logits.detach().reshape(-1, logits.shape[-1]), dim=-1)
    if probs.shape[0] == 0:
        return logits.new_zeros(logits.shape[:-1], dtype=torch.long)
    picks = torch.multinomial(probs, 1, generator=generator)
    return picks.reshape(logits.shape[:-1])


def sample_actions(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> RegalAction:
    """Draw every categorical of section 2.3 (or take its mode with ``greedy``)."""
    with torch.no_grad():
        return RegalAction(
            first_index=_sample(logits_first, generator, greedy),
            second_index=_sample(logits_second, generator, greedy),
        )


def action_log_prob(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    action: RegalAction,
    *,
    ptr: torch.Tensor | None = None,
) -> torch.Tensor:
    """``log p(D | G)``: the sum of the ``k = 2 (d + 1) n`` categorical log-probabilities.

    A scalar; with a batch's ``ptr`` (``batch_inputs``), one sum per graph ``(G,)``.
    """
    per_node = 0
    for logits, index in ((logits_first, action.first_index), (logits_second, action.second_index)):
        chosen = torch.log_softmax(logits, -1).gather(-1, index.unsqueeze(-1)).squeeze(-1)
        per_node = per_node + chosen.sum(-1)
    if ptr is None:
        return per_node.sum()
    batch = torch.repeat_interleave(torch.arange(ptr.numel() - 1, device=ptr.device), ptr.diff())
    return scatter(per_node, batch, 0, ptr.numel() - 1, reduce="sum")


def action_entropy(logits_first: torch.Tensor, logits_second: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats) of the ``2 (d + 1) n`` categoricals, for an entropy bonus."""
    entropies = []
    for logits in (logits_first, logits_second):
        log_p = torch.log_softmax(logits, -1)
        entropies.append(-(log_p.exp() * log_p).sum(-1).flatten())
    return torch.cat(entropies).mean()


def action_distributions(
    action: RegalAction, grid: tuple[torch.Tensor, torch.Tensor]
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(alpha, beta)`` an action picks from ``beta_grid``'s ``grid``, float64
    ``(n, d + 1)`` arrays for BRKGA."""
    first, second = action.first_index.cpu(), action.second_index.cpu()
    nodes = torch.arange(first.shape[0])[:, None]
    genes = torch.arange(first.shape[1])[None, :]
    alpha, beta = (values[nodes, genes, first, second].numpy() for values in grid)
    return alpha, beta


def key_log_likelihood(
    logits_first: torch.Tensor,
    logits_second: torch.Tensor,
    keys: torch.Tensor | np.ndarray,
    grid: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """Mean over ``keys`` ``(m, n, g)`` of ``log p(k)``, differentiable in the logits
    (``(n, g, ...)``, the same genes as ``grid``'s ``beta_grid`` slices).

    ``p(k) = sum_{i, j} pi_1(i) pi_2(j) beta(k; alpha_ij, beta_ij)`` marginalises the
    two categoricals of section 2.3 analytically; keys are clipped to
    ``[1e-6, 1 - 1e-6]`` so the density stays finite.
    """
    alpha, beta = (values.to(logits_first.device) for values in grid)
    log_norm = torch.lgamma(alpha) + torch.lgamma(beta) - torch.lgamma(alpha + beta)
    k = torch.as_tensor(keys, dtype=torch.float64, device=alpha.device).clamp(1e-6, 1 - 1e-6)
    log_k, log_1mk = k.log()[..., None, None], torch.log1p(-k)[..., None, None]
    log_density = (alpha - 1) * log_k + (beta - 1) * log_1mk - log_norm
    log_p1 = torch.log_softmax(logits_first.double(), -1)[..., :, None]
    log_p2 = torch.log_softmax(logits_second.double(), -1)[..., None, :]
    return torch.logsumexp(log_density + log_p1 + log_p2, dim=(-2, -1)).mean()


def split_action(action: RegalAction, ptr: torch.Tensor) -> list[RegalAction]:
    """A batch's action cut into one per graph (``ptr`` from ``batch_inputs``)."""
    sizes = ptr.diff().tolist()
    return [
        RegalAction(first, second)
        for first, second in zip(
            action.first_index.split(sizes), action.second_index.split(sizes), strict=True
        )
    ]


__all__ = [
    "BETA_CHOICES",
    "CENTRE_SHIFTS",
    "MEAN_CLIP",
    "NEUTRAL_CHOICES",
    "ORDER_PRIOR_FEATURE",
    "PARAMETERISATIONS",
    "REGAL_EDGE_FEATURES",
    "REGAL_NODE_FEATURES",
    "RegalAction",
    "RegalBaseline",
    "RegalConfig",
    "RegalEncoder",
    "RegalInputs",
    "RegalLayer",
    "RegalPolicy",
    "action_distributions",
    "action_entropy",
    "action_log_prob",
    "batch_inputs",
    "beta_grid",
    "gene_centres",
    "key_log_likelihood",
    "mlp",
    "regal_inputs",
    "split_action",
]
