"""``anytime --guide``: a priority model's greedy order as a second start (issue 21)."""

import pytest
import torch
from typer.testing import CliRunner

from dagopt.cli.main import app
from dagopt.generate import generate_layered
from dagopt.io import write_graph_json
from dagopt.nn import EncoderConfig, PriorityModel
from dagopt.nn.checkpoint import save_model
from dagopt.objectives import peak_memory
from dagopt.schedule import solve
from dagopt.schedule.neural import guide_order

SPARSE = EncoderConfig(
    kind="topoformer-sparse", dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8,
    pe="laplacian-fast",
)  # fmt: skip


@pytest.fixture(scope="module")
def guide_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("guide") / "sparse.pt"
    torch.manual_seed(1)
    save_model(path, PriorityModel(SPARSE), {"purpose": "tests"})
    return path


@pytest.mark.parametrize("seed", range(4))
def test_start_is_the_better_of_inductor_and_the_guide(guide_file, seed):
    graph = generate_layered(120, seed=seed)
    inductor = solve(graph, "inductor").peak_memory
    guided = peak_memory(graph, guide_order(graph, guide_file))
    result = solve(graph, "anytime", seed=0, windows=0, guide=guide_file)
    assert result.peak_memory == pytest.approx(min(inductor, guided), rel=1e-12)
    assert (result.info["start"] == "guide") == (guided < inductor)
    assert result.info["guide % vs inductor"] == pytest.approx(100 * (guided / inductor - 1))
    searched = solve(graph, "anytime", seed=0, windows=3, guide=guide_file)
    assert searched.peak_memory <= min(inductor, guided)


def test_a_shipped_model_guides_by_name():
    graph = generate_layered(60, seed=2)
    result = solve(graph, "anytime", seed=0, windows=0, guide="topoformer-sparse-ordering")
    assert result.info["guide seconds"] >= 0
    assert result.peak_memory <= solve(graph, "inductor").peak_memory


def test_a_new_guide_loads_in_a_warm_up_of_its_own(tmp_path):
    """Not inside the time limit: anytime warmed up without a guide, then given one."""
    graph = generate_layered(60, seed=3)
    solve(graph, "anytime", seed=0, windows=1)
    fresh = tmp_path / "fresh.pt"
    save_model(fresh, PriorityModel(SPARSE), {"purpose": "tests"})
    guided = solve(graph, "anytime", seed=0, windows=1, guide=fresh)
    assert guided.setup_seconds > 0  # the model loaded (and torch imported) there
    again = solve(graph, "anytime", seed=0, windows=1, guide=fresh)
    assert again.setup_seconds == 0


def test_default_anytime_has_no_guide(guide_file):
    graph = generate_layered(60, seed=7)
    assert "guide seconds" not in solve(graph, "anytime", seed=0, windows=1).info


def test_cli_guide_and_a_missing_model(guide_file, tmp_path):
    path = tmp_path / "g.json"
    write_graph_json(generate_layered(80, seed=3), path)
    args = ["schedule", str(path), "-m", "anytime", "--windows", "1", "--guide"]
    ok = CliRunner().invoke(app, [*args, str(guide_file)])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, [*args, str(tmp_path / "none.pt")])
    assert bad.exit_code == 2 and "no Topoformer model file" in bad.output


def test_a_better_guide_order_is_the_start(monkeypatch):
    """A guide whose order beats Inductor's (here: the exact DP's) starts the search."""
    import dagopt.schedule.anytime as anytime

    for seed in range(50):
        graph = generate_layered(14, seed=seed)
        exact = solve(graph, "exact-dp")
        if exact.peak_memory < solve(graph, "inductor").peak_memory:
            break
    else:
        pytest.fail("no small graph where Inductor is not optimal")

    def guide_order(given, guide):  # the exact order; the warm-up's diamond in file order
        return exact.order if given is graph else given.topological_order

    monkeypatch.setattr(anytime, "guide_order", guide_order)
    result = solve(graph, "anytime", seed=0, windows=0, guide="any")
    assert result.info["start"] == "guide" and result.info["guide % vs inductor"] < 0
    assert result.peak_memory == pytest.approx(exact.peak_memory, rel=1e-12)
