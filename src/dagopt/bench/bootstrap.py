"""Paired bootstrap interval of a per-graph gain (TGraph tables, paper 002, Table 2)."""

import numpy as np


def paired_interval(with_: np.ndarray, without: np.ndarray, seed: int) -> str:
    """Mean per-graph gain and its 95 % paired bootstrap interval (2,000 resamples of
    the scored graphs)."""
    gain = with_ - without
    rng = np.random.default_rng(seed)
    means = gain[rng.integers(0, gain.size, size=(2000, gain.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return f"{gain.mean():+.4f} [{low:+.4f}, {high:+.4f}]"
