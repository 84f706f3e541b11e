"""Model-guided tuning of measured kernels (tile) and programs (layout), replayed on
measured runtimes.

A tuner picks ``budget`` configurations of a kernel or program (``pick(record, budget,
rng)``); it is scored by the best MEASURED runtime among its picks over the best of all
measured configurations (``slowdown``, 1.0 = found the best). "Measuring" a
configuration is looking up the runtime the dataset measured: a replay, not a new
measurement. Tuners: ``RandomSearch``; ``ScoreGuided`` (rank every configuration by a
scorer, e.g. TGraph's zero-shot scores, paper 002 section 2.5.3, and take the top
``budget``); ``CostModelSearch``, TVM MetaSchedule's loop (a random first batch, then
retrain its XGBoost cost model on what was measured and measure its best unmeasured
candidates, batch after batch, until the budget is spent; tile kernels only: its model
scores one TIR function per candidate).
"""

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

from dagopt.errors import InputError
from dagopt.io.tpugraphs import LayoutRecord, TileRecord

Record = TileRecord | LayoutRecord


def tuning_budget(configs: int, fraction: float) -> int:
    """``ceil(fraction x configs)`` measurements, at least 1."""
    if not 0 < fraction <= 1:
        raise InputError(f"budget fraction {fraction} outside (0, 1]")
    return max(1, math.ceil(fraction * configs - 1e-9))


def slowdown(runtimes: np.ndarray, picks: np.ndarray) -> float:
    """Best runtime among ``picks`` over the best of all ``runtimes`` (>= 1)."""
    runtimes = np.asarray(runtimes, dtype=np.float64)
    return float(runtimes[np.asarray(picks)].min() / runtimes.min())


class Tuner(Protocol):
    def pick(self, record: Record, budget: int, rng: np.random.Generator) -> np.ndarray:
        """``budget`` distinct configuration indices of ``record``."""
        ...


def _check(record: Record, budget: int) -> None:
    if not 1 <= budget <= record.num_configs:
        raise InputError(f"{record.name}: budget {budget} outside 1..{record.num_configs}")
    if record.config_runtime is None:
        raise InputError(f"{record.name}: tuning replays measured runtimes; the file has none")


class RandomSearch:
    """``budget`` configurations drawn uniformly without replacement."""

    def pick(self, record: Record, budget: int, rng: np.random.Generator) -> np.ndarray:
        _check(record, budget)
        return rng.choice(record.num_configs, size=budget, replace=False)


class ScoreGuided:
    """The ``budget`` configurations with the lowest ``scorer(record)`` (lower =
    predicted faster), all chosen before any measurement (zero-shot)."""

    def __init__(self, scorer: Callable[[Record], np.ndarray]) -> None:
        self.scorer = scorer

    def pick(self, record: Record, budget: int, rng: np.random.Generator) -> np.ndarray:
        _check(record, budget)
        return np.argsort(np.asarray(self.scorer(record)), kind="stable")[:budget]


class CostModelSearch:
    """TVM MetaSchedule's measure-update-predict loop with its XGBoost cost model
    (``dagopt.integrations.tvm.cost_model``) on the configurations' TIR schedules
    (``config_feat`` as features): ``rounds`` batches, the first random, each next one
    the unmeasured configurations the retrained model scores best."""

    def __init__(self, rounds: int = 3) -> None:
        if rounds < 1:
            raise InputError("rounds must be >= 1")
        self.rounds = rounds

    def pick(self, record: TileRecord, budget: int, rng: np.random.Generator) -> np.ndarray:
        from dagopt.integrations.tvm.cost_model import ScheduleCostModel
        from dagopt.integrations.tvm.tile import kernel_from_name, schedule
        from dagopt.rank.configs.tile import tiling_from_features

        _check(record, budget)
        if not isinstance(record, TileRecord):
            raise InputError(f"{record.name}: TVM's cost model tunes tile kernels only")
        kernel = kernel_from_name(record.name)
        modules = [schedule(kernel, tiling_from_features(kernel, r)) for r in record.config_feat]
        model = ScheduleCostModel(modules, record.config_feat, seed=int(rng.integers(2**31)))
        seconds = np.asarray(record.config_runtime, dtype=np.float64) * 1e-9
        batch = math.ceil(budget / self.rounds)
        picked = rng.choice(record.num_configs, size=min(batch, budget), replace=False)
        while picked.size < budget:
            model.update(picked, seconds[picked])
            score = model.predict()
            score[picked] = -np.inf
            best = np.argsort(-score, kind="stable")[: min(batch, budget - picked.size)]
            picked = np.concatenate([picked, best])
        return picked
