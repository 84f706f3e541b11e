import json

import numpy as np
import pytest
import torch

from dagopt import InputError
from dagopt.generate import generate_layered
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.features import graph_inputs
from dagopt.train.config import OrderingTrainConfig, load_config
from dagopt.train.ordering import MODEL_FILE, read_metrics, train_ordering
from dagopt.train.reinforce import greedy_cost

TINY = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


def tiny_config(**changes) -> OrderingTrainConfig:
    values = dict(
        encoder=TINY, graph_nodes=12, epoch_graphs=8, batch_size=4, epochs=2,
        validation_graphs=3, lr=1e-3,
    )  # fmt: skip
    values.update(changes)
    return OrderingTrainConfig(**values)


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(1)
    model = PriorityModel(TINY, alpha=3.0)
    path = save_model(tmp_path / "m.pt", model, {"note": "x"})
    loaded, meta = load_model(path, expected=PriorityModel)
    g = generate_layered(25, seed=4)
    with torch.no_grad():
        assert torch.equal(model.eval()(graph_inputs(g)), loaded(graph_inputs(g)))
    assert meta == {"note": "x"} and loaded.alpha == 3.0 and loaded.config == TINY


def test_bad_model_file_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="cannot read model file"):
        load_model(bad, expected=PriorityModel)


def test_interrupted_run_resumes_to_the_same_result(tmp_path):
    straight = train_ordering(tmp_path / "a", tiny_config())

    class Stop(Exception):
        pass

    def stop_after_first(metrics):
        raise Stop

    with pytest.raises(Stop):
        train_ordering(tmp_path / "b", tiny_config(), on_epoch=stop_after_first)
    assert [m.epoch for m in read_metrics(tmp_path / "b")] == [0]
    with pytest.raises(InputError, match="pass --resume"):
        train_ordering(tmp_path / "b", tiny_config())
    resumed = train_ordering(tmp_path / "b", resume=True)
    assert [m.epoch for m in resumed] == [0, 1]
    assert [m.train_cost for m in resumed] == [m.train_cost for m in straight]
    a, _ = load_model(tmp_path / "a" / MODEL_FILE, expected=PriorityModel)
    b, _ = load_model(tmp_path / "b" / MODEL_FILE, expected=PriorityModel)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert (tmp_path / "b" / "learning_curve.png").stat().st_size > 1000


def test_config_file_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"epochs": 3, "nonsense": 1}))
    with pytest.raises(InputError, match="unknown training option 'nonsense'"):
        load_config(path)
    path.write_text(json.dumps({"encoder": {"dim": 8, "heads": 2}}))
    with pytest.raises(InputError, match="unknown encoder option 'heads'"):
        load_config(path)
    path.write_text(json.dumps({"batch_size": 0}))
    with pytest.raises(InputError, match="batch_size"):
        load_config(path)


@pytest.mark.slow
def test_training_lowers_the_mean_greedy_cost(tmp_path):
    encoder = EncoderConfig(dim=32, layers=2, heads_per_group=(1,) * 7, head_dim=16)
    config = tiny_config(
        encoder=encoder, graph_nodes=20, epoch_graphs=128, batch_size=8, epochs=10,
        validation_graphs=16, lr=1e-3,
    )  # fmt: skip
    fixed = [generate_layered(20, seed=900_000 + i) for i in range(32)]  # not training seeds
    torch.manual_seed(config.seed)  # the same initial policy as the run's
    before = np.mean([greedy_cost(PriorityModel(encoder).eval(), g) for g in fixed])
    train_ordering(tmp_path / "run", config)
    trained, _ = load_model(tmp_path / "run" / MODEL_FILE, expected=PriorityModel)
    after = np.mean([greedy_cost(trained, g) for g in fixed])
    assert after < before
