"""REGAL (paper 003, section 2.3): a GNN proposes BRKGA's mutant distributions per op.

``regal`` runs the policy once on the graph, takes each categorical's mode (or a
sample, ``decode="sample"``), and runs BRKGA with the chosen ``beta(alpha, beta)``
mutant distributions for the same budget as standard BRKGA (5,000 evaluations).
``idrs`` is the paper's Instance-Dependent Random Search baseline (section 3.2): the
same distributions, but the budget is spent on independent samples instead of BRKGA.

The model comes from ``checkpoint`` or is the shipped ``regal-<objective>``
(``dagopt.models.model_path``; ``DAGOPT_MODEL_DIR`` overrides it).
"""

import math
import time
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dagopt.errors import DagoptWarning, InputError
from dagopt.models import missing_model, model_path
from dagopt.place.base import PlacementProblem, PlacerResult, best_index, register_placer
from dagopt.place.brkga import (
    OPTION_NAMES,
    BrkgaParams,
    MutantDistributions,
    SearchOutcome,
    TimedScorer,
    outcome_result,
    run_brkga,
)
from dagopt.place.prior import order_prior_keys
from dagopt.registry import time_left

if TYPE_CHECKING:  # torch is imported when a REGAL placer first runs, not at registration
    from dagopt.nn.regal import RegalPolicy

DECODES = ("greedy", "sample")


@lru_cache(maxsize=4)
def _cached_policy(path: str) -> tuple["RegalPolicy", dict]:
    from dagopt.nn.checkpoint import load_model
    from dagopt.nn.regal import RegalPolicy

    return load_model(path, expected=RegalPolicy)


def load_policy(problem: PlacementProblem, checkpoint) -> "RegalPolicy":
    """The policy for ``problem``: it must have been trained for the same device count;
    the shipped one for the same objective (a given ``checkpoint`` trained for another
    objective is used, with a ``DagoptWarning``)."""
    shipped = None if checkpoint is not None else f"regal-{problem.objective}"
    path = Path(checkpoint) if shipped is None else model_path(shipped)
    if not path.is_file():
        raise missing_model("REGAL", path, shipped)
    policy, meta = _cached_policy(str(path.resolve()))
    if policy.config.num_devices != problem.num_devices:
        raise InputError(
            f"{path}: the model places on {policy.config.num_devices} devices, "
            f"the problem has {problem.num_devices}"
        )
    trained_for = meta.get("objective")
    if trained_for not in (None, problem.objective):
        mismatch = f"{path}: trained for {trained_for!r}, not {problem.objective!r}"
        if checkpoint is None:
            raise InputError(mismatch)
        warnings.warn(f"{mismatch}; placing with it anyway", DagoptWarning, stacklevel=2)
    return policy


def policy_distributions(
    problem: PlacementProblem,
    policy: "RegalPolicy",
    *,
    decode_mode: str,
    seed,
    time_limit: float | None = None,
) -> MutantDistributions:
    """One forward pass: the mutant distributions the policy picks for ``problem``.

    A policy with an ``order_prior`` first runs that scheduler on the graph, within its
    share of the placer's ``time_limit`` (``order_prior_keys``)."""
    import torch

    from dagopt.nn.regal import action_distributions, beta_grid, regal_inputs, sample_actions

    if decode_mode not in DECODES:
        raise InputError(f"decode must be one of {', '.join(DECODES)}, got {decode_mode!r}")
    generator = None
    if decode_mode == "sample":
        generator = torch.Generator().manual_seed(int(np.random.default_rng(seed).integers(2**62)))
    prior = policy.config.order_prior
    prior_keys = None if prior is None else order_prior_keys(problem.graph, prior, time_limit)
    inputs = regal_inputs(problem.graph, problem.runtimes, problem.devices, prior_keys)
    with torch.inference_mode():
        logits = policy(inputs)
    action = sample_actions(*logits, generator=generator, greedy=decode_mode == "greedy")
    grid = beta_grid(policy.config, inputs)
    return MutantDistributions(*action_distributions(action, grid))


def random_search(
    problem: PlacementProblem,
    distributions: MutantDistributions,
    *,
    evaluations: int,
    seed,
    time_limit: float | None = None,
    batch: int = 500,
) -> SearchOutcome:
    """The best of ``evaluations`` chromosomes drawn independently from ``distributions``
    (fewer if ``time_limit`` seconds pass first; the first batch always runs), scored in
    batches of at most ``batch`` (one of 500 took 5 s at 18,545 ops) or, under a time
    limit, in ``TimedScorer``'s timed batches; the draws are the same in any batching."""
    if evaluations < 1:
        raise InputError(f"evaluations must be >= 1, got {evaluations}")
    rng = np.random.default_rng(seed)
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    scorer = TimedScorer(problem, deadline, largest=batch)
    best: tuple[int, float] | None = None
    trace: list[tuple[int, int, float]] = []
    used = 0
    while used < evaluations and (used == 0 or not scorer.expired()):
        count = min(scorer.batch, evaluations - used)
        device_of, orders, infeasible, value = scorer.score(distributions.sample(count, rng))
        used += count
        i = best_index(infeasible, value)
        cost = (int(infeasible[i]), float(value[i]))
        if best is None or cost < best:
            best, best_device, best_order = cost, device_of[i], orders[i]
            trace.append((used, *cost))
    return SearchOutcome(best_device, best_order, best, used, 1, trace)


@register_placer(
    "regal",
    "BRKGA with mutant distributions from the REGAL GNN policy (003 section 2.3)",
    ("checkpoint", "decode", *OPTION_NAMES),
)
def regal(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    checkpoint=None,
    decode: str = "greedy",
    **brkga_options,
) -> PlacerResult:
    """``time_limit`` covers the policy's forward pass (with its order prior's share) and
    BRKGA, which gets the rest."""
    began = time.perf_counter()
    policy = load_policy(problem, checkpoint)
    distributions = policy_distributions(
        problem, policy, decode_mode=decode, seed=seed, time_limit=time_limit
    )
    outcome = run_brkga(
        problem,
        seed=seed,
        params=BrkgaParams.from_dict(brkga_options),
        distributions=distributions,
        time_limit=time_left(time_limit, began),
    )
    return outcome_result(outcome)


@register_placer(
    "idrs",
    "random sampling from the REGAL policy's distributions (003 section 3.2, IDRS)",
    ("checkpoint", "decode", "evaluations"),
)
def idrs(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    checkpoint=None,
    decode: str = "greedy",
    evaluations: int = BrkgaParams().evaluations,
) -> PlacerResult:
    """``time_limit`` covers the policy's forward pass and the sampling, which gets the
    rest."""
    began = time.perf_counter()
    policy = load_policy(problem, checkpoint)
    distributions = policy_distributions(
        problem, policy, decode_mode=decode, seed=seed, time_limit=time_limit
    )
    outcome = random_search(
        problem, distributions, evaluations=evaluations, seed=seed,
        time_limit=time_left(time_limit, began),
    )  # fmt: skip
    return outcome_result(outcome)
