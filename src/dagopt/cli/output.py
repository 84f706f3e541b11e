"""Shared console output: number formatting, the rich consoles, and user-error reporting."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dagopt.errors import InputError
from dagopt.progress import reporting

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


def warn_line(message: str) -> None:
    """Print ``warning: <message>`` as one line on stderr (the work goes on)."""
    one_line = " ".join(str(message).splitlines())
    typer.echo(f"warning: {one_line}", err=True)


def check_output(out: Path | None, *inputs: Path) -> None:
    """Before any work, refuse an output path that cannot be written (``check_writable``)
    or that names one of the command's input files: writing it would destroy the input
    the command reads."""
    if out is None:
        return
    check_writable(out)
    for given in inputs:
        same = (
            os.path.samefile(out, given)
            if out.exists() and given.exists()
            else out.resolve() == given.resolve()
        )
        if same:
            raise InputError(f"{out}: is also an input of this command; write elsewhere")


def progress_bar() -> Progress:
    """A progress bar on a terminal's stderr (description, bar, done/total, elapsed time),
    erased when done so that an error stays the only line there; none when stderr is
    not a terminal (logs get the result lines on stdout only)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(
        *columns,
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )


@contextmanager
def progress_on_terminal() -> Iterator[None]:
    """Show what ``dagopt.progress.report`` says inside the block on a terminal's
    stderr; report nothing when stderr is piped."""
    with progress_bar() as bar:
        task = bar.add_task("starting", total=None)

        def update(stage: str, done: int | None, total: int | None) -> None:
            bar.update(task, description=stage, completed=done or 0, total=total)

        with reporting(update if err_console.is_terminal else None):
            yield


def fmt_seconds(seconds: float, setup: float = 0.0) -> str:
    """A solve's time, with one-time setup (compiling, loading) apart when it counts."""
    from dagopt.bench.timing import format_seconds

    line = f"{format_seconds(seconds)} s"
    if setup >= 0.05:
        line += f" (+ {format_seconds(setup)} s one-time setup)"
    return line


def check_writable(out: Path) -> None:
    """Fail before any work if ``out`` cannot be written: a directory, a file where a
    folder should be, or a folder that refuses a new file (probed with a temporary one)."""
    if out.is_dir():
        raise InputError(f"{out}: is a directory, not a file")
    folder = next(p for p in out.parents if p.exists())
    if not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a directory")
    if out.exists() and not out.is_file():  # /dev/null, a FIFO: written into, not replaced
        return
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise InputError(f"{out}: cannot write there ({exc.strerror})") from None
