"""``dagopt.schedule.certify``: the branch bound with approx-dp's order as its upper end."""

import pytest

from dagopt.generate import generate_layered
from dagopt.objectives import branch_bound, must_live_bound
from dagopt.schedule import solve
from dagopt.schedule.certify import certify


@pytest.mark.parametrize("keep_outputs", [False, True])
def test_a_poor_order_on_a_small_graph_gets_the_optimum(keep_outputs):
    """On 40 nodes the branch bound alone, up to BFS's peak, does not close in seconds
    (docs/ordering.md); with approx-dp's order as its upper end it closes on exact-dp's
    optimum, below the BFS order's peak."""
    graph = generate_layered(40, seed=3)
    bfs = solve(graph, "bfs", keep_outputs=keep_outputs).peak_memory
    optimum = solve(graph, "exact-dp", keep_outputs=keep_outputs).peak_memory
    found = certify(graph, bfs, keep_outputs=keep_outputs, time_limit=10)
    assert found.closed and found.bound == pytest.approx(optimum, rel=1e-9)
    assert found.incumbent_peak == pytest.approx(optimum, rel=1e-9) and not found.proves(bfs)
    assert found.proves(optimum)
    alone = branch_bound(graph, upper=bfs, keep_outputs=keep_outputs, time_limit=0.5)
    assert not alone.optimal


def test_out_of_time_it_is_a_bound_below_the_least_peak_known():
    graph = generate_layered(2000, seed=1)
    bfs = solve(graph, "bfs").peak_memory
    found = certify(graph, bfs, keep_outputs=False, time_limit=1.0)
    assert not found.closed
    assert must_live_bound(graph) <= found.bound <= found.incumbent_peak < bfs
