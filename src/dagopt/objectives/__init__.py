"""Objectives: the single source of truth for every number a solver reports."""

from dagopt.objectives.bounds import must_live_bound, must_live_memory
from dagopt.objectives.branch_bound import BranchBound, branch_bound
from dagopt.objectives.cut_bound import CutBound, cut_bound, meets_bound
from dagopt.objectives.memory import (
    MemoryProfile,
    lower_bound,
    memory_profile,
    peak_memory,
    validate_order,
)
from dagopt.objectives.state import MemoryState

__all__ = [
    "BranchBound",
    "CutBound",
    "MemoryProfile",
    "MemoryState",
    "branch_bound",
    "cut_bound",
    "lower_bound",
    "meets_bound",
    "memory_profile",
    "must_live_bound",
    "must_live_memory",
    "peak_memory",
    "validate_order",
]
