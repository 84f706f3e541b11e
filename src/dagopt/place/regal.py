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
from dagopt.place.base import (
    PlacementProblem,
    PlacerResult,
    best_index,
    register_placer,
)
from dagopt.place.brkga import (
    OPTION_NAMES,
    BrkgaParams,
    MutantDistributions,
    SearchOutcome,
    outcome_result,
    run_brkga,
)
from dagopt.place.decode import decode as decode_chromosomes
from dagopt.place.prior import order_prior_keys
from dagopt.registry import time_left

if TYPE_CHECKING:  # torch is imported when a REGAL placer first runs, not at registration
    from dagopt.nn.regal import RegalPolicy

DECODES = ("greedy", "sample")


#: ``random_search`` under a time limit: the first batch, and the seconds each
#: later batch is sized to take.
TIMED_FIRST_BATCH = 20
TIMED_BATCH_SECONDS = 0.1


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
    problem: PlacementProblem, policy: "RegalPolicy", *, decode_mode: str, seed
) -> MutantDistributions:
    """One forward pass: the mutant distributions the policy picks for ``problem``.

    A policy with an ``order_prior`` first runs that scheduler on the graph."""
    import torch

    from dagopt.nn.regal import action_distributions, beta_grid, regal_inputs, sample_actions

    if decode_mode not in DECODES:
        raise InputError(f"decode must be one of {', '.join(DECODES)}, got {decode_mode!r}")
    generator = None
    if decode_mode == "sample":
        generator = torch.Generator().manual_seed(int(np.random.default_rng(seed).integers(2**62)))
    prior = policy.config.order_prior
    prior_keys = None if prior is None else order_prior_keys(problem.graph, prior)
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
    (fewer if ``time_limit`` seconds pass first; the first batch always runs). With a
    time limit the batches start at ``TIMED_FIRST_BATCH`` and are then sized to take
    ``TIMED_BATCH_SECONDS`` at the rate measured so far, up to ``batch`` (a batch of 500
    took 5 s at 18,545 ops); the draws are the same in any batching."""
    if evaluations < 1:
        raise InputError(f"evaluations must be >= 1, got {evaluations}")
    rng = np.random.default_rng(seed)
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    best: tuple[int, float] | None = None
    trace: list[tuple[int, int, float]] = []
    used = 0
    size = batch if time_limit is None else min(batch, TIMED_FIRST_BATCH)
    while used < evaluations and (used == 0 or time.perf_counter() < deadline):
        count = min(size, evaluations - used)
        began = time.perf_counter()
        device_of, orders = decode_chromosomes(problem.graph, distributions.sample(count, rng))
        infeasible, value = problem.evaluate(device_of, orders)
        used += count
        if time_limit is not None:
            rate = count / max(time.perf_counter() - began, 1e-9)
            size = max(1, min(batch, int(rate * TIMED_BATCH_SECONDS)))
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
    """``time_limit`` covers the policy's forward pass and BRKGA, which gets the rest."""
    began = time.perf_counter()
    policy = load_policy(problem, checkpoint)
    distributions = policy_distributions(problem, policy, decode_mode=decode, seed=seed)
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
    distributions = policy_distributions(problem, policy, decode_mode=decode, seed=seed)
    outcome = random_search(
        problem, distributions, evaluations=evaluations, seed=seed,
        time_limit=time_left(time_limit, began),
    )  # fmt: skip
    return outcome_result(outcome)
