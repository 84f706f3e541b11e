"""Memory guards: estimate what a computation needs before allocating it.

A search whose arrays would not fit stops with a one-line ``SolverError`` that says
what it needs, what is available and what would fit, instead of dying in the
allocator (``MemoryError``) or being killed by the kernel.
"""

import math
import os

from dagopt.errors import SolverError

GIB = float(2**30)


def available_bytes() -> float:
    """Memory the process can still take: ``MemAvailable`` of ``/proc/meminfo`` (Linux),
    else the free physical pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def check_fits(needed: float, what: str, advice: str) -> None:
    """Raise ``SolverError`` if ``needed`` bytes exceed 80 % of the available memory."""
    available = available_bytes()
    if needed > 0.8 * available:
        raise SolverError(
            f"{what} needs about {needed / GIB:.3g} GiB, more than 80 % of the "
            f"{available / GIB:.3g} GiB available; {advice}"
        )


def check_pairs_fit(num_nodes: int, bytes_per_pair: float, what: str, alternative: str) -> None:
    """``check_fits`` for dense ``(n, n)`` arrays that take ``bytes_per_pair`` bytes per
    ordered node pair in all; the advice names the largest node count that fits now and
    ``alternative`` (what to do for larger graphs)."""
    largest = math.isqrt(int(0.8 * available_bytes() / bytes_per_pair))
    check_fits(
        bytes_per_pair * float(num_nodes) ** 2,
        what,
        f"graphs of up to about {largest:,} nodes fit; {alternative}",
    )
