"""Latency environments of paper 004 (section 3): ``measure(placement) -> seconds``.

HSDAG and its baselines learn from the latency of a placement (a device per op). One
interface serves every environment: ``LatencyModel.measure(device_of)`` returns the
repeated latencies in seconds (the samples), or None when the placement failed. The
base class turns that into the ``CostModel`` placers search against
(``dagopt.objectives.costmodel``): the latency is the mean of the samples after the
first ``runs - keep`` (the paper's protocol: 10 runs, the mean of the last 5; an
environment may make more runs where noise demands), a failed
placement is counted in ``failures`` and penalised (infeasible: ranked after every
feasible one, reward 0 for the learned placers), never a crash. The framework (or the
simulator's topological order) orders the ops, so ``uses_order`` is False.

Implementations:

- ``SimulatedLatency`` (here): paper 003's simulator (``SimulatedCostModel``) with
  per-op, per-device runtimes and transfers of ``latency + bytes / bandwidth``, plus
  optional multiplicative log-normal measurement noise; memory overflow is a failure;
- ``ProfiledLatency`` (here): the same simulator with runtimes and transfer costs read
  from a ``Profile``, a JSON file of per-op times measured on real devices and a
  transfer cost fitted from copy benchmarks (``dagopt.integrations.torch_latency``
  measures one);
- ``TorchLatency`` (``dagopt.integrations.torch_latency``): runs the placement in
  PyTorch;
- ``OpenVinoLatency`` (``dagopt.integrations.openvino``): runs it on OpenVINO HETERO.
"""

import json
import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.objectives.costmodel import Evaluation, check_objective
from dagopt.objectives.devices import GIB, Devices, DeviceSpec
from dagopt.objectives.placement import SimulatedCostModel
from dagopt.objectives.runtime import estimate_runtimes

#: Roofline of a device kind for the simulated environment: (peak FLOP/s, memory
#: bytes/s, seconds per op launch), a server CPU and a data-centre GPU.
ROOFLINES = {"cpu": (1.5e12, 1.0e11, 2e-6), "gpu": (5.0e13, 2.0e12, 8e-6)}
#: The simulated CPU-GPU link: latency (s) and bandwidth (bytes/s), PCIe 4.0 x16-like.
SIMULATED_LINK = (1e-5, 2.5e10)


class LatencyModel(ABC):
    """A latency environment (module docstring): subclasses give ``graph``, ``devices``
    and ``measure``; this class makes it a ``CostModel``."""

    objectives = ("runtime",)
    uses_order = False

    def __init__(self, graph: Graph, devices: Devices, *, runs: int = 10, keep: int = 5):
        if not 1 <= keep <= runs:
            raise InputError(f"need 1 <= keep <= runs, got keep={keep}, runs={runs}")
        self.graph, self.devices = graph, devices
        self.runs, self.keep, self.failures = runs, keep, 0

    @abstractmethod
    def measure(self, device_of: np.ndarray) -> np.ndarray | None:
        """The placement's latency samples in seconds (``runs`` or more of them), or
        None when it failed (counted in ``failures``)."""

    def latency(self, samples: np.ndarray) -> float:
        """The reported latency of ``samples``: the mean after the first ``runs - keep``
        (warm-up) runs."""
        return float(np.asarray(samples)[self.runs - self.keep :].mean())

    def check_placement(self, device_of: np.ndarray) -> np.ndarray:
        """``device_of`` as ``(n,)`` int64, or a one-line ``InputError``."""
        device_of = np.asarray(device_of, dtype=np.int64)
        n, d = self.graph.num_nodes, self.devices.count
        if device_of.shape != (n,) or not ((device_of >= 0) & (device_of < d)).all():
            raise InputError(f"a placement needs a device in 0..{d - 1} for each of the {n} ops")
        return device_of

    def evaluate(self, device_of: np.ndarray, order: Any, objective: str) -> Evaluation:
        check_objective(objective)
        if objective not in self.objectives:
            raise InputError("a latency environment scores the runtime objective only")
        samples = self.measure(self.check_placement(device_of))
        if samples is None:
            return Evaluation(cost=(1, 0.0), makespan=math.inf, feasible=False)
        latency = self.latency(samples)
        return Evaluation(cost=(0, latency), makespan=latency, feasible=True, samples=samples)

    def costs(self, device_of: np.ndarray, orders: Any, objective: str):
        rows = [self.evaluate(row, None, objective).cost for row in np.atleast_2d(device_of)]
        return (
            np.array([r[0] for r in rows], dtype=np.int64),
            np.array([r[1] for r in rows], dtype=np.float64),
        )

    def lower_bound(self, objective: str) -> float | None:
        return None


#: The largest ``noise`` a simulated latency takes: a sample's factor ``exp(noise z)``
#: stays finite for any standard normal ``z`` a float holds.
MAX_NOISE = 10.0


class SimulatedLatency(LatencyModel):
    """Paper 003's simulator as a latency environment (module docstring).

    ``runtimes`` are ``(n, d)`` seconds per op and device (or ``(n,)``, divided by the
    devices' speeds); ops run in the graph's topological order. ``noise`` is the
    standard deviation of the log of a sample's factor (0: every sample is the
    simulated makespan). A placement over a device's memory fails.
    """

    def __init__(
        self,
        graph: Graph,
        devices: Devices,
        runtimes: np.ndarray,
        *,
        noise: float = 0.0,
        runs: int = 10,
        keep: int = 5,
        seed: int = 0,
    ) -> None:
        super().__init__(graph, devices, runs=runs, keep=keep)
        if not 0 <= noise <= MAX_NOISE:  # past it, exp(noise x z) overflows to inf
            raise InputError(
                f"noise (the standard deviation of the log of a sample's factor) must lie "
                f"in 0..{MAX_NOISE:g}, got {noise}"
            )
        self.simulator = SimulatedCostModel(graph, devices, runtimes)
        self.runtimes = self.simulator.runtimes
        self.noise, self.rng = noise, np.random.default_rng(seed)
        self._order = graph.topological_order

    def _samples(self, makespan: np.ndarray) -> np.ndarray:
        factor = np.exp(self.noise * self.rng.standard_normal((makespan.size, self.runs)))
        return makespan[:, None] * factor

    def measure(self, device_of: np.ndarray) -> np.ndarray | None:
        return self._measure_rows(self.check_placement(device_of)[None])[0]

    def _measure_rows(self, device_of: np.ndarray) -> list[np.ndarray | None]:
        orders = np.broadcast_to(self._order, device_of.shape)
        batch = self.simulator.simulate_batch(device_of, orders)
        samples = self._samples(batch.makespan)
        self.failures += int((~batch.feasible).sum())
        return [s if ok else None for s, ok in zip(samples, batch.feasible, strict=True)]

    def costs(self, device_of: np.ndarray, orders: Any, objective: str):
        """All rows in one compiled simulation (what batched search calls)."""
        check_objective(objective)
        rows = self._measure_rows(np.atleast_2d(np.asarray(device_of, dtype=np.int64)))
        infeasible = np.array([s is None for s in rows], dtype=np.int64)
        value = np.array([0.0 if s is None else self.latency(s) for s in rows])
        return infeasible, value


def roofline_latency(
    graph: Graph, kinds: list[str], *, noise: float = 0.0, seed: int = 0
) -> SimulatedLatency:
    """A ``SimulatedLatency`` for devices of the ``ROOFLINES`` kinds (``"cpu"``,
    ``"gpu"``): each op's seconds from ``estimate_runtimes`` with the kind's roofline,
    transfers over ``SIMULATED_LINK``, 64 GiB per device."""
    unknown = [k for k in kinds if k not in ROOFLINES]
    if unknown:
        raise InputError(f"no simulated device kind {unknown[0]!r} (known: cpu, gpu)")
    runtimes = np.stack(
        [estimate_runtimes(graph, peak_flops=f, bandwidth=b, launch=s)
         for f, b, s in (ROOFLINES[k] for k in kinds)], axis=1,
    )  # fmt: skip
    devices = Devices(
        tuple(DeviceSpec(memory=64 * GIB) for _ in kinds),
        latency=SIMULATED_LINK[0],
        bandwidth=SIMULATED_LINK[1],
    )
    return SimulatedLatency(graph, devices, runtimes, noise=noise, seed=seed)


@dataclass(frozen=True)
class Profile:
    """Per-op seconds measured on real devices and a fitted transfer cost.

    ``seconds[i][k]``: the median time of op ``names[i]`` on device ``devices[k]``;
    ``latency`` (s) and ``bandwidth`` (bytes/s) fit ``latency + bytes / bandwidth`` to
    copy benchmarks between the devices (``copies``: ``[bytes, seconds]`` pairs).
    ``whole[k]`` (optional): the measured latency of the whole graph run on device ``k``
    alone, to which ``ProfiledLatency(calibrate=True)`` scales that device's op times.
    ``label`` says what was measured where (e.g. a CPU-only profile).
    """

    label: str
    model: str
    devices: tuple[str, ...]
    names: tuple[str, ...]
    seconds: tuple[tuple[float, ...], ...]
    latency: float
    bandwidth: float
    copies: tuple[tuple[float, float], ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    whole: tuple[float, ...] = ()

    def write(self, path: str | Path) -> Path:
        """Write the profile as JSON, atomically."""
        return write_text_atomic(path, json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> "Profile":
        """A profile written by ``write``; a bad file is a one-line ``InputError``."""
        try:
            data = json.loads(Path(path).read_text())
            profile = cls(
                label=str(data["label"]),
                model=str(data["model"]),
                devices=tuple(data["devices"]),
                names=tuple(data["names"]),
                seconds=tuple(tuple(float(s) for s in row) for row in data["seconds"]),
                latency=float(data["latency"]),
                bandwidth=float(data["bandwidth"]),
                copies=tuple(tuple(c) for c in data.get("copies", ())),
                meta=dict(data.get("meta", {})),
                whole=tuple(float(s) for s in data.get("whole", ())),
            )
        except KeyError as exc:
            raise InputError(f"cannot read the latency profile {path}: no field {exc}") from None
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"cannot read the latency profile {path}: {exc}") from None
        if len(profile.seconds) != len(profile.names):
            raise InputError(
                f"profile {path}: {len(profile.names)} op names but "
                f"{len(profile.seconds)} rows of times"
            )
        if any(len(row) != len(profile.devices) for row in profile.seconds):
            raise InputError(
                f"profile {path}: every op needs one time per device "
                f"({len(profile.devices)}: {', '.join(profile.devices)})"
            )
        if profile.whole and (
            len(profile.whole) != len(profile.devices) or min(profile.whole) <= 0
        ):
            raise InputError(f"profile {path}: 'whole' needs one positive latency per device")
        return profile


def fit_transfer(copies: np.ndarray) -> tuple[float, float]:
    """``seconds = latency + bytes / bandwidth`` over ``(bytes, seconds)`` rows, fitted by
    least squares on the relative error: the sizes span five orders of magnitude, and an
    absolute fit lets the largest copies set the line alone (on an H100 it gave BERT's
    transfers 0 us latency while 1 KiB copies took 17-35 us). Latency clipped at 0,
    bandwidth infinite when the fitted slope is not > 0."""
    copies = np.asarray(copies, dtype=np.float64)
    design = np.stack([np.ones(len(copies)), copies[:, 0]], axis=1) / copies[:, 1:2]
    (latency, per_byte), *_ = np.linalg.lstsq(design, np.ones(len(copies)), rcond=None)
    return max(float(latency), 0.0), (1.0 / per_byte if per_byte > 0 else math.inf)


class ProfiledLatency(SimulatedLatency):
    """The simulator with a ``Profile``'s op times and transfer cost (module docstring).

    Every graph node must have a row in the profile (matched by name); devices have
    no memory limit (the profile does not record one). With ``calibrate`` and a profile
    that holds each device's measured whole-graph latency (``Profile.whole``), every op
    time on device ``k`` is scaled by ``whole[k] / sum_i seconds[i][k]``, so that a
    single-device placement predicts its measured latency: an op timed alone, with the
    devices synchronised around it, also holds a launch and a synchronisation (on an
    H100 the sums of GPU op times are 1.8 to 3 times the whole graph's latency). Off by
    default: on an H100 it did not rank measured placements better (``docs/hsdag.md``,
    "Calibrated op times").
    """

    def __init__(
        self,
        graph: Graph,
        profile: Profile,
        *,
        noise: float = 0.0,
        seed: int = 0,
        calibrate: bool = False,
    ):
        row = {name: i for i, name in enumerate(profile.names)}
        missing = [name for name in graph.names if name not in row]
        if missing:
            measured_with = profile.meta.get("torch")
            hint = (
                f" (it was measured with PyTorch {measured_with}, whose export can name "
                "ops differently)"
                if measured_with is not None
                else ""
            )
            raise InputError(
                f"profile {profile.model!r} has no time for op {missing[0]!r} "
                f"({len(missing)} of {graph.num_nodes} ops missing){hint}: profile this "
                "model with this PyTorch"
            )
        seconds = np.asarray(profile.seconds, dtype=np.float64)
        runtimes = seconds[[row[name] for name in graph.names]]
        if calibrate and profile.whole:
            runtimes = runtimes * (np.asarray(profile.whole) / runtimes.sum(axis=0))
        devices = Devices(
            tuple(DeviceSpec(memory=math.inf) for _ in profile.devices),
            latency=profile.latency,
            bandwidth=profile.bandwidth,
        )
        super().__init__(graph, devices, runtimes, noise=noise, seed=seed)
        self.profile = profile
