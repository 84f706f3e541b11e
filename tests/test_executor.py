"""``dagopt.executor`` and the batch commands ``dagopt schedule|place GRAPH... --out-dir``:
the same results serially, on local processes and on a local Ray cluster (loopback),
a failing graph reported while the others run, and resume after a worker is killed."""

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from dagopt.errors import InputError, is_interrupt
from dagopt.executor import Executor
from dagopt.generate import generate_layered
from dagopt.generate.placement import generate_placement
from dagopt.io import write_graph_json
from test_cli import assert_user_error, dagopt

SRC = Path(__file__).resolve().parents[1] / "src"
SCHEDULE = ("schedule", "-m", "approx-dp", "--beam-width", "200", "--seed", "3")


def graphs(folder: Path, count: int, nodes: int = 60) -> Path:
    """``count`` layered graphs and one broken file in ``folder``."""
    folder.mkdir()
    for i in range(count):
        write_graph_json(generate_layered(nodes, seed=2_000_000 + i), folder / f"g{i}.json")
    (folder / "broken.json").write_text('{"nodes": [')
    return folder


def results(out_dir: Path) -> dict[str, dict]:
    """Every result file of a batch, without the measured seconds."""
    found = {}
    for path in sorted(out_dir.glob("*.*.json")):
        document = json.loads(path.read_text())
        document.pop("seconds")
        found[path.name] = document
    return found


def assert_failed_batch(result, failed: str, graphs: int) -> None:
    """Exit 2; one ``failed:`` line on stderr per failed graph, then one ``error:`` line."""
    assert result.exit_code == 2, result.output
    *failures, last = result.stderr.splitlines()
    assert (
        last.startswith(f"error: 1 of {graphs} graphs failed; see ")
        and "Traceback" not in result.output
    )
    assert len(failures) == 1 and failures[0].startswith("failed: ") and failed in failures[0]


def summary(out_dir: Path) -> dict[str, dict]:
    with open(out_dir / "summary.csv") as handle:
        return {Path(row["graph"]).name: row for row in csv.DictReader(handle)}


def test_map_keeps_input_order_and_reports_each_failure():
    for executor in (Executor(), Executor(jobs=2)):
        seen: list[int] = []
        outcomes = executor.map(math.sqrt, [4, -1, 9], on_done=lambda i, o, s=seen: s.append(i))
        assert [o.value for o in outcomes] == [2.0, None, 3.0]
        assert outcomes[1].error == "ValueError: math domain error" and not outcomes[1].ok
        assert sorted(seen) == [0, 1, 2]


def test_measurement_jobs_never_outnumber_the_cores():
    with pytest.raises(InputError, match="measurement jobs need"):
        Executor(jobs=len(os.sched_getaffinity(0)) + 1, whole_cores=True)


def test_batch_on_processes_matches_serial_and_reports_the_broken_graph(tmp_path):
    folder = graphs(tmp_path / "g", 3)
    serial = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "serial")
    assert_failed_batch(serial, "broken.json: invalid JSON", 4)
    assert serial.stdout.count("approx-dp: peak") == 3
    jobs = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "jobs", "--jobs", 2)
    assert_failed_batch(jobs, "broken.json: invalid JSON", 4)
    assert results(tmp_path / "serial") == results(tmp_path / "jobs")
    assert len(results(tmp_path / "jobs")) == 3
    rows = summary(tmp_path / "jobs")
    assert (
        rows["broken.json"]["status"] == "failed" and "invalid JSON" in rows["broken.json"]["error"]
    )
    assert {rows[f"g{i}.json"]["status"] for i in range(3)} == {"new"}
    # The same order as a single-graph run with the same seed.
    single = tmp_path / "single.json"
    assert dagopt(*SCHEDULE, folder / "g1.json", "-o", single).exit_code == 0
    assert (
        json.loads(single.read_text())["order"]
        == results(tmp_path / "jobs")["g1.order.json"]["order"]
    )
    # Resume: nothing runs again once the broken file is gone.
    (folder / "broken.json").unlink()
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "jobs").glob("*.order.json")}
    again = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "jobs", "--jobs", 2)
    assert again.exit_code == 0, again.output
    assert "3 graphs: 0 new, 3 resumed, 0 failed" in again.stdout
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "jobs").glob("*.order.json")}
    # Another method or option in the same folder is refused, not reported as resumed.
    for other in (["--seed", "4"], ["--keep-outputs"]):
        refused = dagopt(*SCHEDULE, *other, folder, "--out-dir", tmp_path / "jobs")
        assert refused.exit_code == 2 and "holds the results of another request" in refused.output
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "jobs").glob("*.order.json")}


def test_a_cyclic_graph_fails_alone_and_a_request_without_results_is_replaced(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    cycle = {"nodes": [{"id": 0}, {"id": 1}], "edges": [[0, 1], [1, 0]]}
    (folder / "cycle.json").write_text(json.dumps(cycle))
    out = tmp_path / "out"
    assert_failed_batch(dagopt(*SCHEDULE, folder, "--out-dir", out), "cycle", 1)
    assert summary(out)["cycle.json"]["status"] == "failed"
    write_graph_json(generate_layered(30, seed=0), folder / "cycle.json")  # repaired
    other = dagopt("schedule", "-m", "bfs", folder, "--out-dir", out)
    assert other.exit_code == 0, other.output  # the first request left no result
    assert json.loads((out / "request.json").read_text())["method"] == "bfs"


def test_place_batch_on_processes_matches_serial(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        write_graph_json(generate_placement(30, seed=2_000_000 + i), folder / f"p{i}.json")
    command = ("place", folder, "-m", "brkga", "--evaluations", 300, "--seed", 1, "--out-dir")
    assert dagopt(*command, tmp_path / "serial").exit_code == 0
    assert dagopt(*command, tmp_path / "jobs", "--jobs", 2).exit_code == 0
    assert results(tmp_path / "serial") == results(tmp_path / "jobs")
    assert summary(tmp_path / "jobs")["p0.json"]["objective"] == "runtime"


def test_batch_options_need_out_dir(tmp_path):
    folder = graphs(tmp_path / "g", 2)
    assert_user_error(dagopt(*SCHEDULE, folder / "g0.json", folder / "g1.json"), "--out-dir")
    assert_user_error(dagopt(*SCHEDULE, folder / "g0.json", "--jobs", 2), "--out-dir")
    result = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "o", "-o", tmp_path / "x.json")
    assert_user_error(result, "--out names one result file")


def test_missing_ray_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` does without Ray
    folder = graphs(tmp_path / "g", 1)
    result = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "o", "--ray", "local")
    assert_user_error(result, "pip install 'dagopt[ray]'")


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance on loopback with two CPUs, shut down after the module."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


def test_batch_on_ray_matches_serial(tmp_path, ray_cluster):
    folder = graphs(tmp_path / "g", 3)
    assert dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "serial").exit_code == 2
    result = dagopt(*SCHEDULE, folder, "--out-dir", tmp_path / "ray", "--ray", "auto")
    assert_failed_batch(result, "broken.json: invalid JSON", 4)
    assert len(results(tmp_path / "ray")) == 3
    assert results(tmp_path / "serial") == results(tmp_path / "ray")


#: About a second per graph of 200 nodes: a worker is killed while graphs are left.
SLOW_SCHEDULE = ("schedule", "-m", "approx-dp", "--beam-width", "5000", "--seed", "3")


def start_batch(folder: Path, out_dir: Path, *options: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "dagopt", *SLOW_SCHEDULE, str(folder), "--out-dir"]
    command.append(str(out_dir))
    return subprocess.Popen(
        [*command, *options], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def kill_a_worker(process: subprocess.Popen, out_dir: Path, is_worker) -> None:
    """Wait for the batch's first result, then SIGKILL one worker process."""
    deadline = time.monotonic() + 120
    while not list(out_dir.glob("*.order.json")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    while True:  # one process listing can miss a worker (psutil reads /proc as it goes)
        tree = psutil.Process(process.pid).children(recursive=True)
        workers = [p for p in tree if is_worker(p)]
        if workers:
            break
        assert process.poll() is None, "the batch ended before a worker could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(workers[0].pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jobs", "ray"])
def test_resume_after_a_worker_is_killed(tmp_path, backend):
    # 16 graphs of about a second on 2 workers: graphs are left when the first result
    # appears, even on a loaded machine (with 8, all had finished once before the kill)
    folder = graphs(tmp_path / "g", 16, nodes=200)
    (folder / "broken.json").unlink()
    assert dagopt(*SLOW_SCHEDULE, folder, "--out-dir", tmp_path / "serial").exit_code == 0
    out_dir = tmp_path / backend
    if backend == "jobs":
        process = start_batch(folder, out_dir, "--jobs", "2")

        def is_worker(p):  # forked by the forkserver, itself a child of the command
            return p.ppid() != process.pid

    else:
        process = start_batch(folder, out_dir, "--ray", "local", "--jobs", "2")

        def is_worker(p):
            return "ray::" in " ".join(p.cmdline()) and "_call" in " ".join(p.cmdline())

    kill_a_worker(process, out_dir, is_worker)
    process.communicate(timeout=300)
    # Ray retries the lost task on another worker; a killed local worker fails the
    # graphs it held, and running the command again finishes them.
    if backend == "jobs":
        assert process.returncode == 2
        rerun = start_batch(folder, out_dir, "--jobs", "2")
        stdout, _ = rerun.communicate(timeout=300)
        assert rerun.returncode == 0 and "resumed" in stdout
    else:
        assert process.returncode == 0
    assert results(tmp_path / "serial") == results(out_dir)


@pytest.mark.slow
def test_regal_training_with_worker_rewards_matches_serial(tmp_path):
    from dagopt.train.regal.trainer import train_regal
    from test_place_regal import tiny_training

    serial = train_regal(tmp_path / "serial", tiny_training())
    fanned = train_regal(tmp_path / "jobs", tiny_training(), executor=Executor(jobs=2))
    assert [m.train_ratio for m in fanned] == [m.train_ratio for m in serial]
    assert [m.validation_ratio for m in fanned] == [m.validation_ratio for m in serial]
    states = [torch.load(tmp_path / d / "state.pt", weights_only=True) for d in ("serial", "jobs")]
    for a, b in zip(states[0]["policy"].values(), states[1]["policy"].values(), strict=True):
        assert torch.equal(a, b)
    assert (tmp_path / "serial" / "reference.json").read_text() == (
        tmp_path / "jobs" / "reference.json"
    ).read_text()


def test_benchmark_runs_on_processes_match_serial_and_keep_the_good_runs():
    from dagopt.bench.datasets import layered_test_set
    from dagopt.bench.ordering import run_methods
    from dagopt.errors import SolverError

    cases = [(40, g.name, g) for g in layered_test_set(40, 3)]
    methods = ["approx-dp", "inductor"]
    serial = run_methods(cases, methods, lambda m, s: {})
    workers = Executor(jobs=2, whole_cores=True)
    parallel = run_methods(cases, methods, lambda m, s: {}, executor=workers)
    assert [(r.graph, r.method, r.peak_memory) for r in parallel] == [
        (r.graph, r.method, r.peak_memory) for r in serial
    ]
    recorded = []
    with pytest.raises(SolverError, match="3 of 6 runs failed; first: inductor on layered"):
        run_methods(
            cases,
            methods,
            lambda m, s: {"beam_width": 5} if m == "inductor" else {},
            on_run=lambda run, graph, order: recorded.append(run.method),
            executor=workers,
        )
    assert recorded == ["approx-dp"] * 3  # saved as they came, so a rerun resumes


def test_local_batches_never_import_ray(tmp_path):
    folder = graphs(tmp_path / "g", 2)
    (folder / "broken.json").unlink()
    script = (
        "import sys\n"
        "from dagopt.cli.main import app\n"
        f"args = ['schedule', '-m', 'dfs', {str(folder)!r}, '--out-dir', {str(tmp_path / 'o')!r}]\n"
        "app(args + ['--jobs', '2'], standalone_mode=False)\n"
        "print('ray imported:', 'ray' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 graphs: 2 new" in done.stdout and "ray imported: False" in done.stdout


def _interrupted_in_compiled_code(_item):
    """What numba raises when Ctrl-C lands in compiled code: SystemErrors caused by it."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError("returned a result with an exception set") from interrupt
    except SystemError as inner:
        raise SystemError("CPUDispatcher(...) returned a result with an exception set") from inner


def test_a_ctrl_c_in_compiled_code_stops_the_map_instead_of_failing_one_item():
    with pytest.raises(KeyboardInterrupt):
        Executor().map(_interrupted_in_compiled_code, [1, 2])
    assert not is_interrupt(SystemError("a real one")) and is_interrupt(KeyboardInterrupt())
