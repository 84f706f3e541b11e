"""Registries of solvers by name: the ordering solvers (``dagopt.schedule``) and the
placement solvers (``dagopt.place``) share this mechanism.

A registry maps a name to a ``MethodSpec`` (the function, a one-line summary, the
options it takes); ``lookup`` and ``check_options`` turn a bad name or option into a
one-line ``InputError``.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dagopt.errors import InputError


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


class Registry(dict[str, MethodSpec]):
    """Name -> ``MethodSpec``; ``kind`` names the entries in error messages."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def register(self, name: str, summary: str, options: tuple[str, ...] = ()) -> Callable:
        """Decorator adding a solver under ``name``."""

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self[name] = MethodSpec(name=name, fn=fn, summary=summary, options=options)
            return fn

        return wrap

    def lookup(self, name: str) -> MethodSpec:
        """The spec of ``name``; an unknown name is an ``InputError`` listing the known ones."""
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self))
            raise InputError(f"unknown {self.kind} {name!r} (known: {known})") from None
