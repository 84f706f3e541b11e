"""Access to the ordering-solver registry, importing the solvers only when a command needs them."""

import importlib

from dagopt.schedule.base import SOLVERS, SolverSpec


def solver_registry() -> dict[str, SolverSpec]:
    """Every registered ordering solver by name (``import dagopt.schedule`` registers them)."""
    importlib.import_module("dagopt.schedule")
    return SOLVERS
