"""Seeded graph sets with disjoint seed ranges, so held-out graphs stay held out.

Training code draws layered graphs with seeds below ``VALIDATION_SEED_BASE``;
validation uses ``VALIDATION_SEED_BASE + i`` and every benchmark table uses the
held-out ``TEST_SEED_BASE + i``.
"""

from dagopt.generate import generate_layered
from dagopt.graph import Graph

VALIDATION_SEED_BASE = 1_000_000
TEST_SEED_BASE = 2_000_000


def test_seeds(count: int) -> list[int]:
    """Seeds of the held-out benchmark graphs."""
    return [TEST_SEED_BASE + i for i in range(count)]


def layered_test_set(num_nodes: int, count: int) -> list[Graph]:
    """The first ``count`` held-out layered graphs of ``num_nodes`` nodes."""
    return [generate_layered(num_nodes, seed=seed) for seed in test_seeds(count)]
