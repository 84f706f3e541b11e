"""Placement solvers (paper 003): a device per op and an order, one signature, a registry."""

from dagopt.place import baselines, brkga, cpsat, prior, regal, tuning  # noqa: F401  (registers placers)
from dagopt.place.base import (
    PLACERS,
    Placement,
    PlacementProblem,
    PlacerResult,
    get_placer,
    place,
    register_placer,
)

__all__ = [
    "PLACERS",
    "Placement",
    "PlacementProblem",
    "PlacerResult",
    "get_placer",
    "place",
    "register_placer",
]
