"""Model files: the Topoformer priority model (paper 000) and the REGAL policy (paper 003).

A priority-model file is a ``torch.save`` dict ``{"format", "version", "config",
"alpha", "state_dict", "meta"}``; a REGAL file ``{"format", "version", "config",
"state_dict", "meta"}``. ``meta`` records how the model was trained. Written atomically.
"""

import dataclasses
import os
from pathlib import Path
from typing import Any

import torch

from dagopt.errors import InputError
from dagopt.io.atomic import write_torch_atomic
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.regal import RegalConfig, RegalPolicy

FORMAT = "dagopt-priority-model"
REGAL_FORMAT = "dagopt-regal-policy"
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
    return write_torch_atomic(path, model_document(model, meta))


def _read_document(path: str | os.PathLike) -> tuple[Path, Any]:
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such model file")
    try:
        return file, torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a corrupt file
        raise InputError(f"{file}: cannot read model file ({type(exc).__name__})") from None


def load_priority_model(path: str | os.PathLike) -> tuple[PriorityModel, dict]:
    """Load a model file; returns the model in eval mode and its ``meta``."""
    file, document = _read_document(path)
    return model_from_document(document, source=str(file)), dict(document.get("meta", {}))


def regal_document(policy: RegalPolicy, meta: dict[str, Any]) -> dict[str, Any]:
    """The dict stored in a REGAL policy file."""
    return {
        "format": REGAL_FORMAT,
        "version": VERSION,
        "config": policy.config.to_dict(),
        "state_dict": policy.state_dict(),
        "meta": dict(meta),
    }


def save_regal_policy(path: str | os.PathLike, policy: RegalPolicy, meta: dict) -> Path:
    """Write a REGAL policy and ``meta`` to ``path`` atomically."""
    return write_torch_atomic(path, regal_document(policy, meta))


def load_regal_policy(path: str | os.PathLike) -> tuple[RegalPolicy, dict]:
    """Load a REGAL policy file; returns the policy in eval mode and its ``meta``."""
    file, document = _read_document(path)
    if not isinstance(document, dict) or document.get("format") != REGAL_FORMAT:
        raise InputError(f"{file}: not a dagopt REGAL policy file")
    if document.get("version") != VERSION:
        raise InputError(f"{file}: unsupported model file version {document.get('version')}")
    policy = RegalPolicy(RegalConfig.from_dict(document["config"]))
    policy.load_state_dict(document["state_dict"])
    return policy.eval(), dict(document.get("meta", {}))
