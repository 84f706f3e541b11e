"""``dagopt place``, ``dagopt evaluate-placement`` and ``dagopt generate placement``."""

import json
import re

import pytest

from dagopt.generate.placement import generate_placement
from dagopt.io import load, read_placement, write_graph_json
from dagopt.objectives.devices import Devices
from dagopt.objectives.placement import simulate
from dagopt.objectives.placement_bounds import meets_bound, placement_lower_bound
from test_cli import DIAMOND, assert_user_error, dagopt, write_json


@pytest.fixture
def placement_graph(tmp_path):
    return write_graph_json(generate_placement(40, seed=11), tmp_path / "g.json")


def test_generate_place_and_evaluate_round_trip(tmp_path):
    result = dagopt(
        "generate", "placement", "--nodes", 30, "--count", 2, "--seed", 7, "-o", tmp_path
    )
    assert result.exit_code == 0, result.output
    graph_path = tmp_path / "placement-30-s7.json"
    graph = load(graph_path)
    assert graph.num_nodes == 30 and "runtime" in graph.node_data
    out = tmp_path / "p.json"
    result = dagopt(
        "place",
        graph_path,
        "-m",
        "brkga",
        "--objective",
        "peak-memory",
        "--seed",
        1,
        "--evaluations",
        300,
        "--set",
        "population=30",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    assert "300 evaluations" in result.stdout
    document = json.loads(out.read_text())
    assert set(document) == {
        "graph",
        "graph_hash",
        "method",
        "objective",
        "devices",
        "order",
        "makespan",
        "peak_memory",
        "feasible",
        "seconds",
        "proved_optimal",
    }
    assert document["method"] == "brkga" and document["objective"] == "peak-memory"
    placement = read_placement(out, graph, 2)
    simulated = simulate(graph, Devices(), placement.device_of, placement.order)
    assert document["makespan"] == pytest.approx(simulated.makespan)
    assert document["peak_memory"] == pytest.approx(simulated.peak_memory.tolist())
    bound = placement_lower_bound(graph, Devices(), "peak-memory")
    proved = meets_bound(simulated.peak_memory.max(), bound)
    assert document["proved_optimal"] is (True if proved else None)
    evaluated = dagopt("evaluate-placement", graph_path, out)
    assert evaluated.exit_code == 0, evaluated.output
    assert f"makespan {simulated.makespan:.6g} s" in evaluated.stdout


def test_device_options_reach_the_cost_model(placement_graph, tmp_path):
    out = tmp_path / "p.json"
    result = dagopt(
        "place",
        placement_graph,
        "-m",
        "brkga",
        "-d",
        3,
        "--memory-gib",
        8,
        "--speeds",
        "1,2,4",
        "--evaluations",
        200,
        "--seed",
        0,
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    peaks = re.search(r"per device \[([^\]]*)\]", result.stdout).group(1).split(", ")
    assert len(peaks) == 3
    assert max(json.loads(out.read_text())["devices"].values()) <= 2
    result = dagopt("evaluate-placement", placement_graph, out, "-d", 2)
    assert_user_error(result, "but the devices are 0..1 (a placement file does not record")


def test_estimate_runtime_for_graphs_without_runtimes(tmp_path):
    graph_path = write_json(tmp_path / "diamond.json", DIAMOND)
    assert_user_error(dagopt("place", graph_path, "-m", "brkga"), "--estimate-runtime")
    result = dagopt("place", graph_path, "-m", "brkga", "--estimate-runtime", "--evaluations", 50)
    assert result.exit_code == 0, result.output


#: DIAMOND with a second output storage of ``b`` as its share node ``b.1``, read by ``d``.
SPLIT_DIAMOND = {
    **DIAMOND,
    "nodes": [
        *({**node, "share": 0} for node in DIAMOND["nodes"]),
        {"id": "b.1", "mem": 7, "share": 1},
    ],
    "edges": [
        *DIAMOND["edges"],
        {"source": "a", "target": "b.1"},
        {"source": "b.1", "target": "b"},
        {"source": "b.1", "target": "d"},
    ],
}
#: SPLIT_DIAMOND's share joined to its operator by hand.
JOINT_DIAMOND = {
    **DIAMOND,
    "nodes": [{**node, "mem": 37} if node["id"] == "b" else node for node in DIAMOND["nodes"]],
}


def test_share_nodes_are_joined_to_their_operators(tmp_path):
    """A share node (an extra output storage of a PyTorch operator, ``split_outputs``) is
    not an op to place: ``place`` and ``evaluate-placement`` join it to its operator, so
    the placement names operators only and scores as on the joint graph."""
    split = write_json(tmp_path / "split.json", SPLIT_DIAMOND)
    joint = write_json(tmp_path / "joint.json", JOINT_DIAMOND)
    place = ("place", "-m", "brkga", "--estimate-runtime", "--seed", 3, "--evaluations", 60)
    placements = []
    for graph in (split, joint):
        out = tmp_path / f"{graph.stem}.placement.json"
        result = dagopt(*place, graph, "-o", out)
        assert result.exit_code == 0, result.output
        placements.append({k: json.loads(out.read_text())[k] for k in ("devices", "order")})
    assert sorted(placements[0]["devices"]) == ["a", "b", "c", "d"]
    assert placements[0] == placements[1]
    lines = [dagopt("evaluate-placement", g, out, "--estimate-runtime") for g in (split, joint)]
    assert lines[0].exit_code == 0 and lines[0].output == lines[1].output


def test_a_share_node_without_its_operator_is_refused(tmp_path):
    nodes = [
        {**node, "id": "x.1"} if node["id"] == "b.1" else node for node in SPLIT_DIAMOND["nodes"]
    ]
    edges = [{k: "x.1" if v == "b.1" else v for k, v in e.items()} for e in SPLIT_DIAMOND["edges"]]
    graph_path = write_json(
        tmp_path / "bad.json", {**SPLIT_DIAMOND, "nodes": nodes, "edges": edges}
    )
    result = dagopt("place", graph_path, "-m", "brkga", "--estimate-runtime")
    assert_user_error(result, "share node 'x.1' of graph 'diamond' names no operator")


BAD_PLACEMENTS = {
    "not-a-placement": ({"order": []}, "not a placement file"),
    "unknown-node": ({"devices": {"zz": 0}, "order": []}, "node 'zz' is not in graph"),
    "bad-device": ({"devices": {"0": 5}, "order": []}, "placed on device 5"),
    "non-integer-device": ({"devices": {"0": "gpu"}, "order": []}, "not an integer"),
    "missing-device": ({"devices": {"0": 0}, "order": []}, "has no device"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLACEMENTS))
def test_bad_placement_files_are_one_line_errors(case, placement_graph, tmp_path):
    document, fragment = BAD_PLACEMENTS[case]
    path = write_json(tmp_path / "bad.json", document)
    assert_user_error(dagopt("evaluate-placement", placement_graph, path), fragment)


def test_placement_with_a_bad_order(placement_graph, tmp_path):
    graph = load(placement_graph)
    devices = {str(v): 0 for v in range(graph.num_nodes)}
    reversed_order = list(range(graph.num_nodes))[::-1]
    path = write_json(tmp_path / "bad.json", {"devices": devices, "order": reversed_order})
    assert_user_error(dagopt("evaluate-placement", placement_graph, path), "before its predecessor")
    path = write_json(tmp_path / "bad2.json", {"devices": devices, "order": [0, "x"]})
    assert_user_error(dagopt("evaluate-placement", placement_graph, path), "node 'x'")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("-m", "nope"), "unknown placement method 'nope'"),
        (("-m", "brkga", "--objective", "energy"), "unknown objective 'energy'"),
        (("-m", "brkga", "--speeds", "1,x"), "--speeds must be comma-separated"),
        (("-m", "brkga", "--speeds", "1,2,3"), "3 factors for 2 devices"),
        (("-m", "brkga", "--set", "population"), "--set expects key=value"),
        (("-m", "brkga", "--set", "colour=3"), "has no option 'colour'"),
        (("-m", "brkga", "--devices", "-1"), "a count must be at least 1"),
        (("-m", "brkga", "--memory-gib", "0"), "0 is not in the range x>0"),
        (("-m", "brkga", "--bandwidth", "0"), "0 is not in the range x>0"),
        (("-m", "brkga", "--set", "evaluations=10", "--evaluations", 20), "both give"),
        (("-m", "brkga", "--set", "population=2.5"), "option 'population' must be int"),
        (("-m", "local-search", "--set", "patience=2.5"), "option 'patience' must be int"),
        (("-m", "hsdag", "--set", "lr=abc"), "option 'lr' must be a number"),
        (("-m", "placeto", "--set", "episodes=2.5"), "option 'episodes' must be int"),
        (("-m", "rnn-placer", "--set", "hidden=-3"), "hidden >= 1"),
        (("-m", "brkga", "--profile", "p.json"), "--profile needs --env"),
    ],
)
def test_bad_place_arguments(args, fragment, placement_graph):
    assert_user_error(dagopt("place", placement_graph, *args), fragment)


def test_memory_gib_help_says_more_than_zero():
    result = dagopt("place", "--help")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "--memory-gib" in line)
    text = " ".join(line.strip("│ ") for line in lines[at : at + 3])
    assert "GiB (> 0)" in text and "x>=0" not in lines[at]


def test_a_placement_for_another_graph_is_refused(placement_graph, tmp_path):
    out = tmp_path / "p.json"
    result = dagopt("place", placement_graph, "-m", "single-device", "-o", out)
    assert result.exit_code == 0, result.output
    other = write_graph_json(generate_placement(40, seed=12), tmp_path / "other.json")
    result = dagopt("evaluate-placement", other, out)
    assert_user_error(result, "made for graph 'placement-40-s11', not for graph 'placement-40-s12'")
    legacy = json.loads(out.read_text())
    del legacy["graph_hash"]
    legacy_path = write_json(tmp_path / "legacy.json", legacy)
    assert_user_error(dagopt("evaluate-placement", other, legacy_path), "a different name")
    assert dagopt("evaluate-placement", placement_graph, legacy_path).exit_code == 0
    tampered = {**json.loads(out.read_text()), "graph": "placement-40-s12", "graph_hash": "0"}
    tampered_path = write_json(tmp_path / "tampered.json", tampered)
    assert_user_error(
        dagopt("evaluate-placement", other, tampered_path),
        "made for another graph named 'placement-40-s12' (its graph_hash differs",
    )


def test_memory_limit_is_reported(placement_graph):
    result = dagopt(
        "place", placement_graph, "-m", "brkga", "--memory-gib", 0.001, "--evaluations", 50
    )
    assert result.exit_code == 0, result.output
    assert "feasible: no" in result.stdout


def test_train_placement_command_runs_and_resumes(tmp_path):
    config = write_json(
        tmp_path / "c.json",
        {
            "policy": {"hidden": 8, "rounds": 1, "mlp_layers": 1},
            "train_graphs": 2,
            "validation_graphs": 1,
            "batch_size": 2,
            "epochs": 1,
            "brkga_evaluations": 30,
        },
    )
    run = tmp_path / "run"
    args = ("train", "placement", "--run-dir", run, "--threads", 1)
    result = dagopt(*args, "--config", config, "--objective", "peak-memory")
    assert result.exit_code == 0, result.output
    assert "epoch 0: train H(G,D)/H(G,U)" in result.stdout
    assert json.loads((run / "config.json").read_text())["objective"] == "peak-memory"
    assert_user_error(dagopt(*args, "--config", config), "pass --resume")
    assert dagopt(*args, "--resume").exit_code == 0  # nothing left to train
    other = ("train", "placement", "--run-dir", tmp_path / "other", "--threads", 1)
    result = dagopt(*other, "--config", config, "--set", "brkga_evaluations=20", "--set", "seed=3")
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "other" / "config.json").read_text())
    assert (saved["brkga_evaluations"], saved["seed"], saved["train_graphs"]) == (20, 3, 2)
    assert_user_error(dagopt(*other, "--set", "colour=3"), "colour")
    assert_user_error(dagopt(*other, "--set", "epochs"), "--set expects key=value")
