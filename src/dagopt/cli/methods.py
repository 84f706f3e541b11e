"""``dagopt methods``: every registered ordering and placement solver."""

from rich.table import Table
from rich.text import Text

from dagopt.cli.output import console
from dagopt.registry import Registry


def _table(title: str, registry: Registry) -> Table:
    table = Table(title=title)
    table.add_column("method", no_wrap=True)
    table.add_column("options")
    table.add_column("summary")
    for name, spec in registry.all().items():
        table.add_row(Text(name), Text(", ".join(spec.options) or "-"), Text(spec.summary))
    return table


def methods() -> None:
    """List the registered ordering solvers and placement solvers."""
    from dagopt.place import PLACERS
    from dagopt.schedule import SOLVERS

    console.print(_table("ordering solvers (dagopt schedule)", SOLVERS))
    console.print(_table("placement solvers (dagopt place)", PLACERS))
