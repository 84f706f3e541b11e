"""Session set-up: a small random-weight priority model stands in for the shipped one,
so the neural solvers run in every solver test without depending on training."""

import os

import pytest
import torch

from dagopt.nn.checkpoint import save_priority_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel

TINY_ENCODER = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


@pytest.fixture(scope="session", autouse=True)
def tiny_priority_model(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "tiny.pt"
    save_priority_model(path, PriorityModel(TINY_ENCODER), meta={"purpose": "tests"})
    previous = os.environ.get("DAGOPT_TOPOFORMER_CHECKPOINT")
    os.environ["DAGOPT_TOPOFORMER_CHECKPOINT"] = str(path)
    yield path
    if previous is None:
        del os.environ["DAGOPT_TOPOFORMER_CHECKPOINT"]
    else:
        os.environ["DAGOPT_TOPOFORMER_CHECKPOINT"] = previous
