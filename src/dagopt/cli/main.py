"""The ``dagopt`` application: wires the commands together and turns user errors into exit 2.

Every ``DagoptError`` (bad file, cyclic graph, unknown method...), every OS error
(missing or unwritable file) and every usage error (unknown option, a value out of
range, a missing argument) is printed as one line ``error: <message>`` on stderr and
exits with status 2; only a bare group (``dagopt``, ``dagopt train``) prints its help.
Running out of memory (a request the memory guards of ``dagopt.resources`` did not
foresee) is one line and exit 2 as well. Ctrl-C prints ``error: interrupted`` and exits
130 (128 + SIGINT), as a shell does; outputs are written atomically, so an interrupted
command leaves no partial file. A ``DagoptWarning`` (the work goes on) is one line
``warning: <message>`` on stderr, each distinct message once. Output cut short by its
reader (``| head``) ends the command quietly with status 1.
"""

import inspect
import os
import sys
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from dagopt.cli.demo import demo
from dagopt.cli.examples import examples
from dagopt.cli.generate import generate_app
from dagopt.cli.imports import export_onnx, export_pt2, import_model
from dagopt.cli.measure import measure
from dagopt.cli.methods import methods
from dagopt.cli.output import INTERRUPTED_EXIT, fail, warn_line
from dagopt.cli.place import evaluate_placement, place_command
from dagopt.cli.rank import rank
from dagopt.cli.schedule import evaluate, schedule
from dagopt.cli.train import train_app
from dagopt.cli.zoo import zoo_app
from dagopt.errors import DagoptError, DagoptWarning, is_interrupt


def _usage_error(exc: UsageError) -> typer.Exit:
    """A usage error as one ``error:`` line naming the command's help, instead of typer's
    multi-line panel, its white space folded (click lists choices on tab-indented lines).
    (typer >= 0.29 raises its own copy of click's exceptions.)"""
    message = " ".join(exc.format_message().split()).rstrip(".")
    if exc.ctx is not None:
        message += f"; see '{exc.ctx.command_path} --help'"
    return fail(message, exc.exit_code)


def _show_warning(
    python_shows: Callable[..., None],
    message: Warning | str,
    category: type[Warning],
    *args: Any,
    **kwargs: Any,
) -> None:
    """``warnings.showwarning`` for a command: a ``DagoptWarning`` as one ``warning:``
    line, any other warning as ``python_shows`` it."""
    if issubclass(category, DagoptWarning):
        warn_line(str(message))
    else:
        python_shows(message, category, *args, **kwargs)


def _unwrap_help(command: Any) -> None:
    """Join the source lines of each paragraph of ``command``'s help text and of its
    subcommands' (``--help`` wraps them to the terminal): typer >= 0.29 prints the
    single line breaks of the paragraphs after the first as they stand in the
    docstring, so they showed as ragged short lines. A paragraph that starts with
    ``\\b`` keeps its lines, as in click."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(
            p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs
        )
    for subcommand in getattr(command, "commands", {}).values():
        _unwrap_help(subcommand)


class _UserErrorGroup(TyperGroup):
    """Root command group that reports user errors in one line instead of a traceback.

    Usage errors of the root (``dagopt --bogus``) arise in ``make_context``, those of
    the commands (a bad option value) in ``invoke``, which parses the subcommand's
    arguments; both become one line. ``NoArgsIsHelpError`` (a group run without a
    command) keeps printing the help. Help texts are unwrapped (``_unwrap_help``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _unwrap_help(self)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            raise _usage_error(exc) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default", DagoptWarning)  # each message once
                warnings.showwarning = partial(_show_warning, warnings.showwarning)
                return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            raise _usage_error(exc) from None
        except DagoptError as exc:
            raise fail(str(exc)) from None
        except BrokenPipeError:  # stdout closed early (``dagopt methods | head -1``): quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise fail(f"{where}{exc.strerror or exc}") from None
        except MemoryError:
            raise fail(
                "out of memory; try a smaller graph, fewer graphs or a cheaper method"
            ) from None
        except KeyboardInterrupt:
            raise fail("interrupted", INTERRUPTED_EXIT) from None
        except SystemError as exc:
            if is_interrupt(exc):
                raise fail("interrupted", INTERRUPTED_EXIT) from None
            raise


app = typer.Typer(
    cls=_UserErrorGroup,
    name="dagopt",
    help="Optimize computation graphs: execution orders of least peak memory, device"
    " placements, and learned rankings of compiler configurations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
app.add_typer(generate_app, name="generate")
app.add_typer(train_app, name="train")
app.add_typer(zoo_app, name="zoo")
app.command()(schedule)
app.command()(evaluate)
app.command()(methods)
app.command("place")(place_command)
app.command("evaluate-placement")(evaluate_placement)
app.command()(demo)
app.command()(examples)
app.command("import")(import_model)
app.command("export-onnx")(export_onnx)
app.command("export-pt2")(export_pt2)
app.command()(measure)
app.command()(rank)
