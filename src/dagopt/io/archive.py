"""The checks every reader of a zip-based file format makes before opening it."""

import zipfile
from pathlib import Path

from dagopt.errors import InputError


def check_zip_file(file: Path, kind: str, not_zip: str) -> None:
    """One-line ``InputError`` unless ``file`` is a zip archive: a directory (not a
    ``kind``), a missing file, or another format (``not_zip``)."""
    if file.is_dir():
        raise InputError(f"{file}: is a directory, not {kind}")
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    if not zipfile.is_zipfile(file):
        raise InputError(f"{file}: {not_zip}")
