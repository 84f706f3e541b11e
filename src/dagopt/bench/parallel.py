"""Benchmark runs through ``dagopt.executor``: ``--jobs N`` local processes or ``--ray``.

A benchmark's runs are measurements, so the executor reserves whole cores
(``Executor(whole_cores=True)``): at most one run per core, one thread each. Each run
reports the time of its own search (``solve`` and ``place`` time it inside the worker),
so a table's times do not depend on how many runs went side by side, as long as no
two share a core.
"""

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dagopt.errors import SolverError
from dagopt.executor import Executor, Outcome
from dagopt.graph import Graph

R = TypeVar("R")


@dataclass(frozen=True)
class Job:
    """One method on one graph: ``solver(graph, method, seed=seed, **options)``."""

    solver: Callable[..., Any]
    graph: Graph
    method: str
    seed: int
    options: dict[str, Any]

    def __call__(self) -> Any:
        return self.solver(self.graph, self.method, seed=self.seed, **self.options)


def _run(job: Job) -> Any:
    return job()


def run_jobs(
    jobs: Sequence[Job], record: Callable[[int, Any], R], executor: Executor | None = None
) -> list[R]:
    """Run ``jobs`` on ``executor`` (default: in this process); ``record(index, result)``
    turns each result into a row as it comes back (and saves it, so that an interrupted
    benchmark resumes). Returns the rows in job order; if any job failed, raises a
    ``SolverError`` naming the first failure after every other job has run."""
    rows: dict[int, R] = {}
    failures: list[str] = []

    def done(index: int, outcome: Outcome) -> None:
        if outcome.ok:
            rows[index] = record(index, outcome.value)
        else:
            job = jobs[index]
            failures.append(f"{job.method} on {job.graph.name}: {outcome.error}")

    (executor or Executor()).map(_run, jobs, on_done=done)
    if failures:
        raise SolverError(f"{len(failures)} of {len(jobs)} runs failed; first: {failures[0]}")
    return [rows[i] for i in sorted(rows)]


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs N`` and ``--ray ADDRESS`` for a benchmark script."""
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs side by side on local processes, one core each"
    )
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: auto, HOST:PORT, or local (docs/scaling.md)",
    )


def executor_from_arguments(args: argparse.Namespace) -> Executor:
    """The measurement executor the parsed ``--jobs`` / ``--ray`` ask for."""
    return Executor(jobs=args.jobs, ray=args.ray, whole_cores=True)
