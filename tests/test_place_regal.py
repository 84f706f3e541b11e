"""REGAL and IDRS placers, REGAL training, tuned BRKGA (paper 003, sections 2.3 and 3.2).

The policies are the random-weight ones of ``conftest.py``: their heads start with the
choice 1.0 most likely, so the modal action is standard BRKGA's ``beta(1, 1)``.
"""

import json
import math

import numpy as np
import pytest
import torch

from dagopt.configs import read_config
from dagopt.errors import DagoptWarning, InputError
from dagopt.generate.placement import generate_placement, placement_graph
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.regal import (
    RegalConfig,
    RegalPolicy,
    action_distributions,
    beta_grid,
    regal_inputs,
    sample_actions,
)
from dagopt.objectives.devices import Devices
from dagopt.place import PlacementProblem, place
from dagopt.place.brkga import BrkgaParams, MutantDistributions, run_brkga
from dagopt.place.prior import PRIOR_TIME_SHARE, order_prior_keys
from dagopt.place.regal import random_search
from dagopt.place.tuning import grid_search, read_tuned, write_tuned
from dagopt.train import rundir
from dagopt.train.regal.config import RegalTrainConfig
from dagopt.train.regal.trainer import RegalEpoch, train_regal
from dagopt.train.rundir import MODEL_FILE, read_metrics


@pytest.fixture(scope="module")
def graph():
    return generate_placement(60, seed=21)


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
def test_regal_with_uniform_modes_is_standard_brkga(graph, objective):
    regal = place(graph, "regal", objective=objective, seed=4, evaluations=400)
    brkga = place(graph, "brkga", objective=objective, seed=4, evaluations=400)
    assert regal.evaluations == 400
    assert np.array_equal(regal.device_of, brkga.device_of)
    assert np.array_equal(regal.order, brkga.order)


def test_sampled_actions_steer_brkga_and_are_seeded(graph):
    runs = [place(graph, "regal", seed=5, decode="sample", evaluations=300) for _ in range(2)]
    brkga = place(graph, "brkga", seed=5, evaluations=300)
    assert np.array_equal(runs[0].order, runs[1].order)
    assert runs[0].cost != brkga.cost or not np.array_equal(runs[0].order, brkga.order)


def test_idrs_spends_its_budget_on_samples(graph):
    result = place(graph, "idrs", seed=1, evaluations=1200)
    assert result.evaluations == 1200
    trace = result.info["best_by_evaluation"]
    assert trace[-1][1:] == result.cost
    assert place(graph, "idrs", seed=1, evaluations=1200).cost == result.cost


def test_idrs_under_a_time_limit_draws_the_same_samples_in_timed_batches(graph):
    """With a time limit the samples come in batches sized to the clock, the same draws:
    given time to spend its budget, idrs finds what it finds without a limit."""
    free = place(graph, "idrs", seed=1, evaluations=1200)
    timed = place(graph, "idrs", seed=1, evaluations=1200, time_limit=600)
    assert timed.evaluations == 1200 and timed.cost == free.cost
    assert np.array_equal(timed.device_of, free.device_of)


@pytest.mark.parametrize("method", ["regal", "idrs"])
def test_a_policy_s_order_prior_gets_its_share_of_the_time_limit(
    graph, method, prior_time_limits, tmp_path
):
    """A policy that reads approx-dp's order (as the shipped peak-memory one does): under
    a time limit that order gets ``PRIOR_TIME_SHARE`` of it, not the whole (nor none)."""
    config = RegalConfig(hidden=8, rounds=1, order_prior={"method": "approx-dp", "beam_width": 50})
    path = save_model(tmp_path / "p.pt", RegalPolicy(config), {"objective": "peak-memory"})
    place(graph, method, objective="peak-memory", seed=0, evaluations=100, time_limit=60,
          checkpoint=path)  # fmt: skip
    assert prior_time_limits[-1] == PRIOR_TIME_SHARE * 60  # (the first: place's warm-up)


def test_random_search_keeps_the_best_sample(graph):
    problem = PlacementProblem(graph, Devices(), "runtime")
    uniform = MutantDistributions.uniform(graph.num_nodes, 2)
    small = random_search(problem, uniform, evaluations=10, seed=0, batch=10)
    large = random_search(problem, uniform, evaluations=1000, seed=0, batch=10)
    assert large.cost <= small.cost  # the first batch is the same draw
    assert problem.evaluations == 1010


def test_regal_errors(graph, tmp_path):
    with pytest.raises(InputError, match="places on 2 devices, the problem has 3"):
        place(graph, "regal", devices=Devices.homogeneous(3))
    with pytest.raises(InputError, match="no REGAL model file"):
        place(graph, "regal", checkpoint=tmp_path / "missing.pt")
    with pytest.raises(InputError, match="decode must be one of"):
        place(graph, "idrs", decode="beam")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"junk")
    with pytest.raises(InputError, match="cannot read model file"):
        place(graph, "regal", checkpoint=bad)


def test_policy_file_round_trip(tmp_path, graph):
    torch.manual_seed(1)
    policy = RegalPolicy(RegalConfig(hidden=8, rounds=2, init_prob_one=0.3))
    path = save_model(tmp_path / "p.pt", policy, {"objective": "runtime"})
    loaded, meta = load_model(path, expected=RegalPolicy)
    assert meta == {"objective": "runtime"} and loaded.config == policy.config
    for a, b in zip(policy.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)


class Stop(Exception):
    """Raised from a training callback to interrupt a run."""


def tiny_training(objective: str = "peak-memory", epochs: int = 2) -> RegalTrainConfig:
    return RegalTrainConfig(
        objective=objective,
        policy=RegalConfig(hidden=8, rounds=1, mlp_layers=1),
        train_graphs=4,
        validation_graphs=2,
        batch_size=2,
        epochs=epochs,
        brkga_evaluations=60,
        lr=1e-2,
    )


def test_training_writes_a_run_and_resumes_to_the_same_result(tmp_path):
    straight = train_regal(tmp_path / "a", tiny_training())

    def stop(metrics):
        raise Stop

    with pytest.raises(Stop):
        train_regal(tmp_path / "b", tiny_training(), on_epoch=stop)
    assert [m.epoch for m in read_metrics(tmp_path / "b", RegalEpoch)] == [0]
    with pytest.raises(InputError, match="pass --resume"):
        train_regal(tmp_path / "b", tiny_training())
    resumed = train_regal(tmp_path / "b", resume=True)
    assert [m.train_ratio for m in resumed] == [m.train_ratio for m in straight]
    states = [torch.load(tmp_path / d / "state.pt", weights_only=True) for d in "ab"]
    for a, b in zip(states[0]["policy"].values(), states[1]["policy"].values(), strict=True):
        assert torch.equal(a, b)
    references = json.loads((tmp_path / "a" / "reference.json").read_text())
    assert len(references["values"]) == 6
    assert references["config"] == json.loads((tmp_path / "a" / "config.json").read_text())
    policy, meta = load_model(tmp_path / "a" / MODEL_FILE, expected=RegalPolicy)
    assert meta["objective"] == "peak-memory" and policy.config.hidden == 8
    assert (tmp_path / "a" / "learning_curve.png").stat().st_size > 1000
    # The run's model places graphs through the regal placer.
    graph = generate_placement(30, seed=3)
    result = place(graph, "regal", objective="peak-memory", checkpoint=tmp_path / "a" / MODEL_FILE)
    assert result.evaluations == 5000


def test_untrained_policy_validates_at_ratio_one(tmp_path):
    """The untrained policy's modal action is beta(1, 1) everywhere: BRKGA itself, with
    the reference's seed, so the model saved before training validates at exactly 1."""

    def stop_at_first_batch(stage, done, total):
        if stage.startswith("epoch"):
            raise Stop

    with pytest.raises(Stop):
        train_regal(
            tmp_path / "r", tiny_training("runtime", epochs=1), progress=stop_at_first_batch
        )
    _, meta = load_model(tmp_path / "r" / MODEL_FILE, expected=RegalPolicy)
    assert meta["trained_epochs"] == 0
    assert meta["validation_ratio"] == 1.0


def test_training_config_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"objective": "energy"}))
    with pytest.raises(InputError, match="unknown objective"):
        read_config(path, RegalTrainConfig)
    path.write_text(json.dumps({"policy": {"width": 3}}))
    with pytest.raises(InputError, match="unknown policy option 'width'"):
        read_config(path, RegalTrainConfig)
    path.write_text(json.dumps({"policy": {"hidden": 16}, "epochs": 3}))
    config = read_config(path, RegalTrainConfig)
    assert config.policy.hidden == 16 and config.epochs == 3
    assert RegalTrainConfig.from_dict(config.to_dict()) == config


def test_grid_search_and_tuned_placer(tmp_path):
    graphs = [generate_placement(40, seed=s) for s in range(2)]
    grid = {"population": (20, 40), "elite_bias": (0.6, 0.8)}
    best, table = grid_search(graphs, "runtime", evaluations=200, grid=grid)
    assert len(table) == 4
    assert min(r for _, r in table) == dict((p, r) for p, r in table)[best]
    path = write_tuned(tmp_path / "t.json", "runtime", best, {"graphs": 2})
    write_tuned(path, "peak-memory", BrkgaParams(population=30), {})
    assert read_tuned(path, "runtime") == best
    result = place(graphs[0], "brkga-tuned", seed=0, params=path, evaluations=150)
    assert result.evaluations == 150
    assert result.info["params"]["population"] == best.population
    with pytest.raises(InputError, match="no tuned BRKGA parameters for 'runtime'"):
        read_tuned(write_tuned(tmp_path / "u.json", "peak-memory", best, {}), "runtime")


def test_an_interrupted_grid_search_resumes_from_its_checkpoint(tmp_path):
    graphs = [generate_placement(30, seed=s) for s in range(2)]
    grid = {"population": (20, 40), "elite_bias": (0.6, 0.8)}
    straight = grid_search(graphs, "runtime", evaluations=120, grid=grid)

    class Stop(Exception):
        pass

    def stop_after_two(done, total):
        if done == 2:
            raise Stop

    partial = tmp_path / "t.json.partial.json"
    with pytest.raises(Stop):
        grid_search(graphs, "runtime", evaluations=120, grid=grid, checkpoint=partial,
                    progress=stop_after_two)  # fmt: skip
    assert len(json.loads(partial.read_text())["ratios"]) == 2
    assert grid_search(graphs, "runtime", evaluations=120, grid=grid, checkpoint=partial) == (
        straight
    )
    with pytest.raises(InputError, match="holds another grid search"):
        grid_search(graphs, "peak-memory", evaluations=120, grid=grid, checkpoint=partial)


def test_imitation_warm_start_then_reinforce_resumes(tmp_path):
    """Epoch 0 imitates BRKGA's solutions (no baseline loss), epoch 1 is REINFORCE; the
    imitated keys are orders of solutions better than or equal to H(G, U) on average,
    and a run stopped after the warm start resumes to the uninterrupted result."""
    config = RegalTrainConfig.from_dict(
        {
            **tiny_training(epochs=2).to_dict(),
            "imitation_epochs": 1,
            "imitation_runs": 2,
            "imitation_evaluations": 200,
        }
    )
    straight = train_regal(tmp_path / "a", config)
    assert np.isnan(straight[0].baseline_loss) and np.isfinite(straight[1].baseline_loss)
    targets = json.loads((tmp_path / "a" / "imitation.json").read_text())["values"]
    assert sorted(int(s) for s in targets) == list(range(4))
    for seed, target in targets.items():
        graph = generate_placement(seed=int(seed))
        assert len(target["keys"]) == len(target["ratios"]) == 2
        for keys in target["keys"]:
            assert sorted(keys) == sorted(1 - (np.arange(graph.num_nodes) + 0.5) / graph.num_nodes)
    ratios = [r for t in targets.values() for r in t["ratios"]]
    assert straight[0].train_ratio == pytest.approx(np.mean(ratios))

    def stop(metrics):
        raise Stop

    with pytest.raises(Stop):
        train_regal(tmp_path / "b", config, on_epoch=stop)
    # Only REINFORCE epochs remain, so the resumed run does not need the imitated keys.
    (tmp_path / "b" / "imitation.json").unlink()
    resumed = train_regal(tmp_path / "b", resume=True)
    assert [m.train_ratio for m in resumed] == [m.train_ratio for m in straight]
    assert not (tmp_path / "b" / "imitation.json").exists()
    with pytest.raises(InputError, match="imitation_runs"):
        RegalTrainConfig(imitation_runs=0)


def test_leave_one_out_baseline_training_runs(tmp_path):
    config = RegalTrainConfig.from_dict(
        {**tiny_training(epochs=1).to_dict(), "baseline": "leave-one-out", "samples_per_graph": 2}
    )
    history = train_regal(tmp_path / "loo", config)
    assert len(history) == 1 and np.isfinite(history[0].train_ratio)
    with pytest.raises(InputError, match=">= 2 with a leave-one-out baseline"):
        RegalTrainConfig(baseline="leave-one-out", samples_per_graph=1)
    with pytest.raises(InputError, match="baseline must be"):
        RegalTrainConfig(baseline="greedy")


def test_a_run_where_nothing_fits_is_refused(tmp_path):
    config = RegalTrainConfig.from_dict({**tiny_training().to_dict(), "memory_gib": 1e-4})
    with pytest.raises(InputError, match="placed none of the 4 training graphs"):
        train_regal(tmp_path / "run", config)


def test_cached_references_of_other_options_are_recomputed(tmp_path):
    """A new run in the folder of an interrupted one (no state.pt) under other options."""
    first = tiny_training(epochs=1)
    train_regal(tmp_path / "run", first)
    (tmp_path / "run" / "state.pt").unlink()  # as if stopped before its first epoch
    other = RegalTrainConfig.from_dict({**first.to_dict(), "brkga_evaluations": 90})
    with pytest.warns(DagoptWarning, match="reference.json was computed under other options"):
        train_regal(tmp_path / "run", other)
    stored = json.loads((tmp_path / "run" / "reference.json").read_text())
    assert stored["config"]["brkga_evaluations"] == 90
    train_regal(tmp_path / "fresh", other)
    assert stored == json.loads((tmp_path / "fresh" / "reference.json").read_text())


def test_training_on_recurring_topologies_runs_and_records_them(tmp_path):
    config = RegalTrainConfig.from_dict(
        {**tiny_training(epochs=1).to_dict(), "topologies": 2, "noise_sigma": 0.3}
    )
    history = train_regal(tmp_path / "shared", config)
    assert len(history) == 1 and np.isfinite(history[0].train_ratio)
    saved = json.loads((tmp_path / "shared" / "config.json").read_text())
    assert (saved["topologies"], saved["noise_sigma"]) == (2, 0.3)
    # H(G, U) of every training graph is standard BRKGA's on the noisy copy, not on
    # the graph of the same seed in the usual dataset.
    references = json.loads((tmp_path / "shared" / "reference.json").read_text())["values"]
    params = BrkgaParams(evaluations=config.brkga_evaluations)

    def reference(graph, seed):
        problem = PlacementProblem(graph, Devices(), config.objective)
        return run_brkga(problem, seed=seed, params=params).cost[1]

    for seed in range(config.train_graphs):
        copy = placement_graph(seed, topologies=2, noise_sigma=0.3)
        assert references[str(seed)] == reference(copy, seed)
        assert references[str(seed)] != reference(generate_placement(seed=seed), seed)
    with pytest.raises(InputError, match="topologies >= 0"):
        RegalTrainConfig(topologies=-1)


def test_order_prior_policy_trains_on_guided_teachers_and_places(tmp_path):
    """With an order prior, the imitation teachers search near the prior's order: their
    solutions' keys lie closer to the prior's keys than unguided teachers' do. The
    trained model computes the prior itself when it places a graph."""
    prior = {"method": "approx-dp", "beam_width": 50}
    base = {
        **tiny_training(epochs=1).to_dict(),
        "imitation_epochs": 1,
        "imitation_runs": 1,
        "imitation_evaluations": 300,
    }
    base["policy"] = {**base["policy"], "order_prior": prior}
    distance = {}
    for concentration in (0.0, 100.0):
        config = RegalTrainConfig.from_dict(
            {**base, "imitation_prior_concentration": concentration}
        )
        train_regal(tmp_path / str(concentration), config)
        targets = json.loads((tmp_path / str(concentration) / "imitation.json").read_text())[
            "values"
        ]
        distance[concentration] = np.mean(
            [
                np.abs(np.asarray(target["keys"][0]) - order_prior_keys(graph, prior)).mean()
                for graph, target in (
                    (generate_placement(seed=int(s)), t) for s, t in targets.items()
                )
            ]
        )
    assert distance[100.0] < 0.5 * distance[0.0]
    model = tmp_path / "100.0" / MODEL_FILE
    policy, _ = load_model(model, expected=RegalPolicy)
    assert policy.config.order_prior == prior
    graph = generate_placement(30, seed=3)
    result = place(graph, "regal", objective="peak-memory", checkpoint=model, evaluations=300)
    assert result.feasible and result.evaluations == 300
    with pytest.raises(InputError, match="needs a policy order_prior"):
        RegalTrainConfig(imitation_prior_concentration=1.0)


def test_centred_policy_imitates_the_prior_sharply_then_reinforces(tmp_path):
    """A "centred" policy imitating teachers guided by the order prior learns a high
    priority concentration around the prior (the teachers' orders are close to it),
    leaves the device genes at their neutral beta(1, 1), and a REINFORCE epoch runs."""
    prior = {"method": "approx-dp", "beam_width": 50}
    policy = RegalConfig(
        hidden=8,
        rounds=1,
        mlp_layers=1,
        order_prior=prior,
        parameterisation="centred",
        choices=(2.0, 10.0, 100.0, 1000.0),
    )
    config = RegalTrainConfig.from_dict(
        {
            **tiny_training(epochs=4).to_dict(),
            "policy": policy.to_dict(),
            "imitation_epochs": 3,
            "imitation_runs": 2,
            "imitation_evaluations": 300,
            "imitation_prior_concentration": 100.0,
        }
    )
    history = train_regal(tmp_path, config)
    assert [math.isnan(m.baseline_loss) for m in history] == [True] * 3 + [False]
    trained = RegalPolicy(policy)
    trained.load_state_dict(rundir.load_state(tmp_path)["policy"])
    graph = generate_placement(40, seed=5)
    inputs = regal_inputs(graph, None, Devices(), order_prior_keys(graph, prior))
    with torch.no_grad():
        action = sample_actions(*trained(inputs), greedy=True)
    alpha, beta = action_distributions(action, beta_grid(policy, inputs))
    assert np.median((alpha + beta)[:, 2]) >= 100
    assert np.allclose(alpha[:, :2], 1.0) and np.allclose(beta[:, :2], 1.0)


def test_a_given_policy_of_another_objective_places_with_a_warning():
    from dagopt.models import model_path

    graph = generate_placement(30, seed=4)
    runtime_policy = model_path("regal-runtime")
    with pytest.warns(DagoptWarning, match="trained for 'runtime', not 'peak-memory'"):
        place(graph, "regal", objective="peak-memory", checkpoint=runtime_policy, evaluations=300)
