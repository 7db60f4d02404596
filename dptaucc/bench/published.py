"""The authors' published values and the rule that judges a reproduction against them.

The packaged ``calibration/published_values.tsv`` holds every point of the authors' figures,
digitised from the images they published (the paper's Fig. 2 and Fig. 3; their notebooks'
Fig. 2, supp. Figs. 1-5): the plotted mean, the half height of its ±1 std band where one is
drawn, and the reading error, each row with its file and panel (``scripts/digitise.py`` reads
them, ``scripts/digitise_published.py`` writes the table).

A figure reproduces when both hold over all its judged points (:func:`verdict`):

* at most :data:`SHARE_LIMIT` of the points lie outside their combined error, |ours − theirs| >
  reading error + :data:`Z` × √(SE_ours² + SE_theirs²), where SE_ours is our seeds' standard
  error and SE_theirs their band's std over √:data:`THEIR_RUNS` (our std where they drew no
  band: the heatmaps);
* the mean absolute difference is at most :data:`MAD_SHARE` of the range of the published
  values judged.

A systematic offset fails the first test once it exceeds the points' errors and the second once
it exceeds 5 % of the figure's range, however wide the errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from dptaucc.bench.aggregate import NON_PRIVATE, label, ok
from dptaucc.bench.configs import config_dir

__all__ = ["Judged", "FIGURES", "Verdict", "published_values", "compare", "verdict",
           "mismatches", "RULE", "Z", "SHARE_LIMIT", "MAD_SHARE", "THEIR_RUNS"]

#: z of the combined error (two standard errors: a true match falls outside about 5 % of the time)
Z = 2.0
#: the largest share of points outside their combined error a reproducing figure may have
SHARE_LIMIT = 0.10
#: the largest mean absolute difference, as a share of the range of the published values
MAD_SHARE = 0.05
#: runs per published point (the authors' protocol)
THEIR_RUNS = 10
RULE = (f"a figure reproduces when at most {SHARE_LIMIT:.0%} of its points lie outside their "
        f"combined error (|ours − theirs| > reading error + {Z:g} × √(our SE² + their SE²)) "
        f"and the mean absolute difference is at most {MAD_SHARE:.0%} of the range of the "
        "published values")


@dataclass(frozen=True)
class Judged:
    """How one published figure maps onto our tables.

    >>> FIGURES["fig3"]
    Judged(experiment='fig3_iterations', metric='tau_hat_rc', param='p_n_iterations')
    """

    experiment: str
    metric: str
    #: our column holding the figure's second parameter (None: ε only)
    param: str | None = None


#: published figure -> our experiment, metric and parameter column
FIGURES = {
    "fig2": Judged("fig2_real", "nmi_rows"),
    "supp_fig1": Judged("fig2_real", "ari_rows"),
    "fig3": Judged("fig3_iterations", "tau_hat_rc", "p_n_iterations"),
    "supp_fig3": Judged("supp_h", "tau_hat_rc", "p_h"),
    "supp_fig4": Judged("supp_synthetic", "nmi_rows", "n_cols"),
    "supp_fig5": Judged("supp_synthetic", "ari_rows", "n_cols"),
}

_NONE = -1.0  # the key of "no ε" / "no parameter"


@cache
def _table() -> pd.DataFrame:
    df = pd.read_csv(config_dir() / "calibration" / "published_values.tsv", sep="\t",
                     comment="#")
    for col in ("epsilon", "param_value", "value", "std", "reading_error"):
        df[col] = pd.to_numeric(df[col])
    df["param"] = df["param"].fillna("")
    return df


def published_values() -> pd.DataFrame:
    """The packaged published values (a copy): one row per digitised point.

    >>> pub = published_values()
    >>> sorted(set(pub["figure"]))
    ['fig2', 'fig3', 'supp_fig1', 'supp_fig3', 'supp_fig4', 'supp_fig5']
    >>> bool((pub["reading_error"].dropna() > 0).all())
    True
    """
    return _table().copy()


def judged_values(pub: pd.DataFrame, figure: str) -> pd.DataFrame:
    """The published points a figure is judged on: readable points of its ε plots and heatmaps
    (the synthetic curves drawn against m are the same points again), per dataset from the
    paper where it shows the dataset, else from the notebooks."""
    p = pub[(pub["figure"] == figure) & pub["plot"].isin(["vs_eps", "heatmap"])
            & pub["value"].notna()]
    from_paper = set(p.loc[p["source"] == "paper", "dataset"])
    return p[(p["source"] == "paper") | ~p["dataset"].isin(from_paper)]


def _key(values: pd.Series, digits: int) -> pd.Series:
    return pd.to_numeric(values, errors="coerce").round(digits).fillna(_NONE)


def compare(ours: pd.DataFrame, pub: pd.DataFrame, figure: str) -> pd.DataFrame:
    """Every published point of ``figure`` beside ours (paper mode; non-private methods pooled
    per dataset and size): ``ours``, ``our_std``, ``our_n``, ``theirs``, ``their_std``,
    ``reading_error``, the combined error ``tolerance``, ``diff`` (ours − theirs) and
    ``outside``. Published points we have no runs for are left out.

    >>> nan = float("nan")
    >>> pub = pd.DataFrame({"figure": ["fig2"] * 2, "source": ["paper"] * 2,
    ...     "plot": ["vs_eps"] * 2, "dataset": ["cstr"] * 2,
    ...     "algorithm": ["dp_taucc", "fast_taucc"], "epsilon": [0.5, nan],
    ...     "param": ["", ""], "param_value": [nan, nan], "value": [0.30, 0.56],
    ...     "std": [0.05, 0.10], "reading_error": [0.003, 0.003]})
    >>> ours = pd.DataFrame({"dataset": ["cstr"] * 4, "mode": ["paper"] * 2 + [None] * 2,
    ...     "algorithm": ["dp_taucc"] * 2 + ["fast_taucc"] * 2, "epsilon": [0.5, 0.5, nan, nan],
    ...     "status": ["ok"] * 4, "nmi_rows": [0.30, 0.34, 0.20, 0.22]})
    >>> c = compare(ours, pub, "fig2").set_index("algorithm")
    >>> c["outside"].tolist()  # Fast-τCC: 0.21 against 0.56
    [False, True]
    """
    judged = FIGURES[figure]
    want = judged_values(pub, figure)
    if judged.metric not in ours or (judged.param and judged.param not in ours):
        return pd.DataFrame()
    d = ok(ours)
    d = d[(d["mode"] == "paper") | d["algorithm"].isin(NON_PRIVATE)].dropna(
        subset=[judged.metric])
    if d.empty or want.empty:
        return pd.DataFrame()
    d = d.assign(
        _eps=_key(d["epsilon"].where(~d["algorithm"].isin(NON_PRIVATE)), 5),
        _par=_key(d[judged.param], 6) if judged.param else _NONE)
    agg = d.groupby(["dataset", "algorithm", "_eps", "_par"])[judged.metric].agg(
        ours="mean", our_std=lambda s: s.std(ddof=1), our_n="count").reset_index()
    want = want.assign(_eps=_key(want["epsilon"], 5), _par=_key(want["param_value"], 6))
    pts = want.merge(agg, on=["dataset", "algorithm", "_eps", "_par"], how="inner")
    if pts.empty:
        return pd.DataFrame()
    pts = pts.rename(columns={"value": "theirs", "std": "their_std"})
    our_se = (pts["our_std"] / np.sqrt(pts["our_n"])).fillna(0.0)
    stand_in = pts["their_std"].isna()
    their_sd = pts["their_std"].where(~stand_in, pts["our_std"]).fillna(0.0)
    their_se = their_sd / math.sqrt(THEIR_RUNS)
    pts["their_spread_from_ours"] = stand_in
    pts["tolerance"] = pts["reading_error"] + Z * np.sqrt(our_se ** 2 + their_se ** 2)
    pts["diff"] = pts["ours"] - pts["theirs"]
    pts["outside"] = pts["diff"].abs() > pts["tolerance"]
    return pts.drop(columns=["_eps", "_par"])


@dataclass(frozen=True)
class Verdict:
    """The rule applied to a figure's points (see the module docstring).

    >>> v = Verdict(points=20, mad=0.01, mad_limit=0.05, outside=3, bias=0.002)
    >>> v.share, v.reproduces  # 15 % of the points outside: more than a match allows
    (0.15, False)
    """

    points: int
    mad: float
    mad_limit: float
    outside: int
    bias: float

    @property
    def share(self) -> float:
        return self.outside / self.points if self.points else math.nan

    @property
    def reproduces(self) -> bool:
        return bool(self.points) and self.share <= SHARE_LIMIT and self.mad <= self.mad_limit


def verdict(points: pd.DataFrame) -> Verdict:
    """The rule over a figure's compared points (:func:`compare`).

    >>> pts = pd.DataFrame({"theirs": np.linspace(0, 1, 20)})
    >>> near = pts.assign(diff=0.01, tolerance=0.05, outside=False)
    >>> verdict(near).reproduces
    True
    >>> shifted = pts.assign(diff=0.08, tolerance=0.05, outside=True)  # a systematic offset
    >>> v = verdict(shifted)
    >>> v.reproduces, v.share, round(v.mad, 2)
    (False, 1.0, 0.08)
    """
    if points.empty:
        return Verdict(0, math.nan, math.nan, 0, math.nan)
    theirs = points["theirs"]
    return Verdict(points=len(points), mad=float(points["diff"].abs().mean()),
                   mad_limit=MAD_SHARE * float(theirs.max() - theirs.min()),
                   outside=int(points["outside"].sum()), bias=float(points["diff"].mean()))


def _where(r: pd.Series) -> str:
    parts = []
    if r["epsilon"] == r["epsilon"]:  # not NaN
        parts.append(f"ε = {r['epsilon']:g}")
    if r["param"]:
        name = {"n_iterations": "I", "n_cols": "m"}.get(r["param"], r["param"])
        parts.append(f"{name} = {r['param_value']:g}")
    return ", ".join(parts) or "pooled"


def mismatches(points: pd.DataFrame, limit: int = 8) -> list[str]:
    """Where paper mode does not match: one line per dataset and method with more than
    :data:`SHARE_LIMIT` of its points outside their combined error (how many, the mean
    difference of those, the largest and where; at most ``limit`` lines, the largest share
    first), then one line for the pairs whose few points outside a match allows.

    >>> nan = float("nan")
    >>> pts = pd.DataFrame({"dataset": ["cstr"] * 3, "algorithm": ["dp_taucc"] * 3,
    ...     "epsilon": [0.5, 1.0, 2.0], "param": [""] * 3, "param_value": [nan] * 3,
    ...     "ours": [0.40, 0.31, 0.36], "theirs": [0.16, 0.30, 0.36],
    ...     "diff": [0.24, 0.01, 0.0], "outside": [True, False, False]})
    >>> line, = mismatches(pts)  # one of three points: over the 10 % a match allows
    >>> how_many, largest = line.split("; ")
    >>> how_many
    'cstr, DP-τCC: 1 of 3 points outside, ours − theirs +0.240 on average there'
    >>> largest
    'largest +0.240 at ε = 0.5 (0.400 vs 0.160)'
    """
    out = points[points["outside"]]
    if out.empty:
        return []
    groups = []
    for (ds, alg), g in out.groupby(["dataset", "algorithm"]):
        total = int(((points["dataset"] == ds) & (points["algorithm"] == alg)).sum())
        worst = g.loc[g["diff"].abs().idxmax()]
        groups.append((len(g) / total, len(g),
                       f"{ds}, {label(alg)}: {len(g)} of {total} points outside, ours − theirs "
                       f"{g['diff'].mean():+.3f} on average there; largest {worst['diff']:+.3f} "
                       f"at {_where(worst)} ({worst['ours']:.3f} vs {worst['theirs']:.3f})"))
    groups.sort(key=lambda g: (-g[0], -g[1]))
    over = [g for g in groups if g[0] > SHARE_LIMIT]
    lines = [text for _, _, text in over[:limit]]
    if len(over) > limit:
        lines.append(f"… and {len(over) - limit} more (dataset, method) pairs over "
                     f"{SHARE_LIMIT:.0%} ({sum(n for _, n, _ in over[limit:])} points outside)")
    rest = [g for g in groups if g[0] <= SHARE_LIMIT]
    if rest:
        n = sum(k for _, k, _ in rest)
        lines.append(f"{n} point{'s' if n > 1 else ''} outside in {len(rest)}"
                     f"{' other' if over else ''} (dataset, method) "
                     f"pair{'s' if len(rest) > 1 else ''}, at most {SHARE_LIMIT:.0%} of "
                     f"{'each' if len(rest) > 1 else 'its'} points (what a match allows)")
    return lines
