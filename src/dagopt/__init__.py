"""dagopt: optimize computation graphs (execution order for peak memory, placement, cost models)."""

import os
import sys

# Thread pools (benchmarks/thread_pools.py measures every case). OpenMP threads that
# spin while idle starve numba's kernels, torch and other processes on the same cores,
# so OpenMP waits passively. That setting only reaches an OpenMP runtime loaded after
# this line: when torch (with its OpenMP runtime) is already loaded and the user set no
# policy, the numba kernels use numba's own "workqueue" pool instead, which is slower
# than OpenMP with passive waiting but unaffected by torch's spinning threads.
# Environment variables the user set win. numba itself is imported only by the modules
# that hold kernels (a later import reads the setting from the environment).
if (
    "torch" in sys.modules
    and "OMP_WAIT_POLICY" not in os.environ
    and "NUMBA_THREADING_LAYER" not in os.environ
):
    if "numba" in sys.modules:
        sys.modules["numba"].config.THREADING_LAYER = "workqueue"
    else:
        os.environ["NUMBA_THREADING_LAYER"] = "workqueue"
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from dagopt.errors import DagoptError, GraphError, InputError, OrderError, SolverError
from dagopt.graph import Graph

__all__ = ["DagoptError", "Graph", "GraphError", "InputError", "OrderError", "SolverError"]
__version__ = "0.1.0"
