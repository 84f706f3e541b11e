import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagopt import Graph
from dagopt.objectives import memory_profile
from dagopt.schedule import anytime_kernels as kernels
from dagopt.schedule.anytime import Search, closure_distances
from dags import dags
from test_anytime import _better, _random_topological_order, _score

EVERY_DISTANCE = np.arange(1, 13)


def _cone(graph: Graph, order: np.ndarray, i: int, lo: int, hi: int, up: bool) -> set[int]:
    """The ancestors (``up``) or descendants of ``order[i]`` run in steps ``[lo, hi]``,
    found by walking the graph."""
    pos = np.argsort(order)
    step = graph.predecessors if up else graph.successors
    seen, todo = set(), [int(order[i])]
    while todo:
        for y in step(todo.pop()):
            if lo <= pos[y] <= hi and int(y) not in seen:
                seen.add(int(y))
                todo.append(int(y))
    return seen | {int(order[i])}


def _closure_moves(graph: Graph, order: np.ndarray, distances: np.ndarray):
    """Every pull and push of ``distances`` steps: ``(moved step, a, b, new order)``."""
    n = order.size
    for i in range(n):
        for d in distances:
            for pull in (True, False):
                a, b = (i - d, i) if pull else (i, i + d)
                if a < 0 or b >= n:
                    continue
                cone = _cone(graph, order, i, a, b, up=pull)
                if int(order[a if pull else b]) in cone:
                    continue  # the same order as a shorter move
                inside = [int(v) in cone for v in order[a : b + 1]]
                first = [v for v, c in zip(order[a : b + 1], inside, strict=True) if c == pull]
                then = [v for v, c in zip(order[a : b + 1], inside, strict=True) if c != pull]
                moved = order.copy()
                moved[a : b + 1] = first + then
                yield i, a, b, moved


@settings(max_examples=60, deadline=None)
@given(dags(min_nodes=2, max_nodes=12, integer_sizes=False), st.booleans(), st.integers(0, 99))
def test_closure_moves_are_each_nodes_best_pull_or_push_by_full_recomputation(g, keep, seed):
    """Every pull or push keeps the order topological, ``closure_candidates`` gives each
    node its pull or push of least ``(peak, excess)``, scored as a full recomputation
    scores it, and ``closure_moves`` with a limit of one applies the best of them (up to
    rounding: none scores better by more than it)."""
    order = _random_topological_order(g, np.random.default_rng(seed))
    search = Search(g, order, keep_outputs=keep, ratio=0.9)
    tau = search.tau
    current = _score(g, order, keep, tau)
    tolerance = kernels.RELATIVE_TOLERANCE * current[0]
    best = {i: current for i in range(g.num_nodes)}
    for i, a, b, moved in _closure_moves(g, order, EVERY_DISTANCE):
        assert g.is_topological(moved)
        if not (search.during[a : b + 1] >= 0.9 * search.peak).any():
            continue
        score = _score(g, moved, keep, tau)
        if _better(score, best[i], tolerance):
            best[i] = score
    target, peak, excess = search.closure_candidates(0, np.inf, distances=EVERY_DISTANCE, ratio=0.9)
    for i, score in best.items():
        if target[i] < 0:
            assert score == current
        else:
            assert (peak[i], excess[i]) == pytest.approx(score, rel=1e-9, abs=1e-9)
    if (target < 0).all():
        assert search.closure_moves(0, np.inf, distances=EVERY_DISTANCE, ratio=0.9) == 0
        return
    assert search.closure_moves(0, np.inf, distances=EVERY_DISTANCE, ratio=0.9, limit=1) == 1
    assert g.is_topological(search.order)
    applied = _score(g, search.order, keep, tau)
    assert any(applied == pytest.approx(score, rel=1e-9, abs=1e-9) for score in best.values())
    assert not any(_better(score, applied, 1e-9 * current[0]) for score in best.values())


def test_push_lowers_a_peak_where_no_node_move_does():
    """At this order's peak node 2 and its consumer 5 (a sink) are both live. No single
    node move lowers the peak (2 cannot pass 5; 5 moved later keeps 2 alive), but
    pushing 2 with its descendant 5 after nodes 3 and 4 does (found by a random search
    for node-move local optima)."""
    g = Graph(
        6,
        [0, 1, 0, 1, 3, 1, 2],
        [1, 2, 3, 3, 4, 5, 5],
        mem=[5.0, 5.0, 10.0, 10.0, 9.0, 10.0],
    )
    search = Search(g, np.array([0, 1, 2, 5, 3, 4]), keep_outputs=False)
    assert search.peak == 30.0
    assert (search.node_moves()[0] < 0).all()
    assert search.closure_moves(0, np.inf) == 1
    assert list(search.order) == [0, 1, 3, 4, 2, 5]
    assert g.is_topological(search.order)
    assert memory_profile(g, search.order, keep_outputs=False).during.max() == 25.0


def test_push_reaches_a_buffer_read_over_512_steps_on():
    """A training graph's gradient buffer: a zero-filled source ``z`` (100) is written by
    ``p`` (100) at the start of a long chain of small nodes and read by the sink ``q`` at
    its end; a large chain node 700 steps on sets the peak. Pushing ``z`` with ``p``
    past it lowers the peak (T5-small's decoder embedding gradient stood 764 steps
    before its sum); with stretches of at most 512 steps no closure move does."""
    chain = 800
    z, p, q = chain, chain + 1, chain + 2
    sources = [*range(chain - 1), z, p, 0, chain - 1]
    targets = [*range(1, chain), p, q, p, q]
    mem = np.ones(chain + 3)
    mem[[z, p, q]] = 100.0
    mem[700] = 150.0
    g = Graph(chain + 3, sources, targets, mem=mem)
    search = Search(g, np.array([z, 0, p, *range(1, chain), q]), keep_outputs=False)
    before = search.peak
    assert before == 100.0 + 150.0 + 1.0  # p, chain node 700 and its consumer 701
    up_to_512 = closure_distances(512)
    assert (search.closure_candidates(0, np.inf, distances=up_to_512)[0] < 0).all()
    assert search.closure_moves(0, np.inf) >= 1
    assert g.is_topological(search.order)
    assert search.peak < 0.85 * before
