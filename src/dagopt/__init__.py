"""dagopt: optimize computation graphs (execution order for peak memory, placement, cost models)."""

from dagopt.errors import DagoptError, GraphError, InputError, OrderError, SolverError
from dagopt.graph import Graph

__all__ = ["DagoptError", "Graph", "GraphError", "InputError", "OrderError", "SolverError"]
__version__ = "0.1.0"
