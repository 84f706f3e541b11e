"""Options shared by the solving commands (``schedule``, ``place``): the seed, and the
``--set KEY=VALUE`` settings of the commands that take free-form ones."""

import json
from typing import Annotated, Any

import typer

from dagopt.errors import InputError
from dagopt.registry import MAX_SEED

SolverSeedOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=MAX_SEED,
        help="Random seed of the method (default: fresh randomness on every run; give one "
        "to reproduce a result).",
        show_default=False,
    ),
]


def parse_settings(settings: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, true), else text."""
    options: dict[str, Any] = {}
    for item in settings:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise InputError(f"--set expects key=value, got {item!r}")
        try:
            options[key.replace("-", "_")] = json.loads(text)
        except RecursionError:
            raise InputError(f"--set {key}: value nested too deeply") from None
        except ValueError:  # not JSON (or a number past int's digit limit): plain text
            options[key.replace("-", "_")] = text
    return options


def merge_option(options: dict[str, Any], name: str, flag: str, value: Any) -> None:
    """Put ``flag``'s ``value`` into the ``--set`` ``options`` as ``name`` (when given);
    both giving it is an ``InputError``."""
    if value is None:
        return
    if name in options:
        raise InputError(f"{flag} and --set {name}=... both give {name}: give one")
    options[name] = value
