"""Markdown table rows for the benchmark reports."""

from collections.abc import Iterable


def markdown_row(cells: Iterable[str]) -> str:
    """``| a | b | c |``"""
    return "| " + " | ".join(cells) + " |"


def markdown_rule(aligns: str) -> str:
    """The header rule, one column per letter: ``l`` left, ``r`` right aligned."""
    return "|" + "".join("---:|" if a == "r" else "---|" for a in aligns)
