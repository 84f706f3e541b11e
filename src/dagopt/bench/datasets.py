"""Held-out benchmark graph sets (seed ranges in ``dagopt.generate.seeds``)."""

import argparse

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


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sizes``, ``--limits`` (one time limit per size) and ``--graphs`` (held-out
    layered graphs per size) of the scale benchmarks; ``scale_runs`` reads them."""
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument(
        "--limits", type=float, nargs="+", default=[10.0, 60.0], help="anytime's limit per size"
    )
    parser.add_argument("--graphs", type=int, default=1, help="held-out graphs per size")


def scale_runs(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> list[tuple[int, float, int]]:
    """``(size, time limit, test seed)`` of every run ``add_scale_arguments`` asked for."""
    if len(args.limits) != len(args.sizes):
        parser.error("give one --limits value per --sizes value")
    return [
        (size, limit, seed)
        for size, limit in zip(args.sizes, args.limits, strict=True)
        for seed in test_seeds(args.graphs)
    ]
