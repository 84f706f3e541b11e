"""Session set-up: small random-weight models stand in for the shipped ones (the
Topoformer priority model and the REGAL policies), so the neural solvers run in every
test without depending on training."""

import pytest
import torch

from dagopt.nn.checkpoint import save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.regal import RegalConfig, RegalPolicy

TINY_ENCODER = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


@pytest.fixture(scope="session", autouse=True)
def tiny_priority_model(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "tiny.pt"
    save_model(path, PriorityModel(TINY_ENCODER), {"purpose": "tests"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGOPT_TOPOFORMER_CHECKPOINT", str(path))
        yield path


TINY_REGAL = RegalConfig(hidden=8, rounds=1, mlp_layers=1)


@pytest.fixture(scope="session", autouse=True)
def tiny_regal_policies(tmp_path_factory):
    """Random-weight REGAL policies for both objectives in a temporary checkpoint dir."""
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("regal")
    for objective in ("runtime", "peak-memory"):
        meta = {"objective": objective, "purpose": "tests"}
        save_model(root / f"regal-{objective}" / "model.pt", RegalPolicy(TINY_REGAL), meta)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGOPT_REGAL_CHECKPOINT_DIR", str(root))
        yield root
