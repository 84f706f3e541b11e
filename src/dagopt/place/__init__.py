"""Placement solvers (paper 003): a device per op and an order, one signature, a registry
(``PLACERS``, which imports a placer's module when the placer is first asked for)."""

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
