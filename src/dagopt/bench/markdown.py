"""Markdown table rows for the benchmark reports."""

from collections.abc import Iterable

import numpy as np


def markdown_row(cells: Iterable[str]) -> str:
    """``| a | b | c |``"""
    return "| " + " | ".join(cells) + " |"


def markdown_rule(aligns: str) -> str:
    """The header rule, one column per letter: ``l`` left, ``r`` right aligned."""
    return "|" + "".join("---:|" if a == "r" else "---|" for a in aligns)


def mean_ci(values: Iterable[float]) -> str:
    """``mean ± half-width`` of the normal 95 % confidence interval (``nan`` for one value)."""
    array = np.asarray(list(values), dtype=float)
    half = 1.96 * array.std(ddof=1) / np.sqrt(array.size) if array.size > 1 else float("nan")
    return f"{array.mean():.2f} ± {half:.2f}"
