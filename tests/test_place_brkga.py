"""Tests of the placement interface, the chromosome decoder and BRKGA (paper 003, A.2)."""

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.errors import InputError
from dagopt.generate.placement import generate_placement
from dagopt.graph import validate_order
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.objectives.placement import simulate
from dagopt.place import PlacementProblem, place
from dagopt.place.base import INFEASIBLE_RATIO, cost_ratio
from dagopt.place.brkga import (
    TIMED_FIRST_BATCH,
    BrkgaParams,
    MutantDistributions,
    TimedScorer,
    run_brkga,
)
from dagopt.place.decode import decode, order_keys
from dagopt.place.prior import DEFAULT_ORDER_PRIOR, PRIOR_TIME_SHARE
from dagopt.schedule import solve
from dags import dags


@settings(max_examples=40, deadline=None)
@given(graph=dags(max_nodes=12), devices=st.integers(1, 3), seed=st.integers(0, 1000))
def test_decode_gives_valid_placements_and_priority_orders(graph, devices, seed):
    keys = np.random.default_rng(seed).random((5, graph.num_nodes, devices + 1))
    device_of, orders = decode(graph, keys)
    assert np.array_equal(device_of, keys[:, :, :devices].argmax(axis=2))
    for b, order in enumerate(orders):
        validate_order(graph, order)
        # Every step runs the ready op of highest priority.
        done = np.zeros(graph.num_nodes, dtype=bool)
        for v in order:
            ready = [
                u
                for u in range(graph.num_nodes)
                if not done[u] and all(done[p] for p in graph.predecessors(u))
            ]
            assert keys[b, v, devices] == max(keys[b, u, devices] for u in ready)
            done[v] = True


@settings(max_examples=40, deadline=None)
@given(graph=dags(max_nodes=12), seed=st.integers(0, 1000))
def test_order_keys_decode_back_to_their_order(graph, seed):
    """Any topological order (here one decoded from random keys) survives the round trip
    through ``order_keys``, whose keys lie in (0, 1)."""
    rng = np.random.default_rng(seed)
    _, (order,) = decode(graph, rng.random((1, graph.num_nodes, 2)))
    keys = order_keys(order)
    assert np.all((keys > 0) & (keys < 1))
    chromosome = np.stack([rng.random(graph.num_nodes), keys], axis=1)[None]
    assert np.array_equal(decode(graph, chromosome)[1][0], order)


def test_cost_ratio_ranks_infeasible_last():
    assert cost_ratio((0, 3.0), 4.0) == 0.75
    assert cost_ratio((1, 3.0), 4.0) == INFEASIBLE_RATIO > 1
    assert cost_ratio((0, 3.0), None) == cost_ratio((0, 3.0), 0.0) == 1.0


def test_decode_rejects_bad_shapes():
    graph = generate_placement(10, seed=0)
    with pytest.raises(InputError, match="chromosomes have shape"):
        decode(graph, np.zeros((2, 9, 3)))


@pytest.mark.parametrize("objective", ["runtime", "peak-memory"])
def test_brkga_spends_its_budget_and_returns_what_it_reports(objective):
    graph = generate_placement(60, seed=1)
    problem = PlacementProblem(graph, Devices(), objective)
    outcome = run_brkga(problem, seed=0, params=BrkgaParams(evaluations=730))
    assert outcome.evaluations == problem.evaluations == 730
    result = simulate(graph, problem.devices, outcome.device_of, outcome.order)
    value = result.makespan if objective == "runtime" else result.peak_memory.max()
    assert outcome.cost == (0, pytest.approx(value))
    trace = outcome.best_by_evaluation
    costs = [t[1:] for t in trace]
    assert all(later < earlier for earlier, later in pairwise(costs))
    assert trace[-1][1:] == outcome.cost


def test_brkga_is_deterministic_and_improves_on_its_first_population():
    graph = generate_placement(80, seed=2)
    runs = [place(graph, "brkga", seed=3, evaluations=2000, population=50) for _ in range(2)]
    assert np.array_equal(runs[0].device_of, runs[1].device_of)
    assert np.array_equal(runs[0].order, runs[1].order)
    first = runs[0].info["best_by_evaluation"][0]
    assert first[0] == 50
    assert runs[0].cost < (first[1], first[2])


def test_brkga_prefers_feasible_solutions():
    graph = generate_placement(40, seed=4)
    total = graph.mem.sum() + graph.param_mem.sum()
    devices = Devices((DeviceSpec(memory=total * 0.25), DeviceSpec(memory=total * 0.25)))
    result = place(graph, "brkga", devices=devices, seed=0, evaluations=1500)
    trace = result.info["best_by_evaluation"]
    assert trace[0][1] == 1  # the first population holds no feasible solution
    assert result.feasible
    assert result.cost == (0, pytest.approx(result.makespan))


def test_learned_style_distributions_steer_the_mutants():
    graph = generate_placement(30, seed=5)
    problem = PlacementProblem(graph, Devices(), "runtime")
    alpha = np.ones((30, 3))
    beta = np.ones((30, 3))
    alpha[:, 0], beta[:, 0] = 50.0, 0.2  # device-0 affinity near 1: everything on device 0
    distributions = MutantDistributions(alpha, beta)
    keys = distributions.sample(200, np.random.default_rng(0))
    assert keys.shape == (200, 30, 3)
    assert (decode(graph, keys)[0] == 0).mean() > 0.95
    outcome = run_brkga(
        problem, seed=0, params=BrkgaParams(evaluations=100), distributions=distributions
    )
    assert outcome.evaluations == 100
    with pytest.raises(InputError, match="mutant alpha has shape"):
        run_brkga(problem, seed=0, distributions=MutantDistributions(alpha[:5], beta))
    with pytest.raises(InputError, match="finite and > 0"):
        run_brkga(problem, seed=0, distributions=MutantDistributions(alpha * 0, beta))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"population": 1}, "population"),
        ({"evaluations": 0}, "evaluations"),
        ({"elite_bias": 1.0}, "elite_bias"),
        ({"elite_fraction": 0.6, "mutant_fraction": 0.5}, "no room for children"),
        ({"mutation": 0.1}, "has no option 'mutation'"),
    ],
)
def test_bad_brkga_options_are_input_errors(options, message):
    graph = generate_placement(10, seed=0)
    with pytest.raises(InputError, match=message):
        place(graph, "brkga", seed=0, **options)


def test_unknown_placer_and_objective():
    graph = generate_placement(10, seed=0)
    with pytest.raises(InputError, match="unknown placement method 'nope'"):
        place(graph, "nope")
    with pytest.raises(InputError, match="unknown objective"):
        place(graph, "brkga", objective="energy")


def test_any_method_meeting_the_lower_bound_is_proved_optimal():
    # 0 -> 2 <- 1: running 0 and 1 side by side, then 2, meets both bounds.
    graph = Graph(
        3,
        [0, 1],
        [2, 2],
        mem=[4.0, 5.0, 1.0],
        param_mem=[0.0, 0.0, 2.0],
        node_data={"runtime": [3.0, 3.0, 1.0]},
    )
    for objective in ("runtime", "peak-memory"):
        result = place(graph, "brkga", objective=objective, seed=0, evaluations=200)
        assert result.proved_optimal is True
    # One device runs 0 and 1 one after the other: 7 s against the bound's 4 s.
    assert place(graph, "single-device", objective="runtime").proved_optimal is None


def test_centred_mutants_have_the_solution_as_their_mean():
    keys = np.array([0.9, 0.5, 0.1])
    centred = MutantDistributions.centred(3, 2, 40.0, priority_keys=keys)
    assert np.allclose(centred.alpha[:, -1] / (centred.alpha[:, -1] + centred.beta[:, -1]), keys)
    assert np.all(centred.alpha[:, :2] == 1.0) and np.all(centred.beta[:, :2] == 1.0)
    both = MutantDistributions.centred(3, 2, 40.0, device_of=np.array([0, 1, 1]))
    assert np.allclose(both.alpha[:, :2] / 40.0, [[0.75, 0.25], [0.25, 0.75], [0.25, 0.75]])
    assert np.all(both.alpha[:, -1] == 1.0)
    samples = centred.sample(4000, np.random.default_rng(0))
    assert np.allclose(samples[:, :, -1].mean(0), keys, atol=0.01)
    assert MutantDistributions.centred(3, 2, 40.0).is_uniform
    with pytest.raises(InputError, match="concentration must be > 0"):
        MutantDistributions.centred(3, 2, 0.0, priority_keys=keys)


def test_brkga_prior_searches_around_the_memory_order():
    """With a huge concentration every chromosome's priorities are the prior's keys, so
    the first population decodes to approx-dp's single-device order."""
    graph = generate_placement(40, seed=2)
    result = place(
        graph,
        "brkga-prior",
        objective="peak-memory",
        seed=0,
        concentration=1e7,
        population=30,
        evaluations=30,
    )
    assert np.array_equal(result.order, solve(graph, **DEFAULT_ORDER_PRIOR).order)
    assert result.evaluations == 30
    with pytest.raises(InputError, match="concentration must be > 0"):
        place(graph, "brkga-prior", concentration=0.0)


def test_brkga_under_a_time_limit_scores_the_same_chromosomes_in_timed_batches():
    """Given time to spend its budget, timed batches change nothing: the same draws,
    generations and trace as without a limit."""
    problem = PlacementProblem(generate_placement(60, seed=3), Devices(), "runtime")
    params = BrkgaParams(evaluations=600)
    free = run_brkga(problem, seed=2, params=params)
    timed = run_brkga(problem, seed=2, params=params, time_limit=600)
    assert (timed.evaluations, timed.generations) == (free.evaluations, free.generations)
    assert timed.best_by_evaluation == free.best_by_evaluation
    assert np.array_equal(timed.order, free.order) and not timed.stopped_by_time_limit


def test_brkga_stops_inside_a_generation_at_its_deadline():
    """A spent limit still scores one batch of the first population, and no more."""
    problem = PlacementProblem(generate_placement(60, seed=3), Devices(), "runtime")
    stopped = run_brkga(problem, seed=2, time_limit=0)
    assert stopped.evaluations == TIMED_FIRST_BATCH and stopped.generations == 1
    assert stopped.stopped_by_time_limit
    keys = MutantDistributions.uniform(60, 2).sample(50, np.random.default_rng(0))
    expired = TimedScorer(problem, deadline=0.0, largest=100).score(keys)
    whole = TimedScorer(problem, deadline=math.inf, largest=100).score(keys)
    assert len(expired[1]) == TIMED_FIRST_BATCH and len(whole[1]) == 50
    device_of, orders = decode(problem.graph, keys)
    assert np.array_equal(whole[0], device_of) and np.array_equal(whole[1], orders)
    for first, again in zip(expired, whole, strict=True):
        assert np.array_equal(first, again[:TIMED_FIRST_BATCH])


def test_brkga_prior_s_time_limit_covers_its_order_prior(prior_time_limits):
    """The prior's approx-dp runs within its share of the limit; BRKGA gets what it left
    (here none: its first batch only)."""
    graph = generate_placement(80, seed=1)
    stopped = place(graph, "brkga-prior", seed=0, time_limit=0)
    assert stopped.evaluations == TIMED_FIRST_BATCH and stopped.info["stopped_by_time_limit"]
    assert prior_time_limits[-1] == 0
    place(graph, "brkga-prior", seed=0, time_limit=60, evaluations=100)
    assert prior_time_limits[-1] == PRIOR_TIME_SHARE * 60
    finished = place(graph, "brkga-prior", seed=0)
    assert finished.evaluations == 5000 and not finished.info["stopped_by_time_limit"]
