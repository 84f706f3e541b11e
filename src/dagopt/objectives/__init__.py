"""Objectives: the single source of truth for every number a solver reports."""

from dagopt.objectives.memory import (
    MemoryProfile,
    lower_bound,
    memory_profile,
    peak_memory,
    validate_order,
)
from dagopt.objectives.state import MemoryState

__all__ = [
    "MemoryProfile",
    "MemoryState",
    "lower_bound",
    "memory_profile",
    "peak_memory",
    "validate_order",
]
