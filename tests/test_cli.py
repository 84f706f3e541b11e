"""The ``dagopt`` command: happy paths, and one-line errors with exit code 2 for bad input."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dagopt.cli.main import app
from dagopt.generate import generate_layered
from dagopt.graph import Graph
from dagopt.io import load, read_order, write_graph_json
from dagopt.objectives import must_live_bound, peak_memory
from dagopt.schedule import solve
from dagopt.schedule.base import SOLVERS, SolverResult, register

runner = CliRunner()

ORDERING_METHODS = ("bfs", "dfs", "random", "lpmf", "inductor", "approx-dp", "exact-dp", "dfs-dp")

DIAMOND = {
    "directed": True,
    "multigraph": False,
    "graph": {"name": "diamond"},
    "nodes": [
        {"id": "a", "mem": 10, "op": "input"},
        {"id": "b", "mem": 30},
        {"id": "c", "mem": 5},
        {"id": "d", "mem": 1},
    ],
    "edges": [
        {"source": "a", "target": "b"},
        {"source": "a", "target": "c"},
        {"source": "b", "target": "d"},
        {"source": "c", "target": "d"},
    ],
}


def dagopt(*args) -> object:
    """Run the CLI in-process; ``result.stdout`` / ``result.stderr`` are kept apart."""
    return runner.invoke(app, [str(a) for a in args])


def write_json(path: Path, document) -> Path:
    path.write_text(json.dumps(document))
    return path


def with_nodes(*nodes, edges=None) -> dict:
    """DIAMOND with its node list (and optionally its edge list) replaced."""
    edges = DIAMOND["edges"] if edges is None else edges
    return {**DIAMOND, "nodes": list(nodes), "edges": edges}


def summary_peak(line: str) -> float:
    return float(re.search(r"\bpeak (\S+?),", line).group(1))


@pytest.fixture
def diamond(tmp_path) -> Path:
    return write_json(tmp_path / "diamond.json", DIAMOND)


@pytest.fixture
def medium(tmp_path) -> Path:
    """A 12-node DAG with branches, skip edges and mixed sizes: small enough for exact-dp."""
    src = [0, 0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 8, 9, 2, 0, 10]
    dst = [1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 9, 10, 10, 8, 11, 11]
    mem = [8, 3, 12, 1, 6, 4, 9, 2, 7, 5, 1, 3]
    graph = Graph(12, src, dst, mem=mem, param_mem=[0, 1] * 6, name="medium")
    return write_graph_json(graph, tmp_path / "medium.json")


@pytest.fixture
def recording_solver():
    """A test-only solver taking option ``beam_width``; yields (name, list of the kwargs
    it received on the user's graphs, not on ``solve``'s one-time warm-up graph)."""
    name, calls = "test-recording", []

    @register(name, "test only: Kahn's order", options=("beam_width",))
    def _solve(graph, **kwargs):
        if graph.name != "warm-up":
            calls.append(kwargs)
        return SolverResult(order=graph.topological_order, proved_optimal=True)

    yield name, calls
    SOLVERS.unregister(name)


def assert_user_error(result, fragment: str) -> str:
    """Exit 2, one ``error: ...`` line on stderr containing ``fragment``, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.output
    return lines[0]


# --------------------------------------------------------------------------- bad graph files
BAD_GRAPHS = {
    "invalid-json": ('{"nodes": [', "invalid JSON at line 1"),
    "not-node-link": ("[1, 2, 3]", "not a node-link graph"),
    "node-without-mem": (
        json.dumps(with_nodes({"id": "a", "mem": 1}, {"id": "b"}, edges=[])),
        "node 'b' has no 'mem'",
    ),
    "negative-mem": (
        json.dumps(with_nodes({"id": "a", "mem": 1}, {"id": "b", "mem": -4}, edges=[])),
        "node 'b' has invalid mem",
    ),
    "nan-mem": (
        '{"nodes": [{"id": "a", "mem": NaN}], "edges": []}',
        "node 'a' has invalid mem",
    ),
    "infinite-mem": (
        '{"nodes": [{"id": "a", "mem": Infinity}], "edges": []}',
        "node 'a' has invalid mem",
    ),
    "edge-to-unknown-node": (
        json.dumps(with_nodes({"id": "a", "mem": 1}, edges=[{"source": "a", "target": "zz"}])),
        "target 'zz' is not a node of the graph",
    ),
    "self-loop": (
        json.dumps(
            with_nodes(
                {"id": "a", "mem": 1},
                {"id": "b", "mem": 1},
                edges=[{"source": "a", "target": "b"}, {"source": "b", "target": "b"}],
            )
        ),
        "self-loop on node 'b'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
def test_bad_graph_file_is_one_line_error(case, tmp_path):
    text, fragment = BAD_GRAPHS[case]
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert_user_error(dagopt("schedule", path, "--method", "bfs"), fragment)


def test_cycle_error_names_the_nodes_on_the_cycle(tmp_path):
    nodes = [{"id": x, "mem": 1} for x in "abcd"]
    edges = [{"source": s, "target": t} for s, t in ("ab", "bc", "cd", "db")]
    path = write_json(tmp_path / "cyclic.json", with_nodes(*nodes, edges=edges))
    line = assert_user_error(dagopt("schedule", path, "--method", "bfs"), "cycle")
    assert set(re.findall(r"'(\w)'", line)) == {"b", "c", "d"}


def test_missing_graph_file(tmp_path):
    assert_user_error(dagopt("schedule", tmp_path / "nope.json", "-m", "bfs"), "no such file")
    assert_user_error(dagopt("evaluate", tmp_path / "nope.json", "o.json"), "no such file")


def test_unsupported_suffix(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text("a -> b")
    assert_user_error(dagopt("schedule", path, "-m", "bfs"), "unsupported graph format '.txt'")


# --------------------------------------------------------------------------- bad requests
def test_unknown_method(diamond):
    assert_user_error(dagopt("schedule", diamond, "--method", "nope"), "unknown method 'nope'")


def test_option_the_method_does_not_take(diamond, recording_solver):
    name, calls = recording_solver
    result = dagopt("schedule", diamond, "-m", name, "--max-states", "10")
    assert_user_error(result, f"method {name!r} has no option 'max_states'")
    assert calls == []


def test_missing_method_is_a_usage_error(diamond):
    assert dagopt("schedule", diamond).exit_code == 2


# --------------------------------------------------------------------------- bad order files
BAD_ORDERS = {
    "unknown-node": (["a", "b", "zz", "d"], "node 'zz' is not in graph 'diamond'"),
    "missing-node": (["a", "b", "d"], "order misses 1 of 4 nodes, e.g. 'c'"),
    "repeated-node": (["a", "b", "b", "c", "d"], "order repeats node 'b'"),
    "precedence": (["a", "d", "b", "c"], "runs 'd' before its predecessor"),
}


@pytest.mark.parametrize("case", sorted(BAD_ORDERS))
def test_bad_order_file_is_one_line_error(case, diamond, tmp_path):
    order, fragment = BAD_ORDERS[case]
    path = write_json(tmp_path / "order.json", {"graph": "diamond", "order": order})
    assert_user_error(dagopt("evaluate", diamond, path), fragment)


def test_order_file_that_is_not_an_order(diamond, tmp_path):
    path = write_json(tmp_path / "order.json", {"nodes": []})
    assert_user_error(dagopt("evaluate", diamond, path), "not an order file")


# --------------------------------------------------------------------------- happy paths
def test_generate_writes_graphs_that_load(tmp_path):
    result = dagopt(
        "generate", "layered", "--nodes", 30, "--count", 3, "--seed", 5, "--out", tmp_path
    )
    assert result.exit_code == 0, result.output
    names = [f"layered-30-s{k}.json" for k in (5, 6, 7)]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    for name in names:
        assert name in result.stdout
        graph = load(tmp_path / name)
        assert graph.num_nodes == 30
        assert graph.name == name.removesuffix(".json")


def test_generate_is_deterministic_and_shows_progress_for_many(tmp_path):
    for run in ("one", "two"):
        args = ("generate", "layered", "-n", 12, "-c", 20, "--seed", 0, "-o", tmp_path / run)
        result = dagopt(*args)
        assert result.exit_code == 0, result.output
        assert "wrote 20 graphs" in result.stdout
    for path in (tmp_path / "one").iterdir():
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes()


@pytest.mark.parametrize("method", ORDERING_METHODS)
def test_schedule_writes_an_order_that_evaluate_reproduces(method, medium, tmp_path):
    out = tmp_path / "order.json"
    result = dagopt("schedule", medium, "--method", method, "--seed", 0, "--out", out)
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{method}: peak ") and "lower bound" in line
    assert "proved optimal" in line and str(out) in line

    recorded = read_order(out, load(medium))
    assert recorded.method == method
    assert recorded.peak_memory == peak_memory(load(medium), recorded.order)

    evaluated = dagopt("evaluate", medium, out)
    assert evaluated.exit_code == 0, evaluated.output
    assert summary_peak(evaluated.stdout) == summary_peak(line)
    assert f"recorded peak {summary_peak(line):.6g}" in evaluated.stdout


def test_schedule_passes_only_the_options_given(diamond, recording_solver):
    name, calls = recording_solver
    assert dagopt("schedule", diamond, "-m", name).exit_code == 0
    args = ("--beam-width", 4, "--seed", 3, "--time-limit", 1.5, "--keep-outputs")
    result = dagopt("schedule", diamond, "-m", name, *args)
    assert result.exit_code == 0, result.output
    assert calls == [
        {"seed": None, "time_limit": None, "keep_outputs": False},
        {"seed": 3, "time_limit": 1.5, "keep_outputs": True, "beam_width": 4},
    ]
    assert "proved optimal: yes" in result.stdout


def test_evaluate_profile_prints_every_step(diamond, tmp_path):
    path = write_json(tmp_path / "order.json", {"order": ["a", "c", "b", "d"]})
    result = dagopt("evaluate", diamond, path, "--profile")
    assert result.exit_code == 0, result.output
    assert "during" in result.stdout and "live after" in result.stdout
    # both orders of b and c hold a, b and c at once: 45 is the optimum, which the branch
    # bound proves (the must-live bound is 40)
    assert result.stdout.splitlines()[-1] == "peak 45, lower bound 45 (proved optimal)"


def test_evaluate_keep_outputs_counts_graph_outputs(tmp_path):
    # x feeds two outputs y and z; kept alive, y is still in memory while z runs.
    fork = with_nodes(
        {"id": "x", "mem": 2},
        {"id": "y", "mem": 3},
        {"id": "z", "mem": 4},
        edges=[{"source": "x", "target": "y"}, {"source": "x", "target": "z"}],
    )
    graph = write_json(tmp_path / "fork.json", fork)
    order = write_json(tmp_path / "order.json", {"order": ["x", "y", "z"], "peak_memory": 6})
    plain = dagopt("evaluate", graph, order)
    assert plain.stdout.strip() == "peak 6, lower bound 6 (proved optimal), recorded peak 6"
    kept = dagopt("evaluate", graph, order, "--keep-outputs", "--bound-time", "0")
    # kept outputs: both sinks are live at the last step, so the must-live bound is 3 + 4
    assert kept.stdout.startswith("peak 9, lower bound 7, recorded peak 6 (differs")


def test_evaluate_takes_keep_outputs_from_the_order_file_unless_told(tmp_path):
    graph = tmp_path / "g.json"
    assert dagopt("generate", "layered", "--nodes", "30", "--out", tmp_path).exit_code == 0
    (tmp_path / "layered-30-s0.json").rename(graph)
    order = tmp_path / "o.json"
    made = dagopt("schedule", graph, "--method", "lpmf", "--keep-outputs", "--out", order)
    assert made.exit_code == 0, made.output
    assert json.loads(order.read_text())["keep_outputs"] is True
    peak = made.stdout.split("peak ")[1].split(",")[0]
    recorded = dagopt("evaluate", graph, order, "--bound-time", "0").stdout.strip()
    assert recorded.startswith(f"peak {peak},") and recorded.endswith(f"recorded peak {peak}")
    freed = dagopt("evaluate", graph, order, "--free-outputs", "--bound-time", "0").stdout
    assert freed.strip().endswith("(differs: it was computed with --keep-outputs)")


def test_methods_lists_every_registered_solver():
    result = dagopt("methods")
    assert result.exit_code == 0, result.output
    for name in SOLVERS.all():
        assert name in result.stdout


def test_demo_runs_quickly():
    start = time.perf_counter()
    result = dagopt("demo")
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - start < 30
    for method in ("bfs", "lpmf", "approx-dp", "exact-dp"):
        assert method in result.stdout
    assert "% gap" in result.stdout


def test_python_dash_m_dagopt(tmp_path):
    missing = tmp_path / "missing.json"
    command = [sys.executable, "-m", "dagopt", "schedule", str(missing), "-m", "bfs"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == f"error: {missing}: no such file\n"
    help_text = subprocess.run(
        [sys.executable, "-m", "dagopt", "--help"], capture_output=True, text=True, timeout=120
    )
    assert help_text.returncode == 0 and "schedule" in help_text.stdout


def test_help_paragraphs_are_wrapped_to_the_terminal_not_to_the_source():
    """typer >= 0.29 keeps the line breaks of a docstring's later paragraphs; the root
    group joins them, so a wide terminal shows a paragraph on one line."""
    result = runner.invoke(app, ["train", "brkga", "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    assert "Each setting's result is kept in OUT.partial.json until the search ends" in (
        result.stdout
    )


def test_examples_writes_the_shipped_files_and_keeps_existing_ones(tmp_path):
    from dagopt.data import EXAMPLE_FILES

    result = dagopt("examples", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(EXAMPLE_FILES)
    assert load(tmp_path / "small-cnn.onnx").num_nodes == 18
    assert load(tmp_path / "tiny.json").num_nodes == 6
    (tmp_path / "tiny.json").write_text("mine")
    assert_user_error(dagopt("examples", "--out", tmp_path), "pass --force")
    assert (tmp_path / "tiny.json").read_text() == "mine"
    assert dagopt("examples", "--out", tmp_path, "--force").exit_code == 0
    assert load(tmp_path / "tiny.json").num_nodes == 6


def test_examples_checks_every_target_before_writing_any(tmp_path):
    """A folder in the place of the fifth example file: an error, and none written."""
    (tmp_path / "tile-kernel.npz").mkdir()
    result = dagopt("examples", "--out", tmp_path, "--force")
    assert_user_error(result, "tile-kernel.npz: is a directory, not a file")
    assert [p.name for p in tmp_path.iterdir()] == ["tile-kernel.npz"]


def test_schedule_anytime_takes_its_options(medium):
    result = dagopt("schedule", medium, "-m", "anytime", "--window", 4, "--windows", 3)
    assert result.exit_code == 0, result.output
    exact = dagopt("schedule", medium, "-m", "exact-dp")
    assert summary_peak(result.stdout) >= summary_peak(exact.stdout)
    assert dagopt("schedule", medium, "-m", "anytime", "--window", 0).exit_code == 2
    # a largest window below the smallest (default 32) is refused, not silently raised
    assert dagopt("schedule", medium, "-m", "anytime", "--largest", 8).exit_code == 2
    options = ("--window", 4, "--windows", 3, "--largest", 8, "--threads", 2)
    assert dagopt("schedule", medium, "-m", "anytime", *options).exit_code == 0
    assert dagopt("schedule", medium, "-m", "anytime", "--threads", 0).exit_code == 2


def test_evaluate_prints_the_branch_bound_unless_bound_time_is_zero(tmp_path, medium):
    # 0 -> 1 -> 3 -> 4 and 0 -> 2 -> 4: the cut bound (10) beats the must-live bound (9)
    edges = [(0, 1), (0, 2), (1, 3), (2, 4), (3, 4)]
    siblings = with_nodes(
        *({"id": str(v), "mem": m} for v, m in enumerate([1, 5, 1, 4, 2])),
        edges=[{"source": str(a), "target": str(b)} for a, b in edges],
    )
    graph = write_json(tmp_path / "siblings.json", siblings)
    order = write_json(tmp_path / "order.json", {"order": ["0", "1", "2", "3", "4"]})
    proved = dagopt("evaluate", graph, order).stdout.strip()
    assert proved == "peak 10, lower bound 10 (proved optimal)"
    must_live = dagopt("evaluate", graph, order, "--bound-time", "0")
    assert must_live.stdout.strip() == "peak 10, lower bound 9"
    # bfs's order is not optimal; approx-dp's order and the bound close on the optimum
    bfs = tmp_path / "bfs.json"
    assert dagopt("schedule", medium, "-m", "bfs", "--out", bfs).exit_code == 0
    optimum = solve(load(medium), "exact-dp").peak_memory
    line = dagopt("evaluate", medium, bfs).stdout.strip()
    assert line == (
        f"peak 42, lower bound {optimum:g} (the optimum: approx-dp reaches {optimum:g}), "
        "recorded peak 42"
    )


def test_schedule_prints_anytime_s_cut_bound_when_stronger(tmp_path):
    # the optimum of this graph is 25 % above its must-live bound and equal to its cut
    # bound, which anytime computes once stalled and proves its order optimal with
    g = generate_layered(300, seed=7)
    path = write_graph_json(g, tmp_path / "g.json")
    line = dagopt("schedule", path, "-m", "anytime", "--time-limit", 60).stdout.strip()
    peak, bound = (float(x) for x in re.findall(r"(?:peak|lower bound) ([0-9.]+)", line))
    assert bound == pytest.approx(peak, rel=1e-6) and bound > 1.2 * must_live_bound(g)
    assert line.endswith("proved optimal: yes")


def test_a_peak_that_meets_the_lower_bound_is_proved_optimal(tmp_path):
    # lpmf proves nothing itself; one node's peak is its must-live bound
    path = write_json(tmp_path / "one.json", with_nodes({"id": "a", "mem": 8}, edges=[]))
    out = tmp_path / "o.json"
    line = dagopt("schedule", path, "-m", "lpmf", "--out", out).stdout
    assert "peak 8, lower bound 8" in line and "proved optimal: yes" in line
    assert json.loads(out.read_text())["proved_optimal"] is True
    wide = dagopt("schedule", generate_layered_file(tmp_path), "-m", "bfs", "--out", out)
    assert "proved optimal: no" in wide.stdout
    assert json.loads(out.read_text())["proved_optimal"] is None  # nothing claimed


def generate_layered_file(folder: Path) -> Path:
    return write_graph_json(generate_layered(60, seed=0), folder / "layered.json")


def test_zoo_list_refuses_a_cache_dir_that_is_a_file(tmp_path):
    (tmp_path / "cache").write_text("")
    result = CliRunner().invoke(app, ["zoo", "list", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2
    assert "is a file, not a directory" in result.output


def test_resume_names_the_options_that_would_change_the_run(tmp_path):
    run = tmp_path / "run"
    args = ["train", "placement", "--run-dir", str(run), "--config"]
    assert CliRunner().invoke(app, ["examples", "--out", str(tmp_path)]).exit_code == 0
    first = CliRunner().invoke(app, [*args, str(tmp_path / "regal-quick.json")])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(
        app, ["train", "placement", "--run-dir", str(run), "--resume", "--set", "epochs=5"]
    )
    assert again.exit_code == 2
    assert "the options given (--config, --set, ...) differ from the run's" in again.output


def test_a_batch_with_an_option_its_method_lacks_fails_before_any_work(tmp_path):
    folder = tmp_path / "graphs"
    folder.mkdir()
    write_graph_json(generate_layered(20, seed=0), folder / "g.json")
    result = dagopt(
        "schedule", folder, "-m", "approx-dp", "--samples", 3, "--out-dir", tmp_path / "o"
    )
    assert result.exit_code == 2 and "has no option 'samples'" in result.output
    assert not (tmp_path / "o").exists()


def test_evaluate_says_when_the_order_was_made_for_another_graph(tmp_path):
    graph = tmp_path / "a.json"
    write_graph_json(generate_layered(20, seed=0), graph)
    assert dagopt("schedule", graph, "-m", "bfs", "-o", tmp_path / "o.json").exit_code == 0
    data = json.loads((tmp_path / "o.json").read_text())
    data.update(graph="other", peak_memory=1)
    (tmp_path / "o.json").write_text(json.dumps(data))
    result = dagopt("evaluate", graph, tmp_path / "o.json", "--bound-time", 0)
    assert "the order file was made for graph 'other'" in result.output


def test_export_onnx_takes_onnx_models_only(tmp_path):
    (tmp_path / "m.xml").write_text("<net/>")
    (tmp_path / "o.json").write_text('{"order": []}')
    result = dagopt(
        "export-onnx", tmp_path / "m.xml", tmp_path / "o.json", "--out", tmp_path / "r.onnx"
    )
    assert result.exit_code == 2 and "writes ONNX models only" in result.output
