"""Map a function over many items: in this process, on local processes, or on Ray.

One interface for every loop over independent items (graphs of a batch command, runs
of a benchmark, reward evaluations of a REINFORCE batch):
``Executor(jobs=N, ray=ADDRESS).map(fn, items, on_done=...)``.

- ``jobs=1`` and no ``ray``: a plain loop in this process (the default; Ray is never
  imported).
- ``jobs=N``: N local worker processes (``ProcessPoolExecutor`` with the ``forkserver``
  start method: no fork of a process that holds torch's or numba's threads).
- ``ray=ADDRESS``: tasks on a Ray cluster (``auto``: the cluster this machine belongs
  to, ``host:port`` or ``ray://host:port``: a given one, ``local``: a Ray instance
  started here on ``jobs`` CPUs). Ray is the optional extra ``dagopt[ray]``; without it
  ``--ray`` is an ``InputError``.

Every item runs as ``fn(item)`` (``fn`` and the items must pickle). An exception in
one item becomes that item's ``Outcome.error`` (one line) and the others go on; a
worker process that dies fails the items it was running (Ray first retries them on
another worker). ``map`` returns the outcomes in input order and calls
``on_done(index, outcome)`` in this process as each item finishes, in completion
order: the one place to write results and advance a progress bar.

Workers run one thread each (numba, torch, OpenMP): N workers on N cores do not fight
over them. ``whole_cores=True`` is for measurement jobs (a timed run must own its
core): local workers are capped at the cores this process may use, and each Ray task
asks for ``num_cpus=1``; Ray never gives one CPU to two tasks, so when every node is
started with ``ray start --num-cpus=<physical cores>`` a measurement never shares a core
(``docs/scaling.md``).
"""

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dagopt.errors import DagoptError, InputError
from dagopt.progress import reporting

T = TypeVar("T")

#: Thread-pool settings of a worker: one thread, set before numba or torch start theirs.
_ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one item gave: its ``value``, or ``error`` (a one-line message) if it failed."""

    value: T | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def error_line(exc: BaseException) -> str:
    """An exception as one line: a dagopt error's own message, else ``Type: message``."""
    text = str(exc) if isinstance(exc, DagoptError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.splitlines()) or type(exc).__name__


def _call(fn: Callable[[Any], T], item: Any) -> Outcome[T]:
    """``fn(item)`` with its exception captured (run in the worker, or in this process)."""
    try:
        with reporting(None):  # a solver's own progress has no listener in a batch
            return Outcome(value=fn(item))
    except Exception as exc:
        return Outcome(error=error_line(exc))


def _call_on_one_thread(fn: Callable[[Any], T], item: Any) -> Outcome[T]:
    """``_call`` in a Ray worker, which Ray starts with no initializer."""
    one_thread()
    return _call(fn, item)


def one_thread() -> None:
    """Make this (worker) process use one thread in numba, torch and OpenMP."""
    os.environ.update(_ONE_THREAD)
    if "numba" in sys.modules:
        sys.modules["numba"].set_num_threads(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@dataclass(frozen=True)
class Executor:
    """Where ``map`` runs the items: ``jobs`` local processes, or Ray at ``ray``."""

    jobs: int = 1
    ray: str | None = None
    whole_cores: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise InputError(f"jobs must be an integer >= 1, got {self.jobs!r}")
        if self.whole_cores and self.ray is None and self.jobs > available_cores():
            raise InputError(
                f"--jobs {self.jobs} measurement jobs need {self.jobs} cores; "
                f"this machine lets us use {available_cores()}"
            )

    @property
    def parallel(self) -> bool:
        """Whether the items leave this process."""
        return self.ray is not None or self.jobs > 1

    def map(
        self,
        fn: Callable[[Any], T],
        items: Iterable[Any],
        on_done: Callable[[int, Outcome[T]], None] | None = None,
    ) -> list[Outcome[T]]:
        """``fn(item)`` for every item; the outcomes in input order (see the module doc)."""
        items = list(items)
        outcomes: list[Outcome[T] | None] = [None] * len(items)

        def done(index: int, outcome: Outcome[T]) -> None:
            outcomes[index] = outcome
            if on_done is not None:
                on_done(index, outcome)

        if not items:
            return []
        if self.ray is not None:
            _map_ray(self, fn, items, done)
        elif self.jobs > 1:
            _map_processes(min(self.jobs, len(items)), fn, items, done)
        else:
            for index, item in enumerate(items):
                done(index, _call(fn, item))
        return outcomes  # type: ignore[return-value]


def _map_processes(
    jobs: int, fn: Callable, items: Sequence, done: Callable[[int, Outcome], None]
) -> None:
    """The items on ``jobs`` local worker processes, one thread each."""
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=one_thread) as pool:
        pending = {pool.submit(_call, fn, item): i for i, item in enumerate(items)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                index = pending.pop(future)
                exc = future.exception()
                outcome = future.result() if exc is None else Outcome(error=_lost(exc))
                done(index, outcome)


def _lost(exc: BaseException) -> str:
    """Why an item came back without a result (its worker died, most often)."""
    return f"worker lost: {error_line(exc)}"


def connect_ray(address: str, cpus: int | None = None) -> Any:
    """The ``ray`` module, connected to ``address`` (``local``: start one here on
    ``cpus`` CPUs, loopback only); an ``InputError`` if Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'dagopt[ray]'") from None
    if not ray.is_initialized():
        if address == "local":
            ray.init(
                num_cpus=cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
            )
        else:
            try:
                ray.init(address=address, log_to_driver=False)
            except ConnectionError as exc:
                raise InputError(f"--ray {address}: {error_line(exc)}") from None
    return ray


def _map_ray(
    executor: Executor, fn: Callable, items: Sequence, done: Callable[[int, Outcome], None]
) -> None:
    """The items as Ray tasks of one CPU each (retried once if their worker dies)."""
    ray = connect_ray(executor.ray, executor.jobs if executor.jobs > 1 else None)
    task = ray.remote(num_cpus=1, max_retries=1)(_call_on_one_thread)
    fn_ref = ray.put(fn)
    pending = {task.remote(fn_ref, item): i for i, item in enumerate(items)}
    while pending:
        finished, _ = ray.wait(list(pending), num_returns=1)
        for ref in finished:
            index = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception as exc:  # the task's worker died twice, or Ray lost it
                outcome = Outcome(error=_lost(exc))
            done(index, outcome)
