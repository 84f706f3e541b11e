"""``dagopt place MODEL --env ... --devices NAMES`` (paper 004's latency environments)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dagopt.generate.placement import generate_placement
from dagopt.io import write_graph_json
from test_cli import assert_user_error, dagopt

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def graph_file(tmp_path):
    graph = generate_placement(30, seed=3)
    return write_graph_json(graph, tmp_path / "g.json")


def test_simulated_env_places_a_graph_file_and_says_it_is_simulated(graph_file, tmp_path):
    out = tmp_path / "p.json"
    result = dagopt("place", graph_file, "--method", "hsdag", "--env", "simulated",
                    "--devices", "cpu,cuda:0", "--set", "episodes=2", "--set", "steps=3",
                    "--seed", 0, "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "SIMULATED" in result.stdout and "7 evaluations, 0 failed" in result.stdout
    document = json.loads(out.read_text())
    assert set(document["devices"].values()) <= {0, 1}
    assert document["environment"] == {
        "env": "simulated", "devices": ["cpu", "cuda:0"], "latency": "SIMULATED"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--env", "torch", "--devices", "cpu,cpu"], "needs a zoo model"),
        (["--env", "profiled", "--devices", "cpu,cpu"], "needs a zoo model"),
        (["--env", "simulated", "--devices", "cpu,tpu"], "no simulated device kind"),
        (["--env", "moon", "--devices", "cpu,cpu"], "unknown environment"),
        (["--env", "simulated", "--devices", "2"], "--env needs device names"),
        (["--devices", "cpu,cuda:0"], "need --env"),
        (["--env", "simulated", "--devices", "cpu,gpu", "--profile", "x.json"], "--profile"),
        (["--env", "simulated", "--devices", "cpu,,gpu"], "--devices has an empty entry"),
        (["--env", "torch", "--devices", "cpu,cpu", "--noise", "0.1"], "--noise is for --env"),
        (["--noise", "0.1"], "--noise needs --env"),
        (["--set", "hidden=-3", "--env", "simulated", "--devices", "cpu,gpu"], "hidden >= 1"),
    ]
    + [
        (["--env", "simulated", "--devices", "cpu,gpu", *option], f"{option[0]} is for the")
        for option in (
            ["--objective", "peak-memory"],
            ["--memory-gib", "3"],
            ["--speeds", "1,2"],
            ["--latency", "1e-3"],
            ["--bandwidth", "1e9"],
            ["--estimate-runtime"],
            ["--peak-flops", "1e12"],
            ["--mem-bandwidth", "1e9"],
        )
    ],
)
def test_impossible_combinations_are_one_line_errors(graph_file, args, fragment):
    assert_user_error(dagopt("place", graph_file, "--method", "hsdag", *args), fragment)


def test_a_model_that_is_no_file_and_no_zoo_model_is_named():
    result = dagopt("place", "nosuchmodel", "--method", "hsdag", "--env", "simulated",
                    "--devices", "cpu,gpu")  # fmt: skip
    assert_user_error(result, "no such file or zoo model: nosuchmodel")


def test_the_time_limit_reaches_the_env_placer(graph_file):
    result = dagopt("place", graph_file, "--method", "hsdag", "--env", "simulated",
                    "--devices", "cpu,gpu", "--set", "episodes=1000000", "--set", "steps=2",
                    "--time-limit", "0.2")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "the time limit stopped it after" in result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a CPU-only machine")
def test_cuda_without_a_gpu_is_a_one_line_error():
    result = dagopt("place", "resnet-50", "--method", "hsdag", "--env", "torch",
                    "--devices", "cpu,cuda:0")  # fmt: skip
    assert_user_error(result, "no such GPU")


def test_a_saved_program_is_placed_on_measured_and_profiled_latency(tmp_path):
    """A ``.pt2`` runs in ``--env torch`` on its saved example inputs (MEASURED), and in
    ``--env profiled`` with a profile ``benchmarks/hsdag_profile.py`` measured of it."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    path = tmp_path / "mlp.pt2"
    torch.export.save(torch.export.export(model.eval(), (torch.randn(2, 8),)), path)
    out = tmp_path / "p.json"
    result = dagopt("place", path, "--method", "hsdag", "--env", "torch", "--devices",
                    "cpu,cpu", "--set", "episodes=2", "--set", "steps=2", "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert document["environment"] == {
        "env": "torch",
        "devices": ["cpu", "cpu"],
        "latency": "MEASURED",
    }
    assert document["graph"] == "mlp-inference"

    script = ROOT / "benchmarks" / "hsdag_profile.py"
    profile = tmp_path / "profile.json"
    subprocess.run([sys.executable, script, "--model", path, "--devices", "cpu,cpu",
                    "--out", profile], check=True, capture_output=True)  # fmt: skip
    result = dagopt("place", path, "--method", "hsdag", "--env", "profiled", "--devices",
                    "cpu,cpu", "--profile", profile, "--set", "episodes=2",
                    "--set", "steps=2")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "PREDICTED from a profile" in result.stdout
