"""Configuration-ranking metrics of paper 002 (TGraph) and the TpuGraphs benchmark.

The single source of truth for every ranking number dagopt reports. ``scores`` are a
model's predictions, one per configuration, **lower = predicted faster**; ``runtimes``
are the measured targets (tile: ``config_runtime / config_runtime_normalizers``,
layout: ``config_runtime``). A model's top-k are the k lowest scores, ties broken by
the lower configuration index (``top_configs``).

- ``kendall_tau``: paper 002, eq. 9, the layout metric (tau-b: equals
  ``scipy.stats.kendalltau`` with ties); ``layout_score``: its mean over graphs.
- ``top_k_slowdown``: best runtime among the top-k over the best runtime, minus 1 (the
  TpuGraphs paper's top-k error); ``tile_metric``: paper 002, eq. 10, ``2 - best top-5
  / best = 1 - top_k_slowdown(k=5)``; ``tile_score``: its mean over graphs.
"""

from collections.abc import Sequence

import numpy as np

from dagopt.errors import InputError

TILE_TOP_K = 5  # paper 002, eq. 10: K = 5
SLOWDOWN_KS = (1, 10, 100)


def _pair(scores: np.ndarray, runtimes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    r = np.asarray(runtimes, dtype=np.float64)
    if s.ndim != 1 or s.shape != r.shape:
        raise InputError(f"scores {s.shape} and runtimes {r.shape} must be equal-length vectors")
    if not (np.isfinite(s).all() and np.isfinite(r).all()):
        raise InputError("scores and runtimes must be finite")
    return s, r


def top_configs(scores: np.ndarray, k: int | None = None) -> np.ndarray:
    """Configuration indices from predicted fastest to slowest (the first ``k`` when
    given): a stable argsort of ``scores``, so equal scores keep index order."""
    order = np.argsort(np.asarray(scores), kind="stable")
    return order if k is None else order[:k]


def ranking_scores(ranking: np.ndarray, num_configs: int) -> np.ndarray:
    """Scores that reproduce a ranking (e.g. a submission's ``TopConfigs``): a
    configuration's first position in the ranking, best first; configurations it leaves
    out tie after all it lists. (The official tile baseline pads short rankings with 0s.)"""
    ranking = np.asarray(ranking)
    if ranking.size and (ranking.min() < 0 or ranking.max() >= num_configs):
        raise InputError(f"ranking names a configuration outside 0..{num_configs - 1}")
    configs, first = np.unique(ranking, return_index=True)
    scores = np.full(num_configs, float(ranking.size))
    scores[configs] = first
    return scores


def _pairs_in_runs(starts: np.ndarray) -> int:
    """Pairs inside runs of a sorted vector, ``starts`` marking each run's first element:
    sum over runs of t(t-1)/2."""
    lengths = np.diff(np.append(np.flatnonzero(starts), starts.size)).astype(np.int64)
    return int((lengths * (lengths - 1) // 2).sum())


def _inversions(values: np.ndarray) -> int:
    """Pairs ``i < j`` with ``values[i] > values[j]`` (integers ``0..n-1``), counted by a
    bottom-up merge sort whose merges are vectorised with ``searchsorted``.

    At width ``w`` the array is sorted runs of ``w``; runs ``2p`` and ``2p+1`` form pair
    ``p``, and keys ``p * n + value`` put every pair's left run into one sorted array, in
    which each right-run value finds the left values greater than it. Sorting the keys
    merges each pair. ``O(n log^2 n)``.
    """
    n = values.size
    a = values.astype(np.int64)
    position = np.arange(n)
    total, width = 0, 1
    while width < n:
        pair = position // (2 * width)
        keys = pair * n + a
        left = (position // width) % 2 == 0
        left_keys = keys[left]
        right_pair = pair[~left]
        left_end = np.searchsorted(left_keys, (right_pair + 1) * n, side="left")
        not_greater = np.searchsorted(left_keys, keys[~left], side="right")
        total += int((left_end - not_greater).sum())
        a = np.sort(keys) - pair * n
        width *= 2
    return total


def kendall_tau(scores: np.ndarray, runtimes: np.ndarray) -> float:
    """Kendall's tau-b between predicted scores and runtimes (paper 002, eq. 9).

    ``tau = (C - D) / sqrt((P - T_s) (P - T_r))`` over the ``P = n(n-1)/2`` pairs: C and D
    concordant and discordant pairs, ``T_s`` / ``T_r`` pairs tied in scores / runtimes.
    Without ties this is eq. 9, ``2 / (n(n-1)) sum_{i<j} sgn(s_i - s_j) sgn(r_i - r_j)``.
    1 means the predicted order is the measured one. NaN when either side is constant or
    ``n < 2``, as ``scipy.stats.kendalltau``. ``O(n log^2 n)``.
    """
    s, r = _pair(scores, runtimes)
    n = s.size
    pairs = n * (n - 1) // 2
    if n < 2:
        return float("nan")
    by_score = np.lexsort((r, s))  # ties in s sorted by r: no inversion among them
    s_sorted, r_sorted = s[by_score], r[by_score]
    new_s = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    tied_s = _pairs_in_runs(new_s)
    tied_both = _pairs_in_runs(new_s | np.r_[True, r_sorted[1:] != r_sorted[:-1]])
    ranks, counts = np.unique(r, return_inverse=True, return_counts=True)[1:]
    tied_r = int((counts.astype(np.int64) * (counts - 1) // 2).sum())
    if tied_s == pairs or tied_r == pairs:
        return float("nan")
    discordant = _inversions(ranks.reshape(-1)[by_score])
    difference = pairs - tied_s - tied_r + tied_both - 2 * discordant
    return float(difference / np.sqrt(float(pairs - tied_s) * float(pairs - tied_r)))


def top_k_slowdown(scores: np.ndarray, runtimes: np.ndarray, k: int) -> float:
    """``min(runtimes[top-k]) / min(runtimes) - 1``: how much slower the best of the
    model's top ``k`` configurations runs than the best one (0 = found it)."""
    s, r = _pair(scores, runtimes)
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    if s.size == 0:
        raise InputError("no configurations to rank")
    best = r.min()
    if best <= 0:
        raise InputError(f"runtimes must be > 0, got {best}")
    return float(r[top_configs(s, k)].min() / best - 1.0)


def top_k_slowdowns(
    scores: np.ndarray, runtimes: np.ndarray, ks: Sequence[int] = SLOWDOWN_KS
) -> dict[int, float]:
    """``top_k_slowdown`` for each ``k`` in ``ks`` (1, 10 and 100 by default)."""
    return {k: top_k_slowdown(scores, runtimes, k) for k in ks}


def tile_metric(scores: np.ndarray, runtimes: np.ndarray, k: int = TILE_TOP_K) -> float:
    """Paper 002, eq. 10: ``2 - min_{i in top-k} r_i / min_i r_i`` with ``k = 5``; 1 when
    the fastest configuration is among the model's top 5."""
    return 1.0 - top_k_slowdown(scores, runtimes, k)


def _mean_over_graphs(metric, scores, runtimes) -> float:
    if len(scores) != len(runtimes):
        raise InputError(f"{len(scores)} score vectors for {len(runtimes)} runtime vectors")
    if not len(scores):
        raise InputError("no graphs to score")
    return float(np.mean([metric(s, r) for s, r in zip(scores, runtimes, strict=True)]))


def layout_score(scores: Sequence[np.ndarray], runtimes: Sequence[np.ndarray]) -> float:
    """A layout collection's score: ``kendall_tau`` averaged over its graphs (NaN when a
    graph's tau is)."""
    return _mean_over_graphs(kendall_tau, scores, runtimes)


def tile_score(scores: Sequence[np.ndarray], runtimes: Sequence[np.ndarray]) -> float:
    """The tile collection's score: ``tile_metric`` (eq. 10) averaged over its graphs."""
    return _mean_over_graphs(tile_metric, scores, runtimes)
