"""What every training run directory shares: its config file, atomic torch state, a
per-epoch metrics CSV and a learning-curve plot.

``open_run`` enforces the run-directory contract: a new run refuses to overwrite an
existing one, and ``--resume`` reuses the saved ``config.json`` (a different config
is an error). ``state.pt`` records a hash of the ``config.json`` it was made under (the
run's own, or its parent's for the folds of a TGraph run), so that a state copied from
another run is refused on resume.
"""

import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from dagopt.configs import Config, changed_options, read_config
from dagopt.errors import InputError
from dagopt.io.atomic import write_bytes_atomic, write_text_atomic, write_torch_atomic
from dagopt.io.csvrows import rows_from_csv, rows_to_csv

CONFIG_FILE, STATE_FILE, MODEL_FILE = "config.json", "state.pt", "model.pt"
METRICS_FILE, PLOT_FILE = "metrics.csv", "learning_curve.png"

ConfigT = TypeVar("ConfigT", bound=Config)
Row = TypeVar("Row")


def open_run(
    run_dir: Path, config: ConfigT | None, *, resume: bool, config_type: type[ConfigT]
) -> ConfigT:
    """The run's configuration: the saved one on ``resume``, else ``config`` (now saved
    in a new ``run_dir``)."""
    state_path = run_dir / STATE_FILE
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(f"{run_dir}: is a file, not a run directory")
    if resume:
        if not state_path.exists():
            stopped = (run_dir / CONFIG_FILE).exists()
            raise InputError(
                f"{run_dir}: nothing to resume (no {STATE_FILE}"
                + (
                    ": it stopped before its first epoch ended); start it again with the "
                    "same command without --resume"
                    if stopped
                    else ")"
                )
            )
        saved = read_config(run_dir / CONFIG_FILE, config_type)
        if config is not None and config != saved:
            changed = changed_options(_flat(config.to_dict()), _flat(saved.to_dict()))
            raise InputError(
                f"{run_dir}: the options given (--config, --set, ...) differ from the run's "
                f"config.json ({changed}); a resumed run keeps its config (resume with the "
                "options it started with, or start another --run-dir)"
            )
        return saved
    if state_path.exists():
        raise InputError(f"{run_dir}: a run exists here; pass --resume or another --run-dir")
    if config is None:
        raise InputError("a training config is needed to start a run")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / CONFIG_FILE, json.dumps(config.to_dict(), indent=1))
    return config


#: The key of ``state.pt`` that holds ``_config_hash``.
CONFIG_HASH = "config_sha256"


def _config_hash(run_dir: Path) -> str:
    """A SHA-256 of the ``config.json`` that governs ``run_dir``: its own, or its
    parent's with ``run_dir``'s name (a TGraph fold: one fold's state is not another's);
    "" when there is none."""
    if (run_dir / CONFIG_FILE).is_file():
        return hashlib.sha256((run_dir / CONFIG_FILE).read_bytes()).hexdigest()
    if (run_dir.parent / CONFIG_FILE).is_file():
        text = (run_dir.parent / CONFIG_FILE).read_bytes() + run_dir.name.encode()
        return hashlib.sha256(text).hexdigest()
    return ""


def _flat(options: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested options as ``{"model.hidden": 16, ...}``, so that a difference names its leaf."""
    flat: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_state(run_dir: Path) -> dict[str, Any]:
    """The resume point ``state.pt`` of a run: tensors, numbers and strings only, read
    with ``weights_only=True`` so a crafted file cannot run code; a corrupt or foreign
    file is a one-line ``InputError``."""
    path = run_dir / STATE_FILE
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a corrupt or unsafe file
        raise InputError(f"{path}: cannot resume from it ({type(exc).__name__})") from None
    if not isinstance(state, dict) or not isinstance(state.get("epoch"), int):
        raise InputError(f"{path}: not a dagopt training state")
    recorded = state.pop(CONFIG_HASH, None)  # absent in states written before it existed
    if recorded is not None and recorded != _config_hash(run_dir):
        raise InputError(
            f"{path}: made by another run (under another {CONFIG_FILE}) or another fold"
        )
    return state


def end_epoch(
    run_dir: Path,
    state: dict[str, Any],
    history: Sequence[Any],
    row_type: type,
    curves: dict[str, list[float]] | None,
    *,
    ylabel: str,
    title: str,
) -> None:
    """After an epoch: ``state.pt``, ``metrics.csv`` and, given ``curves``,
    ``learning_curve.png``, atomically."""
    write_torch_atomic(run_dir / STATE_FILE, {**state, CONFIG_HASH: _config_hash(run_dir)})
    write_metrics(run_dir, history, row_type)
    if curves is not None:
        epochs = [m.epoch for m in history]
        plot_learning_curve(run_dir, epochs, curves, ylabel=ylabel, title=title)


def write_metrics(run_dir: Path, history: Sequence[Any], row_type: type) -> None:
    """``history`` (dataclass rows of ``row_type``) as ``metrics.csv``, atomically."""
    write_text_atomic(run_dir / METRICS_FILE, rows_to_csv(list(history), row_type))


def read_metrics(run_dir: str | Path, row_type: type[Row]) -> list[Row]:
    """The rows of ``metrics.csv`` (none if the file does not exist yet)."""
    path = Path(run_dir) / METRICS_FILE
    return rows_from_csv(path.read_text(), row_type, str(path)) if path.exists() else []


def plot_learning_curve(
    run_dir: Path, epochs: list[int], curves: dict[str, list[float]], *, ylabel: str, title: str
) -> None:
    """One line per entry of ``curves`` against ``epochs``, saved as ``learning_curve.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in curves.items():
        ax.plot(epochs, values, label=label)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    write_bytes_atomic(run_dir / PLOT_FILE, buffer.getvalue())
