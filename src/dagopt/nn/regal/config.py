"""Hyper-parameters of REGAL's policy and baseline networks (paper 003, 2.3, A.3)."""

import math
from dataclasses import dataclass

from dagopt.configs import Config
from dagopt.errors import InputError

#: The values ``alpha`` and ``beta`` may take (section 2.3: "We discretize the possible
#: values"). The paper does not list its grid; this one is roughly geometric over two
#: decades and holds 1.0, so ``beta(1, 1)``, standard BRKGA's uniform mutant, is one of
#: the actions. Pairs reach both skews (``beta(20, 1)`` near 1, ``beta(1, 20)`` near 0)
#: and both concentrations (``beta(0.2, 0.2)`` at the ends, ``beta(20, 20)`` near 0.5).
BETA_CHOICES: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
#: How a gene's two categoricals give its ``beta(alpha, beta)`` (``dagopt.nn.regal``).
PARAMETERISATIONS = ("alpha-beta", "centred")
#: The default ``shifts`` of the ``"centred"`` parameterisation: offsets of a gene's
#: mean from its centre, finest near 0 where a good order prior leaves little to move.
CENTRE_SHIFTS: tuple[float, ...] = (-0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2)
#: The op feature a ``RegalConfig.order_prior`` adds: the op's priority key in the
#: prior's order (``dagopt.place.decode.order_keys``: 1 for the first op, near 0 last).
ORDER_PRIOR_FEATURE = "order_prior_key"
#: Columns of the op features; all scale-free, so one model serves graphs of any size.
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
#: Columns of the edge features: the tensor an edge carries (its source's output).
REGAL_EDGE_FEATURES = ("bytes_rel_limit", "bytes_log_rel_mean")


@dataclass(frozen=True)
class RegalConfig(Config):
    """Hyper-parameters of the REGAL policy and baseline networks (A.3, eq. 1).

    ``num_devices`` is ``d`` (the model is fixed to it, section 2.3); ``hidden`` the
    width of every embedding and MLP; ``rounds`` is ``T``; ``mlp_layers`` the linear
    layers per MLP; ``parameterisation`` one of ``PARAMETERISATIONS``; ``choices`` the
    discretised ``alpha`` / ``beta`` values (``"alpha-beta"``) or concentrations
    (``"centred"``); ``shifts`` the mean shifts of ``"centred"``; ``share_weights``
    reuses one message-passing layer in every round (eq. 1 writes its MLPs without a
    round index), else each round has its own (the default); ``init_prob_one`` the
    initial probability of each categorical's ``NEUTRAL_CHOICES`` value (the rest
    spread evenly), so the untrained policy stays near standard BRKGA; ``order_prior``
    (beyond the paper; ``None``: the paper's features only) names a ``dagopt.schedule``
    method and its options, e.g. ``{"method": "approx-dp", "beam_width": 10000}``, whose
    single-device memory order becomes one more op feature, ``ORDER_PRIOR_FEATURE``
    (``dagopt.place.prior.order_prior_keys``, which also checks the method and options:
    the network layer does not import the solvers).
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
        prior = self.order_prior
        if prior is not None and not (
            isinstance(prior, dict) and isinstance(prior.get("method"), str)
        ):
            raise InputError(f'order_prior must be {{"method": NAME, **options}}, got {prior!r}')
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
        """The op feature columns this model reads."""
        extra = (ORDER_PRIOR_FEATURE,) if self.order_prior is not None else ()
        return (*REGAL_NODE_FEATURES, *extra)

    @property
    def head_choices(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The values a gene's first and second categorical range over."""
        if self.parameterisation == "centred":
            return self.choices, self.shifts
        return self.choices, self.choices
