"""Biased random-key genetic algorithm for joint placement and scheduling (paper 003).

Section 2.2 and appendix A.2: a population of chromosomes (``d + 1`` random keys per
op, ``dagopt.place.decode``) evolves for a fixed number of cost-model evaluations. Each
generation keeps the ``elite_fraction`` best chromosomes, adds ``mutant_fraction`` new
mutants, and fills the rest with children of one elite and one non-elite parent, each
gene taken from the elite with probability ``elite_bias`` (Gonçalves and Resende 2011).
Mutants are drawn gene by gene from ``beta(alpha, beta)`` distributions: uniform in
standard BRKGA, learned per op by REGAL (section 2.3). Fitness is the cost model's
lexicographic cost, so memory-feasible solutions always beat infeasible ones (A.2).

Under a time limit chromosomes are scored in timed batches (``TimedScorer``), so a
generation that meets the deadline stops there: on a graph of 18,545 ops a generation
took about 0.35 s (1,117 evaluations in 5 s: docs/placement.md).
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.place.base import PlacementProblem, PlacerResult, register_placer
from dagopt.place.decode import decode


@dataclass(frozen=True)
class BrkgaParams(Config):
    """BRKGA's hyper-parameters; ``evaluations`` is the cost-model budget (5,000 in 003)."""

    population: int = 100
    elite_fraction: float = 0.2
    mutant_fraction: float = 0.2
    elite_bias: float = 0.7
    evaluations: int = 5000

    def __post_init__(self) -> None:
        if self.population < 2:
            raise InputError(f"population must be >= 2, got {self.population}")
        if self.evaluations < 1:
            raise InputError(f"evaluations must be >= 1, got {self.evaluations}")
        for name in ("elite_fraction", "mutant_fraction", "elite_bias"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise InputError(f"{name} must lie in (0, 1), got {value}")
        if self.num_elites + self.num_mutants >= self.population:
            raise InputError(
                "elite_fraction + mutant_fraction leave no room for children "
                f"in a population of {self.population}"
            )

    @property
    def num_elites(self) -> int:
        return max(1, round(self.elite_fraction * self.population))

    @property
    def num_mutants(self) -> int:
        return max(1, round(self.mutant_fraction * self.population))


OPTION_NAMES = tuple(f.name for f in fields(BrkgaParams))

#: Under a time limit: the first batch ``TimedScorer`` scores, and the seconds each later
#: batch is sized to take at the rate measured so far.
TIMED_FIRST_BATCH = 20
TIMED_BATCH_SECONDS = 0.1

#: What ``TimedScorer.score`` returns per chromosome scored: device of each op, order,
#: infeasibility flag and cost-model value.
Scores = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class TimedScorer:
    """Decodes and evaluates chromosomes with ``problem``'s cost model until ``deadline``.

    Without a deadline (``math.inf``) each call scores all its chromosomes at once, in
    batches of at most ``largest``. With one, batches start at ``TIMED_FIRST_BATCH`` and
    are then sized to take ``TIMED_BATCH_SECONDS`` at the rate measured so far, so the
    search stops within about a batch of its limit; the chromosomes, and so the search's
    draws, are the same in any batching.
    """

    def __init__(self, problem: PlacementProblem, deadline: float, largest: int) -> None:
        self.problem = problem
        self.deadline = deadline
        self.largest = largest
        self.batch = largest if deadline == math.inf else min(largest, TIMED_FIRST_BATCH)

    def expired(self) -> bool:
        return time.perf_counter() >= self.deadline

    def score(self, keys: np.ndarray) -> Scores:
        """The scores of the first rows of ``keys`` (at least one): all of them, or the
        batches that start before the deadline; the first batch always runs."""
        parts = []
        done = 0
        while done < len(keys) and (done == 0 or not self.expired()):
            count = min(self.batch, len(keys) - done)
            began = time.perf_counter()
            device_of, orders = decode(self.problem.graph, keys[done : done + count])
            parts.append((device_of, orders, *self.problem.evaluate(device_of, orders)))
            done += count
            if self.deadline != math.inf:
                rate = count / max(time.perf_counter() - began, 1e-9)
                self.batch = max(1, min(self.largest, int(rate * TIMED_BATCH_SECONDS)))
        return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


@dataclass(frozen=True)
class MutantDistributions:
    """Per-gene ``beta(alpha, beta)`` mutant distributions, each array ``(n, d + 1)``."""

    alpha: np.ndarray
    beta: np.ndarray

    @classmethod
    def uniform(cls, num_nodes: int, num_devices: int) -> "MutantDistributions":
        ones = np.ones((num_nodes, num_devices + 1))
        return cls(ones, ones)

    @classmethod
    def centred(
        cls,
        num_nodes: int,
        num_devices: int,
        concentration: float,
        *,
        priority_keys: np.ndarray | None = None,
        device_of: np.ndarray | None = None,
    ) -> "MutantDistributions":
        """Mutants centred on one solution's genes, uniform on the genes not given.

        Each chosen gene with key ``k`` gets ``beta(c k, c (1 - k))`` (mean ``k``,
        ``c = concentration``): ``priority_keys`` for the priority gene (e.g.
        ``dagopt.place.decode.order_keys`` of an order), and 0.75 for the op's device in
        ``device_of`` against 0.25 for the others.
        """
        if not concentration > 0:
            raise InputError(f"concentration must be > 0, got {concentration}")
        keys = np.full((num_nodes, num_devices + 1), 0.5)
        chosen = np.zeros(num_devices + 1, dtype=bool)
        if device_of is not None:
            own = np.arange(num_devices)[None, :] == np.asarray(device_of)[:, None]
            keys[:, :num_devices] = np.where(own, 0.75, 0.25)
            chosen[:num_devices] = True
        if priority_keys is not None:
            keys[:, -1] = priority_keys
            chosen[-1] = True
        alpha = np.where(chosen, concentration * keys, 1.0)
        beta = np.where(chosen, concentration * (1.0 - keys), 1.0)
        return cls(alpha, beta)

    @property
    def is_uniform(self) -> bool:
        return bool(np.all(self.alpha == 1.0) and np.all(self.beta == 1.0))

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` mutant chromosomes ``(count, n, d + 1)``."""
        shape = (count, *self.alpha.shape)
        if self.is_uniform:
            return rng.random(shape)
        return rng.beta(self.alpha, self.beta, size=shape)


@dataclass(frozen=True)
class SearchOutcome:
    """The best solution a population-based search found, and its trace."""

    device_of: np.ndarray
    order: np.ndarray
    cost: tuple[int, float]
    evaluations: int
    generations: int
    best_by_evaluation: list[tuple[int, int, float]]
    stopped_by_time_limit: bool = False


def _check_distributions(problem: PlacementProblem, distributions: MutantDistributions) -> None:
    expected = (problem.graph.num_nodes, problem.num_devices + 1)
    for name in ("alpha", "beta"):
        array = getattr(distributions, name)
        if array.shape != expected:
            raise InputError(f"mutant {name} has shape {array.shape}, expected {expected}")
        if not np.all(np.isfinite(array) & (array > 0)):
            raise InputError(f"mutant {name} must be finite and > 0")


def run_brkga(
    problem: PlacementProblem,
    *,
    seed: int | np.random.Generator | None,
    params: BrkgaParams = BrkgaParams(),
    distributions: MutantDistributions | None = None,
    time_limit: float | None = None,
    progress: Callable[[int, tuple[int, float]], None] | None = None,
) -> SearchOutcome:
    """Evolve chromosomes until ``params.evaluations`` cost-model calls (or ``time_limit``).

    The first population is all mutants. Elites are never re-evaluated, so each later
    generation spends ``population - num_elites`` evaluations; the last one is cut to
    the remaining budget. Under ``time_limit`` a generation that meets the deadline keeps
    the offspring scored by then (``TimedScorer``; at least one, so the first population
    always has a member). ``progress(evaluations, best_cost)`` is called per generation.
    """
    graph = problem.graph
    d = problem.num_devices
    if distributions is None:
        distributions = MutantDistributions.uniform(graph.num_nodes, d)
    _check_distributions(problem, distributions)
    rng = np.random.default_rng(seed)
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    scorer = TimedScorer(problem, deadline, largest=params.population)
    budget = params.evaluations

    keys = distributions.sample(min(params.population, budget), rng)
    device_of, orders, infeasible, value = scorer.score(keys)
    keys = keys[: len(orders)]
    used = len(keys)
    generations = 1
    trace: list[tuple[int, int, float]] = []

    def rank() -> None:
        nonlocal keys, device_of, orders, infeasible, value
        ranking = np.lexsort((value, infeasible))
        keys, device_of, orders = keys[ranking], device_of[ranking], orders[ranking]
        infeasible, value = infeasible[ranking], value[ranking]
        best = (int(infeasible[0]), float(value[0]))
        if not trace or best != trace[-1][1:]:
            trace.append((used, *best))
        if progress is not None:
            progress(used, best)

    rank()
    elites = params.num_elites
    while used < budget and not scorer.expired() and len(keys) > elites:
        count = min(params.population - elites, budget - used)
        mutants = min(params.num_mutants, count)
        children = count - mutants
        elite_parent = keys[rng.integers(0, elites, size=children)]
        other_parent = keys[rng.integers(elites, len(keys), size=children)]
        inherit = rng.random(elite_parent.shape) < params.elite_bias
        offspring = np.concatenate(
            [np.where(inherit, elite_parent, other_parent), distributions.sample(mutants, rng)]
        )
        new = scorer.score(offspring)
        scored = len(new[1])
        keys = np.concatenate([keys[:elites], offspring[:scored]])
        device_of = np.concatenate([device_of[:elites], new[0]])
        orders = np.concatenate([orders[:elites], new[1]])
        infeasible = np.concatenate([infeasible[:elites], new[2]])
        value = np.concatenate([value[:elites], new[3]])
        used += scored
        generations += 1
        rank()
    return SearchOutcome(
        device_of=device_of[0],
        order=orders[0],
        cost=(int(infeasible[0]), float(value[0])),
        evaluations=used,
        generations=generations,
        best_by_evaluation=trace,
        stopped_by_time_limit=used < budget,  # only the deadline ends a search early
    )


def outcome_result(outcome: SearchOutcome, **info) -> PlacerResult:
    """A ``PlacerResult`` carrying a search's best solution and its trace."""
    return PlacerResult(
        device_of=outcome.device_of,
        order=outcome.order,
        info={
            "evaluations": outcome.evaluations,
            "generations": outcome.generations,
            "stopped_by_time_limit": outcome.stopped_by_time_limit,
            "best_by_evaluation": outcome.best_by_evaluation,
            **info,
        },
    )


@register_placer(
    "brkga",
    "BRKGA with uniform mutants, 5,000 evaluations by default (003 A.2, 'BRKGA 5k')",
    OPTION_NAMES,
)
def brkga(problem: PlacementProblem, *, seed=None, time_limit=None, **options) -> PlacerResult:
    params = BrkgaParams.from_dict(options)
    outcome = run_brkga(problem, seed=seed, params=params, time_limit=time_limit)
    return outcome_result(outcome)


__all__ = [
    "OPTION_NAMES",
    "BrkgaParams",
    "MutantDistributions",
    "SearchOutcome",
    "TimedScorer",
    "outcome_result",
    "run_brkga",
]
