import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph, OrderError
from dagopt.objectives import MemoryState, lower_bound, memory_profile, peak_memory
from dags import dags, reference_peak


def diamond() -> Graph:
    # 0 -> {1, 2} -> 3; node 2 has parameters.
    return Graph(4, [0, 0, 1, 2], [1, 2, 3, 3], mem=[1, 2, 3, 4], param_mem=[0, 0, 1, 0])


def test_hand_computed_profile():
    profile = memory_profile(diamond(), [0, 1, 2, 3])
    # step 2 runs node 2: live {0, 1} = 3, plus its output 3 and params 1 -> 7;
    # node 0 is freed after it (both successors ran): 3 + 3 - 1 = 5.
    assert profile.during.tolist() == [1, 3, 7, 9]
    assert profile.after.tolist() == [1, 3, 5, 0]
    assert profile.peak == 9 and profile.peak_step == 3


def test_keep_outputs_keeps_sinks_alive():
    g = Graph(3, [0], [1], mem=[1, 5, 2])  # node 2 is an isolated sink
    assert peak_memory(g, [2, 0, 1]) == 6
    assert peak_memory(g, [2, 0, 1], keep_outputs=True) == 8
    assert memory_profile(g, [2, 0, 1], keep_outputs=True).after[-1] == 7


@pytest.mark.parametrize(
    ("order", "fragment"),
    [
        ([0, 1, 2], "misses 1 of 4 nodes"),
        ([0, 1, 1, 3], "repeats node 1"),
        ([0, 1, 2, 7], "unknown node index 7"),
        ([1, 0, 2, 3], "runs 1 before its predecessor 0"),
        ([[0, 1], [2, 3]], "flat list"),
    ],
)
def test_invalid_orders_are_clear_errors(order, fragment):
    with pytest.raises(OrderError, match=fragment):
        peak_memory(diamond(), order)


@settings(max_examples=150, deadline=None)
@given(dags(max_nodes=10, integer_sizes=False), st.booleans(), st.integers(0, 2**32 - 1))
def test_vectorized_profile_matches_reference_and_state(g, keep, seed):
    rng = np.random.default_rng(seed)
    state = MemoryState(g, keep_outputs=keep)
    while not state.done:
        state.push(int(rng.choice(state.ready)))
    order = np.asarray(state.order)
    expected = reference_peak(g, order, keep_outputs=keep)
    assert peak_memory(g, order, keep_outputs=keep) == pytest.approx(expected, rel=1e-12)
    assert state.peak == pytest.approx(expected, rel=1e-12)
    assert lower_bound(g) <= expected + 1e-9


def test_memory_state_rejects_unready_node():
    state = MemoryState(diamond())
    with pytest.raises(OrderError, match="not ready"):
        state.push(3)
