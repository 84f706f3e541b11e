"""Model files: one registry of formats, one way to save and load any of them.

A model class registers its format with ``@model_format(name, config_type)``: the
model is ``cls(config, **extras)``, where ``config_type`` has ``to_dict()`` and
``from_dict(data)`` and each name of ``extras`` is an attribute of the model (the
priority model's ``alpha``). A model file is a ``torch.save`` dict ``{"format",
"version", "config", *extras, "state_dict", "meta"}``; ``meta`` records how the model
was trained. ``save_model`` writes it atomically; ``load_model`` checks the format,
its version, the keys, that every weight is finite, and rebuilds the model; a file it
cannot use is an ``InputError`` with a one-line message.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from dagopt.errors import DagoptError, InputError
from dagopt.io.atomic import write_torch_atomic

Model = TypeVar("Model", bound=torch.nn.Module)


@dataclass(frozen=True)
class ModelFormat:
    """How one model class is stored: see the module docstring."""

    name: str
    config_type: type
    extras: tuple[str, ...]
    version: int

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of a file besides ``format`` and ``version``."""
        return ("config", *self.extras, "state_dict", "meta")


FORMATS: dict[type, ModelFormat] = {}


def model_format(
    name: str, config_type: type, *, extras: tuple[str, ...] = (), version: int = 1
) -> Callable[[type[Model]], type[Model]]:
    """Class decorator: register the class's file format ``name`` (module docstring)."""

    def register(cls: type[Model]) -> type[Model]:
        if any(f.name == name for f in FORMATS.values()):
            raise ValueError(f"model format {name!r} is already registered")
        FORMATS[cls] = ModelFormat(name, config_type, tuple(extras), version)
        return cls

    return register


def _format_of(model_type: type) -> ModelFormat:
    if model_type not in FORMATS:
        raise TypeError(f"{model_type.__name__} has no registered model format")
    return FORMATS[model_type]


def save_model(path: str | os.PathLike, model: torch.nn.Module, meta: dict[str, Any]) -> Path:
    """Write ``model`` (of a registered class) and ``meta`` to ``path`` atomically."""
    fmt = _format_of(type(model))
    document = {
        "format": fmt.name,
        "version": fmt.version,
        "config": model.config.to_dict(),
        **{key: getattr(model, key) for key in fmt.extras},
        "state_dict": model.state_dict(),
        "meta": dict(meta),
    }
    return write_torch_atomic(path, document)


def _one_line(exc: Exception, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_model(path: str | os.PathLike, *, expected: type[Model]) -> tuple[Model, dict]:
    """Load a model file of ``expected``'s format; returns the model in eval mode and its
    ``meta``."""
    fmt = _format_of(expected)
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such model file")
    try:
        document = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a corrupt file
        raise InputError(f"{file}: cannot read model file ({type(exc).__name__})") from None
    found = document.get("format") if isinstance(document, dict) else None
    if found != fmt.name:
        kind = f"a {found} file" if isinstance(found, str) else "no dagopt model file"
        raise InputError(f"{file}: not a {fmt.name} file ({kind})")
    if document.get("version") != fmt.version:
        raise InputError(
            f"{file}: unsupported {fmt.name} version {document.get('version')!r} "
            f"(this dagopt reads version {fmt.version})"
        )
    missing = [key for key in fmt.keys if key not in document]
    if missing:
        raise InputError(f"{file}: {fmt.name} file without {', '.join(missing)}")
    if not isinstance(document["meta"], dict):
        raise InputError(f"{file}: the {fmt.name} file's meta is not a dict")
    try:
        config = fmt.config_type.from_dict(document["config"])
        model = expected(config, **{key: document[key] for key in fmt.extras})
    except (DagoptError, TypeError, ValueError, RuntimeError, MemoryError) as exc:
        # SolverError, RuntimeError, MemoryError: the layers of a huge config do not fit
        raise InputError(f"{file}: bad {fmt.name} config ({_one_line(exc)})") from None
    state = document["state_dict"]
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{file}: the state dict does not fit the {fmt.name} config ({_one_line(exc)})"
        ) from None
    bad = next((key for key, value in state.items() if not torch.isfinite(value).all()), None)
    if bad is not None:
        raise InputError(f"{file}: the {fmt.name} weights {bad!r} hold NaN or infinite values")
    return model.eval(), dict(document["meta"])
