"""The models shipped with dagopt, as package data, and the one way to find them.

``model_path(name)`` is the file a method uses when it is given none: the shipped
file in this package (``importlib.resources``), or, when the environment variable
``DAGOPT_MODEL_DIR`` names a folder, the file at the same place in that folder (laid
out like this package: ``topoformer-ordering/model.pt``, ``regal-runtime/model.pt``,
``regal-peak-memory/model.pt``, ``brkga-tuned.json``, ``tgraph-<collection>/model.pt``).
A training run directory named like a model therefore serves as that model:
``DAGOPT_MODEL_DIR=runs`` with ``runs/regal-runtime/``. How each model was trained:
``checkpoints/README.md``.
"""

import atexit
import contextlib
import importlib.resources
import os
from functools import lru_cache
from pathlib import Path

from dagopt.errors import InputError

MODEL_DIR_ENV = "DAGOPT_MODEL_DIR"

#: Name of each shipped model -> its file, relative to this package (or $DAGOPT_MODEL_DIR).
MODEL_FILES = {
    "topoformer-ordering": "topoformer-ordering/model.pt",
    "topoformer-ar-ordering": "topoformer-ar-ordering/model.pt",
    "topoformer-sparse-ordering": "topoformer-sparse-ordering/model.pt",
    "topoformer-mix-ordering": "topoformer-mix-ordering/model.pt",
    "regal-runtime": "regal-runtime/model.pt",
    "regal-peak-memory": "regal-peak-memory/model.pt",
    "brkga-tuned": "brkga-tuned.json",
    **{
        f"tgraph-{name}": f"tgraph-{name}/model.pt"
        for name in (
            "tile-xla",
            "layout-xla-random",
            "layout-xla-default",
            "layout-nlp-random",
            "layout-nlp-default",
        )
    },
}

_extracted = contextlib.ExitStack()  # files extracted from a zipped install, for this process
atexit.register(_extracted.close)


def model_path(name: str) -> Path:
    """The file of model ``name`` (a key of ``MODEL_FILES``): under ``$DAGOPT_MODEL_DIR``
    when it is set, else the shipped one. The file may not exist; loaders report that."""
    relative = MODEL_FILES[name]
    folder = os.environ.get(MODEL_DIR_ENV)
    return Path(folder) / relative if folder else _shipped_path(relative)


def missing_model(what: str, path: Path, shipped: str | None) -> InputError:
    """The error for a model file that is not at ``path``: the one the user named, or
    (``shipped``: its name) the shipped model looked up when none was named."""
    if shipped is None:
        return InputError(f"no {what} model file at {path}")
    folder = os.environ.get(MODEL_DIR_ENV)
    where = f"{MODEL_DIR_ENV}={folder}" if folder else "this installation"
    return InputError(f"the shipped {what} model {shipped!r} is missing from {where}: no {path}")


@lru_cache
def _shipped_path(relative: str) -> Path:
    """A file of this package on the file system (extracted once if installed zipped)."""
    resource = importlib.resources.files(__name__).joinpath(relative)
    return _extracted.enter_context(importlib.resources.as_file(resource))
