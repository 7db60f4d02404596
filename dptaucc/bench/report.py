"""``python -m dptaucc.bench.report``: results/REPORT.md from the stored tables.

It opens with a headline (:mod:`headline`: does each paper figure reproduce, what corrected
mode changes, the audit's verdict, the run) and the figures as images; then, per dataset and
ε, mean ± std of every method in both modes (corrected mode: what each method releases) next to
the paper's Fig. 2 values (digitised from the paper, :mod:`published`);
ε claimed vs ε spent per method (from the ledgers); runtime; failed jobs. Algorithms and
experiments are discovered from the tables, so your own method or experiment gets its rows and
tables too. The tables are a list of sections (:data:`SECTIONS`), each a function of the
tables returning Markdown lines.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from dptaucc._cli import plain
from dptaucc.audit.report import audit_section
from dptaucc.auditscore.report import audit_score_section
from dptaucc.bench import row_relation as rr
from dptaucc.bench.aggregate import (
    EXTRA_METHODS,
    LABELS,
    PAPER_METHODS,
    label,
    mean_std,
    neighbours,
    neighbours_text,
    ok,
    pooled,
)
from dptaucc.bench.calibration import calibration
from dptaucc.bench.costs import cost_lines
from dptaucc.bench.figures import (
    PAPER_EXPERIMENTS,
    PAPER_PROTOCOL,
    _datasets,
    asked_clusters,
    discovered,
    experiment_tables,
    row_series,
)
from dptaucc.bench.run_log import describe, read_run_log

EXPERIMENTS = PAPER_EXPERIMENTS


def _fmt(m: float, s: float, n: int) -> str:
    if n == 0 or (isinstance(m, float) and math.isnan(m)):
        return "–"
    sd = "" if (isinstance(s, float) and math.isnan(s)) else f" ± {s:.2f}"
    return f"{m:.2f}{sd}"


def _paper_value(cal: pd.DataFrame, ds: str, alg: str, eps: float | None) -> float | None:
    c = cal[(cal["dataset"] == ds) & (cal["algorithm"] == alg)]
    if eps is None:
        c = c[c["eps"].isna()]
    else:
        # the paper's "1" is the script's 0.99999
        c = c[(c["eps"] - eps).abs() < 1e-4]
    return None if c.empty else float(c["nmi"].iloc[0])


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def fig2_section(df: pd.DataFrame, metric: str = "nmi_rows") -> list[str]:
    """Fig. 2 (NMI) or supp. Fig. 1 (ARI): the paper's methods, the extra ones and yours."""
    name = metric.split("_")[0].upper()
    fig = "Fig. 2" if name == "NMI" else "Supp. Fig. 1"
    lines = [f"## {fig}: row {name} on the real data (mean ± std over seeds)", "",
             "Paper-mode columns score the paper's protocol (each row assigned to the released "
             "prototypes by reading the data: not DP), as the paper does. Corrected-mode columns "
             "score what each method releases: DP-τCC's DP row labels; the other methods release "
             "prototypes, not row labels, so their only row score is the paper's protocol, "
             "named as such.", "", _neighbours_line(df), ""]
    if name == "NMI":
        lines += ["Paper values in brackets are the paper's Fig. 2, digitised from its figure "
                  "(each point's reading error is in `calibration/published_values.tsv`), paper "
                  "mode; DPNMF runs for ε < 1 only.", ""]
    return lines + comparison_tables(df, metric, calibrated=metric == "nmi_rows")


def _ordered_algorithms(df: pd.DataFrame) -> list[str]:
    """The table's algorithms: the paper's first, then the extra ones, then yours by name."""
    known = [*PAPER_METHODS, *EXTRA_METHODS]
    present = set(df["algorithm"].dropna()) - set(rr.VARIANTS)  # shown in their own section
    return [a for a in known if a in present] + sorted(present - set(known))


def _neighbours_line(df: pd.DataFrame) -> str:
    """"Neighbours (what each method's ε protects): ..." for the algorithms of a table."""
    text = neighbours_text(_ordered_algorithms(df)).removeprefix("neighbours: ")
    return f"Neighbours (what each method's ε protects): {text}."


def _column_name(alg: str, mode: str, column: str) -> str:
    if column.endswith("_private"):
        return f"{label(alg)} ({mode}, DP row labels: DP)"
    if mode != "corrected" or alg not in LABELS:  # yours: its own labels, not declared DP
        return f"{label(alg)} ({mode})"
    return f"{label(alg)} (corrected, {PAPER_PROTOCOL})"


def comparison_tables(df: pd.DataFrame, metric: str, calibrated: bool = False) -> list[str]:
    """Per dataset: the non-private methods' pooled score, then ``metric`` per ε (rows) for every
    private method and mode (columns; in corrected mode the series of
    :func:`figures.row_series`: the DP output first); ``calibrated`` adds the paper's Fig. 2
    values."""
    cal = calibration() if calibrated else None
    name = metric.split("_")[0].upper()
    mine, mine_bands = discovered(df)
    methods = [a for a in (*PAPER_METHODS, *EXTRA_METHODS) if a != "fccm"] + mine
    methods = [a for a in methods if a in set(df["algorithm"])]
    lines: list[str] = []
    for ds in _datasets(df):
        d = df[df["dataset"] == ds]
        lines.append(f"### {ds} ({name})")
        lines.append("")
        for alg in ("fast_taucc", "fccm", *mine_bands):
            m, s, n = pooled(d[d["algorithm"] == alg], metric)
            if n:
                pv = None if cal is None else _paper_value(cal, ds, alg, None)
                extra = "" if pv is None else f" [paper {pv:.2f}]"
                lines.append(f"- {label(alg)} (not DP, {n} runs): {_fmt(m, s, n)}{extra}")
        lines.append("")
        sel = d[d["algorithm"].isin(methods)]
        modes = ["paper", "corrected",
                 *sorted(set(sel["mode"].dropna()) - {"paper", "corrected"})]
        cols, aggs = [], {}
        for a in methods:
            for m in modes:
                dam = sel[(sel["algorithm"] == a) & (sel["mode"] == m)]
                for column, _, _ in row_series(dam, a, m, metric):
                    agg = mean_std(dam, ["epsilon"], column)
                    if not agg.empty:
                        cols.append((a, m, column))
                        aggs[(a, m, column)] = agg.set_index("epsilon")
        if not cols:
            continue
        header = ["ε"] + [_column_name(*c) for c in cols]
        rows = []
        for eps in sorted({e for agg in aggs.values() for e in agg.index}):
            row = [f"{eps:g}"]
            for a, m, column in cols:
                agg = aggs[(a, m, column)]
                cell = "–" if eps not in agg.index else _fmt(
                    agg.loc[eps, "mean"], agg.loc[eps, "std"], int(agg.loc[eps, "n"]))
                pv = (_paper_value(cal, ds, a, eps) if m == "paper" and cal is not None
                      else None)
                if pv is not None:
                    cell += f" [paper {pv:.2f}]"
                row.append(cell)
            rows.append(row)
        lines += _table(header, rows)
        counts = pd.concat([agg["n"] for agg in aggs.values()])
        lines += ["", f"({_seeds_per_cell(counts)} per cell)", ""]
    return lines


def _seeds_per_cell(n: pd.Series) -> str:
    lo, hi = int(n.min()), int(n.max())
    return f"{hi} seed{'s' if hi > 1 else ''}" if lo == hi else f"{lo}–{hi} seeds"


#: experiments with a section of their own (not the generic per-dataset tables)
OWN_SECTIONS = ("row_crossover",)


def other_experiments_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Every table that is not one of the paper's experiments (e.g. your own): row NMI per ε."""
    lines: list[str] = []
    for exp, df in frames.items():
        if exp in PAPER_EXPERIMENTS or exp in OWN_SECTIONS:
            continue
        lines += [f"## {exp}: row NMI (mean ± std over seeds; corrected mode: what each "
                  "method releases)", ""]
        lines += comparison_tables(df, "nmi_rows")
    return lines


#: the ε of the one-relation table (the paper's grid goes on between them)
ROW_RELATION_EPSILONS = (0.5, 0.99999, 2.0, 3.0)


def row_relation_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Under one row replaced: every method private for a whole row, scored the same way
    (:mod:`dptaucc.bench.row_relation`), from fig2_real's corrected runs."""
    real = frames.get("fig2_real")
    if real is None or not set(rr.VARIANTS) & set(real["algorithm"]):
        return []
    summary = rr.one_relation(real)
    algs = [a for a in rr.ROW_LEVEL if a in set(summary["algorithm"])]
    lines = ["## Under one row replaced: every method, one relation (row NMI, mean ± std)", "",
             f"fig2_real, corrected mode: {rr.RELATION_NOTE}. Figure: "
             "`figures/fig2_row_relation_corrected.png`, beside `fig2_nmi_corrected` (each "
             "method under its own relation). DPNMF runs for ε < 1 only (the paper's protocol).",
             "", f"**What it shows.** {rr.one_relation_verdict(summary)}", ""]
    ref = summary[summary["algorithm"] == rr.REFERENCE].set_index("dataset")
    cell = mean_std(real[(real["algorithm"] == "dp_taucc") & (real["mode"] == "corrected")],
                    ["dataset", "epsilon"], "nmi_rows").assign(algorithm="dp_taucc")
    summary = pd.concat([summary, cell], ignore_index=True)
    shown = [*algs, "dp_taucc"] if not cell.empty else algs
    rows = []
    for eps in ROW_RELATION_EPSILONS:
        at = summary[(summary["epsilon"] - eps).abs() < 1e-9]
        if at[at["algorithm"].isin(algs)].empty:
            continue
        for ds in [*_datasets(real), "mean over datasets"]:
            d = at if ds == "mean over datasets" else at[at["dataset"] == ds]
            row = [f"{eps:g}", ds]
            for a in shown:
                v = d[d["algorithm"] == a]
                if ds == "mean over datasets":
                    ok_ = len(v) == len(_datasets(real))
                    row.append(f"{v['mean'].mean():.3f}" if ok_ and len(v) else "–")
                else:
                    row.append("–" if v.empty else _fmt(v["mean"].iloc[0], v["std"].iloc[0],
                                                        int(v["n"].iloc[0])))
            fast = ref["mean"] if ds == "mean over datasets" else ref["mean"].get(ds)
            row.append("–" if fast is None else f"{float(pd.Series(fast).mean()):.2f}")
            rows.append(row)
    names = [label(a) for a in algs] + (["DP-τCC (one cell +1, for reference)"]
                                        if "dp_taucc" in shown else [])
    lines += _table(["ε", "dataset", *names, "Fast-τCC (not DP)"], rows)
    counts = summary[summary["algorithm"] != rr.REFERENCE]["n"]
    lines += ["", f"({_seeds_per_cell(counts)} per cell; the mean over datasets only where "
              "every dataset has points. The last private column is DP-τCC under its own, "
              "weaker relation — one cell changed by one — scored by the same protocol: the "
              "gap between it and DP-τCC (row) is what the privacy unit costs.)", ""]
    return lines


def crossover_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Where the crossover is (row_crossover): per size m, the first ε of the grid at which
    each method under one row replaced reaches half of Fast-τCC's row NMI."""
    df = frames.get("row_crossover")
    if df is None:
        return []
    table = rr.crossover(df)
    lines = ["## Where the crossover is: half of Fast-τCC under one row replaced (synthetic)",
             "", "The supplement's synthetic biclusters (1000 rows × m columns, one matrix per "
             f"m), corrected mode: {rr.RELATION_NOTE}. A cell is the first ε of the grid at "
             "which the method's mean row NMI reaches half of Fast-τCC's (in brackets: the ε "
             "from which it stays there, when later); – never within the grid. The ε grid is "
             "the paper's 14 values extended upwards (4.5 … 10, then 15 … 1000) for this "
             "experiment only; DPM and colored noise cap their add/remove ε' at 200 (above "
             "ε = 400 they spend 400). Figure: `figures/row_crossover_nmi_vs_eps.png`.", "",
             f"**What it shows.** {rr.crossover_verdict(table)}", ""]
    if table.empty:
        return lines + ["(no Fast-τCC runs to compare with)", ""]
    sizes = sorted(table["n_cols"].unique())
    ref = table.groupby("n_cols")["reference"].first()
    rows = [["Fast-τCC (not DP): mean NMI", *[f"{ref[m]:.2f}" for m in sizes]],
            ["half of it (the target)", *[f"{ref[m] / 2:.2f}" for m in sizes]]]
    for alg in [a for a in rr.ROW_LEVEL if a in set(table["algorithm"])]:
        row = [label(alg)]
        for m in sizes:
            r = table[(table["algorithm"] == alg) & (table["n_cols"] == m)]
            if r.empty:
                row.append("not run")
                continue
            first, stays = r["first_eps"].iloc[0], r["stays_from"].iloc[0]
            cell = "–" if first != first else f"{first:g}"
            if first == first and stays != first:
                cell += " (stays from " + ("–" if stays != stays else f"{stays:g}") + ")"
            row.append(cell + f"; best {r['best_mean'].iloc[0]:.2f} at {r['best_eps'].iloc[0]:g}")
        rows.append(row)
    lines += _table(["method", *[f"m = {int(m)}" for m in sizes]], rows)
    lines += ["", f"({_seeds_per_cell(table['seeds'])} per point)", ""]
    return lines


def privacy_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    lines = ["## ε claimed vs ε spent (from each fit's ledger)", "",
             "`spent/claimed` is the ledger's sequential sum over the claimed ε; a non-private "
             "step (paper-mode quirk, non-private init) makes a fit not end-to-end DP.", ""]
    df = pd.concat([ok(f) for f in frames.values()], ignore_index=True)
    df = df.assign(mode=df["mode"].fillna("–"))
    if df.empty:
        return lines + ["(no successful runs)", ""]
    rows = []
    for (alg, mode), d in df.groupby(["algorithm", "mode"]):
        ratio = (d["epsilon_spent"] / d["epsilon"]).replace([float("inf")], float("nan"))
        steps = sorted({s for v in d["non_private_steps"].dropna() for s in _steps(v)})
        eps_sp = d["epsilon_spent"]
        rows.append([
            label(alg), str(mode), neighbours(alg), str(len(d)),
            "–" if ratio.dropna().empty else
            f"{ratio.min():.3g} / {ratio.median():.3g} / {ratio.max():.3g}",
            "∞" if (eps_sp == float("inf")).all() else
            ("–" if eps_sp.dropna().empty else f"{eps_sp.median():.3g}"),
            "–" if d["delta"].dropna().empty else f"{d['delta'].median():.3g}",
            "–" if d["delta_spent"].dropna().empty else f"{d['delta_spent'].median():.3g}",
            f"{100 * d['end_to_end_dp'].fillna(False).astype(bool).mean():.0f}%",
            ", ".join(steps) or "–",
        ])
    header = ["method", "mode", "neighbours (corrected mode)", "fits",
              "ε spent/claimed (min/median/max)",
              "median ε spent",
              "δ claimed", "δ spent", "end-to-end DP", "non-private steps"]
    return lines + _table(header, rows) + [""]


def _steps(v: str) -> list[str]:
    import json

    try:
        return list(json.loads(v))
    except (ValueError, TypeError):
        return [str(v)]


def runtime_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    lines = ["## Runtime", ""]
    real = frames.get("fig2_real")
    if real is not None:
        real = real.assign(mode=real["mode"].fillna("–"))
        agg = mean_std(real, ["algorithm", "mode", "dataset"], "fit_time_s")
        dsets = _datasets(real)
        rows = []
        for (alg, mode), a in agg.groupby(["algorithm", "mode"]):
            row = [label(alg), str(mode)]
            for ds in dsets:
                r = a[a["dataset"] == ds]
                row.append("–" if r.empty else f"{r['mean'].iloc[0]:.3g}")
            mm = ok(real[(real["algorithm"] == alg) & (real["mode"] == mode)])["peak_rss_mb"]
            row.append("–" if mm.dropna().empty else f"{mm.max():.0f}")
            rows.append(row)
        lines += ["Mean fit time (s) per job on the real data (parallel workers, "
                  "1 BLAS thread each), and the largest peak RSS (MB, whole worker process "
                  "and its children, dataset included):", ""]
        lines += _table(["method", "mode", *dsets, "peak RSS"], rows) + [""]
    rt = frames.get("supp_runtime")
    if rt is not None:
        rt = rt.assign(mode=rt["mode"].fillna("–"))
        agg = mean_std(rt, ["algorithm", "mode", "n_cols"], "fit_time_s")
        sizes = sorted(agg["n_cols"].unique())
        show = sizes if len(sizes) <= 8 else [sizes[i] for i in
                                              sorted({0, 9, 18, 22, 26, len(sizes) - 1})
                                              if i < len(sizes)]
        rows = []
        for (alg, mode), a in agg.groupby(["algorithm", "mode"]):
            row = [label(alg), str(mode)]
            for m in show:
                r = a[a["n_cols"] == m]
                row.append("–" if r.empty else _fmt(r["mean"].iloc[0], r["std"].iloc[0],
                                                    int(r["n"].iloc[0])))
            rows.append(row)
        threads = sorted(set(ok(rt)["blas_threads"].dropna().astype(int)))
        lines += [f"Supplement Fig. 6 (serial, BLAS threads {threads}): fit time (s) on the "
                  "1000 × m synthetic matrices at ε = 0.99999:", ""]
        lines += _table(["method", "mode", *[f"m={int(m)}" for m in show]], rows) + [""]
    return lines


def status_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    lines = ["## Jobs", ""]
    rows = []
    for exp, df in frames.items():
        for alg, d in df.groupby("algorithm"):
            err = d[d["status"] != "ok"]
            first = "" if err.empty else str(err["error"].iloc[0]).splitlines()[0][:120]
            rows.append([exp, label(alg), str(len(d)), str(len(err)), first.replace("|", "/")])
    return lines + _table(["experiment", "method", "records", "errors", "first error"],
                          rows) + [""]


def clusters_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Runs of a non-private method (the reference lines of the figures) that found fewer row
    clusters than asked (``k_found`` below the asked count; each such fit also warned)."""
    rows = []
    for exp, df in frames.items():
        d = ok(df[~df["private"].fillna(True).astype(bool)])
        if d.empty or "k_found" not in d:
            continue
        asked = asked_clusters(d)
        fewer = d[pd.to_numeric(d["k_found"], errors="coerce") < asked]
        for (alg, ds), f in fewer.groupby(["algorithm", "dataset"]):
            n = int(((d["algorithm"] == alg) & (d["dataset"] == ds)).sum())
            found = sorted(set(f["k_found"].astype(int)))
            rows.append([exp, label(alg), str(ds), f"{len(f)} of {n}",
                         "/".join(f"{k:g}" for k in sorted(set(asked[f.index]))),
                         ", ".join(map(str, found))])
    if not rows:
        return []
    return (["## Fewer clusters than asked (non-private references)", "",
             "Runs of a non-private method whose fit removed clusters that emptied, so it found "
             "fewer row clusters than asked: its reference line in the figures pools these "
             "runs. (Every fit warns when this happens; `k_found` and `warnings` of the records "
             "hold it for every method.)", ""]
            + _table(["experiment", "method", "dataset", "runs", "K asked", "K found"], rows)
            + [""])


def heatmap_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    lines = []
    for exp, param, name in (("fig3_iterations", "p_n_iterations", "I"), ("supp_h", "p_h", "h")):
        df = frames.get(exp)
        if df is None:
            continue
        agg = mean_std(df, ["dataset", param], "tau_hat_rc")
        best = agg.loc[agg.groupby("dataset")["mean"].idxmax()] if not agg.empty else agg
        lines += [f"## {exp}: mean τ̂_R|C over ε per {name} (all ε pooled)", ""]
        rows = [[r["dataset"], f"{r[param]:g}", f"{r['mean']:.3f}"] for _, r in best.iterrows()]
        lines += _table(["dataset", f"best {name}", "mean τ̂_R|C"], rows) + [""]
    return lines


def synthetic_section(df: pd.DataFrame) -> list[str]:
    """Row and column NMI at the paper's ε = "1" (0.99999) per size, on the synthetic data."""
    d = df[((df["epsilon"] - 0.99999).abs() < 1e-9) | df["epsilon"].isna()]
    lines = ["## Synthetic biclusters (supp. Figs. 4-5): NMI at ε = 0.99999", "",
             "One matrix per m, shared by every seed, ε and method. Row NMI by the paper's "
             "protocol (reads the data, not DP) in paper mode; corrected mode scores what each "
             "method releases.", "", _neighbours_line(df), ""]
    d = d.assign(mode=d["mode"].fillna("–"))
    sizes = sorted(d["n_cols"].dropna().unique())
    if len(sizes) > 8:  # eight sizes spread over the grid (works for partial grids too)
        sizes = [sizes[i] for i in sorted({round(j * (len(sizes) - 1) / 7) for j in range(8)})]
    rows = []
    for (alg, mode), dam in d.groupby(["algorithm", "mode"]):
        series = [(c, "rows (DP labels)" if c.endswith("_private") else
                   "rows (paper protocol, not DP)")
                  for c, _, _ in row_series(dam, alg, mode, "nmi_rows")]
        for column, what in [*series, ("nmi_cols", "columns")]:
            a = mean_std(dam, ["n_cols"], column)
            if a.empty:
                continue
            row = [label(alg), str(mode), what]
            for m in sizes:
                r = a[a["n_cols"] == m]
                row.append("–" if r.empty else _fmt(r["mean"].iloc[0], r["std"].iloc[0],
                                                    int(r["n"].iloc[0])))
            rows.append(row)
    return lines + _table(["method", "mode", "NMI of", *[f"m={int(m)}" for m in sizes]],
                          rows) + [""]


def title_lines(results_dir: Path) -> list[str]:
    """Title and generation time."""
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ["# dptaucc-bench: results", "",
            f"Generated {now} by `python -m dptaucc.bench.report` from "
            f"`{results_dir.name}/<experiment>.parquet`; figures in `figures/`.", ""]


def header_lines(frames: dict[str, pd.DataFrame], results_dir: Path) -> list[str]:
    """The size of every table and the last run (code versions: the provenance section)."""
    lines = ["## Tables", ""]
    lines += [f"- {e}: {len(df)} records, {df['seed'].nunique()} seeds, datasets "
              f"{', '.join(_datasets(df))}" + (f" (m = {int(df['n_cols'].min())}"
                                               f"..{int(df['n_cols'].max())})"
                                               if set(df["dataset"]) == {"biclusters"} else "")
              for e, df in frames.items()]
    log = read_run_log(results_dir)
    if log is not None:
        lines += ["", describe(log) + run_load(frames, log)]
        costs = cost_lines(log)
        if costs:
            lines += ["", *costs]
    return lines + ["", "Paper scale is 10 seeds per point (`make reproduce`); fewer seeds mean a "
                    "quick-scale run (`make reproduce-quick`).", ""]


#: load above the run's own workers beyond which its wall time is not a speed measurement
EXTRA_LOAD_LIMIT = 0.5


def run_load(frames: dict[str, pd.DataFrame], log: dict) -> str:
    """How loaded the machine was while the logged run fitted: the median 1-minute load
    average its records saw at their start, against the load its own local workers make.

    >>> frames = {"e": pd.DataFrame({"started_at": ["2026-01-01T00:00:05+00:00"] * 3,
    ...                              "load_1m": [2.1, 4.0, 3.9]})}
    >>> log = {"executor": "local", "resources": {"workers": 2},
    ...        "started_utc": "2026-01-01T00:00:00+00:00",
    ...        "finished_utc": "2026-01-01T00:01:00+00:00"}
    >>> line = run_load(frames, log)
    >>> "shared with other work" in line, "load 3.90 with 2 workers" in line
    (True, True)
    >>> "otherwise idle" in run_load({"e": frames["e"].assign(load_1m=2.2)}, log)
    True
    """
    mine = [df.loc[(df["started_at"] >= log.get("started_utc", ""))
                   & (df["started_at"] <= log.get("finished_utc", "")), "load_1m"]
            for df in frames.values() if {"started_at", "load_1m"} <= set(df.columns)]
    loads = pd.concat(mine).dropna() if mine else pd.Series(dtype=float)
    if loads.empty:
        return " The machine's load during this run is not known (no records from it)."
    workers = (log.get("resources") or {}).get("workers") if log["executor"] == "local" else None
    median = float(loads.median())
    if workers is None:
        return f" Median 1-minute load on the submitting machine during the run: {median:.2f}."
    if median > workers + EXTRA_LOAD_LIMIT:
        return (f" The machine was shared with other work during this run (median 1-minute "
                f"load {median:.2f} with {workers} workers of its own): its wall time is not "
                f"a speed measurement.")
    return (f" The machine was otherwise idle (median 1-minute load {median:.2f} with "
            f"{workers} workers of its own).")


def provenance_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Where the records come from (code, libraries, machine) and, for the runtime
    experiment, whether the machine was otherwise idle during the fits."""
    import json
    from collections import Counter

    df = pd.concat(list(frames.values()), ignore_index=True)

    def values(col: str, show=str) -> str:
        if col not in df or df[col].dropna().empty:
            return "not recorded"
        c = Counter(show(v) for v in df[col].dropna())
        if len(c) == 1:
            return next(iter(c))
        return "; ".join(f"{v} ({n} records)" for v, n in c.most_common())

    def sha(v: str) -> str:  # short hash, the -dirty flag kept
        head, dirty, _ = str(v).partition("-dirty")
        return f"`{head[:12]}{dirty}`"

    def package(name: str):
        return lambda v: str(json.loads(v).get(name)) if str(v).startswith("{") else "?"

    def blas(v: str) -> str:
        try:
            libs = json.loads(v)
        except (TypeError, ValueError):
            return str(v)
        return ", ".join(f"{lib.get('internal_api')} {lib.get('version') or ''}".strip()
                         + (f" ({lib['threading_layer']})" if lib.get("threading_layer")
                            else "") for lib in libs if lib.get("user_api") == "blas") or "-"

    rows = [["code (git commit)", values("git_sha", sha)],
            *[[pkg, values("versions", package(pkg))]
              for pkg in ("dptaucc-bench", "numpy", "scipy", "scikit-learn")],
            ["BLAS", values("blas", blas)], ["Python", values("python")],
            ["OS", values("os")], ["CPU", values("cpu")],
            ["GNU Octave (DPHD)", values("octave")]]
    lines = ["## Provenance", "", "A `-dirty` commit means the code differed from that "
             "commit (changes under results/ do not count).", ""]
    lines += _table(["", "value"], rows) + ["", environment_line(), ""]
    rt = frames.get("supp_runtime")
    if rt is not None:
        fits = ok(rt)
        lines += runtime_idleness(fits)
    return lines


def environment_line() -> str:
    """Where the versions above are pinned, and how a reader checks the records."""
    return ("The library versions are pinned in `constraints.txt` (`make setup` installs them); "
            "`make verify` re-runs a sample of these records on your machine "
            "(docs/records.md).")


#: other processes' CPUs (time-weighted over the fits) above which timings count as inflated
BUSY_LIMIT = 0.25


def runtime_idleness(fits: pd.DataFrame) -> list[str]:
    """Was the machine otherwise idle during the runtime experiment's fits? Judged on the
    other busy CPUs weighted by fit time (one fit of a few ms is within the kernel's 10 ms
    CPU accounting tick), for the methods that compute in this process: DPHD computes in its
    Octave child, which records made before the meter counted live children take for other
    load, so it is shown apart."""
    if "other_busy_cpus" not in fits or fits["other_busy_cpus"].dropna().empty:
        return ["Runtime experiment: the machine's load during the fits was not recorded "
                "(records older than this check).", ""]
    fits = fits.dropna(subset=["other_busy_cpus", "fit_time_s"])

    def weighted(d: pd.DataFrame) -> float:
        wall = d["fit_time_s"].sum()
        return float((d["other_busy_cpus"] * d["fit_time_s"]).sum() / wall) if wall > 0 else 0.0

    octave = fits["algorithm"] == "dphd"
    own, child = fits[~octave], fits[octave]
    busy = weighted(own if not own.empty else fits)
    long_fits = own[own["fit_time_s"] >= 0.1]
    verdict = ("on an otherwise idle machine" if busy <= BUSY_LIMIT else
               f"NOT on an idle machine (other processes kept {busy:.2f} CPUs busy on average "
               f"during the fits, above {BUSY_LIMIT}): its fit times are inflated")
    text = (f"Runtime experiment (supp. Fig. 6) ran {verdict}. Other busy CPUs during the fits, "
            f"weighted by fit time: {busy:.2f}")
    if not long_fits.empty:
        text += (f"; fits of 0.1 s or more: median {long_fits['other_busy_cpus'].median():.2f}, "
                 f"max {long_fits['other_busy_cpus'].max():.2f}")
    text += f"; 1-minute load average at the start: median {fits['load_1m'].median():.2f}."
    if not child.empty and not own.empty:
        text += (f" DPHD (computing in its Octave child process) reads {weighted(child):.2f}; "
                 f"records made before the meter counted live child processes include that "
                 f"Octave's own work.")
    return [text, ""]


def _real_data(frames: dict[str, pd.DataFrame]) -> list[str]:
    real = frames.get("fig2_real")
    return [] if real is None else fig2_section(real, "nmi_rows") + fig2_section(real, "ari_rows")


def _synthetic(frames: dict[str, pd.DataFrame]) -> list[str]:
    syn = frames.get("supp_synthetic")
    return [] if syn is None else synthetic_section(syn)


Section = Callable[[dict[str, pd.DataFrame]], list[str]]
#: the report's sections, in order; each maps the tables ({experiment: DataFrame}) to Markdown
#: lines (an empty list leaves the section out)
SECTIONS: list[Section] = [_real_data, row_relation_section, crossover_section,
                           other_experiments_section, privacy_section,
                           runtime_section, heatmap_section, _synthetic, clusters_section,
                           status_section, provenance_section]


def write_report(results_dir: str | os.PathLike = "results") -> Path:
    """REPORT.md: the headline (:mod:`headline`), the figures as images, then the tables
    (:data:`SECTIONS`) and the privacy audit."""
    from dptaucc.bench.headline import figures_section, headline_section
    from dptaucc.bench.published import published_values

    results_dir = Path(results_dir)
    frames = experiment_tables(results_dir)
    lines = title_lines(results_dir)
    lines += headline_section(frames, results_dir, published_values())
    lines += figures_section(results_dir)
    lines += header_lines(frames, results_dir)
    if frames:
        for section in SECTIONS:
            lines += section(frames)
    lines += audit_section(results_dir)  # results/audit.parquet, when present
    lines += audit_score_section(results_dir)  # audit_mutants / audit_false_alarms.parquet
    path = results_dir / "REPORT.md"
    results_dir.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.report", description=plain(__doc__))
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    args = ap.parse_args(argv)
    print(write_report(args.results_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
