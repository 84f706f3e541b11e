"""The autoregressive decoder ablation (paper 000, appendix B): ``dagopt.nn.ar_decoder``,
the ``topoformer-ar-*`` solvers and its training through ``OrderingTrainer``."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt.errors import InputError
from dagopt.generate import generate_layered
from dagopt.nn.ar_decoder import ARConfig, ARPolicy, DecodeState
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.encoders import EncoderConfig
from dagopt.nn.features import graph_inputs
from dagopt.schedule import solve
from dagopt.schedule.neural_ar import beam_search
from dagopt.train.ordering import OrderingTrainConfig, OrderingTrainer
from dags import all_topological_orders, dags, reference_peak, sparse_dag

TINY = EncoderConfig(dim=16, layers=1, heads_per_group=(1,) * 7, head_dim=8)


def policy(kind: str = "topoformer", seed: int = 0) -> ARPolicy:
    torch.manual_seed(seed)
    encoder = EncoderConfig(**{**TINY.to_dict(), "kind": kind})
    return ARPolicy(ARConfig(encoder=encoder, glimpse_heads=4)).eval()


MODEL = policy()


@settings(max_examples=15, deadline=None)
@given(dags(min_nodes=1, max_nodes=12, integer_sizes=False), st.booleans())
def test_orders_are_topological_and_the_state_tracks_peak_memory(g, keep):
    inputs = graph_inputs(g, pe_dim=TINY.pe_dim)
    uniforms = np.random.default_rng(0).random((3, g.num_nodes))
    for u in (None, uniforms):
        orders, _ = MODEL.rollout(g, inputs, u, keep_outputs=keep)
        for order in orders:
            assert g.is_topological(order)
    state = DecodeState(g, 3, keep_outputs=keep)
    for t in range(g.num_nodes):
        state.push(torch.from_numpy(orders[:, t]))
    expected = [reference_peak(g, o, keep) for o in orders]
    np.testing.assert_allclose(state.peak.numpy(), expected, rtol=1e-12)
    assert not state.ready.any()


@settings(max_examples=25, deadline=None)
@given(dags(min_nodes=1, max_nodes=7), st.booleans())
def test_a_beam_wider_than_every_step_is_exact_by_state_collapsing(g, keep):
    optimum = min(reference_peak(g, o, keep) for o in all_topological_orders(g))
    order, _ = beam_search(g, MODEL, 2**g.num_nodes, keep)
    assert g.is_topological(order)
    assert reference_peak(g, order, keep) == optimum


@pytest.mark.parametrize("kind", ["topoformer", "topoformer-dag", "gat-bidirectional"])
def test_teacher_forced_log_prob_equals_the_sequential_decode(kind):
    model = policy(kind)
    g = generate_layered(40, seed=5)
    inputs = graph_inputs(g, pe_dim=TINY.pe_dim)
    uniforms = np.random.default_rng(1).random((4, g.num_nodes))
    for u in (None, uniforms):
        orders, log_probs = model.rollout(g, inputs, u)
        with torch.no_grad():
            scored = [float(model.order_log_prob(g, inputs, o)) for o in orders]
        np.testing.assert_allclose(scored, log_probs, rtol=1e-4)
        assert np.all(log_probs < 0)


def test_sampling_is_seeded():
    g = sparse_dag(30, 0.1, seed=2)
    a = solve(g, "topoformer-ar-sample", seed=3, samples=5)
    b = solve(g, "topoformer-ar-sample", seed=3, samples=5)
    assert np.array_equal(a.order, b.order) and a.info == {
        "samples": 5,
        "stopped_by_time_limit": False,
    }


def test_beam_of_width_one_is_greedy_and_wider_beams_are_not_worse():
    g = generate_layered(60, seed=9)
    inputs = graph_inputs(g, pe_dim=TINY.pe_dim)
    greedy = MODEL.rollout(g, inputs)[0][0]
    assert np.array_equal(beam_search(g, MODEL, 1, False)[0], greedy)
    greedy_peak = solve(g, "topoformer-ar-greedy").peak_memory
    for width in (2, 8):
        assert solve(g, "topoformer-ar-beam", beam_width=width).peak_memory <= greedy_peak


def trainer(tmp_path, seed=0) -> OrderingTrainer:
    config = OrderingTrainConfig(
        encoder=TINY,
        decoder="autoregressive",
        graph_nodes=20,
        epoch_graphs=2,
        batch_size=2,
        validation_graphs=2,
        seed=seed,
    )
    return OrderingTrainer(tmp_path, config)


def test_one_training_step_changes_the_weights_deterministically(tmp_path):
    graphs = [generate_layered(20, seed=s) for s in (11, 12)]
    after = []
    for run in ("a", "b"):
        t = trainer(tmp_path / run)
        assert isinstance(t.policy, ARPolicy)
        before = [p.detach().clone() for p in t.policy.parameters()]
        t.start(None)
        t._update(graphs, np.random.default_rng(0))
        params = [p.detach().clone() for p in t.policy.parameters()]
        assert any(not torch.equal(x, y) for x, y in zip(before, params, strict=True))
        after.append(params)
    assert all(torch.equal(x, y) for x, y in zip(*after, strict=True))


def test_an_epoch_saves_a_model_the_solvers_load(tmp_path):
    t = trainer(tmp_path)
    t.start(None)
    t.run_epoch(0, None)
    g = generate_layered(30, seed=4)
    schedule = solve(g, "topoformer-ar-greedy", checkpoint=tmp_path / "model.pt")
    assert g.is_topological(schedule.order)


def test_checkpoint_round_trip(tmp_path):
    model = policy("topoformer-dag", seed=3)
    path = save_model(tmp_path / "ar.pt", model, {"purpose": "test"})
    loaded, meta = load_model(path, expected=ARPolicy)
    assert meta == {"purpose": "test"} and loaded.config == model.config
    g = generate_layered(30, seed=1)
    inputs = graph_inputs(g, pe_dim=TINY.pe_dim)
    order, lp = model.rollout(g, inputs)
    order2, lp2 = loaded.rollout(g, inputs)
    assert np.array_equal(order, order2) and lp == pytest.approx(lp2)
    solved = solve(g, "topoformer-ar-greedy", checkpoint=path)
    assert np.array_equal(solved.order, order[0])


def test_bad_configs_and_files_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="glimpse_heads must divide"):
        ARConfig(encoder=TINY, glimpse_heads=3)
    with pytest.raises(InputError, match="decoder must be one of"):
        OrderingTrainConfig(decoder="pointer")
    with pytest.raises(InputError, match="no autoregressive model file"):
        solve(generate_layered(10, seed=0), "topoformer-ar-greedy", checkpoint=tmp_path / "x.pt")
