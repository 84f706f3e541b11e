"""Ordering solvers: one signature, a registry by name (``SOLVERS``), ``solve`` to run one."""

from dagopt.schedule import classic, dfs_dp, dp, inductor, neural  # noqa: F401  (registers solvers)
from dagopt.schedule.base import SOLVERS, Schedule, SolverResult, get_solver, register, solve

__all__ = ["SOLVERS", "Schedule", "SolverResult", "get_solver", "register", "solve"]
