"""Held-out benchmark graph sets (seed ranges in ``dagopt.generate.seeds``)."""

from dagopt.generate import generate_layered
from dagopt.generate.placement import placement_graph
from dagopt.generate.seeds import test_seeds, validation_seeds
from dagopt.graph import Graph


def layered_test_set(num_nodes: int, count: int) -> list[Graph]:
    """The first ``count`` held-out layered graphs of ``num_nodes`` nodes."""
    return [generate_layered(num_nodes, seed=seed) for seed in test_seeds(count)]


def layered_validation_set(num_nodes: int, count: int) -> list[Graph]:
    """The first ``count`` layered validation graphs of ``num_nodes`` nodes (for tuning)."""
    return [generate_layered(num_nodes, seed=seed) for seed in validation_seeds(count)]


def placement_test_set(count: int, *, topologies: int = 0, noise_sigma: float = 0.2) -> list[Graph]:
    """The first ``count`` held-out placement graphs (paper 003's sizes, 30 to 300 ops).

    ``topologies`` > 0: noisy copies of that many base topologies, with held-out noise
    (``dagopt.generate.placement.placement_graph``).
    """
    return [
        placement_graph(seed, topologies=topologies, noise_sigma=noise_sigma)
        for seed in test_seeds(count)
    ]
