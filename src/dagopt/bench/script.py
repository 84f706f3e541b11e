"""What every script under ``benchmarks/`` shares: argument types and the way it ends.

``run_script(main)`` runs a script's ``main`` as the ``dagopt`` command runs a command:
a user error (``DagoptError``: a bad graph, an impossible request; ``OSError``: a
missing or unwritable file) is one line ``error: <message>`` on stderr and exit status
2, Ctrl-C is ``error: interrupted`` and 130, and ``main``'s return value is the status
otherwise. ``positive_int`` and ``non_negative_int`` are ``argparse`` types for counts,
so that ``--graphs 0`` is refused up front instead of printing an empty table;
``pattern`` one for regular expressions.
"""

import argparse
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from dagopt.errors import DagoptError, is_interrupt

#: Exit statuses, as the ``dagopt`` command's (``dagopt.cli.main``).
USER_ERROR_EXIT, INTERRUPTED_EXIT = 2, 130


def _integer(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1 (a count of graphs, runs, threads...)."""
    return _integer(text, 1)


def non_negative_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 0."""
    return _integer(text, 0)


def pattern(text: str) -> re.Pattern:
    """An ``argparse`` type: a regular expression (a bad one is a usage error)."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {exc}") from None


def run_script(main: Callable[[], int | None]) -> NoReturn:
    """Exit with ``main()``'s status, or with one ``error:`` line (module docstring)."""
    try:
        status = main()
    except (DagoptError, OSError) as exc:
        where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        sys.stderr.write(f"error: {where}{' '.join(str(reason).split())}\n")
        sys.exit(USER_ERROR_EXIT)
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        sys.stderr.write("error: interrupted\n")
        sys.exit(INTERRUPTED_EXIT)
    sys.exit(status or 0)
