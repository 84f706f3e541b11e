"""Measured latency of device placements on OpenVINO (paper 004, section 3).

``OpenVinoLatency`` is a latency environment (``dagopt.objectives.latency.LatencyModel``,
hence a ``CostModel``) that runs a placement for real: every op of the model gets the
OpenVINO device of its graph node as its ``affinity`` (constant ops take their first
consumer's), the model is compiled on the ``HETERO`` device with those devices, and
inference on a fixed random input is timed ``runs`` times; the latency is the mean of
the last ``keep`` (the paper's protocol: 10 runs, the mean of the last 5). OpenVINO
picks the execution order, so the orders placers pass are ignored. A placement
OpenVINO cannot compile or run is infeasible (and counted in ``failures``), never a
crash. ``measure_auto`` times the framework's own choice (section 3.3): OpenVINO's
``AUTO`` device or ``HETERO`` without affinities.

Every device runs at one inference precision, ``precision`` (``"f32"``, the model's own):
OpenVINO's CPU plugin otherwise picks bf16 on CPUs with AVX512-BF16 or AMX and its GPU
plugin f16, so a placement's latency would time other arithmetic on another machine and
a split model would not compute what the whole one does. ``None`` keeps each plugin's
default.

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
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.objectives.latency import LatencyModel

PRECISIONS = ("f32", "f16", "bf16", None)


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


class OpenVinoLatency(LatencyModel):
    """Latency of placements of ``model`` on the OpenVINO devices ``device_names``
    (module docstring). ``graph`` is the model's ``Graph``, the one placers place."""

    def __init__(
        self,
        model: Any,
        device_names: Sequence[str],
        *,
        core: Any = None,
        runs: int = 10,
        keep: int = 5,
        seed: int = 0,
        precision: str | None = "f32",
    ) -> None:
        import openvino

        self.core = core if core is not None else openvino.Core()
        unknown = [d for d in device_names if d not in self.core.available_devices]
        if unknown:
            known = ", ".join(self.core.available_devices)
            raise InputError(f"no OpenVINO device {unknown[0]!r} (available: {known})")
        self.model, self.device_names = model, tuple(device_names)
        if precision not in PRECISIONS:
            raise InputError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        self.precision = precision
        devices = Devices(tuple(DeviceSpec(memory=math.inf) for _ in device_names))
        super().__init__(graph_from_openvino(model), devices, runs=runs, keep=keep)
        self._kept, self._folded = placeable_ops(model)
        rng = np.random.default_rng(seed)
        self.inputs = [
            rng.standard_normal(tuple(p.get_shape())).astype(p.get_element_type().to_dtype())
            for p in model.get_parameters()
        ]

    def _compile(self, device_of: np.ndarray) -> Any:
        device_of = self.check_placement(device_of)
        device = {id(op): self.device_names[d] for op, d in zip(self._kept, device_of, strict=True)}
        for op in reversed(self._folded):  # a constant goes where its first reader runs
            readers = [t.get_node() for o in op.outputs() for t in o.get_target_inputs()]
            placed = [device[id(r)] for r in readers if id(r) in device]
            device[id(op)] = placed[0] if placed else self.device_names[0]
        for op in [*self._kept, *self._folded]:
            op.get_rt_info()["affinity"] = device[id(op)]
        return self.core.compile_model(self.model, "HETERO", self._config())

    def _config(self) -> dict[str, Any]:
        """HETERO's (or AUTO's) devices in priority order, each at ``precision``."""
        names = list(dict.fromkeys(self.device_names))
        config: dict[str, Any] = {"MULTI_DEVICE_PRIORITIES": ",".join(names)}
        if self.precision is not None:
            hint = {"INFERENCE_PRECISION_HINT": self.precision}
            config["DEVICE_PROPERTIES"] = {name: hint for name in names}
        return config

    def outputs(self, device_of: np.ndarray) -> list[np.ndarray]:
        """The model's outputs on ``self.inputs`` under the placement ``device_of``."""
        compiled = self._compile(device_of)
        return [np.asarray(v) for v in compiled(self.inputs).values()]

    def _time(self, compiled: Any) -> np.ndarray:
        request = compiled.create_infer_request()
        samples = []
        for _ in range(self.runs):
            began = time.perf_counter()
            request.infer(self.inputs)
            samples.append(time.perf_counter() - began)
        return np.array(samples)

    def measure(self, device_of: np.ndarray) -> np.ndarray | None:
        """``runs`` latencies (seconds) of the placement, or None when it fails."""
        try:
            return self._time(self._compile(device_of))
        except RuntimeError:
            self.failures += 1
            return None

    def measure_auto(self, device: str = "AUTO") -> np.ndarray | None:
        """``runs`` latencies of the framework's own placement: the model compiled on
        ``AUTO`` (OpenVINO picks one device) or on ``HETERO`` with no affinity set
        (OpenVINO's automatic affinities), over ``device_names``; None when it fails."""
        if device not in ("AUTO", "HETERO"):
            raise InputError(f"the framework's choice is AUTO or HETERO, not {device!r}")
        for op in self.model.get_ordered_ops():
            info = op.get_rt_info()
            if "affinity" in info:
                del info["affinity"]  # HETERO assigns affinities itself
        try:
            compiled = self.core.compile_model(self.model, device, self._config())
            return self._time(compiled)
        except RuntimeError:
            self.failures += 1
            return None
