"""Shared console output: number formatting, the rich consoles, and user-error reporting."""

import os
from pathlib import Path

import typer
from rich.console import Console

from dagopt.errors import InputError

#: Results (tables, summary lines, notes) go to stdout; progress and spinners go to stderr.
console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

#: Exit status for every error a user can cause (usage errors exit 2 as well).
USER_ERROR_EXIT = 2
#: Exit status after Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED_EXIT = 130


def fmt_mem(value: float) -> str:
    """A memory size (peak, bound) with 6 significant digits."""
    return f"{value:.6g}"


def fmt_proved(proved: bool | None) -> str:
    """``yes`` only when the solver proved its order optimal."""
    return "yes" if proved else "no"


def fail(message: str, code: int = USER_ERROR_EXIT) -> typer.Exit:
    """Print ``error: <message>`` as one line on stderr; return the exit to raise."""
    one_line = " ".join(str(message).splitlines())
    typer.echo(f"error: {one_line}", err=True)
    return typer.Exit(code)


def check_output(out: Path | None, *inputs: Path) -> None:
    """Refuse an output path that names one of the command's input files: writing it
    would destroy the input the command reads."""
    if out is None:
        return
    for given in inputs:
        same = (
            os.path.samefile(out, given)
            if out.exists() and given.exists()
            else out.resolve() == given.resolve()
        )
        if same:
            raise InputError(f"{out}: is also an input of this command; write elsewhere")
