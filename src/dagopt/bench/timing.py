"""Wall-clock timing for the benchmarks."""

import time
from collections.abc import Callable


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """The least wall time of ``repeat`` calls of ``fn``, in seconds (noise only adds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def format_seconds(value: float) -> str:
    """A duration for tables: 3 significant digits, whole seconds from 100 s on."""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"
