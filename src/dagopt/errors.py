"""Exceptions a user can cause. Each carries a one-line message the CLI prints before exiting 2."""

from dataclasses import fields


class DagoptError(Exception):
    """Base class of every error dagopt raises for bad input or an impossible request."""


class GraphError(DagoptError):
    """The graph is malformed: a cycle, a self-loop, an unknown node or a bad size."""


class OrderError(DagoptError):
    """An execution order is not a topological order of its graph."""


class InputError(DagoptError):
    """A file or an argument cannot be used (unreadable, wrong format, unknown method...)."""


class SolverError(DagoptError):
    """A solver cannot finish the request (state budget exhausted, bad option...)."""


class DagoptWarning(UserWarning):
    """Something the user should know that does not stop the work (graphs left out of a
    training set...). The CLI prints it as one line ``warning: <message>`` on stderr."""


def is_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a Ctrl-C: a ``KeyboardInterrupt``, or the ``SystemError`` numba
    raises in its place when the interrupt lands while compiled code runs ("returned a
    result with an exception set", caused by the ``KeyboardInterrupt`` or by another
    such ``SystemError``)."""
    while isinstance(exc, SystemError):
        exc = exc.__cause__ or exc.__context__
    return isinstance(exc, KeyboardInterrupt)


def reject_unknown_keys(data, dataclass_type: type, what: str) -> None:
    """Raise ``InputError`` naming the first key of ``data`` that is not a field of
    ``dataclass_type`` (``what`` says what the keys are, e.g. "training option")."""
    known = {f.name for f in fields(dataclass_type)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"unknown {what} {unknown[0]!r}")
