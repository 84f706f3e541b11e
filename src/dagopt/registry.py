"""Registries of solvers by name: the ordering solvers (``dagopt.schedule``) and the
placement solvers (``dagopt.place``) share this mechanism.

A registry maps a name to a ``MethodSpec`` (the function, a one-line summary, the
options it takes); ``lookup`` and ``check_options`` turn a bad name or option into a
one-line ``InputError``.
"""

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagopt.errors import InputError

#: The largest seed a command takes (a signed 64-bit integer, as numba kernels need).
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class MethodSpec:
    """A registered solver: its function, summary and the options it accepts."""

    name: str
    fn: Callable[..., Any]
    summary: str
    options: tuple[str, ...] = ()

    def check_options(self, given: Iterable[str]) -> None:
        """Raise ``InputError`` for the first option the method does not take."""
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            allowed = ", ".join(self.options) or "none"
            raise InputError(
                f"method {self.name!r} has no option {unknown[0]!r} (options: {allowed})"
            )


class Registry:
    """Name -> ``MethodSpec``; ``kind`` names the entries in error messages.

    The solvers register themselves with ``register`` when their module is imported;
    ``providers`` names those modules, imported only when needed (cheapest first): a
    lookup imports them one by one until the name turns up, and ``all`` imports every
    one. So running a classical method never pays for numba, torch or OR-Tools, and
    ``dagopt --help`` imports no solver at all.
    """

    def __init__(self, kind: str, providers: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._specs: dict[str, MethodSpec] = {}
        self._pending = list(providers)

    def register(self, name: str, summary: str, options: tuple[str, ...] = ()) -> Callable:
        """Decorator adding a solver under ``name``."""

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._specs:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._specs[name] = MethodSpec(name=name, fn=fn, summary=summary, options=options)
            return fn

        return wrap

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for solvers registered by tests)."""
        del self._specs[name]

    def _import_next(self) -> None:
        importlib.import_module(self._pending.pop(0))

    def lookup(self, name: str) -> MethodSpec:
        """The spec of ``name``; an unknown name is an ``InputError`` listing the known ones."""
        while name not in self._specs and self._pending:
            self._import_next()
        if name not in self._specs:
            known = ", ".join(self.all())
            raise InputError(f"unknown {self.kind} {name!r} (known: {known})")
        return self._specs[name]

    def all(self) -> dict[str, MethodSpec]:
        """Every registered spec by name, sorted (imports every provider)."""
        while self._pending:
            self._import_next()
        return dict(sorted(self._specs.items()))


def warm_up_key(method: str, options: dict[str, Any]) -> tuple[str, ...]:
    """What a solver's or placer's untimed warm-up run prepares: the method's compiled
    kernels and the model files it loads (``checkpoint``, ``guide``), so that a method
    first given another model loads it in a warm-up of its own, not in the timed run."""
    return (method, *(str(options.get(name)) for name in ("checkpoint", "guide")))


def check_run_arguments(seed: int | None, time_limit: float | None) -> None:
    """The arguments every solver and placer takes: ``seed`` ``None`` or an integer
    >= 0 (numpy's generators take no negative seed), ``time_limit`` ``None`` or >= 0."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InputError(f"seed must lie in 0..2**63-1, got {seed}")
    if time_limit is not None and not time_limit >= 0:
        raise InputError(f"time limit must be >= 0 seconds, got {time_limit}")


def time_left(time_limit: float | None, began: float) -> float | None:
    """What a solver's or placer's ``time_limit`` leaves for its search after the work
    done since ``began`` (``perf_counter`` seconds: a network's forward pass, a prior's
    order); ``None`` for no limit."""
    return None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - began))
