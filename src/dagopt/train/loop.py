"""The epoch loop every trained model shares, on the run-directory contract.

``fit`` runs a ``Trainer``'s epochs in a run directory (``dagopt.train.rundir``): a new
run starts from ``Trainer.start``, ``resume=True`` continues after the last finished
epoch from ``state.pt``; after every epoch it writes ``state.pt`` (the trainer's state
and the epoch) and ``metrics.csv`` (one ``Trainer.row_type`` row per epoch, ``seconds``
filled in here), each atomically, so killing the process loses at most the current
epoch; ``learning_curve.png`` is redrawn after the first and last epochs and otherwise
at most every ``PLOT_EVERY_S`` seconds (drawing it costs about as much as a short
epoch). The trainer owns the model-specific part: its batches, updates, validation and
the best model file.
"""

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dagopt.errors import InputError
from dagopt.train import rundir

#: ``progress(stage, done, total)``: what a run reports while it works.
Progress = Callable[[str, int, int], None]
#: Seconds between two redraws of ``learning_curve.png`` within a run.
PLOT_EVERY_S = 30.0


class Trainer(ABC):
    """One run's model-specific part: ``fit`` calls ``start`` (new runs) or
    ``load_state_dict`` (resumed ones), then ``run_epoch`` once per epoch.

    The resume state is every object of ``parts`` (models, optimizers, schedules,
    baselines: anything with ``state_dict`` / ``load_state_dict``) by name, and
    ``best``, the best validation score so far.
    """

    #: The dataclass of one epoch's metrics; it has ``epoch`` and ``seconds`` fields.
    row_type: type
    #: The learning curve's y-axis label and title.
    ylabel: str
    title: str
    #: The best validation score so far (lower is better).
    best: float = float("inf")

    @abstractmethod
    def start(self, progress: Progress | None) -> None:
        """Before the first epoch of a new run (e.g. validate the untrained model)."""

    @abstractmethod
    def run_epoch(self, epoch: int, progress: Progress | None) -> Any:
        """Train one epoch, validate, save the best model; return its ``row_type`` row."""

    @abstractmethod
    def parts(self) -> dict[str, Any]:
        """The run's stateful objects by name (``state.pt`` keys)."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue after this epoch (tensors, numbers, strings)."""
        return {name: part.state_dict() for name, part in self.parts().items()} | {
            "best": self.best
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output; a state of another run is an ``InputError``."""
        try:
            for name, part in self.parts().items():
                part.load_state_dict(state[name])
            self.best = float(state["best"])
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(f"state.pt does not belong to this run ({message})") from None

    @abstractmethod
    def curves(self, history: Sequence[Any]) -> dict[str, list[float]]:
        """The learning curve's lines (label -> one value per epoch of ``history``)."""

    def stop_early(self, history: Sequence[Any]) -> bool:
        """Whether to stop after the epochs of ``history`` (early stopping); never here."""
        return False


def fit(
    run_dir: str | Path,
    trainer: Trainer,
    epochs: int,
    *,
    resume: bool,
    progress: Progress | None = None,
    on_epoch: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Run ``trainer`` up to ``epochs`` epochs in ``run_dir``, fewer where
    ``Trainer.stop_early`` says so; returns every epoch's row."""
    run_dir = Path(run_dir)
    if resume:
        state = rundir.load_state(run_dir)
        trainer.load_state_dict(state)
        start = state["epoch"] + 1
        history = rundir.read_metrics(run_dir, trainer.row_type)[:start]
        if [row.epoch for row in history] != list(range(start)):
            raise InputError(
                f"{run_dir / rundir.METRICS_FILE}: lacks epochs of the {start} that "
                f"{rundir.STATE_FILE} has run (lost or damaged); restore it, or start over "
                "in another --run-dir"
            )
    else:
        trainer.start(progress)
        start, history = 0, []
    if history and trainer.stop_early(history):  # a resumed run that had stopped early
        return history
    plotted = -float("inf")
    for epoch in range(start, epochs):
        began = time.perf_counter()
        row = trainer.run_epoch(epoch, progress)
        row = dataclasses.replace(row, seconds=time.perf_counter() - began)
        history.append(row)
        last = epoch == epochs - 1 or trainer.stop_early(history)
        plot = last or time.perf_counter() - plotted >= PLOT_EVERY_S
        plotted = time.perf_counter() if plot else plotted
        rundir.end_epoch(
            run_dir,
            {**trainer.state_dict(), "epoch": epoch},
            history,
            trainer.row_type,
            trainer.curves(history) if plot else None,
            ylabel=trainer.ylabel,
            title=trainer.title,
        )
        if on_epoch is not None:
            on_epoch(row)
        if last:
            break
    return history


def batch_slices(count: int, size: int) -> Iterator[slice]:
    """``ceil(count / size)`` consecutive slices of at most ``size`` items."""
    for first in range(0, count, size):
        yield slice(first, min(first + size, count))
