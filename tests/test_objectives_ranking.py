"""Ranking metrics (paper 002, eq. 9-10): Kendall's tau equals scipy's tau-b, ties
included; the tile metric and top-k slowdowns on hand-checked cases."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from dagopt.errors import InputError
from dagopt.objectives.ranking import (
    kendall_tau,
    layout_score,
    ranking_scores,
    tile_metric,
    tile_score,
    top_configs,
    top_k_slowdown,
    top_k_slowdowns,
)


def scipy_tau(s, r) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input, then returns NaN
        return kendalltau(s, r).statistic


def assert_same_tau(s, r) -> None:
    ours, theirs = kendall_tau(s, r), scipy_tau(s, r)
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


few_values = st.integers(0, 3).map(float)  # many ties
many_values = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    pairs=st.one_of(
        st.lists(st.tuples(few_values, few_values), max_size=40),
        st.lists(st.tuples(many_values, few_values), max_size=40),
        st.lists(st.tuples(many_values, many_values), max_size=40),
    )
)
def test_kendall_tau_equals_scipy_with_and_without_ties(pairs):
    s = np.array([p[0] for p in pairs])
    r = np.array([p[1] for p in pairs])
    assert_same_tau(s, r)


@pytest.mark.parametrize("n", [2, 3, 64, 1000, 4097])
def test_kendall_tau_equals_scipy_on_long_vectors(n):
    rng = np.random.default_rng(n)
    r = rng.integers(1_000, 1_050, size=n)  # runtimes with ties
    s = r + rng.normal(0, 20, size=n)
    assert_same_tau(s, r)
    assert_same_tau(np.round(s, -1), r)


def test_kendall_tau_is_equation_nine_without_ties():
    rng = np.random.default_rng(0)
    s, r = rng.random(30), rng.random(30)
    n = s.size
    i, j = np.triu_indices(n, 1)
    eq9 = 2 / (n * (n - 1)) * np.sum(np.sign(s[i] - s[j]) * np.sign(r[i] - r[j]))
    assert kendall_tau(s, r) == pytest.approx(eq9, rel=1e-12)
    assert kendall_tau(r, r) == 1.0 and kendall_tau(-r, r) == -1.0


def test_kendall_tau_nan_cases_and_errors():
    assert math.isnan(kendall_tau([1.0], [2.0]))
    assert math.isnan(kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    with pytest.raises(InputError, match="equal-length"):
        kendall_tau([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="finite"):
        kendall_tau([1.0, np.nan], [1.0, 2.0])


def test_tile_metric_is_equation_ten():
    runtimes = np.array([5.0, 2.0, 4.0, 3.0, 6.0, 7.0, 8.0])
    perfect = runtimes.copy()
    assert tile_metric(perfect, runtimes) == 1.0
    # the model's top 5 (lowest scores): configs 6, 5, 4, 0, 2 -> best runtime 4, best overall 2
    scores = np.array([3.0, 9.0, 4.0, 8.0, 2.0, 1.0, 0.0])
    assert tile_metric(scores, runtimes) == pytest.approx(2 - 4.0 / 2.0)
    assert top_k_slowdown(scores, runtimes, 5) == pytest.approx(1.0)
    assert top_k_slowdown(scores, runtimes, 1) == pytest.approx(8.0 / 2.0 - 1)
    assert top_k_slowdowns(scores, runtimes) == {
        1: pytest.approx(3.0),
        10: 0.0,  # k beyond the number of configurations takes them all
        100: 0.0,
    }


def test_top_configs_breaks_ties_by_index():
    assert top_configs(np.array([1.0, 0.0, 1.0, 0.0])).tolist() == [1, 3, 0, 2]
    assert top_configs(np.array([1.0, 0.0, 1.0, 0.0]), k=3).tolist() == [1, 3, 0]


def test_scores_from_a_submission_ranking():
    runtimes = np.array([30.0, 10.0, 20.0, 40.0, 50.0, 60.0])
    tile_row = np.array([2, 1, 0, 0, 0])  # the official baseline pads short rankings with 0s
    scores = ranking_scores(tile_row, runtimes.size)
    assert scores.tolist() == [2.0, 1.0, 0.0, 5.0, 5.0, 5.0]
    assert tile_metric(scores, runtimes) == 1.0
    layout_row = np.array([1, 2, 0, 3, 4, 5])
    assert kendall_tau(ranking_scores(layout_row, 6), runtimes) == 1.0
    with pytest.raises(InputError, match=r"outside 0\.\.5"):
        ranking_scores(np.array([6]), 6)


def test_collection_scores_average_over_graphs():
    r1, r2 = np.array([1.0, 2.0, 3.0]), np.array([3.0, 1.0, 2.0, 4.0])
    s1, s2 = r1.copy(), np.array([4.0, 3.0, 2.0, 1.0])
    expected = (kendall_tau(s1, r1) + kendall_tau(s2, r2)) / 2
    assert layout_score([s1, s2], [r1, r2]) == pytest.approx(expected)
    many = np.arange(10.0)
    assert tile_score([many, many[::-1].copy()], [many + 1, many + 1]) == pytest.approx(
        (1.0 + (2 - 6.0 / 1.0)) / 2
    )
    with pytest.raises(InputError, match="no graphs"):
        layout_score([], [])
    with pytest.raises(InputError, match="2 score vectors for 1"):
        tile_score([many, many], [many])
    with pytest.raises(InputError, match="k must be"):
        top_k_slowdown(many, many + 1, 0)
    with pytest.raises(InputError, match="> 0"):
        top_k_slowdown(many, many, 1)
