"""REGAL's bandit (paper 003, section 2.3, appendix A.3 eq. 1): features, GNN, actions."""

import json
import time

import numpy as np
import pytest
import torch

from dagopt import Graph, InputError
from dagopt.generate.placement import generate_placement
from dagopt.nn.regal import (
    BETA_CHOICES,
    MEAN_CLIP,
    ORDER_PRIOR_FEATURE,
    REGAL_EDGE_FEATURES,
    REGAL_NODE_FEATURES,
    RegalAction,
    RegalBaseline,
    RegalConfig,
    RegalEncoder,
    RegalPolicy,
    action_distributions,
    action_entropy,
    action_log_prob,
    batch_inputs,
    beta_grid,
    key_log_likelihood,
    regal_inputs,
    sample_actions,
    split_action,
)
from dagopt.objectives.devices import Devices
from dagopt.objectives.memory import peak_memory
from dagopt.place.prior import check_order_prior, order_prior_keys
from dagopt.schedule import solve

F, FE = len(REGAL_NODE_FEATURES), len(REGAL_EDGE_FEATURES)
SMALL = RegalConfig(hidden=16, rounds=2)


def featurise(graph: Graph, devices: Devices | None = None):
    return regal_inputs(graph, graph.node_data["runtime"], devices or Devices())


def chain(n: int, runtime=None) -> Graph:
    runtime = np.ones(n) if runtime is None else runtime
    return Graph(
        n,
        np.arange(n - 1),
        np.arange(1, n),
        mem=np.full(n, 1e6),
        node_data={"runtime": runtime},
    )


@pytest.fixture(scope="module")
def graphs():
    return [generate_placement(n, seed=s) for s, n in enumerate((12, 40, 25))]


def check_inputs(graph: Graph, inputs) -> None:
    assert inputs.x.shape == (graph.num_nodes, F) and inputs.x.dtype == torch.float32
    assert inputs.edge_index.shape == (2, graph.num_edges)
    assert inputs.edge_index.dtype == torch.long
    assert inputs.edge_attr.shape == (graph.num_edges, FE)
    assert inputs.edge_attr.dtype == torch.float32
    assert torch.isfinite(inputs.x).all() and torch.isfinite(inputs.edge_attr).all()


@pytest.mark.parametrize("seed", range(4))
def test_features_are_finite_and_shaped(seed):
    graph = generate_placement(seed=seed)
    inputs = featurise(graph, Devices.homogeneous(3, memory=8 * 2**30))
    check_inputs(graph, inputs)
    x = inputs.x.numpy()
    column = dict(zip(REGAL_NODE_FEATURES, x.T, strict=True))
    for name in ("depth", "height"):
        assert column[name].min() == 0 and column[name].max() == 1
    earliest, latest = column["earliest_start"], column["latest_start"]
    assert earliest.min() == 0 and latest.max() < 1
    assert np.all(latest >= earliest - 1e-6)
    assert np.isclose(latest, earliest, atol=1e-6).any()  # the critical path has no slack
    assert np.allclose(column["log10_num_nodes"], np.log10(graph.num_nodes))


@pytest.mark.parametrize(
    "graph",
    [
        chain(1),
        chain(1, np.zeros(1)),
        chain(5, np.zeros(5)),
        Graph(3, [], [], mem=np.zeros(3), node_data={"runtime": np.zeros(3)}),
        Graph(0, [], [], mem=[], node_data={"runtime": []}),
    ],
    ids=["one-op", "one-op-zero-runtime", "zero-runtimes", "zero-everything", "empty"],
)
def test_degenerate_graphs_give_finite_features(graph):
    check_inputs(graph, featurise(graph))


def test_critical_path_times_on_a_chain():
    inputs = featurise(chain(3, np.array([1.0, 2.0, 1.0])))
    column = dict(zip(REGAL_NODE_FEATURES, inputs.x.numpy().T, strict=True))
    assert np.allclose(column["earliest_start"], [0, 0.25, 0.75])
    assert np.allclose(column["latest_start"], [0, 0.25, 0.75])
    assert np.allclose(column["depth"], [0, 0.5, 1])
    assert np.allclose(column["height"], [1, 0.5, 0])
    assert np.allclose(column["critical_path_share"], 2.0)  # 4 s against 4 s / 2 devices


def test_features_are_fast():
    graph = generate_placement(300, seed=7)
    featurise(graph)
    start = time.perf_counter()
    featurise(graph)
    assert time.perf_counter() - start < 0.05


def test_config_round_trips_through_json():
    config = RegalConfig(num_devices=3, hidden=8, choices=(0.5, 1.0, 2.0), share_weights=True)
    assert RegalConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert 1.0 in BETA_CHOICES
    with pytest.raises(InputError):
        RegalConfig.from_dict({"width": 3})
    with pytest.raises(InputError):
        RegalConfig(choices=(1.0, 1.0))


def test_messages_flow_both_ways():
    """One round: a sink's change reaches its predecessor (backward messages, MLP'_msg),
    a source's change its successor (forward messages, MLP_msg), nothing further."""
    torch.manual_seed(0)
    inputs = featurise(chain(4))
    encoder = RegalEncoder(RegalConfig(hidden=16, rounds=1))
    base = encoder(inputs)

    def changed(node: int) -> torch.Tensor:
        x = inputs.x.clone()
        x[node] += 1.0
        moved = encoder(type(inputs)(x, inputs.edge_index, inputs.edge_attr))
        return (moved - base).abs().sum(-1) > 1e-6

    assert changed(3).tolist() == [False, False, True, True]
    assert changed(0).tolist() == [True, True, False, False]
    # Each direction has its own MLP: silence the backward one and sinks stop reaching back.
    layer = encoder.layers[0]
    for parameter in layer.backward_message.parameters():
        torch.nn.init.zeros_(parameter)
    base = encoder(inputs)
    assert changed(3).tolist() == [False, False, False, True]
    assert changed(0).tolist() == [True, True, False, False]


def test_shared_weights_use_one_layer():
    encoder = RegalEncoder(RegalConfig(hidden=8, rounds=3, share_weights=True))
    assert len(encoder.layers) == 1
    assert len(RegalEncoder(RegalConfig(hidden=8, rounds=3)).layers) == 3


def test_policy_logits_and_initial_bias(graphs):
    graph = graphs[0]
    policy = RegalPolicy(RegalConfig(num_devices=3, hidden=16))
    logits_first, logits_second = policy(featurise(graph, Devices.homogeneous(3)))
    shape = (graph.num_nodes, 4, len(BETA_CHOICES))
    assert logits_first.shape == shape and logits_second.shape == shape
    probs = torch.softmax(logits_first, -1)
    one = BETA_CHOICES.index(1.0)
    assert torch.allclose(probs[..., one], torch.tensor(0.5))
    greedy = sample_actions(logits_first, logits_second, greedy=True)
    assert (greedy.first_index == one).all() and (greedy.second_index == one).all()


def test_actions(graphs):
    torch.manual_seed(1)
    logits_first = torch.randn(graphs[1].num_nodes, 3, len(BETA_CHOICES))
    logits_second = torch.randn_like(logits_first)
    generator = torch.Generator().manual_seed(3)
    action = sample_actions(logits_first, logits_second, generator=generator)
    again = sample_actions(logits_first, logits_second, generator=torch.Generator().manual_seed(3))
    assert torch.equal(action.first_index, again.first_index)
    for index in (action.first_index, action.second_index):
        assert index.shape == logits_first.shape[:2] and index.dtype == torch.long
        assert index.min() >= 0 and index.max() < len(BETA_CHOICES)
    greedy = sample_actions(logits_first, logits_second, greedy=True)
    assert torch.equal(greedy.first_index, logits_first.argmax(-1))
    assert torch.equal(greedy.second_index, logits_second.argmax(-1))

    log_a, log_b = logits_first.log_softmax(-1), logits_second.log_softmax(-1)
    manual = sum(
        log_a[v, j, action.first_index[v, j]] + log_b[v, j, action.second_index[v, j]]
        for v in range(logits_first.shape[0])
        for j in range(3)
    )
    assert action_log_prob(logits_first, logits_second, action) == pytest.approx(float(manual))

    entropy = action_entropy(logits_first, logits_second)
    assert 0 < entropy < np.log(len(BETA_CHOICES))
    uniform = torch.zeros_like(logits_first)
    assert action_entropy(uniform, uniform) == pytest.approx(np.log(len(BETA_CHOICES)))

    alpha, beta = action_distributions(action, beta_grid(RegalConfig(), featurise(graphs[1])))
    for array in (alpha, beta):
        assert array.shape == (graphs[1].num_nodes, 3) and array.dtype == np.float64
        assert np.isin(array, BETA_CHOICES).all()
    assert np.array_equal(alpha, np.array(BETA_CHOICES)[action.first_index.numpy()])
    assert np.array_equal(beta, np.array(BETA_CHOICES)[action.second_index.numpy()])


def test_batched_forward_matches_single_graphs(graphs):
    torch.manual_seed(2)
    policy, baseline = RegalPolicy(SMALL), RegalBaseline(SMALL)
    items = [featurise(graph) for graph in graphs]
    batched = batch_inputs(items)
    ptr = batched.ptr
    assert ptr.tolist() == [0, 12, 52, 77] and batched.num_graphs == 3
    assert batched.batch.tolist() == [0] * 12 + [1] * 40 + [2] * 25
    logits_first, logits_second = policy(batched)
    values = baseline(batched)
    assert values.shape == (3,)
    action = sample_actions(logits_first, logits_second, generator=torch.Generator().manual_seed(0))
    per_graph = action_log_prob(logits_first, logits_second, action, ptr=ptr)
    for g, (item, part) in enumerate(zip(items, split_action(action, ptr), strict=True)):
        rows = slice(int(ptr[g]), int(ptr[g + 1]))
        alone_first, alone_second = policy(item)
        assert torch.allclose(alone_first, logits_first[rows], atol=1e-5)
        assert torch.allclose(alone_second, logits_second[rows], atol=1e-5)
        value = baseline(item)
        assert value.shape == () and torch.allclose(value, values[g], atol=1e-5)
        assert torch.equal(part.first_index, action.first_index[rows])
        single = action_log_prob(alone_first, alone_second, part)
        assert torch.allclose(single, per_graph[g], atol=1e-4)


def test_reinforce_step_updates_both_networks(graphs):
    torch.manual_seed(3)
    policy, baseline = RegalPolicy(SMALL), RegalBaseline(SMALL)
    parameters = [*policy.parameters(), *baseline.parameters()]
    before = [p.detach().clone() for p in parameters]
    optimizer = torch.optim.Adam(parameters, lr=1e-2)
    batched = batch_inputs([featurise(graph) for graph in graphs])
    ptr = batched.ptr
    for _ in range(2):  # the heads' zero-initialised last layers open up after one step
        logits_first, logits_second = policy(batched)
        action = sample_actions(logits_first, logits_second)
        reward = torch.tensor([-0.9, -1.1, -1.0])
        advantage = reward - baseline(batched)
        log_prob = action_log_prob(logits_first, logits_second, action, ptr=ptr)
        loss = (-advantage.detach() * log_prob + advantage.square()).mean()
        loss = loss - 0.01 * action_entropy(logits_first, logits_second)
        optimizer.zero_grad()
        loss.backward()
        assert all(p.grad is None or torch.isfinite(p.grad).all() for p in parameters)
        optimizer.step()
    assert all(p.grad is not None for p in parameters)
    assert all(not torch.equal(a, p) for a, p in zip(before, parameters, strict=True))


def test_action_helpers_on_an_empty_graph():
    logits = torch.zeros(0, 3, len(BETA_CHOICES))
    action = sample_actions(logits, logits)
    assert action.first_index.shape == (0, 3)
    assert float(action_log_prob(logits, logits, action)) == 0.0
    assert isinstance(action, RegalAction)
    grid = (torch.ones(0, 3, len(BETA_CHOICES), len(BETA_CHOICES)),) * 2
    assert action_distributions(action, grid)[0].shape == (0, 3)


def test_runtimes_are_validated():
    graph = chain(3)
    assert torch.equal(regal_inputs(graph, None, Devices()).x, featurise(graph).x)
    with pytest.raises(InputError):
        regal_inputs(graph, np.array([1.0, -1.0, 1.0]), Devices())


@pytest.mark.parametrize("parameterisation", ["alpha-beta", "centred"])
def test_key_log_likelihood_is_the_beta_mixture(parameterisation):
    """Two ops with two genes each: the mixture density checked against scipy's beta
    pdf summed over every pair of choices by hand (the same alpha and beta on every
    gene for "alpha-beta"; per-gene means around the prior's keys for "centred")."""
    from scipy.stats import beta as beta_dist

    generator = torch.Generator().manual_seed(0)
    choices = (0.5, 1.0, 4.0)
    prior = {"method": "approx-dp", "beam_width": 10} if parameterisation == "centred" else None
    config = RegalConfig(
        num_devices=1, choices=choices, parameterisation=parameterisation, order_prior=prior
    )
    graph = chain(2)
    keys_prior = None if prior is None else order_prior_keys(graph, prior)
    inputs = regal_inputs(graph, None, Devices.homogeneous(1), keys_prior)
    grid = beta_grid(config, inputs)
    width = tuple(len(v) for v in config.head_choices)
    logits_a = torch.randn(2, 2, width[0], generator=generator)
    logits_b = torch.randn(2, 2, width[1], generator=generator)
    keys = np.array([[[0.1, 0.7], [0.5, 0.99]], [[0.3, 0.2], [0.8, 0.05]]])
    pa, pb = logits_a.softmax(-1).numpy(), logits_b.softmax(-1).numpy()
    alpha, beta = (values.numpy() for values in grid)
    expected = np.mean(
        [
            np.log(
                sum(
                    pa[v, j, i] * pb[v, j, k] * beta_dist.pdf(keys[m, v, j], *params)
                    for i in range(width[0])
                    for k in range(width[1])
                    for params in [(alpha[v, j, i, k], beta[v, j, i, k])]
                )
            )
            for m in range(2)
            for v in range(2)
            for j in range(2)
        ]
    )
    got = key_log_likelihood(logits_a, logits_b, keys, grid)
    assert got.item() == pytest.approx(expected, rel=1e-6)


def test_centred_parameterisation(graphs):
    """ "centred": a concentration c and a mean clip(m0 + shift) per gene, m0 the op's
    prior key for the priority gene and 0.5 for the device genes (and the priority gene
    without a prior); the untrained policy's modes are c = 2 and shift 0, so uniform
    device mutants and broad priority mutants around the prior."""
    prior = {"method": "approx-dp", "beam_width": 100}
    shifts = (-0.3, 0.0, 0.3)
    config = RegalConfig(
        hidden=8,
        rounds=1,
        order_prior=prior,
        parameterisation="centred",
        choices=(2.0, 100.0),
        shifts=shifts,
    )
    assert RegalConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    graph = graphs[1]
    keys = order_prior_keys(graph, prior)
    inputs = regal_inputs(graph, None, Devices(), keys)
    alpha, beta = beta_grid(config, inputs)
    assert alpha.shape == beta.shape == (graph.num_nodes, 3, 2, 3)
    assert torch.allclose(alpha + beta, torch.tensor([2.0, 100.0]).double()[:, None])
    mean = (alpha / (alpha + beta)).numpy()
    expected = np.clip(keys[:, None, None] + np.array(shifts), MEAN_CLIP, 1 - MEAN_CLIP)
    assert np.allclose(mean[:, 2], np.broadcast_to(expected, mean[:, 2].shape), atol=1e-6)
    device_means = np.clip(0.5 + np.array(shifts), MEAN_CLIP, 1 - MEAN_CLIP)
    assert np.allclose(mean[:, :2], device_means)
    no_prior = RegalConfig(parameterisation="centred", choices=(2.0, 100.0), shifts=shifts)
    no_prior_alpha, _ = beta_grid(no_prior, featurise(graph))
    assert torch.allclose(no_prior_alpha[:, 2], alpha[:, 0])

    action = sample_actions(*RegalPolicy(config)(inputs), greedy=True)
    mutant_alpha, mutant_beta = action_distributions(action, (alpha, beta))
    assert np.allclose(mutant_alpha[:, :2], 1.0) and np.allclose(mutant_beta[:, :2], 1.0)
    assert np.allclose(mutant_alpha[:, 2], 2 * keys, atol=1e-6)
    assert np.allclose(mutant_beta[:, 2], 2 * (1 - keys), atol=1e-6)
    for bad, fragment in (
        ({"parameterisation": "mean"}, "parameterisation must be"),
        ({"shifts": ()}, "shifts need"),
        ({"shifts": (0.0, 0.0)}, "shifts need"),
        ({"shifts": (0.0, 1.0)}, "shifts need"),
    ):
        with pytest.raises(InputError, match=fragment):
            RegalConfig(**bad)


def test_key_log_likelihood_gradient_makes_the_keys_likelier():
    """Keys from beta(4, 1): a gradient step from uniform logits raises their
    likelihood, and moves probability towards alpha = 4."""
    choices = (1.0, 4.0)
    keys = np.random.default_rng(0).beta(4.0, 1.0, size=(400, 50, 2))
    logits_a = torch.zeros(50, 2, 2, requires_grad=True)
    logits_b = torch.zeros(50, 2, 2, requires_grad=True)
    grid = beta_grid(RegalConfig(num_devices=1, choices=choices), featurise(chain(50)))
    before = key_log_likelihood(logits_a, logits_b, keys, grid)
    before.backward()
    with torch.no_grad():
        stepped_a = logits_a + 0.5 * logits_a.grad
        after = key_log_likelihood(stepped_a, logits_b + 0.5 * logits_b.grad, keys, grid)
    assert after > before
    assert torch.all(stepped_a.softmax(-1)[..., 1] > 0.5)


def test_order_prior_adds_the_schedulers_keys_as_a_feature(graphs):
    """The prior's keys rank the ops in the scheduler's order (the first op highest), the
    policy reads them as one more column, and bad priors are one-line input errors."""
    prior = {"method": "approx-dp", "beam_width": 100}
    config = RegalConfig(hidden=8, rounds=1, order_prior=prior)
    assert config.node_features == (*REGAL_NODE_FEATURES, ORDER_PRIOR_FEATURE)
    assert RegalConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    graph = graphs[1]
    keys = order_prior_keys(graph, prior)
    order = np.argsort(-keys)
    schedule = solve(graph, "approx-dp", beam_width=100)
    assert np.array_equal(order, schedule.order)
    assert peak_memory(graph, order) == schedule.peak_memory
    plain = featurise(graph)
    inputs = regal_inputs(graph, graph.node_data["runtime"], Devices(), keys)
    assert inputs.x.shape == (graph.num_nodes, F + 1)
    assert torch.equal(inputs.x[:, :F], plain.x)
    assert torch.allclose(inputs.x[:, F].double(), torch.from_numpy(keys))
    logits_first, _ = RegalPolicy(config)(inputs)
    assert logits_first.shape == (graph.num_nodes, 3, len(BETA_CHOICES))
    with pytest.raises(InputError, match="prior_keys need shape"):
        regal_inputs(graph, None, Devices(), keys[:-1])
    with pytest.raises(InputError, match="order_prior must be"):
        RegalConfig(order_prior={"beam_width": 10})
    # The network layer checks the prior's shape; the solvers' layer its method and
    # options, when a placer or a training run uses it.
    with pytest.raises(InputError, match="unknown"):
        check_order_prior({"method": "no-such-scheduler"})
    with pytest.raises(InputError, match="beam"):
        order_prior_keys(graph, {"method": "inductor", "beam_width": 10})
