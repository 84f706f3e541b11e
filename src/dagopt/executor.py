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
local worker process that dies breaks the pool (``concurrent.futures`` cannot recover
one) and fails every item not finished by then; Ray first retries a dead worker's
task on another worker. ``map`` returns the outcomes in input order and calls
``on_done(index, outcome)`` in this process as each item finishes, in completion
order: the one place to write results and advance a progress bar.

Local workers split the cores this process may use between them (CPU affinity), so
N workers on N cores never share one; their thread pools keep the sizes a serial run
has, so a result is the serial run's bit for bit (approx-dp's beam breaks ties in an
order that depends on numba's thread count). ``whole_cores=True`` is for measurement
jobs (a timed run must own its core): more local workers than cores is then an error,
and on Ray each task asks for ``num_cpus=1``, which Ray never gives to two tasks at
once; with every node started as ``ray start --num-cpus=<physical cores>`` a
measurement never shares a core (``docs/scaling.md``).
"""

import importlib.util
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dagopt.errors import DagoptError, InputError, is_interrupt
from dagopt.progress import reporting

T = TypeVar("T")

NO_RAY = "--ray needs Ray: pip install 'dagopt[ray]'"


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
    """``fn(item)`` with its exception captured (run in the worker, or in this process);
    a Ctrl-C stops the map instead (``KeyboardInterrupt``)."""
    try:
        with reporting(None):  # a solver's own progress has no listener in a batch
            return Outcome(value=fn(item))
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        return Outcome(error=error_line(exc))


def available_cores() -> list[int]:
    """The cores this process may run on."""
    return sorted(os.sched_getaffinity(0))


def _start_worker(shares: Any, threads: int) -> None:
    """Worker initializer: Ctrl-C (sent to the whole process group) ends the worker
    without a traceback, this process reports it; with ``shares`` (a queue of core
    lists), run on the next share of cores with the thread pools a serial run has
    (numba and OpenMP would size theirs to the share)."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(128 + signal.SIGINT))
    if shares is None:
        return
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))
    os.sched_setaffinity(0, shares.get())


@dataclass(frozen=True)
class Executor:
    """Where ``map`` runs the items: ``jobs`` local processes, or Ray at ``ray``."""

    jobs: int = 1
    ray: str | None = None
    whole_cores: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise InputError(f"jobs must be an integer >= 1, got {self.jobs!r}")
        if self.ray is not None and importlib.util.find_spec("ray") is None:
            raise InputError(NO_RAY)
        cores = len(available_cores())
        if self.whole_cores and self.ray is None and self.jobs > cores:
            raise InputError(
                f"--jobs {self.jobs} measurement jobs need {self.jobs} cores; "
                f"this process may use {cores}"
            )

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
            _map_processes(self.jobs, fn, items, done)
        else:
            for index, item in enumerate(items):
                done(index, _call(fn, item))
        return outcomes  # type: ignore[return-value]


#: Worker pools by size, kept for the next ``map`` (a REINFORCE run maps every batch,
#: and a worker imports torch once, not per batch); one whose worker died is dropped.
_POOLS: dict[int, ProcessPoolExecutor] = {}


def _pool(jobs: int) -> ProcessPoolExecutor:
    """The pool of ``jobs`` workers, each on its own share of the cores (when there are
    at least as many cores as workers)."""
    if jobs not in _POOLS:
        context = multiprocessing.get_context("forkserver")
        cores = available_cores()
        shares = None
        if jobs <= len(cores):
            shares = context.Queue()
            for k in range(jobs):
                shares.put(cores[k::jobs])
        _POOLS[jobs] = ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_worker, initargs=(shares, len(cores))
        )
    return _POOLS[jobs]


def _map_processes(
    jobs: int, fn: Callable, items: Sequence, done: Callable[[int, Outcome], None]
) -> None:
    """The items on the pool of ``jobs`` local worker processes."""
    pool = _pool(jobs)
    pending = {pool.submit(_call, fn, item): i for i, item in enumerate(items)}
    try:  # a KeyboardInterrupt from a worker's item stops the map (``_call``)
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                index = pending.pop(future)
                exc = future.exception()
                if isinstance(exc, BrokenProcessPool) and _POOLS.get(jobs) is pool:
                    del _POOLS[jobs]
                    pool.shutdown(wait=False)
                outcome = future.result() if exc is None else Outcome(error=_lost(exc))
                done(index, outcome)
    except KeyboardInterrupt:  # the workers got the Ctrl-C too and are gone
        if _POOLS.get(jobs) is pool:
            del _POOLS[jobs]
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        for future in pending:  # interrupted: do not leave the rest queued
            future.cancel()


def _lost(exc: BaseException) -> str:
    """Why an item came back without a result (its worker died, most often)."""
    return f"worker lost: {error_line(exc)}"


def connect_ray(address: str, cpus: int = 1) -> Any:
    """The ``ray`` module, connected to ``address`` (``local``: start one here on
    ``cpus`` CPUs, loopback only); an ``InputError`` if Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise InputError(NO_RAY) from None
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
    ray = connect_ray(executor.ray, executor.jobs)
    task = ray.remote(num_cpus=1, max_retries=1)(_call)
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
