"""Configs: frozen dataclasses read from and written to JSON-ready dicts.

Every hyper-parameter set of dagopt (encoders, policies, training runs, BRKGA) is a
frozen dataclass that validates itself in ``__post_init__`` and inherits ``Config``
for its dict form. ``Config.from_dict`` is the one recursive reader: it rejects
unknown keys, checks each value against the field's annotation (``int``, ``float``,
``bool``, ``str``, tuples of them, nested configs, ``dict``), builds nested configs
from nested dicts, and turns every mistake into a one-line ``InputError`` that names
the key. ``Config.to_dict`` is its inverse (tuples become lists).
"""

import dataclasses
import json
import math
import os
import reprlib
import types
import typing
from pathlib import Path
from typing import Any, Self, TypeVar

from dagopt.errors import InputError, reject_unknown_keys


class Config:
    """Mixin for frozen dataclass configs: ``from_dict`` and ``to_dict`` (module docstring)."""

    @classmethod
    def from_dict(cls, data: Any, *, what: str = "option") -> Self:
        """Build the config from ``data`` (missing keys take the defaults)."""
        if isinstance(data, str) and data.lstrip().startswith("{"):  # --set K={... unclosed
            raise InputError(f"{what}s are not valid JSON: {reprlib.repr(data)}")
        if not isinstance(data, dict):
            raise InputError(f"{what}s must be a JSON object, got {type(data).__name__}")
        reject_unknown_keys(data, cls, what)
        hints = typing.get_type_hints(cls)
        values = {
            f.name: _convert(hints[f.name], data[f.name], f"{what} {f.name!r}", f.name)
            for f in dataclasses.fields(cls)
            if f.name in data
        }
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that ``from_dict`` turns back into an equal config."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init}


ConfigT = TypeVar("ConfigT", bound=Config)


def _plain(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _describe(hint: Any) -> str:
    """How an error message names the annotation ``hint``."""
    if hint is type(None):
        return "null"
    if typing.get_origin(hint) is tuple:
        return "a list"
    if typing.get_origin(hint) is dict or hint is dict:
        return "an object"
    return "a number" if hint is float else getattr(hint, "__name__", str(hint))


def _convert(hint: Any, value: Any, what: str, name: str) -> Any:
    """``value`` of the field ``name`` checked against its annotation ``hint`` (nested
    configs built); ``what`` names the field in messages."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        for option in options:
            try:
                return _convert(option, value, what, name)
            except InputError:
                continue
        wanted = " or ".join(_describe(option) for option in options)
        shown = reprlib.repr(value)
        raise InputError(f"{what} must be {wanted}, got {_type_name(value)} {shown}")
    if hint is type(None):
        if value is not None:
            raise InputError(f"{what} must be null, got {_type_name(value)}")
        return None
    if isinstance(hint, type) and issubclass(hint, Config):
        return hint.from_dict(value, what=f"{name} option")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise InputError(f"{what} must be a list, got {_type_name(value)}")
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v, what, name) for v in value)
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise InputError(f"{what} must be an object, got {_type_name(value)}")
        return dict(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = reprlib.repr(value)
            raise InputError(f"{what} must be a number, got {_type_name(value)} {shown}")
        try:
            number = float(value)
        except OverflowError:
            raise InputError(f"{what} is too large (an integer beyond 1.8e308)") from None
        if not math.isfinite(number):
            raise InputError(f"{what} must be a finite number, got {number}")
        return number
    if hint in (int, bool, str) and (
        not isinstance(value, hint) or (hint is int and isinstance(value, bool))
    ):
        shown = reprlib.repr(value)
        raise InputError(f"{what} must be {hint.__name__}, got {_type_name(value)} {shown}")
    if hint is int and not -(2**63) <= value < 2**63:
        raise InputError(f"{what} is too large (an integer beyond 64 bits)")
    return value


def check_option(name: str, value: Any, hint: Any) -> Any:
    """``value`` of a solver option ``name`` checked against the annotation ``hint``
    (``int``, ``float``, ``str``, ``int | None``...), as ``Config.from_dict`` checks a
    field: a one-line ``InputError`` for a value of the wrong type, such as the text
    ``--set concentration=x`` passes on."""
    return _convert(hint, value, f"option {name!r}", name)


def read_config(path: str | os.PathLike, config_type: type[ConfigT]) -> ConfigT:
    """Read a JSON config file of ``config_type`` (missing keys take the defaults); an
    unreadable file or a bad value is a one-line ``InputError``."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{file}: cannot read config (not JSON text)") from None
    except RecursionError:
        raise InputError(f"{file}: cannot read config (JSON nested too deeply)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{file}: cannot read config ({exc})") from None
    except ValueError as exc:  # an integer past int's digit limit
        raise InputError(f"{file}: cannot read config ({str(exc).split(':')[0]})") from None
    try:
        return config_type.from_dict(data)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None


def changed_options(given: dict[str, Any], recorded: Any) -> str:
    """The keys whose values differ between ``given`` and ``recorded`` options, as
    "a, b differ" ("" when none does; anything but an object differs entirely)."""
    if not isinstance(recorded, dict):
        return "everything differs"
    changed = sorted(k for k in given.keys() | recorded.keys() if given.get(k) != recorded.get(k))
    if not changed:
        return ""
    return f"{', '.join(changed)} {'differs' if len(changed) == 1 else 'differ'}"
