"""Model files: one registry of formats (``dagopt.nn.checkpoint``)."""

from pathlib import Path

import pytest
import torch

from dagopt.errors import InputError
from dagopt.nn.checkpoint import load_model, model_format, save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.regal import RegalConfig, RegalPolicy

TINY = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


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
        ({"config": {"dim": 16, "colour": 1}}, "bad dagopt-priority-model config (unknown enco"),
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
