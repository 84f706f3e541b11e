"""``dagopt examples``: write the shipped example files into a folder."""

from pathlib import Path
from typing import Annotated

import typer

from dagopt.cli.output import console
from dagopt.data import EXAMPLE_FILES, example_bytes
from dagopt.errors import InputError
from dagopt.io.atomic import write_bytes_atomic


def examples(
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="DIR", help="Folder to write them into.")
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace files already there.")] = False,
) -> None:
    """Write the example files into a folder (--out DIR, default the current one).

    A graph, a small ONNX CNN, quick training configs and two TpuGraphs files."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: is a file, not a directory")
    targets = [out / name for name in EXAMPLE_FILES]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        raise InputError(f"{existing[0]} exists; pass --force to replace the example files")
    folder = next((t for t in targets if t.is_dir()), None)  # checked before any is written
    if folder is not None:
        raise InputError(f"{folder}: is a directory, not a file; nothing written")
    for name, target in zip(EXAMPLE_FILES, targets, strict=True):
        write_bytes_atomic(target, example_bytes(name))
    console.print(f"wrote {', '.join(str(t) for t in targets)}", markup=False)
