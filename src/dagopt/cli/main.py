"""The ``dagopt`` application: wires the commands together and turns user errors into exit 2.

Every ``DagoptError`` (bad file, cyclic graph, unknown method...) and every OS error
(missing or unwritable file) raised by a command is printed as one line
``error: <message>`` on stderr and exits with status 2, like typer's usage errors.
Ctrl-C prints ``error: interrupted`` and exits 130 (128 + SIGINT), as a shell does;
outputs are written atomically, so an interrupted command leaves no partial file.
"""

from typing import Any

import typer
from typer.core import TyperGroup

from dagopt.cli.demo import demo
from dagopt.cli.examples import examples
from dagopt.cli.generate import generate_app
from dagopt.cli.imports import export_onnx, import_model
from dagopt.cli.methods import methods
from dagopt.cli.output import INTERRUPTED_EXIT, fail
from dagopt.cli.place import evaluate_placement, place_command
from dagopt.cli.schedule import evaluate, schedule
from dagopt.cli.train import train_app
from dagopt.cli.zoo import zoo_app
from dagopt.errors import DagoptError


class _UserErrorGroup(TyperGroup):
    """Root command group that reports user errors in one line instead of a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except DagoptError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise fail(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            raise fail("interrupted", INTERRUPTED_EXIT) from None


app = typer.Typer(
    cls=_UserErrorGroup,
    name="dagopt",
    help="Optimize computation graphs: execution orders that minimize peak memory.",
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
