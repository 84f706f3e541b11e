"""The cost-model interface placers search against (paper 003, A.1; paper 004, section 3).

A placer never scores a solution itself: it asks its problem's ``CostModel`` (003 A.1:
"our cost model simulates the execution of the computation graph"). A solution is a
device per op and an execution order. The model returns two things:

- ``costs``: lexicographic ``(infeasible, value)`` arrays for a batch of solutions,
  what search ranks by (003 A.2: feasible solutions first);
- ``evaluate``: one solution in full, an ``Evaluation``, which ``dagopt.place.place``
  reports.

Two kinds of model fit this interface, and neither has to invent fields:

- **Simulated** (``dagopt.objectives.placement.SimulatedCostModel``, the default):
  003 A.1's simulator built from op runtimes. It is deterministic, reads the order,
  scores ``runtime`` and ``peak-memory``, knows each device's peak, and has a lower
  bound.
- **Measured** (the latency environment of HSDAG, paper 004 section 3): it runs the
  placement on real devices and times it. The framework picks the execution order,
  so ``uses_order`` is False and the orders are ignored. Only ``runtime`` can be
  scored, so ``objectives == ("runtime",)``. The peak is not observed:
  ``peak_memory=None``. A run that ran out of memory is infeasible. The latency is
  noisy: ``makespan`` summarises repeated runs (004 Table 2 averages the last 5 of
  10), and ``samples`` keeps them. There is no lower bound: ``lower_bound`` returns
  None.
"""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dagopt.errors import InputError
from dagopt.objectives.devices import Devices

#: The objectives of paper 003, section 2.1: the makespan, and the largest peak memory
#: over the devices.
OBJECTIVES = ("runtime", "peak-memory")


@dataclass(frozen=True)
class Evaluation:
    """One solution scored in full by a cost model.

    ``cost`` is the lexicographic ``(infeasible, value)`` of ``placement_cost``: the
    makespan (``runtime``) or the largest peak (``peak-memory``) when feasible, else
    ``(1, overflow)``. ``makespan`` is in seconds (simulated, or a measured latency).
    ``peak_memory`` holds the bytes per device, or is None when the model does not
    observe memory. ``samples`` holds the repeated measurements behind ``makespan``
    for a noisy model, or is None for a deterministic one.
    """

    cost: tuple[int, float]
    makespan: float
    feasible: bool
    peak_memory: np.ndarray | None = None
    samples: np.ndarray | None = None


@runtime_checkable
class CostModel(Protocol):
    """What a placer needs from a cost model (the module docstring names the two kinds).

    ``devices`` are the devices solutions place ops on. ``objectives`` are the ones the
    model can score (a subset of ``placement.OBJECTIVES``). ``uses_order`` is False
    when the model ignores the order because something else (a framework's scheduler)
    decides it. ``device_of`` and ``orders`` are ``(B, n)`` integer arrays (one row
    per solution). The orders are topological: placers decode them, and a model that
    ignores them still receives them. A model may also have a ``runtimes`` attribute
    (op runtime estimates, ``(n,)`` or ``(n, d)``): ``PlacementProblem.runtimes`` and
    ``PlacementProblem.speeds`` read it for placers that need runtimes of their own
    (REGAL's features, the device choice of ``single-device`` and ``gp-dfs``).
    """

    devices: Devices
    objectives: tuple[str, ...]
    uses_order: bool

    def costs(
        self, device_of: np.ndarray, orders: np.ndarray, objective: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lexicographic ``(infeasible, value)`` per row; rank by ``numpy.lexsort``."""
        ...

    def evaluate(self, device_of: np.ndarray, order: np.ndarray, objective: str) -> Evaluation:
        """One solution (``(n,)`` arrays) in full."""
        ...

    def lower_bound(self, objective: str) -> float | None:
        """A value no solution can beat, or None when the model knows none."""
        ...


def check_objective(objective: str) -> None:
    """Raise ``InputError`` unless ``objective`` is one of ``OBJECTIVES``."""
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
