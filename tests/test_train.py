import json

import numpy as np
import pytest
import torch

from dagopt import InputError
from dagopt.configs import read_config
from dagopt.generate import generate_layered
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.encoders import EncoderConfig, PriorityModel
from dagopt.nn.features import graph_inputs
from dagopt.train.ordering import OrderingTrainConfig, greedy_cost, read_metrics, train_ordering
from dagopt.train.rundir import MODEL_FILE

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


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("garbage,,\n", "not a table of EpochMetrics rows"),
        (None, "lacks epochs of the 1 that state.pt has run"),
        ("cut", "line 2 is damaged"),
    ],
)
def test_a_resume_refuses_lost_or_damaged_metrics(tmp_path, damage, message):
    class Stop(Exception):
        pass

    def stop(metrics):
        raise Stop

    with pytest.raises(Stop):
        train_ordering(tmp_path, tiny_config(), on_epoch=stop)
    metrics = tmp_path / "metrics.csv"
    if damage is None:
        metrics.unlink()
    elif damage == "cut":
        header, row = metrics.read_text().splitlines()
        metrics.write_text(f"{header}\n{row[: len(row) // 3]}\n")
    else:
        metrics.write_text(damage)
    with pytest.raises(InputError, match=message):
        train_ordering(tmp_path, resume=True)


def test_a_state_of_another_run_is_refused_and_an_early_stop_says_how_to_restart(tmp_path):
    train_ordering(tmp_path / "a", tiny_config(epochs=1))
    train_ordering(tmp_path / "b", tiny_config(epochs=1, graph_nodes=14))  # same weights' shape
    (tmp_path / "b" / "state.pt").write_bytes((tmp_path / "a" / "state.pt").read_bytes())
    with pytest.raises(InputError, match=r"state\.pt: made by another run"):
        train_ordering(tmp_path / "b", resume=True)
    (tmp_path / "b" / "state.pt").unlink()
    with pytest.raises(InputError, match=r"stopped before its first epoch ended.*without --resume"):
        train_ordering(tmp_path / "b", resume=True)


def test_chains_give_no_gradient_and_no_step(tmp_path):
    """Two-node layered graphs are chains: one order each, a loss without gradient."""
    history = train_ordering(tmp_path, tiny_config(graph_nodes=2, epochs=1))
    assert history[0].train_cost == history[0].train_baseline_cost
    with pytest.raises(InputError, match="one node has one order"):
        tiny_config(graph_nodes=1)
    with pytest.raises(InputError, match="'seed' must be >= 0"):
        tiny_config(seed=-1)


def test_config_file_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"epochs": 3, "nonsense": 1}))
    with pytest.raises(InputError, match="unknown option 'nonsense'"):
        read_config(path, OrderingTrainConfig)
    path.write_text(json.dumps({"encoder": {"dim": 8, "heads": 2}}))
    with pytest.raises(InputError, match="unknown encoder option 'heads'"):
        read_config(path, OrderingTrainConfig)
    path.write_text(json.dumps({"batch_size": 0}))
    with pytest.raises(InputError, match="batch_size"):
        read_config(path, OrderingTrainConfig)


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


class _Exploit:
    """Pickles to a call of ``pathlib.Path.touch``: loading it with ``weights_only=False``
    would create the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_a_malicious_state_file_does_not_execute(tmp_path):
    run = tmp_path / "run"
    train_ordering(run, tiny_config(epochs=1))
    marker = tmp_path / "pwned"
    torch.save({"epoch": 0, "policy": _Exploit(marker)}, run / "state.pt")
    with pytest.raises(InputError, match=r"state\.pt: cannot resume from it"):
        train_ordering(run, resume=True)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", None, {"epoch": "x"}, {"epoch": 0}, {"epoch": 0, "policy": {}}],
    ids=["empty", "garbage", "not-a-dict", "bad-epoch", "missing-keys", "wrong-weights"],
)
def test_a_corrupt_or_foreign_state_is_a_one_line_error(tmp_path, content):
    run = tmp_path / "run"
    train_ordering(run, tiny_config(epochs=1))
    state = run / "state.pt"
    if isinstance(content, bytes):
        state.write_bytes(content)
    else:
        torch.save(content if content is not None else [1, 2], state)
    with pytest.raises(InputError) as error:
        train_ordering(run, resume=True)
    assert "\n" not in str(error.value)
