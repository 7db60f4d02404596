"""Aggregation as in the authors' plotting notebooks: mean and sample std (ddof=1) per point.

Non-private methods (Fast-τCC, FCCM) are pooled over all their runs and drawn as a band.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dptaucc.methods import methods

_METHODS = methods()
#: display name, colour, marker and line style of each built-in algorithm (figures and report)
LABELS = {m.name: m.label for m in _METHODS}
COLORS = {m.name: m.color for m in _METHODS}
MARKERS = {m.name: m.marker for m in _METHODS}
LINESTYLES = {m.name: m.linestyle for m in _METHODS}
#: the neighbouring relation of each built-in algorithm, in short
NEIGHBOURS = {m.name: m.neighbours for m in _METHODS}
#: the private methods of the paper's Fig. 2, and the benchmark's other methods
PAPER_METHODS = tuple(m.name for m in _METHODS if m.role == "paper")
EXTRA_METHODS = tuple(m.name for m in _METHODS if m.role == "extra")
NON_PRIVATE = tuple(m.name for m in _METHODS if not m.private)


def ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"]


def mean_std(df: pd.DataFrame, by: Sequence[str], metric: str) -> pd.DataFrame:
    """Columns ``by + [mean, std, n]`` over successful runs (std with ddof=1; NaN if n=1)."""
    d = ok(df).dropna(subset=[metric])
    if d.empty:
        return pd.DataFrame(columns=[*by, "mean", "std", "n"])
    g = d.groupby(list(by), dropna=False)[metric]
    out = g.agg(mean="mean", std=lambda s: s.std(ddof=1), n="count").reset_index()
    return out


def pooled(df: pd.DataFrame, metric: str) -> tuple[float, float, int]:
    """Mean, std (ddof=1) and count of ``metric`` over every successful run (band methods)."""
    s = ok(df)[metric].dropna()
    return float(s.mean()), float(s.std(ddof=1)) if len(s) > 1 else float("nan"), int(len(s))


def label(alg: str) -> str:
    """Display name of an algorithm (a user's own algorithm keeps its config name)."""
    return LABELS.get(alg, alg)


def neighbours(alg: str) -> str:
    """The neighbour relation of a method's ε ("not stated" for a method without an entry)."""
    return NEIGHBOURS.get(alg, "not stated")


def neighbours_text(algs: Sequence[str]) -> str:
    """One line naming each relation once with its methods, e.g. "neighbours: one cell +1
    (DP-τCC); one row replaced (covers one cell) (DP-KMeans, DPHD)"; non-DP methods left out."""
    groups: dict[str, list[str]] = {}
    for alg in dict.fromkeys(algs):
        if alg not in NON_PRIVATE:
            groups.setdefault(neighbours(alg), []).append(label(alg))
    return "neighbours: " + "; ".join(f"{rel} ({', '.join(names)})"
                                      for rel, names in groups.items())
