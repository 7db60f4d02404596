"""Aggregation as in the authors' plotting notebooks: mean and sample std (ddof=1) per point.

Non-private methods (Fast-τCC, FCCM) are pooled over all their runs and drawn as a band.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

#: display names and a fixed colour per algorithm (figures and report)
LABELS = {
    "dp_taucc": "DP-τCC", "fast_taucc": "Fast-τCC", "dp_kmeans": "DP-KMeans", "dphd": "DPHD",
    "dpnmf": "DPNMF", "dpm": "DPM", "colored_noise": "Colored noise", "fccm": "Collab. FCCM",
}
COLORS = {
    "dp_taucc": "tab:blue", "fast_taucc": "black", "dp_kmeans": "tab:orange", "dphd": "tab:green",
    "dpnmf": "tab:red", "dpm": "tab:purple", "colored_noise": "tab:brown", "fccm": "tab:gray",
}
#: the neighbour relation each method's ε refers to (corrected mode; docs/privacy.md)
NEIGHBOURS = {
    "dp_taucc": "one cell +1",
    "dp_kmeans": "one row replaced (covers one cell)",
    "dphd": "one row replaced (covers one cell)",
    "dpnmf": "one row replaced (covers one cell)",
    "dpm": "one row added/removed, at ε/2: one cell by group privacy",
    "colored_noise": "one row added/removed, at ε/2: one cell by group privacy",
    "fast_taucc": "not DP",
    "fccm": "not DP",
}
PAPER_METHODS = ("dp_taucc", "dp_kmeans", "dphd", "dpnmf")
EXTRA_METHODS = ("dpm", "colored_noise", "fccm")
NON_PRIVATE = ("fast_taucc", "fccm")


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
    return LABELS.get(alg, alg)


def neighbours(alg: str) -> str:
    """The neighbour relation of a method's ε ("not stated" for a method without an entry)."""
    return NEIGHBOURS.get(alg, "not stated")


def neighbours_text(algs: Sequence[str]) -> str:
    """One line naming each relation once with its methods, e.g. "neighbours: one cell +1
    (DP-τCC); one row replaced (covers one cell) (DP-KMeans, DPHD)"; non-DP methods left out."""
    groups: dict[str, list[str]] = {}
    for alg in dict.fromkeys(algs):
        if neighbours(alg) != "not DP":
            groups.setdefault(neighbours(alg), []).append(label(alg))
    return "neighbours: " + "; ".join(f"{rel} ({', '.join(names)})"
                                      for rel, names in groups.items())
