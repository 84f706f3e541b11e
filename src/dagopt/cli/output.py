"""Shared console output: number formatting, the rich consoles, and user-error reporting."""

import typer
from rich.console import Console

#: Results (tables, summary lines, notes) go to stdout; progress and spinners go to stderr.
console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

#: Exit status for every error a user can cause (usage errors exit 2 as well).
USER_ERROR_EXIT = 2


def fmt_mem(value: float) -> str:
    """A memory size (peak, bound) with 6 significant digits."""
    return f"{value:.6g}"


def fmt_proved(proved: bool | None) -> str:
    """``yes`` only when the solver proved its order optimal."""
    return "yes" if proved else "no"


def fail(message: str) -> typer.Exit:
    """Print ``error: <message>`` as one line on stderr; return the exit to raise."""
    one_line = " ".join(str(message).splitlines())
    typer.echo(f"error: {one_line}", err=True)
    return typer.Exit(USER_ERROR_EXIT)
