"""Every method under one relation: one row replaced (the figure, the report's tables).

The methods whose corrected-mode ε holds for one whole row replaced (``MethodInfo.row_level``:
DP-τCC's row variant, DP-KMeans, DPHD, DPNMF directly; DPM and colored noise as one removal
plus one addition at ε/2 each) are compared on the same score: each model's rows read by the
evaluation protocol (``evaluation_row_labels``/``predict``: each row to its best released
prototype; it reads the data, so it is not DP), ``nmi_rows`` of the records. Two views:

* :func:`one_relation` — fig2_real, corrected mode, per dataset and ε (the paper's grid);
* :func:`crossover` — row_crossover (synthetic biclusters), per size m: the smallest ε of the
  grid at which a method's mean row NMI reaches a fraction (½) of Fast-τCC's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dptaucc.bench.aggregate import label, mean_std, pooled
from dptaucc.methods import methods

__all__ = ["ROW_LEVEL", "VARIANTS", "REFERENCE", "NEAR_ZERO", "RELATION_NOTE", "one_relation",
           "one_relation_verdict", "crossover", "crossover_verdict"]

#: the methods private for one row replaced, in display order
ROW_LEVEL = tuple(m.name for m in methods() if m.row_level and m.private)
#: row-level methods that exist for this comparison (role "variant": DP-τCC's row variant);
#: the one-relation figure is drawn when a table holds one of them
VARIANTS = tuple(m.name for m in methods() if m.row_level and m.role == "variant")
#: the non-private reference drawn as a band
REFERENCE = "fast_taucc"
#: a mean row NMI below this counts as "near 0"
NEAR_ZERO = 0.1
#: what every figure and table of this comparison says about the relation and the score
RELATION_NOTE = ("every method's ε protects one whole row (document) replaced: DP-τCC (row), "
                 "DP-KMeans, DPHD and DPNMF directly, DPM and colored noise as one removal plus "
                 "one addition at ε/2 each; rows of every model scored by the evaluation "
                 "protocol (each row to its best released prototype: reads the data, not DP)")


def _corrected(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["algorithm"].isin(ROW_LEVEL) & (df["mode"] == "corrected")]


def one_relation(df: pd.DataFrame, metric: str = "nmi_rows") -> pd.DataFrame:
    """Mean, std and seeds of ``metric`` per (dataset, algorithm, ε) for the row-level methods
    in corrected mode, and Fast-τCC pooled per dataset (ε NaN).

    >>> df = pd.DataFrame({"dataset": ["d"] * 4, "status": ["ok"] * 4,
    ...                    "algorithm": ["dp_kmeans"] * 2 + ["fast_taucc"] * 2,
    ...                    "mode": ["corrected", "corrected", None, None],
    ...                    "epsilon": [1.0, 1.0, np.nan, np.nan], "nmi_rows": [0.1, 0.3, 0.8, 0.6]})
    >>> one_relation(df)[["algorithm", "mean", "n"]].round(2).values.tolist()
    [['dp_kmeans', 0.2, 2], ['fast_taucc', 0.7, 2]]
    """
    rows = mean_std(_corrected(df), ["dataset", "algorithm", "epsilon"], metric)
    ref = []
    for ds, d in df[df["algorithm"] == REFERENCE].groupby("dataset"):
        m, s, n = pooled(d, metric)
        if n:
            ref.append({"dataset": ds, "algorithm": REFERENCE, "epsilon": math.nan, "mean": m,
                        "std": s, "n": n})
    return pd.concat([rows, pd.DataFrame(ref)], ignore_index=True) if ref else rows


def one_relation_verdict(summary: pd.DataFrame, max_epsilon: float = 3.0) -> str:
    """One plain sentence on what the comparison shows at ε <= ``max_epsilon``, from the
    numbers: whether every method stays near 0 (mean below :data:`NEAR_ZERO`) and the best
    point of any method.

    >>> s = pd.DataFrame({"dataset": ["a", "a", "a"], "algorithm": ["dp_kmeans", "dpm", REFERENCE],
    ...                   "epsilon": [1.0, 3.0, np.nan], "mean": [0.02, 0.05, 0.7],
    ...                   "std": [0.01] * 3, "n": [10] * 3})
    >>> one_relation_verdict(s).startswith("Every method is near 0")
    True
    """
    priv = summary[summary["algorithm"] != REFERENCE]
    priv = priv[priv["epsilon"] <= max_epsilon + 1e-9]
    if priv.empty:
        return "No run of a method private for one row replaced is stored yet."
    best = priv.loc[priv["mean"].idxmax()]
    ref = summary[summary["algorithm"] == REFERENCE]["mean"]
    ref_text = (f" Fast-τCC (not DP) reaches {ref.min():.2f}–{ref.max():.2f} on the same "
                f"matrices." if not ref.empty else "")
    where = (f"{label(best['algorithm'])} on {best['dataset']} at ε = {best['epsilon']:g}: "
             f"{best['mean']:.2f}")
    if best["mean"] < NEAR_ZERO:
        return (f"Every method is near 0 at every ε <= {max_epsilon:g} on every dataset: no "
                f"mean row NMI reaches {NEAR_ZERO:g} (the largest is {where}). Under one row "
                f"replaced none of these methods, DP-τCC's row variant included, recovers the "
                f"classes of these matrices at the paper's budgets." + ref_text)
    above = priv[priv["mean"] >= NEAR_ZERO]
    who = ", ".join(f"{label(a)} ({', '.join(sorted(set(g['dataset'])))})"
                    for a, g in above.groupby("algorithm"))
    return (f"Mean row NMI reaches {NEAR_ZERO:g} or more at some ε <= {max_epsilon:g} only for "
            f"{who}; every other method and dataset stays near 0. The largest is {where}."
            + ref_text)


def crossover(df: pd.DataFrame, fraction: float = 0.5, metric: str = "nmi_rows"
              ) -> pd.DataFrame:
    """Per size m (``n_cols``) and row-level method: Fast-τCC's mean ``metric``, the target
    (``fraction`` of it), the first ε of the grid whose mean reaches the target
    (``first_eps``, NaN: never), the smallest ε from which every larger ε of the grid stays at
    or above it (``stays_from``), the best mean and its ε, and the seeds per point.

    >>> df = pd.DataFrame({"n_cols": [10] * 8, "status": ["ok"] * 8,
    ...     "algorithm": ["fast_taucc"] * 2 + ["dpnmf"] * 6, "mode": [None] * 2 + ["corrected"] * 6,
    ...     "epsilon": [np.nan, np.nan, 1, 1, 10, 10, 100, 100],
    ...     "nmi_rows": [0.8, 0.8, 0.1, 0.1, 0.5, 0.3, 0.9, 0.9]})
    >>> crossover(df)[["algorithm", "target", "first_eps", "stays_from", "seeds"]].values.tolist()
    [['dpnmf', 0.4, 10.0, 10.0, 2]]
    """
    out = []
    priv = _corrected(df)
    for m in sorted(df["n_cols"].dropna().unique()):
        ref_mean, _, ref_n = pooled(df[(df["algorithm"] == REFERENCE) & (df["n_cols"] == m)],
                                    metric)
        if ref_n == 0:
            continue
        target = fraction * ref_mean
        for alg in [a for a in ROW_LEVEL if a in set(priv["algorithm"])]:
            s = mean_std(priv[(priv["algorithm"] == alg) & (priv["n_cols"] == m)],
                         ["epsilon"], metric).sort_values("epsilon")
            if s.empty:
                continue
            reach = s["mean"].to_numpy() >= target - 1e-12
            eps = s["epsilon"].to_numpy(float)
            first = float(eps[reach.argmax()]) if reach.any() else math.nan
            tail = np.flatnonzero(~reach)
            stays = (float(eps[0]) if tail.size == 0 else
                     float(eps[tail[-1] + 1]) if tail[-1] + 1 < eps.size else math.nan)
            best = s.loc[s["mean"].idxmax()]
            out.append({"n_cols": int(m), "algorithm": alg, "reference": ref_mean,
                        "target": target, "first_eps": first, "stays_from": stays,
                        "best_mean": float(best["mean"]), "best_eps": float(best["epsilon"]),
                        "max_eps": float(eps.max()), "seeds": int(s["n"].min())})
    return pd.DataFrame(out, columns=["n_cols", "algorithm", "reference", "target", "first_eps",
                                      "stays_from", "best_mean", "best_eps", "max_eps", "seeds"])


def crossover_verdict(table: pd.DataFrame, low: float = 3.0) -> str:
    """What the crossover table shows, from the numbers: per method, the sizes where half of
    Fast-τCC is reached at ε <= ``low``, the ε it needs elsewhere, and where it never does.

    >>> t = pd.DataFrame({"n_cols": [10, 10, 20], "algorithm": ["dp_taucc_row", "dpnmf", "dpnmf"],
    ...                   "first_eps": [30.0, 2.0, np.nan]})
    >>> crossover_verdict(t)
    'DP-τCC (row): ε = 30 (m = 10). DPNMF: ε <= 3 (m = 10); not within the grid (m = 20).'
    """
    if table.empty:
        return "No crossover data stored yet."
    lines = []
    for alg, g in table.groupby("algorithm", sort=False):
        early = [int(m) for m, e in zip(g["n_cols"], g["first_eps"], strict=True)
                 if e <= low + 1e-9]
        parts = [f"ε <= {low:g} (m = {', '.join(map(str, early))})"] if early else []
        parts += [f"ε = {e:g} (m = {int(m)})" for m, e in zip(g["n_cols"], g["first_eps"],
                                                            strict=True) if e > low + 1e-9]
        never = [int(m) for m, e in zip(g["n_cols"], g["first_eps"], strict=True) if e != e]
        if never:
            parts.append(f"not within the grid (m = {', '.join(map(str, never))})")
        lines.append(f"{label(alg)}: {'; '.join(parts)}.")
    return " ".join(lines)
