"""The first screen of REPORT.md: does each paper figure reproduce (judged on every published
point, :mod:`published`), what corrected mode changes, the privacy audit's verdict, how long the
run took and on what; then the figures as images. A sweep that is not the paper's (your own
methods, datasets or experiments, :mod:`study`) gets a headline about your study instead.

Every number is read off the stored tables, ``reproduce.json`` and ``audit.parquet``; nothing is
recomputed.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import pandas as pd

from dptaucc.bench.aggregate import (
    EXTRA_METHODS,
    NON_PRIVATE,
    PAPER_METHODS,
    label,
    mean_std,
    neighbours,
    ok,
)
from dptaucc.bench.published import RULE, SHARE_LIMIT, compare, mismatches, verdict
from dptaucc.bench.run_log import read_run_log, where
from dptaucc.bench.study import Study, study

#: (paper figure, experiment, our figure file stems, key of its published values or None) of
#: every figure of the paper
PAPER_FIGURES = (
    ("Fig. 2: row NMI vs ε, real data", "fig2_real", ("fig2_nmi_paper", "fig2_nmi_corrected"),
     "fig2"),
    ("Supp. Fig. 1: row ARI vs ε, real data", "fig2_real",
     ("supp_fig1_ari_paper", "supp_fig1_ari_corrected"), "supp_fig1"),
    ("Fig. 3 / supp. Fig. 2: τ̂ vs iterations I and ε", "fig3_iterations",
     ("fig3_supp_fig2_iterations_tau_paper",), "fig3"),
    ("Supp. Fig. 3: τ̂ vs h and ε", "supp_h", ("supp_fig3_h_tau_paper",), "supp_fig3"),
    ("Supp. Fig. 4: synthetic NMI", "supp_synthetic",
     ("supp_fig4_synthetic_nmi_vs_eps_paper", "supp_fig4_synthetic_nmi_vs_size_paper"),
     "supp_fig4"),
    ("Supp. Fig. 5: synthetic ARI", "supp_synthetic",
     ("supp_fig5_synthetic_ari_vs_eps_paper", "supp_fig5_synthetic_ari_vs_size_paper"),
     "supp_fig5"),
    ("Supp. Fig. 6: runtime", "supp_runtime", ("supp_fig6_runtime",), None),
)


def _runs(df: pd.DataFrame) -> str:
    n_ok = int((df["status"] == "ok").sum())
    return f"{n_ok}/{len(df)} ok, {df['seed'].nunique()} seeds"


def _sources(points: pd.DataFrame) -> str:
    """"7 datasets: the paper" or "7 datasets: 4 from the paper, 3 from the notebooks"."""
    by = points.groupby("source")["dataset"].nunique()
    n = points["dataset"].nunique()
    name = {"paper": "the paper", "notebook": "the authors' notebooks"}
    if len(by) == 1:
        return f"{n} dataset{'s' if n > 1 else ''}, from {name.get(by.index[0], by.index[0])}"
    return f"{n} datasets: " + ", ".join(
        f"{k} from {name.get(s, s)}" for s, k in by.sort_index(ascending=False).items())


def reproduction_table(frames: dict[str, pd.DataFrame],
                       pub: pd.DataFrame) -> tuple[list[str], list[str]]:
    """One row per paper figure (our runs, how many published points it is judged on, the
    rule's two measures and the verdict, :mod:`published`), and the lines saying where paper
    mode does not match.

    >>> from dptaucc.bench.published import published_values
    >>> table, where = reproduction_table({}, published_values())  # nothing run yet
    >>> len(table), table[2], where
    (9, '| Fig. 2: row NMI vs ε, real data | not run | – | – | – | – | not run |', [])
    """
    rows, where_lines = [], []
    for title, exp, _, key in PAPER_FIGURES:
        df = frames.get(exp)
        if df is None:
            rows.append([title, "not run", "–", "–", "–", "–", "not run"])
            continue
        if key is None:
            rows.append([title, _runs(df), "run times depend on the machine", "–", "–", "–",
                         "not judged"])
            continue
        pts = compare(df, pub, key)
        if pts.empty:
            rows.append([title, _runs(df), "no published values for these runs", "–", "–",
                         "–", "not judged"])
            continue
        v = verdict(pts)
        rows.append([
            title, _runs(df), f"{v.points} points, {_sources(pts)}",
            f"{v.mad:.3f} (≤ {v.mad_limit:.3f})",
            f"{v.outside} ({v.share:.0%}; ≤ {SHARE_LIMIT:.0%})", f"{v.bias:+.3f}",
            "**yes**" if v.reproduces else "**no**"])
        lines = mismatches(pts)
        if lines:
            where_lines += [f"- {title.split(':')[0]}: {line}" for line in lines]
    header = ["paper figure", "our runs", "judged on (paper mode)", "mean abs. difference",
              "points outside their error", "mean ours − theirs", "reproduces?"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows], where_lines


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


def paper_headline(frames: dict[str, pd.DataFrame], results_dir: str | os.PathLike,
                   pub: pd.DataFrame) -> list[str]:
    """The paper sweep's opening: the reproduction table, where paper mode does not match, the
    first figure and what corrected mode changes."""
    table, where_lines = reproduction_table(frames, pub)
    lines = ["Does each paper figure reproduce? Paper mode (the authors' code's behaviour) "
             "against every point the authors published (their figures digitised, with a "
             f"reading error per point; `calibration/published_values.tsv`). Rule: {RULE}.",
             "", *table, ""]
    if where_lines:
        lines += ["Where paper mode does not match (points outside their combined error, per "
                  "dataset and method):", "", *where_lines, ""]
    first = figure_files(results_dir)[:1]
    lines += [f"![{stem}](figures/{stem}.png)" for stem in first] + ([""] if first else [])
    real = frames.get("fig2_real")
    if real is not None:
        changes = corrected_changes(real)
        if changes:
            lines += ["What corrected mode changes (real data, all datasets and ε pooled):", ""]
            lines += changes + [""]
    return lines


def _yours(names: tuple[str, ...], yours: tuple[str, ...], show=str) -> str:
    return ", ".join(f"{show(n)} (yours)" if n in yours else show(n) for n in names)


def _span(values: pd.Series) -> str:
    v = sorted(set(values.dropna().round(6)))
    if not v:
        return "no ε (not private)"
    return f"ε {v[0]:g}" if len(v) == 1 else f"ε {v[0]:g}–{v[-1]:g} ({len(v)} values)"


def _scored(d: pd.DataFrame, alg: str, mode: str, metric: str) -> tuple[str, str]:
    """(column, what it scores) of the series a method is shown by in your study: what it
    releases (:func:`figures.row_series`' first series)."""
    from dptaucc.bench.figures import row_series

    column, _, name = row_series(d, alg, mode, metric)[0]
    if alg in NON_PRIVATE:
        return column, "its row labels (not DP)"
    return column, name.removeprefix(f"{label(alg)}: ").removeprefix(f"{label(alg)} ")


def study_headline(frames: dict[str, pd.DataFrame], s: Study,
                   metric: str = "nmi_rows") -> list[str]:
    """Your sweep's opening: what it ran, then per experiment the row score of what each
    method releases, per dataset (columns) and ε (rows), every method once."""
    def yours(what: str, names: tuple[str, ...]) -> str:
        return f"your {what}{'s' if len(names) > 1 else ''} {', '.join(names)}" if names else ""

    parts = [p for p in (yours("method", s.methods), yours("dataset", s.datasets),
                         yours("experiment", s.experiments)) if p]
    held = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    lines = [f"This sweep is not the paper's: it holds {held}. So no paper verdict: this "
             "report is about your study (`make reproduce` runs the paper's).", ""]
    for exp, df in frames.items():
        d = ok(df)
        algs = list(dict.fromkeys(sorted(d["algorithm"].dropna(), key=lambda a: (
            a not in s.methods, a not in PAPER_METHODS, a))))
        dsets = sorted(set(d["dataset"].dropna()), key=lambda x: (x not in s.datasets, x))
        modes = sorted(set(d["mode"].dropna()), key=lambda m: (m != "corrected", m))
        lines += [f"**{exp}**: {len(d)}/{len(df)} jobs ok; datasets "
                  f"{_yours(tuple(dsets), s.datasets)}; methods "
                  f"{_yours(tuple(algs), s.methods, label)}; "
                  f"{', '.join(modes) or 'no'} mode; {_span(d['epsilon'])}; "
                  f"{d['seed'].nunique()} seeds.", ""]
        rows = []
        for alg in algs:
            da = d[d["algorithm"] == alg]
            for mode in (modes if alg not in NON_PRIVATE else [None]):
                dam = da if mode is None else da[da["mode"] == mode]
                if dam.empty:
                    continue
                column, what = _scored(dam, alg, mode or "corrected", metric)
                by = ["epsilon"] if mode is not None else []
                agg = mean_std(dam, ["dataset", *by], column)
                eps_values = sorted(set(agg["epsilon"])) if by else [None]
                for eps in eps_values:
                    a = agg if eps is None else agg[agg["epsilon"] == eps]
                    cells = []
                    for ds in dsets:
                        r = a[a["dataset"] == ds]
                        cells.append("–" if r.empty else (
                            f"{r['mean'].iloc[0]:.2f}" + ("" if pd.isna(r["std"].iloc[0])
                                                          else f" ± {r['std'].iloc[0]:.2f}")))
                    name = f"{label(alg)} (yours)" if alg in s.methods else label(alg)
                    rows.append([name, mode or "–", what, "–" if eps is None else f"{eps:g}",
                                 *cells])
        header = ["method", "mode", "scored", "ε",
                  *[f"{x} (yours)" if x in s.datasets else x for x in dsets]]
        lines += [f"Row {metric.split('_')[0].upper()} of what each method releases (mean ± "
                  "std over seeds; \"DP\" as the method declares it: `row_labels_private_` "
                  "or its release kinds):", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                  *["| " + " | ".join(r) + " |" for r in rows], ""]
    return lines


def headline_section(frames: dict[str, pd.DataFrame], results_dir: str | os.PathLike,
                     pub: pd.DataFrame) -> list[str]:
    """The report's opening: for the paper's sweep the reproduction verdicts
    (:func:`paper_headline`), for yours your study (:func:`study_headline`); then the audit
    verdict and the run.

    >>> import tempfile
    >>> from dptaucc.bench.published import published_values
    >>> lines = headline_section({}, tempfile.mkdtemp(), published_values())  # nothing run yet
    >>> lines[0], any(line.startswith("Privacy audit: no audit table") for line in lines)
    ('## Headline', True)
    """
    s = study(frames)
    lines = ["## Headline", ""]
    if s.is_paper:
        lines += paper_headline(frames, results_dir, pub)
    else:
        lines += study_headline(frames, s)
        first = figure_files(results_dir)[:1]
        lines += [f"![{stem}](figures/{stem}.png)" for stem in first] + ([""] if first else [])
    lines += [audit_verdict(results_dir), "", run_line(frames, results_dir), ""]
    return lines


def figure_files(results_dir: str | os.PathLike) -> list[str]:
    """Stems of the PNG figures beside the report: the paper's in the paper's order, then the
    rest (your experiments, the audit) by name."""
    present = {p.stem for p in (Path(results_dir) / "figures").glob("*.png")}
    ordered = [s for _, _, stems, _ in PAPER_FIGURES for s in stems if s in present]
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


__all__ = ["PAPER_FIGURES", "reproduction_table", "audit_verdict", "headline_section",
           "figures_section"]
