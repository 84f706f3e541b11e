"""Order priors: a single-device memory scheduler's order as a guide for placement.

Beyond paper 003. A near-minimal single-device peak-memory order (paper 000's
``approx-dp``) tells BRKGA where each op should fall in a good two-device schedule too:
on validation graphs, BRKGA whose priority mutants are centred on its keys ends well
below standard BRKGA (``benchmarks/regal_headroom.py``, ``docs/placement.md``, "Order
prior"). An order prior is ``{"method": NAME, **options}`` for ``dagopt.schedule.solve``.

- ``order_prior_keys``: the prior order's priority keys, one per op;
- the ``brkga-prior`` placer: BRKGA with priority mutants ``beta(c k, c (1 - k))``
  around those keys ``k`` (device genes uniform), a hand-made guide with no learning;
- REGAL policies with ``RegalConfig.order_prior`` read the keys as a feature and learn
  their distributions from it (``dagopt.nn.regal``).
"""

import time

import numpy as np

from dagopt.configs import check_option
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.place.base import PlacementProblem, PlacerResult, register_placer
from dagopt.place.brkga import (
    OPTION_NAMES,
    BrkgaParams,
    MutantDistributions,
    outcome_result,
    run_brkga,
)
from dagopt.place.decode import order_keys
from dagopt.registry import time_left
from dagopt.schedule import get_solver, solve

#: The prior of ``brkga-prior`` and of the shipped peak-memory REGAL policy.
DEFAULT_ORDER_PRIOR = {"method": "approx-dp", "beam_width": 10000}
#: ``brkga-prior``'s concentration ``c``, chosen on validation graphs
#: (``benchmarks/regal_prior_concentration.py``, ``docs/placement.md``).
DEFAULT_CONCENTRATION = 3000.0
#: The share of a placer's time limit its order prior may take. The prior only centres
#: the search's mutants; given the whole limit, a slow prior (``approx-dp`` at 18,545
#: ops) left the search nothing but its first population.
PRIOR_TIME_SHARE = 0.5


def _scheduler(order_prior: dict) -> tuple[str, dict]:
    """``order_prior`` split into its scheduler's name and options, both validated."""
    if not isinstance(order_prior, dict) or not isinstance(order_prior.get("method"), str):
        raise InputError(f'order_prior must be {{"method": NAME, **options}}, got {order_prior!r}')
    options = {k: v for k, v in order_prior.items() if k != "method"}
    get_solver(order_prior["method"]).check_options(options)
    return order_prior["method"], options


def check_order_prior(order_prior: dict) -> None:
    """Raise ``InputError`` unless ``order_prior`` names a scheduler and valid options."""
    _scheduler(order_prior)


def order_prior_keys(
    graph: Graph, order_prior: dict, time_limit: float | None = None
) -> np.ndarray:
    """Priority keys (``dagopt.place.decode.order_keys``) of the order the scheduler
    ``order_prior`` gives ``graph`` on one device: 1 for its first op, near 0 last.

    ``time_limit`` is the placer's: the scheduler gets ``PRIOR_TIME_SHARE`` of it (where
    it takes one; ``approx-dp`` narrows its beam at its limit), the search the rest."""
    method, options = _scheduler(order_prior)
    share = None if time_limit is None else PRIOR_TIME_SHARE * time_limit
    return order_keys(solve(graph, method, time_limit=share, **options).order)


@register_placer(
    "brkga-prior",
    "BRKGA whose priority mutants centre on approx-dp's single-device memory order",
    ("concentration", *OPTION_NAMES),
)
def brkga_prior(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    concentration: float = DEFAULT_CONCENTRATION,
    **options,
) -> PlacerResult:
    """``time_limit`` covers the prior's order (at most ``PRIOR_TIME_SHARE`` of it) and
    BRKGA, which gets what the order left."""
    concentration = check_option("concentration", concentration, float)
    began = time.perf_counter()
    keys = order_prior_keys(problem.graph, DEFAULT_ORDER_PRIOR, time_limit)
    distributions = MutantDistributions.centred(
        problem.graph.num_nodes, problem.num_devices, concentration, priority_keys=keys
    )
    params = BrkgaParams.from_dict(options)
    outcome = run_brkga(
        problem, seed=seed, params=params, distributions=distributions,
        time_limit=time_left(time_limit, began),
    )  # fmt: skip
    return outcome_result(outcome)
