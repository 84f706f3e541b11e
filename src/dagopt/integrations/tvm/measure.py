"""The timing protocol of the measured configuration dataset (``docs/configs_dataset.md``).

Every configuration of one graph is a zero-argument callable (a compiled program with its
buffers bound). ``measure_programs`` times them all on one pinned core in process CPU
time: each callable is first calibrated to a repeat count whose batch takes at least
``min_batch_ns``; then ``rounds`` interleaved rounds (a fresh random order of all
configurations per round) time one batch each. The runtime of a configuration is its
minimum per-call time; the minima of the first and the second half of the rounds give
the retest Kendall tau (``dagopt.objectives.ranking.kendall_tau``), the ranking quality
no model can beat on this data (paper 002, eq. 9). Reused by model-guided tuning.

The retest tau is a ceiling for one machine only: the same programs timed on another
CPU can rank differently (docs/configs_dataset.md, "One machine per collection"), so
``machine`` names the CPU and the TVM that timed them, for the dataset's sidecar.
"""

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dagopt.errors import InputError
from dagopt.objectives.ranking import kendall_tau

Program = Callable[[], object]


def pin_to_core(core: int | None = None) -> int:
    """Pin this process to one CPU (``core``, default the last one it may use); returns it."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if core is None else core
    if chosen not in allowed:
        raise InputError(f"core {chosen} is not available (allowed: {allowed})")
    os.sched_setaffinity(0, {chosen})
    return chosen


def cpu() -> str:
    """The CPU: its model name with family / model / stepping, which tell its
    generation where a virtual machine masks the name (``AMD EPYC``)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    generation = ", ".join(
        f"{label} {fields[key]}"
        for key, label in (("cpu family", "family"), ("model", "model"), ("stepping", "stepping"))
        if key in fields
    )
    return f"{name} ({generation})" if generation else name


def machine() -> str:
    """What timed a measurement: the CPU (``cpu``) and the TVM version."""
    from dagopt.integrations.tvm import require_tvm

    return f"{cpu()}; TVM {require_tvm().__version__}"


@dataclass(frozen=True)
class Measurement:
    """Per-call CPU times of c configurations and the quality of the measurement.

    ``runtime_ns`` is the minimum over all rounds; ``first_half_ns`` / ``second_half_ns``
    the minima over each half; ``retest_tau`` Kendall's tau between the halves;
    ``spread`` max / min of ``runtime_ns``; ``load`` the 1-minute load average before and
    after (``os.getloadavg``); ``repeats`` the calls per timed batch of each configuration.
    """

    runtime_ns: np.ndarray
    first_half_ns: np.ndarray
    second_half_ns: np.ndarray
    retest_tau: float
    spread: float
    load: tuple[float, float]
    repeats: np.ndarray
    rounds: int

    def summary(self) -> dict[str, float | int]:
        """The scalar figures, for a dataset's sidecar JSON."""
        return {
            "configs": int(self.runtime_ns.size),
            "rounds": self.rounds,
            "retest_tau": round(self.retest_tau, 4),
            "spread": round(self.spread, 3),
            "min_ns": int(self.runtime_ns.min()),
            "max_ns": int(self.runtime_ns.max()),
            "load_before": round(self.load[0], 2),
            "load_after": round(self.load[1], 2),
        }


def _batch_ns(program: Program, repeats: int) -> int:
    start = time.process_time_ns()
    for _ in range(repeats):
        program()
    return time.process_time_ns() - start


def calibrate(program: Program, min_batch_ns: int) -> int:
    """Calls per batch so that one batch takes at least ``min_batch_ns`` of CPU time."""
    program()  # warm-up: first call pays lazy initialisation
    repeats = 1
    while (elapsed := _batch_ns(program, repeats)) < min_batch_ns:
        repeats = max(repeats * 2, int(repeats * 1.2 * min_batch_ns / max(elapsed, 1)))
    return repeats


def measure_programs(
    programs: Sequence[Program],
    *,
    rounds: int = 10,
    min_batch_ns: int = 2_000_000,
    seed: int = 0,
) -> Measurement:
    """Time ``programs`` in ``rounds`` interleaved rounds (see the module docstring)."""
    if rounds < 2 or rounds % 2:
        raise InputError(f"rounds must be an even number >= 2, got {rounds}")
    if len(programs) < 2:
        raise InputError("measuring needs at least 2 configurations")
    load_before = os.getloadavg()[0]
    repeats = np.array([calibrate(p, min_batch_ns) for p in programs], dtype=np.int64)
    rng = np.random.default_rng(seed)
    times = np.empty((rounds, len(programs)), dtype=np.float64)
    for r in range(rounds):
        for j in rng.permutation(len(programs)):
            times[r, j] = _batch_ns(programs[j], int(repeats[j])) / repeats[j]
    half = rounds // 2
    first, second = times[:half].min(axis=0), times[half:].min(axis=0)
    best = np.maximum(np.minimum(first, second), 1.0)
    return Measurement(
        runtime_ns=np.rint(best).astype(np.int64),
        first_half_ns=first,
        second_half_ns=second,
        retest_tau=kendall_tau(first, second),
        spread=float(best.max() / best.min()),
        load=(load_before, os.getloadavg()[0]),
        repeats=repeats,
        rounds=rounds,
    )
