"""Progress of long work, reported to whoever listens and silent otherwise.

Solvers and other long loops call ``report(stage, done, total)``; it costs a context
variable lookup when nobody listens. The CLI listens on a terminal (a progress bar with
the elapsed time, ``dagopt.cli.output.progress_bar``) and not when its output is piped,
so logs get no progress noise. ``reporting(callback)`` installs a listener for a block.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``callback(stage, done, total)``; ``done`` and ``total`` are ``None`` for a stage
#: without a count (compiling, loading).
Reporter = Callable[[str, int | None, int | None], None]

_reporter: ContextVar[Reporter | None] = ContextVar("dagopt_progress", default=None)


def report(stage: str, done: int | None = None, total: int | None = None) -> None:
    """Tell the current listener, if any, that ``stage`` is at ``done`` of ``total``."""
    callback = _reporter.get()
    if callback is not None:
        callback(stage, done, total)


@contextmanager
def reporting(callback: Reporter | None) -> Iterator[None]:
    """Send ``report`` calls made inside the block to ``callback`` (``None``: nowhere)."""
    token = _reporter.set(callback)
    try:
        yield
    finally:
        _reporter.reset(token)
