"""The graph mix of ordering runs (``dagopt.train.mix``) and fine-tuning (``init_model``)."""

import numpy as np
import pytest
import torch

from dagopt import InputError
from dagopt.generate import generate_layered
from dagopt.nn.checkpoint import save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.train import mix
from dagopt.train.ordering import (
    OrderingTrainConfig,
    OrderingTrainer,
    PeakMemoryEnv,
    read_metrics,
    train_ordering,
)
from dagopt.zoo import HELD_OUT_MODELS
from dagopt.zoo.models import TRAINING_CNNS, get_model
from test_train import TINY
from test_train import tiny_config as base_config


def tiny_config(**changes) -> OrderingTrainConfig:
    """``test_train``'s tiny run, one epoch and two validation graphs."""
    return base_config(**{"epochs": 1, "validation_graphs": 2, **changes})


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"layered": 0.5, "tiled": 0.5}, "unknown mix source 'tiled'"),
        ({"layered": 0.5, "zoo": 0.4}, "sum to 1"),
        ({"layered": 1.5, "zoo": -0.5}, ">= 0"),
    ],
)
def test_bad_mixes_are_input_errors(bad, message):
    with pytest.raises(InputError, match=message):
        tiny_config(mix=bad)
    with pytest.raises(InputError, match=message):
        OrderingTrainConfig.from_dict({"mix": bad})


def test_default_is_layered_only_and_old_configs_read():
    old = OrderingTrainConfig.from_dict({"graph_nodes": 50})  # a config written before mix
    assert old.mix == {} and old.init_model == ""
    assert OrderingTrainConfig.from_dict(old.to_dict()) == old


@pytest.mark.parametrize("total", [1, 7, 40, 250])
def test_source_counts_split_every_graph(total):
    counts = mix.source_counts({"layered": 0.5, "zoo": 0.3, "cnn": 0.2}, total)
    assert sum(counts.values()) == total
    assert mix.source_counts({"layered": 1.0}, total) == {"layered": total}
    assert mix.source_counts({"layered": 0.5, "zoo": 0.3, "cnn": 0.2}, 40) == {
        "layered": 20,
        "zoo": 12,
        "cnn": 8,
    }


def test_held_out_models_are_never_trained_or_validated_on():
    held_out = {model.name for model in HELD_OUT_MODELS}
    train = {spec.split("/")[0] for specs in mix.TRAINING_GRAPHS.values() for spec in specs}
    valid = {spec.split("/")[0] for spec in mix.VALIDATION_GRAPHS}
    assert not (train | valid) & held_out
    assert not train & valid  # the split is by model name
    assert set(mix.TRAINING_GRAPHS) == set(mix.MIX_SOURCES) - {"layered"}
    assert all(not get_model(m.name).held_out for m in TRAINING_CNNS)
    with pytest.raises(InputError, match="held out"):
        mix.load_graphs(["densenet-121/small"])


def test_scaled_costs_are_peaks_over_inductors():
    graph = generate_layered(30, seed=3)
    order = graph.topological_order
    plain, scaled = PeakMemoryEnv(), PeakMemoryEnv(mix.reference_peak)
    ratio = plain.reward(graph, order) / mix.reference_peak(graph)
    assert scaled.reward(graph, order) == pytest.approx(ratio)
    assert scaled.reward(graph, order) <= -1.0 + 1e-9  # Inductor's best is the reference


def test_init_model_starts_from_the_given_weights(tmp_path):
    torch.manual_seed(5)
    start = PriorityModel(TINY, alpha=5.0)
    path = save_model(tmp_path / "start.pt", start, {})
    policy = tiny_config(init_model=str(path)).make_policy()
    for a, b in zip(start.parameters(), policy.parameters(), strict=True):
        assert torch.equal(a, b)
    other = EncoderConfig(dim=8, layers=1, heads_per_group=(1,) * 7, head_dim=4)
    with pytest.raises(InputError, match="another encoder config"):
        tiny_config(encoder=other, init_model=str(path)).make_policy()
    with pytest.raises(InputError, match="no Topoformer model file"):
        tiny_config(init_model=str(tmp_path / "missing.pt")).make_policy()
    with pytest.raises(InputError, match="priority decoder"):
        tiny_config(init_model=str(path), decoder="autoregressive")


@pytest.mark.slow
def test_a_mixed_run_trains_on_real_graphs(tmp_path, monkeypatch):
    """One epoch drawing half its graphs from a small zoo training graph (exported once,
    seconds), validated on another model's graph."""
    monkeypatch.setattr(mix, "TRAINING_GRAPHS", {"zoo": ("whisper-tiny-encoder/small",)})
    monkeypatch.setattr(mix, "VALIDATION_GRAPHS", ("llama-small/small",))
    config = tiny_config(mix={"layered": 0.5, "zoo": 0.5})
    trainer = OrderingTrainer(tmp_path / "x", config)
    draws = trainer._real_draws(0)
    assert sum(g is not None for g in draws) == 4 and len(draws) == 8
    assert all(id(g) in trainer.scales for g in draws if g is not None)
    (metrics,) = train_ordering(tmp_path / "run", config)
    assert read_metrics(tmp_path / "run")[0].epoch == 0
    # every cost is a peak over Inductor's: about 1, not bytes
    assert 0.5 < metrics.train_cost < 5 and 0.5 < metrics.validation_cost < 5
    assert np.isfinite(metrics.train_baseline_cost)
