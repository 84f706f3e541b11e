"""Many graphs in one command: ``dagopt schedule|place GRAPH... --out-dir DIR``.

The graphs (files, or folders of graph files) run through ``dagopt.executor``: in this
process, on ``--jobs N`` local processes, or on a Ray cluster (``--ray ADDRESS``). This
process reads every graph (so Ray workers need no shared file system), writes each
graph's result atomically to ``DIR/<graph file stem><suffix>`` as soon as it comes
back, and skips graphs whose result file is already there: rerunning an interrupted
batch resumes it. A graph that fails (a bad file, a solver error) is reported and the
others go on. ``DIR/summary.csv`` gets one row per graph, read back from the result
files, so resumed and new graphs look alike. Each graph gets the same seed and options
as a single-graph run, so the results are the serial run's.
"""

import dataclasses
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dagopt.cli.output import check_output, console, err_console, progress_bar, progress_on_terminal
from dagopt.configs import changed_options
from dagopt.errors import DagoptError, InputError, SolverError
from dagopt.executor import Executor, Outcome, error_line
from dagopt.graph import Graph
from dagopt.io import READERS, load
from dagopt.io.atomic import write_text_atomic
from dagopt.io.csvrows import rows_to_csv
from dagopt.io.json import read_json_file

SUMMARY_FILE = "summary.csv"
#: The request (method and every option) whose results a batch folder holds.
REQUEST_FILE = "request.json"

OutDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out-dir",
        metavar="DIR",
        help="Run every GRAPH (files or folders); one result file per graph here, "
        "graphs already done are skipped, a summary in DIR/summary.csv.",
        show_default=False,
    ),
]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Local worker processes.")]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run on a Ray cluster: auto, HOST:PORT, or local (a Ray instance here "
        "on --jobs CPUs). Needs Ray, the extra named ray.",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class BatchRow:
    """One graph of a batch in ``summary.csv``: where its result is and what it says
    (``peak_memory`` of a placement: its largest device peak)."""

    graph: str
    output: str
    status: str  # "new", "resumed" or "failed"
    method: str
    objective: str
    peak_memory: float | None
    makespan: float | None
    feasible: bool | None
    seconds: float | None
    proved_optimal: bool | None
    error: str


def graph_files(
    paths: list[Path],
    *,
    suffixes: Collection[str] = READERS,
    what: str = "graph files",
    shared: str = "one result file",
) -> list[Path]:
    """The files named by ``paths``: files as given, folders as their files with one of
    ``suffixes`` (default a graph's, ``dagopt.io.READERS``), sorted; two with one stem
    are an error, as they would share ``shared``."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() in suffixes)
            if not found:
                raise InputError(f"{path}: no {what} ({', '.join(sorted(suffixes))})")
            files += found
        else:
            files.append(path)
    seen: dict[str, Path] = {}
    for file in files:
        if file.stem in seen and seen[file.stem] != file:
            raise InputError(f"{seen[file.stem]} and {file} would share {shared}")
        seen[file.stem] = file
    return list(dict.fromkeys(files))


def check_batch(graphs: list[Path], out_dir: Path | None, out: Path | None, jobs: int, ray):
    """Refuse a batch option without ``--out-dir``, and several graphs or a folder of
    them without it."""
    if out_dir is None:
        if len(graphs) > 1:
            raise InputError("several graphs need --out-dir DIR (one result file per graph)")
        if graphs[0].is_dir():
            raise InputError(f"{graphs[0]}: is a directory; give --out-dir DIR to run its graphs")
        if jobs > 1 or ray is not None:
            raise InputError("--jobs and --ray run a batch: give --out-dir DIR")
    elif out is not None:
        raise InputError("--out names one result file; with --out-dir every graph gets one")


def _row(graph: Path, output: Path, status: str) -> BatchRow:
    """The summary row of a graph whose result file is ``output``."""
    data = read_json_file(output)
    peak = data.get("peak_memory")
    return BatchRow(
        graph=str(graph),
        output=str(output),
        status=status,
        method=str(data.get("method", "")),
        objective=str(data.get("objective", "")),
        peak_memory=max(peak) if isinstance(peak, list) and peak else peak,
        makespan=data.get("makespan"),
        feasible=data.get("feasible"),
        seconds=data.get("seconds"),
        proved_optimal=data.get("proved_optimal"),
        error="",
    )


def _report_failure(graph: Path, error: str) -> None:
    """One line on stderr: the graph (unless the message names it) and why it failed."""
    where = "" if error.startswith(str(graph)) else f"{graph}: "
    err_console.print(f"failed: {where}{error}", markup=False)


def _failed(graph: Path, error: str) -> BatchRow:
    return BatchRow(str(graph), "", "failed", "", "", None, None, None, None, None, error)


def run_batch(
    paths: list[Path],
    out_dir: Path,
    suffix: str,
    job: Callable[[Graph], Any],
    write: Callable[[Path, Graph, Any], str],
    executor: Executor,
    read: Callable[[Path], Graph] = load,
) -> list[BatchRow]:
    """Run ``job`` on every graph of ``paths`` not done yet in ``out_dir``, each read by
    ``read``; ``write(path, graph, result)`` writes one result file and returns the line
    to print. Writes the summary and raises ``SolverError`` if a graph failed (after all
    the others ran)."""
    files = graph_files(paths)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: is a file, not a directory")
    if any(p.is_dir() and p.resolve() == out_dir.resolve() for p in paths):
        raise InputError(f"{out_dir}: is an input folder; write the results elsewhere")
    outputs = [out_dir / f"{file.stem}{suffix}" for file in files]
    _claim(out_dir, suffix, job, [o for o in outputs if o.exists()])
    rows: list[BatchRow | None] = [
        _row(f, o, "resumed") if o.exists() else None for f, o in zip(files, outputs, strict=True)
    ]
    todo, graphs = [], []
    for i, file in enumerate(files):
        if rows[i] is None:
            try:
                graphs.append(read(file))
                todo.append(i)
            except (DagoptError, OSError) as exc:  # unreadable, cyclic, bad sizes...
                rows[i] = _failed(file, error_line(exc))
                _report_failure(file, rows[i].error)
    with progress_bar() as bar:
        task = bar.add_task(f"graphs ({executor_name(executor)})", total=len(todo))

        def done(k: int, outcome: Outcome) -> None:
            i = todo[k]
            if outcome.ok:
                line = write(outputs[i], graphs[k], outcome.value)
                rows[i] = _row(files[i], outputs[i], "new")
                console.print(f"{files[i]}: {line}", markup=False)
            else:
                rows[i] = _failed(files[i], outcome.error)
                _report_failure(files[i], outcome.error)
            bar.advance(task)

        executor.map(job, graphs, on_done=done)
    summary = write_text_atomic(out_dir / SUMMARY_FILE, rows_to_csv(rows, BatchRow))
    counts = {s: sum(r.status == s for r in rows) for s in ("new", "resumed", "failed")}
    console.print(
        f"{len(rows)} graphs: {counts['new']} new, {counts['resumed']} resumed, "
        f"{counts['failed']} failed; summary in {summary}",
        markup=False,
    )
    if counts["failed"]:
        raise SolverError(f"{counts['failed']} of {len(rows)} graphs failed; see {summary}")
    return rows


def _request(job: Callable[[Graph], Any]) -> dict[str, Any]:
    """The JSON form of a batch job (a dataclass of the method and its options)."""
    return json.loads(json.dumps(dataclasses.asdict(job), default=str))


def _claim(out_dir: Path, suffix: str, job: Callable[[Graph], Any], done: list[Path]) -> None:
    """Record in ``out_dir/request.json`` what ``job`` asks for, or check that the results
    already there (files ending in ``suffix``) answer the same request: a rerun with
    another method or option would otherwise mix its results with the old ones, reported
    as resumed. A request that left no result (every graph failed) is replaced."""
    request = _request(job)
    recorded_file = out_dir / REQUEST_FILE
    if recorded_file.exists() and any(out_dir.glob(f"*{suffix}")):
        changed = changed_options(request, read_json_file(recorded_file))
        if changed:
            raise InputError(
                f"{out_dir} holds the results of another request ({changed} from "
                f"{recorded_file}); give another --out-dir, or delete it to start over"
            )
        return
    methods = {read_json_file(o).get("method") for o in done}
    if methods - {request["method"]}:
        raise InputError(
            f"{out_dir} holds results of method {sorted(map(str, methods))[0]!r}; give "
            "another --out-dir, or delete it to start over"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(recorded_file, json.dumps(request, indent=1) + "\n")


def executor_name(executor: Executor) -> str:
    """Where a batch runs, for the progress bar."""
    if executor.ray is not None:
        return f"Ray at {executor.ray}"
    return f"{executor.jobs} processes" if executor.jobs > 1 else "serial"


def run_graphs(
    paths: list[Path],
    out_dir: Path | None,
    out: Path | None,
    suffix: str,
    job: Callable[[Graph], Any],
    write: Callable[[Path, Graph, Any], Path],
    describe: Callable[[Graph, Any], str],
    executor: Executor,
    inputs: tuple[Path, ...] = (),
    read: Callable[[Path], Graph] = load,
) -> None:
    """``schedule`` / ``place`` on their GRAPH arguments, each read by ``read``: with
    ``out_dir`` a batch (``run_batch``, each result written as ``<stem><suffix>``), else
    the one graph, its result written to ``out`` if given; each result printed as
    ``describe(graph, result)``. ``inputs``: more files the command reads, which ``out``
    must not overwrite."""
    if out_dir is not None:

        def write_line(path: Path, graph: Graph, result: Any) -> str:
            write(path, graph, result)
            return describe(graph, result)

        run_batch(paths, out_dir, suffix, job, write_line, executor, read)
        return
    check_output(out, paths[0], *inputs)
    graph = read(paths[0])
    with progress_on_terminal():
        result = job(graph)
    line = describe(graph, result)
    if out is not None:
        line += f"; wrote {write(out, graph, result)}"
    console.print(line, markup=False)
