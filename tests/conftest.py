"""Session set-up: small random-weight models stand in for the shipped ones (the
Topoformer priority model, its autoregressive ablation and the REGAL policies, with
BRKGA's default parameters as ``brkga-tuned``) in a ``DAGOPT_MODEL_DIR``, so the
methods that load a model run in every test without depending on training
(the sparse Topoformer of ``anytime --guide`` included). The TGraph rankers are small
and fast, so the shipped ones are copied there as they are."""

import shutil

import pytest
import torch

from dagopt.models import MODEL_DIR_ENV, MODEL_FILES, model_path
from dagopt.nn.ar_decoder import ARConfig, ARPolicy
from dagopt.nn.checkpoint import save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.regal import RegalConfig, RegalPolicy
from dagopt.place.brkga import BrkgaParams
from dagopt.place.tuning import write_tuned

TINY_ENCODER = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)
TINY_REGAL = RegalConfig(hidden=8, rounds=1, mlp_layers=1)


@pytest.fixture(scope="session", autouse=True)
def tiny_models(tmp_path_factory):
    """The model folder of the tests, laid out like ``dagopt.models``."""
    root = tmp_path_factory.mktemp("models")
    rankers = {name: model_path(name) for name in MODEL_FILES if name.startswith("tgraph-")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MODEL_DIR_ENV, str(root))
        for name, shipped in rankers.items():
            model_path(name).parent.mkdir(parents=True)
            shutil.copyfile(shipped, model_path(name))
        torch.manual_seed(0)
        save_model(
            model_path("topoformer-ordering"), PriorityModel(TINY_ENCODER), {"purpose": "tests"}
        )
        sparse = EncoderConfig(
            kind="topoformer-sparse", dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8,
            pe="laplacian-fast",
        )  # fmt: skip
        save_model(
            model_path("topoformer-sparse-ordering"), PriorityModel(sparse), {"purpose": "tests"}
        )
        torch.manual_seed(0)
        tiny_ar = ARPolicy(ARConfig(encoder=TINY_ENCODER, glimpse_heads=2))
        save_model(model_path("topoformer-ar-ordering"), tiny_ar, {"purpose": "tests"})
        torch.manual_seed(0)
        for objective in ("runtime", "peak-memory"):
            meta = {"objective": objective, "purpose": "tests"}
            save_model(model_path(f"regal-{objective}"), RegalPolicy(TINY_REGAL), meta)
            write_tuned(model_path("brkga-tuned"), objective, BrkgaParams(), {"purpose": "tests"})
        yield root


@pytest.fixture
def prior_time_limits(monkeypatch):
    """The ``time_limit`` each order prior's scheduler run got, in call order (the
    placers' order priors, ``dagopt.place.prior``)."""
    import dagopt.place.prior as prior

    limits = []
    solve = prior.solve

    def recording_solve(graph, method, **options):
        limits.append(options.get("time_limit"))
        return solve(graph, method, **options)

    monkeypatch.setattr(prior, "solve", recording_solve)
    return limits
