"""Priority-model files: the encoder configuration, alpha of eq. (17) and the weights.

A file is a ``torch.save`` dict ``{"format", "version", "config", "alpha", "state_dict",
"meta"}``; ``meta`` records how the model was trained. Written atomically.
"""

import dataclasses
import io
import os
from pathlib import Path
from typing import Any

import torch

from dagopt.errors import InputError
from dagopt.io.atomic import write_bytes_atomic
from dagopt.nn.encoders import EncoderConfig, PriorityModel

FORMAT = "dagopt-priority-model"
VERSION = 1


def model_document(model: PriorityModel, meta: dict[str, Any]) -> dict[str, Any]:
    """The dict stored in a model file (also embedded in training checkpoints)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "config": dataclasses.asdict(model.config),
        "alpha": float(model.alpha),
        "state_dict": model.state_dict(),
        "meta": dict(meta),
    }


def model_from_document(document: Any, *, source: str = "checkpoint") -> PriorityModel:
    """Rebuild a ``PriorityModel`` from ``model_document`` output."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InputError(f"{source}: not a dagopt priority-model file")
    if document.get("version") != VERSION:
        raise InputError(f"{source}: unsupported model file version {document.get('version')}")
    config = dict(document["config"])
    config["heads_per_group"] = tuple(config["heads_per_group"])
    model = PriorityModel(EncoderConfig(**config), alpha=document["alpha"])
    model.load_state_dict(document["state_dict"])
    return model.eval()


def save_priority_model(path: str | os.PathLike, model: PriorityModel, meta: dict) -> Path:
    """Write ``model`` and ``meta`` to ``path`` atomically."""
    buffer = io.BytesIO()
    torch.save(model_document(model, meta), buffer)
    return write_bytes_atomic(path, buffer.getvalue())


def load_priority_model(path: str | os.PathLike) -> tuple[PriorityModel, dict]:
    """Load a model file; returns the model in eval mode and its ``meta``."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such model file")
    try:
        document = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a corrupt file
        raise InputError(f"{file}: cannot read model file ({type(exc).__name__})") from None
    return model_from_document(document, source=str(file)), dict(document.get("meta", {}))
