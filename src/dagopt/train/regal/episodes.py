"""What a REGAL run trains on (paper 003, 2.3): graphs, their reference BRKGA results,
and the environment that scores a policy's action by running BRKGA with it.

A graph's reward is ``-H(G, D) / H(G, U)``, where ``H(G, U)`` is standard BRKGA's
result on the graph (its *reference*, computed once per run and kept in
``reference.json``) and ``H(G, D)`` BRKGA's result with the action's mutant
distributions ``D``. Every BRKGA run on a graph uses the graph's seed, the one
``H(G, U)`` was computed with (common random numbers): the reward then differs from -1
only through ``D``. A solution over the memory limit scores ``-INFEASIBLE_RATIO``
(A.2); graphs on which standard BRKGA finds nothing feasible are left out.

The BRKGA runs are most of a run's time and independent of each other, so the
reference runs and the rewards of a batch go through a ``dagopt.executor.Executor``
(``dagopt train placement --jobs N`` or ``--ray ADDRESS``); the learner stays in this
process, and each run's seed makes the rewards the serial run's.
"""

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from dagopt.errors import DagoptWarning, InputError, SolverError
from dagopt.executor import Executor
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file
from dagopt.nn.regal import (
    RegalAction,
    RegalPolicy,
    action_distributions,
    beta_grid,
    regal_inputs,
    sample_actions,
)
from dagopt.objectives.devices import GIB, Devices
from dagopt.place.base import PlacementProblem, cost_ratio
from dagopt.place.brkga import BrkgaParams, MutantDistributions, SearchOutcome, run_brkga
from dagopt.place.prior import order_prior_keys
from dagopt.rl.reinforce import Environment
from dagopt.train.loop import Progress
from dagopt.train.regal.config import RegalTrainConfig

REFERENCE_FILE = "reference.json"


@dataclass(frozen=True)
class TrainingGraph:
    """A graph with its features, standard BRKGA's cost ``H(G, U)`` on it, and the
    priority keys of the policy's ``order_prior`` (``None`` without one)."""

    seed: int
    graph: Graph
    inputs: Data
    reference: float
    prior_keys: np.ndarray | None = None


def run_devices(config: RegalTrainConfig) -> Devices:
    """The run's devices: ``num_devices`` of ``memory_gib`` each."""
    return Devices.homogeneous(config.policy.num_devices, memory=config.memory_gib * GIB)


def brkga_outcome(
    config: RegalTrainConfig,
    graph: Graph,
    seed,
    distributions: MutantDistributions | None = None,
    evaluations: int | None = None,
) -> SearchOutcome:
    """BRKGA on ``graph`` with the run's devices and objective (uniform mutants unless
    ``distributions``), ``brkga_evaluations`` unless ``evaluations``."""
    problem = PlacementProblem(graph, run_devices(config), config.objective)
    params = BrkgaParams(evaluations=evaluations or config.brkga_evaluations)
    return run_brkga(problem, seed=seed, params=params, distributions=distributions)


def values(outcomes: list, what: str) -> list:
    """The values of executor outcomes; the first failure is a ``SolverError``."""
    failed = next((o.error for o in outcomes if not o.ok), None)
    if failed is not None:
        raise SolverError(f"{what} failed: {failed}")
    return [o.value for o in outcomes]


class BrkgaEnv(Environment):
    """REGAL's environment: an action's reward is ``-H(G, D) / H(G, U)``."""

    def __init__(self, config: RegalTrainConfig, executor: Executor | None = None) -> None:
        self.config = config
        self.executor = executor or Executor()

    def rewards(self, episodes: list[tuple[TrainingGraph, RegalAction]]) -> list[float]:
        """``reward`` of every ``(instance, action)`` pair, on the run's executor."""
        return values(self.executor.map(self._reward_of, episodes), "a reward's BRKGA run")

    def _reward_of(self, episode: tuple[TrainingGraph, RegalAction]) -> float:
        return self.reward(*episode)

    def reward(self, instance: TrainingGraph, action: RegalAction) -> float:
        grid = beta_grid(self.config.policy, instance.inputs)
        distributions = MutantDistributions(*action_distributions(action, grid))
        outcome = brkga_outcome(self.config, instance.graph, instance.seed, distributions)
        return -cost_ratio(outcome.cost, instance.reference)

    def greedy_ratio(self, policy: RegalPolicy, graphs: list[TrainingGraph]) -> float:
        """Mean ``H(G, D) / H(G, U)`` over ``graphs`` with the policy's modal action."""
        policy.eval()
        with torch.inference_mode():
            actions = [sample_actions(*policy(item.inputs), greedy=True) for item in graphs]
        return -float(np.mean(self.rewards(list(zip(graphs, actions, strict=True)))))


def cached_per_seed(
    path: Path,
    config: RegalTrainConfig,
    seeds: list[int],
    compute: Callable[[int], Any],
    stage: str,
    progress: Progress | None,
    executor: Executor | None = None,
) -> dict[int, Any]:
    """``compute(seed)`` for every seed, kept across runs in the JSON file ``path`` as
    ``{"config": the run's options, "values": {seed: value}}``, computed on ``executor``
    (default: in this process). Values kept under other options (a new run in the
    folder of an interrupted one) are recomputed, with a ``DagoptWarning``.

    Saved every 50 seeds, so an interrupted run recomputes at most that many.
    """
    options = json.loads(json.dumps(config.to_dict()))  # as the file holds them
    stored = read_json_file(path) if path.exists() else {"config": options, "values": {}}
    if not isinstance(stored, dict) or not isinstance(stored.get("values"), dict):
        raise InputError(f"{path}: not a cache of per-seed values (delete it to recompute)")
    if stored.get("config") != options:
        message = f"{path} was computed under other options: recomputing"
        warnings.warn(message, DagoptWarning, stacklevel=2)
        stored = {"values": {}}
    known = {int(k): v for k, v in stored["values"].items()}
    missing = [s for s in seeds if s not in known]
    finished = 0

    def save(index: int, outcome) -> None:
        nonlocal finished
        finished += 1
        if outcome.ok:
            known[missing[index]] = outcome.value
        if finished % 50 == 0 or finished == len(missing):
            values = {str(k): v for k, v in sorted(known.items())}
            write_text_atomic(path, json.dumps({"config": options, "values": values}))
        if progress is not None:
            progress(stage, finished, len(missing))

    values((executor or Executor()).map(compute, missing, on_done=save), stage)
    return known


@dataclass(frozen=True)
class Reference:
    """Standard BRKGA's cost on a graph seed, ``None`` if infeasible (a picklable job)."""

    config: RegalTrainConfig
    graphs: dict[int, Graph]

    def __call__(self, seed: int) -> float | None:
        infeasible, value = brkga_outcome(self.config, self.graphs[seed], seed).cost
        return None if infeasible else value


def references(
    run_dir: Path,
    config: RegalTrainConfig,
    graphs: dict[int, Graph],
    progress: Progress | None,
    executor: Executor | None = None,
) -> dict[int, float | None]:
    """``H(G, U)`` per graph seed (``None``: nothing feasible), in ``reference.json``."""
    return cached_per_seed(
        run_dir / REFERENCE_FILE,
        config,
        list(graphs),
        Reference(config, graphs),
        "reference BRKGA runs",
        progress,
        executor,
    )


def graph_set(
    config: RegalTrainConfig,
    seeds: list[int],
    graphs: dict[int, Graph],
    reference_of: dict[int, float | None],
    progress: Progress | None,
) -> list[TrainingGraph]:
    """The graphs of ``seeds`` with a feasible reference, featurised (running the
    policy's ``order_prior`` scheduler on each, with progress, if it has one)."""
    devices, prior = run_devices(config), config.policy.order_prior
    items = []
    for i, s in enumerate(seeds):
        if reference_of[s] is not None:
            keys = None if prior is None else order_prior_keys(graphs[s], prior)
            inputs = regal_inputs(graphs[s], None, devices, keys)
            items.append(TrainingGraph(s, graphs[s], inputs, reference_of[s], keys))
        if prior is not None and progress is not None:
            progress(f"order prior ({prior['method']})", i + 1, len(seeds))
    return items
