"""Dataclass rows to CSV text and back (benchmark runs, training metrics).

Floats are written with ``repr`` (exact round trip); ``bool`` fields read ``True`` /
``False``, and a ``bool | None`` field reads an empty cell as ``None``.
"""

import csv
import io
import types
from dataclasses import asdict, fields
from typing import Any, TypeVar

from dagopt.errors import InputError

Row = TypeVar("Row")


def rows_to_csv(rows: list[Any], row_type: type) -> str:
    """``rows`` (instances of the dataclass ``row_type``) as CSV text with a header."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(row_type)])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in asdict(row).items()})
    return buffer.getvalue()


def _parser(kind: Any):
    options = set(kind.__args__) if isinstance(kind, types.UnionType) else {kind}
    if bool in options:
        return {"True": True, "False": False, "": None}.__getitem__
    base = (options - {type(None)}).pop()
    if type(None) in options:
        return lambda text: None if text == "" else base(text)
    return base


def rows_from_csv(text: str, row_type: type[Row], where: str = "CSV") -> list[Row]:
    """The rows ``rows_to_csv`` wrote; another header, a short row or a cell that does not
    parse is an ``InputError`` naming ``where`` (the file) and the line."""
    parsers = {f.name: _parser(f.type) for f in fields(row_type)}
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames != list(parsers):
        raise InputError(f"{where}: not a table of {row_type.__name__} rows (another header)")
    rows = []
    for record in reader:
        try:
            rows.append(row_type(**{k: parsers[k](v) for k, v in record.items()}))
        except (TypeError, ValueError, KeyError):  # a short row (None), a bad number...
            raise InputError(f"{where}: line {reader.line_num} is damaged") from None
    return rows
