"""The local search on the generated code's memory (``dagopt.schedule.codegen_search``)."""

import numpy as np
import pytest

from codegen_memories import memory
from dagopt.errors import InputError
from dagopt.io.inductor_codegen import ALONE
from dagopt.schedule.codegen_search import refine_order

# kernels 0 and 1 make A and B (100 each), read by kernels 2 and 3, which make 1 each
TWO_CHAINS = memory(
    [ALONE] * 4,
    [(100, 0, [0, 2], False), (100, 1, [1, 3], False), (1, 2, [2], True), (1, 3, [3], True)],
)
PREDECESSORS = [np.array([], dtype=np.int64), np.array([], dtype=np.int64), np.array([0]), [1]]


def test_the_search_finds_the_order_that_frees_a_before_b_is_made():
    order, peak = refine_order(TWO_CHAINS, PREDECESSORS, [0, 1, 2, 3], time_limit=None, moves=200)
    assert TWO_CHAINS.peak([0, 1, 2, 3]) == 201
    assert peak == TWO_CHAINS.peak(order) == 102  # A freed before B is made
    position = np.argsort(order)
    assert all(position[u] < position[k] for k, before in enumerate(PREDECESSORS) for u in before)


def test_no_moves_keep_the_order_and_a_seed_repeats_the_search():
    order, peak = refine_order(TWO_CHAINS, PREDECESSORS, [0, 1, 2, 3], time_limit=None, moves=0)
    assert order.tolist() == [0, 1, 2, 3] and peak == 201
    runs = [
        refine_order(TWO_CHAINS, PREDECESSORS, [1, 0, 3, 2], time_limit=None, moves=5, seed=3)
        for _ in range(2)
    ]
    assert runs[0][0].tolist() == runs[1][0].tolist()


def test_the_search_needs_a_bound_that_is_not_negative():
    with pytest.raises(InputError, match="time_limit or a number of moves"):
        refine_order(TWO_CHAINS, PREDECESSORS, [0, 1, 2, 3], time_limit=None)
    with pytest.raises(InputError, match="at least 0"):
        refine_order(TWO_CHAINS, PREDECESSORS, [0, 1, 2, 3], time_limit=-1.0)
