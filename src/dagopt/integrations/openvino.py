"""Measured latency of device placements on OpenVINO (paper 004, section 3).

``OpenVinoLatency`` is a ``dagopt.objectives.costmodel.CostModel`` that runs a
placement for real: every op of the model gets the OpenVINO device of its graph node as
its ``affinity`` (constant ops take their first consumer's), the model is compiled on
the ``HETERO`` device with those devices, and inference on a fixed random input is
timed ``runs`` times; the latency is the mean of the last ``keep`` (the paper's
protocol: 10 runs, the mean of the last 5). OpenVINO picks the execution order, so the
orders placers pass are ignored. A placement OpenVINO cannot compile or run is
infeasible (and counted in ``failures``), never a crash.

On a machine without a second device, ``register_cpu_twice`` registers the CPU plugin a
second time under another name, so HETERO splits a model between two CPU "devices":
what the tests use to check that a split model computes what the whole one does.
"""

import glob
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from dagopt.errors import InputError
from dagopt.io.openvino import graph_from_openvino, placeable_ops
from dagopt.objectives.costmodel import Evaluation, check_objective
from dagopt.objectives.devices import Devices, DeviceSpec


def register_cpu_twice(core: Any, name: str = "CPU_B") -> str:
    """Register OpenVINO's CPU plugin again as device ``name`` (if not yet there)."""
    if name not in core.available_devices:
        import openvino

        folder = os.path.join(os.path.dirname(openvino.__file__), "libs")
        plugins = glob.glob(os.path.join(folder, "*openvino_intel_cpu_plugin*"))
        if not plugins:
            raise InputError(f"OpenVINO's CPU plugin is not in {folder}")
        core.register_plugin(plugins[0], name)
    return name


class OpenVinoLatency:
    """Latency of placements of ``model`` on the OpenVINO devices ``device_names``
    (module docstring). ``graph`` is the model's ``Graph``, the one placers place."""

    objectives = ("runtime",)
    uses_order = False

    def __init__(
        self,
        model: Any,
        device_names: Sequence[str],
        *,
        core: Any = None,
        runs: int = 10,
        keep: int = 5,
        seed: int = 0,
    ) -> None:
        import openvino

        if not 1 <= keep <= runs:
            raise InputError(f"need 1 <= keep <= runs, got keep={keep}, runs={runs}")
        self.core = core if core is not None else openvino.Core()
        unknown = [d for d in device_names if d not in self.core.available_devices]
        if unknown:
            known = ", ".join(self.core.available_devices)
            raise InputError(f"no OpenVINO device {unknown[0]!r} (available: {known})")
        self.model, self.device_names = model, tuple(device_names)
        self.graph = graph_from_openvino(model)
        self.devices = Devices(tuple(DeviceSpec(memory=math.inf) for _ in device_names))
        self.runs, self.keep, self.failures = runs, keep, 0
        self._kept, self._folded = placeable_ops(model)
        rng = np.random.default_rng(seed)
        self.inputs = [
            rng.standard_normal(tuple(p.get_shape())).astype(p.get_element_type().to_dtype())
            for p in model.get_parameters()
        ]

    def _compile(self, device_of: np.ndarray) -> Any:
        device_of = np.asarray(device_of, dtype=np.int64)
        if (
            device_of.shape != (len(self._kept),)
            or not ((device_of >= 0) & (device_of < len(self.device_names))).all()
        ):
            raise InputError(
                f"a placement needs a device in 0..{len(self.device_names) - 1} "
                f"for each of the {len(self._kept)} ops"
            )
        device = {id(op): self.device_names[d] for op, d in zip(self._kept, device_of, strict=True)}
        for op in reversed(self._folded):  # a constant goes where its first reader runs
            readers = [t.get_node() for o in op.outputs() for t in o.get_target_inputs()]
            placed = [device[id(r)] for r in readers if id(r) in device]
            device[id(op)] = placed[0] if placed else self.device_names[0]
        for op in [*self._kept, *self._folded]:
            op.get_rt_info()["affinity"] = device[id(op)]
        priorities = ",".join(self.device_names)
        return self.core.compile_model(
            self.model, "HETERO", {"MULTI_DEVICE_PRIORITIES": priorities}
        )

    def outputs(self, device_of: np.ndarray) -> list[np.ndarray]:
        """The model's outputs on ``self.inputs`` under the placement ``device_of``."""
        compiled = self._compile(device_of)
        return [np.asarray(v) for v in compiled(self.inputs).values()]

    def measure(self, device_of: np.ndarray) -> np.ndarray | None:
        """``runs`` latencies (seconds) of the placement, or None when it fails."""
        try:
            request = self._compile(device_of).create_infer_request()
            samples = []
            for _ in range(self.runs):
                began = time.perf_counter()
                request.infer(self.inputs)
                samples.append(time.perf_counter() - began)
        except RuntimeError:
            self.failures += 1
            return None
        return np.array(samples)

    def evaluate(self, device_of: np.ndarray, order: np.ndarray, objective: str) -> Evaluation:
        check_objective(objective)
        if objective not in self.objectives:
            raise InputError("a measured latency model scores the runtime objective only")
        samples = self.measure(device_of)
        if samples is None:
            return Evaluation(cost=(1, 0.0), makespan=math.inf, feasible=False)
        latency = float(samples[-self.keep :].mean())
        return Evaluation(cost=(0, latency), makespan=latency, feasible=True, samples=samples)

    def costs(
        self, device_of: np.ndarray, orders: np.ndarray, objective: str
    ) -> tuple[np.ndarray, np.ndarray]:
        rows = [self.evaluate(row, None, objective).cost for row in np.atleast_2d(device_of)]
        return (
            np.array([r[0] for r in rows], dtype=np.int64),
            np.array([r[1] for r in rows], dtype=np.float64),
        )

    def lower_bound(self, objective: str) -> float | None:
        return None
