"""The devices a graph is placed on (paper 003, section 3.1; paper 004, section 3).

A ``DeviceSpec`` is one device's speed factor and memory limit; ``Devices`` is a set of
them with the link between every pair. Cost models (``dagopt.objectives.placement``,
``dagopt.objectives.costmodel``) and placers read them.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from dagopt.errors import InputError

GIB = float(2**30)


@dataclass(frozen=True)
class DeviceSpec:
    """One device: ``speed`` divides op runtimes; ``memory`` is its limit in bytes.

    The speed applies to runtimes given once per op (seconds on a speed-1 device);
    runtimes given per op and device (an ``(n, d)`` matrix) already hold each device's
    time and are not divided (``dagopt.objectives.placement.op_durations``).
    """

    speed: float = 1.0
    memory: float = 16 * GIB

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise InputError(f"device speed must be finite and > 0, got {self.speed}")
        if not self.memory > 0:
            raise InputError(f"device memory limit must be > 0 bytes, got {self.memory}")


@dataclass(frozen=True)
class Devices:
    """The devices and the link between them; the default is section 3.1's setup.

    Two homogeneous 16 GiB devices with free transfers (zero ``latency`` in seconds,
    infinite ``bandwidth`` in bytes per second).
    """

    specs: tuple[DeviceSpec, ...] = field(default_factory=lambda: (DeviceSpec(), DeviceSpec()))
    latency: float = 0.0
    bandwidth: float = math.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "specs", tuple(self.specs))
        if not self.specs:
            raise InputError("at least one device is needed")
        if not all(isinstance(spec, DeviceSpec) for spec in self.specs):
            raise InputError("devices must be DeviceSpec objects")
        if not (math.isfinite(self.latency) and self.latency >= 0):
            raise InputError(f"transfer latency must be finite and >= 0, got {self.latency}")
        if not self.bandwidth > 0:
            raise InputError(f"transfer bandwidth must be > 0, got {self.bandwidth}")

    @classmethod
    def homogeneous(
        cls,
        count: int = 2,
        *,
        speed: float = 1.0,
        memory: float = 16 * GIB,
        latency: float = 0.0,
        bandwidth: float = math.inf,
    ) -> "Devices":
        """``count`` identical devices."""
        if count < 1:
            raise InputError(f"at least one device is needed, got {count}")
        spec = DeviceSpec(speed=speed, memory=memory)
        return cls((spec,) * count, latency=latency, bandwidth=bandwidth)

    @property
    def count(self) -> int:
        return len(self.specs)

    @property
    def speeds(self) -> np.ndarray:
        return np.array([spec.speed for spec in self.specs], dtype=np.float64)

    @property
    def memory_limits(self) -> np.ndarray:
        return np.array([spec.memory for spec in self.specs], dtype=np.float64)
