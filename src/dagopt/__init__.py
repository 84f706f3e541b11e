"""dagopt: optimize computation graphs (execution order for peak memory, placement, cost models)."""

import os

# numba's parallel kernels and torch share the cores. With OpenMP's default active
# waiting, idle worker threads spin and starve other work on the same cores, which
# slows training by several times when another process is busy (benchmarks/omp_wait.py
# measures both policies, idle and busy). Passive waiting is set before either library
# loads its OpenMP runtime; a value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from dagopt.errors import DagoptError, GraphError, InputError, OrderError, SolverError
from dagopt.graph import Graph

__all__ = ["DagoptError", "Graph", "GraphError", "InputError", "OrderError", "SolverError"]
__version__ = "0.1.0"
