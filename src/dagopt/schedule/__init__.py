"""Ordering solvers: one signature, a registry by name (``SOLVERS``, which imports a
solver's module when the solver is first asked for), ``solve`` to run one."""

from dagopt.schedule.base import SOLVERS, Schedule, SolverResult, get_solver, register, solve

__all__ = ["SOLVERS", "Schedule", "SolverResult", "get_solver", "register", "solve"]
