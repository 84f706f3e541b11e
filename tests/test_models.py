"""Shipped models (``dagopt.models``), the model-file registry (``dagopt.nn.checkpoint``)
and the wheel that carries the models."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import dagopt
from dagopt.data import EXAMPLE_FILES
from dagopt.errors import InputError
from dagopt.models import MODEL_DIR_ENV, MODEL_FILES, model_path
from dagopt.nn.checkpoint import load_model, model_format, save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.regal import RegalConfig, RegalPolicy
from dagopt.place.tuning import read_tuned
from test_cli import dagopt as run_cli

REPO = Path(__file__).resolve().parents[1]
TINY = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


def test_shipped_models_are_package_data_and_load(monkeypatch):
    monkeypatch.delenv(MODEL_DIR_ENV)
    package = Path(dagopt.__file__).parent / "models"
    for name in MODEL_FILES:
        assert model_path(name).is_relative_to(package)
    model, meta = load_model(model_path("topoformer-ordering"), expected=PriorityModel)
    assert model.config.dim == 64 and meta["trained_epochs"] >= 1
    sparse, meta = load_model(model_path("topoformer-sparse-ordering"), expected=PriorityModel)
    assert sparse.config.kind == "topoformer-sparse" and sparse.config.pe == "laplacian-fast"
    assert meta["trained_epochs"] >= 1
    mixed, meta = load_model(model_path("topoformer-mix-ordering"), expected=PriorityModel)
    assert mixed.config == sparse.config and meta["config"]["mix"]["layered"] == 0.5
    for objective in ("runtime", "peak-memory"):
        policy, meta = load_model(model_path(f"regal-{objective}"), expected=RegalPolicy)
        assert meta["objective"] == objective and policy.config.num_devices == 2
        assert read_tuned(model_path("brkga-tuned"), objective).population == 50


def test_model_dir_overrides_every_model(monkeypatch, tmp_path):
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path))
    assert model_path("regal-runtime") == tmp_path / "regal-runtime" / "model.pt"
    assert model_path("brkga-tuned") == tmp_path / "brkga-tuned.json"


def test_a_model_file_round_trips_through_the_registry(tmp_path):
    torch.manual_seed(0)
    policy = RegalPolicy(RegalConfig(hidden=8, rounds=1))
    path = save_model(tmp_path / "p.pt", policy, {"note": 1})
    document = torch.load(path, weights_only=True)
    assert list(document) == ["format", "version", "config", "state_dict", "meta"]
    assert document["format"] == "dagopt-regal-policy" and document["version"] == 1
    priority = torch.load(save_model(tmp_path / "m.pt", PriorityModel(TINY), {}), weights_only=True)
    assert priority["format"] == "dagopt-priority-model" and priority["alpha"] == 5.0
    loaded, meta = load_model(path, expected=RegalPolicy)
    assert meta == {"note": 1} and not loaded.training


def _rewrite(path: Path, **changes) -> Path:
    document = torch.load(path, weights_only=True)
    for key, value in changes.items():
        if value is None:
            del document[key]
        else:
            document[key] = value
    torch.save(document, path)
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "dagopt-regal-policy"}, "not a dagopt-priority-model file (a dagopt-regal-po"),
        ({"format": None}, "not a dagopt-priority-model file (no dagopt model file)"),
        ({"version": 2}, "unsupported dagopt-priority-model version 2 (this dagopt reads version"),
        ({"alpha": None, "meta": None}, "dagopt-priority-model file without alpha, meta"),
        ({"config": {"dim": 16, "colour": 1}}, "bad dagopt-priority-model config (unknown opti"),
        ({"config": {**TINY.to_dict(), "dim": 32}}, "the state dict does not fit the dagopt-prio"),
        ({"state_dict": {}}, "the state dict does not fit the dagopt-priority-model config"),
    ],
)
def test_unusable_model_files_are_one_line_input_errors(tmp_path, changes, message):
    path = _rewrite(save_model(tmp_path / "m.pt", PriorityModel(TINY), {}), **changes)
    with pytest.raises(InputError) as error:
        load_model(path, expected=PriorityModel)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_and_corrupt_files_and_unregistered_classes(tmp_path):
    with pytest.raises(InputError, match="no such model file"):
        load_model(tmp_path / "none.pt", expected=PriorityModel)
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(InputError, match="cannot read model file"):
        load_model(tmp_path / "junk.pt", expected=PriorityModel)
    with pytest.raises(TypeError, match="Linear has no registered model format"):
        save_model(tmp_path / "l.pt", torch.nn.Linear(1, 1), {})
    with pytest.raises(ValueError, match="already registered"):
        model_format("dagopt-regal-policy", RegalConfig)(torch.nn.Linear)


def test_train_brkga_writes_to_the_current_directory(monkeypatch, tmp_path):
    """The default output is ./brkga-tuned.json, never the package's file."""
    from dagopt.place import tuning

    def quick_search(graphs, objective, **_):
        best = tuning.BrkgaParams(population=20)
        return best, [(best, 0.9)]

    monkeypatch.setattr(tuning, "grid_search", quick_search)
    monkeypatch.chdir(tmp_path)
    result = run_cli("train", "brkga", "--objective", "runtime", "--graphs", 1)
    assert result.exit_code == 0, result.output
    assert read_tuned(tmp_path / "brkga-tuned.json", "runtime").population == 20


def test_the_wheel_carries_the_models_and_examples_and_no_training_state(tmp_path):
    """Built as `pip wheel . --no-build-isolation` (no network): needs the setuptools of
    the test extra, which builds wheels by itself."""
    build = tmp_path / "src"  # a copy, so that building leaves no build/ in the repo
    shutil.copytree(
        REPO,
        build,
        ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "checkpoints", "runs"),
    )
    command = [sys.executable, "-m", "pip", "wheel", str(build), "--no-deps"]
    command += ["--no-build-isolation", "-q", "-w", str(tmp_path / "dist")]
    built = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("dagopt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"dagopt/models/{file}" for file in MODEL_FILES.values()}
    assert shipped <= names
    models = {name for name in names if name.startswith("dagopt/models/")}
    assert models == shipped | {"dagopt/models/__init__.py"}
    assert {f"dagopt/data/{file}" for file in EXAMPLE_FILES} <= names
    assert not any(name.endswith((".png", ".csv")) or "state.pt" in name for name in names)
