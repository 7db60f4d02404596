"""The first screen of REPORT.md: does each paper figure reproduce, what corrected mode changes,
the privacy audit's verdict, how long the run took and on what; then the figures as images.

Every number is read off the stored tables, ``reproduce.json`` and ``audit.parquet``; nothing is
recomputed.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from dptaucc.bench.aggregate import (
    EXTRA_METHODS,
    NON_PRIVATE,
    PAPER_METHODS,
    label,
    neighbours,
    ok,
    pooled,
)
from dptaucc.bench.run_log import read_run_log, where

#: the reproduction rule: a method reproduces a figure when the mean absolute difference of its
#: points from the paper's published values is at most max(FLOOR, SE_FACTOR × its standard error)
FLOOR = 0.05
SE_FACTOR = 2.0
RULE = (f"mean absolute difference from the paper's values ≤ max({FLOOR:g}, {SE_FACTOR:g} × "
        "the mean standard error of our points), per method")

#: (paper figure, experiment, our figure file stems) of every figure of the paper
PAPER_FIGURES = (
    ("Fig. 2: row NMI vs ε, real data", "fig2_real", ("fig2_nmi_paper", "fig2_nmi_corrected")),
    ("Supp. Fig. 1: row ARI vs ε, real data", "fig2_real",
     ("supp_fig1_ari_paper", "supp_fig1_ari_corrected")),
    ("Fig. 3 / supp. Fig. 2: τ̂ vs iterations I and ε", "fig3_iterations",
     ("fig3_supp_fig2_iterations_tau_paper",)),
    ("Supp. Fig. 3: τ̂ vs h and ε", "supp_h", ("supp_fig3_h_tau_paper",)),
    ("Supp. Fig. 4: synthetic NMI", "supp_synthetic",
     ("supp_fig4_synthetic_nmi_vs_eps_paper", "supp_fig4_synthetic_nmi_vs_size_paper")),
    ("Supp. Fig. 5: synthetic ARI", "supp_synthetic",
     ("supp_fig5_synthetic_ari_vs_eps_paper", "supp_fig5_synthetic_ari_vs_size_paper")),
    ("Supp. Fig. 6: runtime", "supp_runtime", ("supp_fig6_runtime",)),
)


def distances(df: pd.DataFrame, cal: pd.DataFrame, metric: str = "nmi_rows",
              mode: str = "paper") -> pd.DataFrame:
    """Per method: the mean absolute difference of our points from the paper's values
    (``cal``: dataset, algorithm, eps, nmi; eps NaN = a non-DP method's pooled value), the mean
    standard error of our points, how many points, and whether :data:`RULE` holds.

    >>> nan = float("nan")
    >>> cal = pd.DataFrame({"dataset": ["cstr", "cstr"], "algorithm": ["dp_taucc", "fast_taucc"],
    ...                     "eps": [1.0, nan], "nmi": [0.5, 0.8]})
    >>> ours = pd.DataFrame({"dataset": ["cstr"] * 4, "mode": ["paper"] * 4,
    ...                      "algorithm": ["dp_taucc"] * 2 + ["fast_taucc"] * 2,
    ...                      "epsilon": [1.0, 1.0, nan, nan], "status": ["ok"] * 4,
    ...                      "nmi_rows": [0.52, 0.56, 0.50, 0.52]})
    >>> d = distances(ours, cal).set_index("algorithm")
    >>> d["ok"].tolist(), d["mad"].round(2).tolist()  # fast_taucc: 0.29 from the paper's 0.8
    ([True, False], [0.04, 0.29])
    """
    rows = []
    for alg, c in cal[cal["dataset"].isin(set(df["dataset"]))].groupby("algorithm"):
        diffs, ses = [], []
        for r in c.itertuples():
            d = df[(df["dataset"] == r.dataset) & (df["algorithm"] == alg)]
            if alg in NON_PRIVATE or pd.isna(r.eps):
                m, sd, n = pooled(d, metric)
            else:
                d = d[(d["mode"] == mode) & ((d["epsilon"] - r.eps).abs() < 1e-4)]
                m, sd, n = pooled(d, metric)
            if n == 0:
                continue
            diffs.append(abs(m - r.nmi))
            ses.append(0.0 if math.isnan(sd) else sd / math.sqrt(n))
        if diffs:
            mad, se = float(np.mean(diffs)), float(np.mean(ses))
            rows.append({"algorithm": alg, "mad": mad, "se": se, "points": len(diffs),
                         "ok": mad <= max(FLOOR, SE_FACTOR * se)})
    return pd.DataFrame(rows, columns=["algorithm", "mad", "se", "points", "ok"])


def _runs(df: pd.DataFrame) -> str:
    n_ok = int((df["status"] == "ok").sum())
    return f"{n_ok}/{len(df)} ok, {df['seed'].nunique()} seeds"


def reproduction_table(frames: dict[str, pd.DataFrame], cal: pd.DataFrame) -> list[str]:
    """One row per paper figure: our runs, the distance to the paper's published values where
    the repo holds some, and the verdict under :data:`RULE`."""
    rows = []
    for title, exp, _ in PAPER_FIGURES:
        df = frames.get(exp)
        if df is None:
            rows.append([title, "not run", "–", "not run"])
            continue
        if exp == "fig2_real" and title.startswith("Fig. 2"):
            dist = distances(df, cal)
            if dist.empty:
                rows.append([title, _runs(df), "no paper values for these datasets",
                             "not judged"])
                continue
            text = ", ".join(f"{label(r.algorithm)} {r.mad:.3f} (SE {r.se:.3f}, {r.points} pts)"
                             for r in dist.itertuples())
            failing = [label(a) for a in dist.loc[~dist["ok"], "algorithm"]]
            verdict = (f"**yes** ({len(dist)}/{len(dist)} methods)" if not failing else
                       f"**no**: {', '.join(failing)} outside the rule "
                       f"({int(dist['ok'].sum())}/{len(dist)} methods within)")
            rows.append([title, _runs(df), f"paper mode, NMI: {text}", verdict])
        else:
            rows.append([title, _runs(df), "no published values in the repo: compare the "
                         "figure below by eye", "not judged"])
    header = ["paper figure", "our runs", "distance to the paper's values", "reproduces?"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _ratio(d: pd.DataFrame) -> str:
    r = (d["epsilon_spent"] / d["epsilon"]).dropna()
    if r.empty:
        return "–"
    med = float(r.median())
    return "∞" if math.isinf(med) else f"{med:.3g}"


def corrected_changes(df: pd.DataFrame) -> list[str]:
    """One line per private method of the real-data table: its row score in paper mode (the
    paper's protocol) against corrected mode (what it releases; the paper's protocol beside),
    the share of end-to-end DP fits and ε spent / claimed."""
    from dptaucc.bench.figures import row_series

    lines = []
    known = [*PAPER_METHODS, *EXTRA_METHODS]
    present = set(df["algorithm"].dropna())
    for alg in [a for a in known if a in present] + sorted(present - set(known)):
        d = ok(df[df["algorithm"] == alg])
        paper, corr = d[d["mode"] == "paper"], d[d["mode"] == "corrected"]
        if alg in NON_PRIVATE or paper.empty or corr.empty:
            continue
        series = row_series(corr, alg, "corrected", "nmi_rows")
        first_col = series[0][0]
        released = (f"{corr[first_col].mean():.2f} on its DP row labels, "
                    f"{corr['nmi_rows'].mean():.2f} by the paper's protocol (not DP)"
                    if first_col.endswith("_private") else
                    f"{corr['nmi_rows'].mean():.2f} by the paper's protocol (not DP; it "
                    "releases no row labels)")
        e2e = [f"{100 * x['end_to_end_dp'].fillna(False).astype(bool).mean():.0f}%"
               for x in (paper, corr)]
        lines.append(f"- **{label(alg)}** (neighbours: {neighbours(alg)}): mean row NMI "
                     f"{paper['nmi_rows'].mean():.2f} in paper mode → {released}; "
                     f"end-to-end DP fits {e2e[0]} → {e2e[1]}; median ε spent/claimed "
                     f"{_ratio(paper)} → {_ratio(corr)}.")
    return lines


def audit_verdict(results_dir: str | os.PathLike) -> str:
    """One line on the privacy audit table beside the results (read defensively: its columns
    may change), or that there is none.

    >>> import tempfile
    >>> audit_verdict(tempfile.mkdtemp())
    'Privacy audit: no audit table (`make audit` writes `audit.parquet`).'
    """
    path = Path(results_dir) / "audit.parquet"
    if not path.exists():
        return "Privacy audit: no audit table (`make audit` writes `audit.parquet`)."
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        return f"Privacy audit: the audit table could not be read ({exc})."
    try:
        from dptaucc.audit.report import verdicts

        v = verdicts(df)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        if "verdict" in df.columns:
            counts = Counter(str(x) for x in df["verdict"].dropna())
            return ("Privacy audit: " + ", ".join(f"{k}: {n} rows" for k, n in
                                                   counts.most_common())
                    + " (details in the audit section at the end).")
        return (f"Privacy audit: table present ({len(df)} rows) but its columns were not "
                f"understood ({type(exc).__name__}: {exc}); see the audit section.")
    corrected = ("no corrected-mode method above its claim" if not v["corrected_above"] else
                 "corrected mode ABOVE its claim (privacy bug): " + "; ".join(
                     v["corrected_above"]))
    return (f"Privacy audit ({len(df)} rows): {corrected}; paper mode above its claim: "
            f"{', '.join(v['paper_above']) or 'none'} (expected: its quirks are not DP)."
            + _power_line(Path(results_dir) / "audit_power.parquet")
            + " Details in the audit section at the end.")


def _power_line(path: Path) -> str:
    """How many catalogue bugs the audit detects, from the stored power table (if any)."""
    if not path.exists():
        return ""
    df = pd.read_parquet(path)
    bugs, correct = df[df["bug"] != "(correct code)"], df[df["bug"] == "(correct code)"]
    per = ", ".join(f"{label(m)} {int(g['detected'].sum())}/{len(g)}"
                    for m, g in bugs.groupby("method", sort=False))
    return (f" Its power on the catalogue of known bugs: {int(bugs['detected'].sum())} of "
            f"{len(bugs)} detected ({per}); false alarms on the correct code: "
            f"{int(correct['detected'].sum())} of {len(correct)}.")


def run_line(frames: dict[str, pd.DataFrame], results_dir: str | os.PathLike) -> str:
    """How long the last ``reproduce`` took and on what (workers, CPU from the records)."""
    cpus = Counter(str(c) for df in frames.values() if "cpu" in df for c in df["cpu"].dropna())
    cpu = cpus.most_common(1)[0][0] if cpus else "CPU not recorded"
    log = read_run_log(results_dir)
    if log is None:
        return f"Run: no `reproduce.json` (tables collected without the driver); machine: {cpu}."
    return (f"Run: {log.get('scale', '?')} scale, wall time {log['total_seconds'] / 60:.1f} min "
            f"on {where(log)}, code `{str(log['git_sha'])[:12]}`, started "
            f"{log['started_utc']}; machine: {cpu}.")


def headline_section(frames: dict[str, pd.DataFrame], results_dir: str | os.PathLike,
                     cal: pd.DataFrame) -> list[str]:
    """The report's opening: the reproduction table, the first figure, what corrected mode
    changes, the audit verdict and the run.

    >>> import tempfile
    >>> from dptaucc.bench.calibration import calibration
    >>> lines = headline_section({}, tempfile.mkdtemp(), calibration())  # nothing run yet
    >>> lines[0], any(line.startswith("Privacy audit: no audit table") for line in lines)
    ('## Headline', True)
    """
    lines = ["## Headline", "", f"Does each paper figure reproduce? Rule: {RULE}; the paper's "
             "values are read by eye off its Fig. 2 (±0.02).", ""]
    lines += reproduction_table(frames, cal) + [""]
    first = figure_files(results_dir)[:1]
    lines += [f"![{stem}](figures/{stem}.png)" for stem in first] + ([""] if first else [])
    real = frames.get("fig2_real")
    if real is not None:
        changes = corrected_changes(real)
        if changes:
            lines += ["What corrected mode changes (real data, all datasets and ε pooled):", ""]
            lines += changes + [""]
    lines += [audit_verdict(results_dir), "", run_line(frames, results_dir), ""]
    return lines


def figure_files(results_dir: str | os.PathLike) -> list[str]:
    """Stems of the PNG figures beside the report: the paper's in the paper's order, then the
    rest (your experiments, the audit) by name."""
    present = {p.stem for p in (Path(results_dir) / "figures").glob("*.png")}
    ordered = [s for _, _, stems in PAPER_FIGURES for s in stems if s in present]
    extra = [s for s in ("fig2_row_relation_corrected", "fig2_extra_methods_paper",
                         "fig2_extra_methods_corrected") if s in present]
    ordered = ordered[:2] + extra + ordered[2:]
    return ordered + sorted(present - set(ordered))


def figures_section(results_dir: str | os.PathLike) -> list[str]:
    """Every figure as an image (relative links: the report renders on a code host).

    >>> import tempfile
    >>> results = Path(tempfile.mkdtemp())
    >>> figures_section(results)[2]
    'No figures drawn yet (`make figures`).'
    >>> (results / "figures").mkdir()
    >>> for stem in ("my_experiment", "fig2_nmi_paper"):
    ...     _ = (results / "figures" / f"{stem}.png").write_bytes(b"png")
    >>> [line for line in figures_section(results) if line.startswith("###")]  # the paper's first
    ['### fig2_nmi_paper', '### my_experiment']
    """
    stems = figure_files(results_dir)
    if not stems:
        return ["## Figures", "", "No figures drawn yet (`make figures`).", ""]
    lines = ["## Figures", "", "In corrected mode a method's line is what it releases (DP-τCC: "
             "its DP row labels); dotted lines are the paper's protocol (reads the data, not "
             "DP). Bands: ±1 std clipped to the metric's range; each title gives the neighbour "
             "relation of every method's ε and the seeds per point.", ""]
    for stem in stems:
        lines += [f"### {stem}", "", f"![{stem}](figures/{stem}.png)", ""]
    return lines


__all__ = ["RULE", "PAPER_FIGURES", "distances", "audit_verdict", "headline_section",
           "figures_section"]
