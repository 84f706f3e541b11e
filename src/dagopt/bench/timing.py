"""Wall-clock timing for the benchmarks."""

import multiprocessing
import resource
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


def peak_rss_mb() -> float:
    """This process's peak resident set so far (``ru_maxrss``), MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_fresh_process(function: Callable[..., object], *args: object) -> object:
    """``function(*args)`` in a fresh spawned process, so that its ``peak_rss_mb`` and
    one-time set-up are its own; ``function`` must be importable (module level)."""
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        return pool.apply(function, args)
