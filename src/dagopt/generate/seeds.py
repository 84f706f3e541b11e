"""Disjoint seed ranges for generated graphs, so held-out graphs stay held out.

Training draws layered graphs with seeds in ``[0, VALIDATION_SEED_BASE)``,
validation uses ``VALIDATION_SEED_BASE + i`` and every benchmark table the
held-out ``TEST_SEED_BASE + i``.
"""

VALIDATION_SEED_BASE = 1_000_000
TEST_SEED_BASE = 2_000_000


def training_seed(offset: int, epoch: int, epoch_graphs: int, index: int) -> int:
    """Seed of graph ``index`` of training epoch ``epoch`` (fresh graphs every epoch)."""
    seed = offset + epoch * epoch_graphs + index
    if not 0 <= seed < VALIDATION_SEED_BASE:
        raise ValueError(f"training seed {seed} leaves the training range [0, 1000000)")
    return seed


def validation_seeds(count: int) -> list[int]:
    return [VALIDATION_SEED_BASE + i for i in range(count)]


def test_seeds(count: int) -> list[int]:
    """Seeds of the held-out benchmark graphs."""
    return [TEST_SEED_BASE + i for i in range(count)]
