"""``python -m dptaucc.bench.report``: results/REPORT.md from the stored tables.

Per dataset and ε, mean ± std of every method in both modes next to the paper's values read off
its Fig. 2 (``conf/calibration/fig2_paper_values.tsv``); ε claimed vs ε spent per method (from
the ledgers); runtime; failed jobs.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from dptaucc.bench.aggregate import EXTRA_METHODS, PAPER_METHODS, label, mean_std, ok, pooled
from dptaucc.bench.collect import load_table
from dptaucc.bench.configs import config_dir
from dptaucc.bench.figures import _datasets

EXPERIMENTS = ("fig2_real", "fig3_iterations", "supp_h", "supp_synthetic", "supp_runtime")


def calibration() -> pd.DataFrame:
    """The paper's Fig. 2 values (read by eye) kept in the repo, with ε as float (NaN = '-')."""
    df = pd.read_csv(config_dir() / "calibration" / "fig2_paper_values.tsv", sep="\t",
                     comment="#", dtype=str)
    df["eps"] = pd.to_numeric(df["eps"].replace("-", None))
    df["nmi"] = pd.to_numeric(df["nmi"])
    return df


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
    cal = calibration()
    name = metric.split("_")[0].upper()
    fig = "Fig. 2" if name == "NMI" else "Supp. Fig. 1"
    lines = [f"## {fig}: row {name} on the real data (paper protocol, mean ± std over seeds)",
             ""]
    if name == "NMI":
        lines += ["Paper values in brackets are read by eye off the paper's Fig. 2 (±0.02), "
                  "paper mode; DPNMF runs for ε < 1 only; DPHD is 0 in the paper.", ""]
    methods = [a for a in (*PAPER_METHODS, *EXTRA_METHODS) if a != "fccm"]
    methods = [a for a in methods if a in set(df["algorithm"])]
    for ds in _datasets(df):
        d = df[df["dataset"] == ds]
        lines.append(f"### {ds} ({name})")
        lines.append("")
        for alg in ("fast_taucc", "fccm"):
            m, s, n = pooled(d[d["algorithm"] == alg], metric)
            if n:
                pv = _paper_value(cal, ds, alg, None) if metric == "nmi_rows" else None
                extra = "" if pv is None else f" [paper {pv:.2f}]"
                lines.append(f"- {label(alg)} (not DP, {n} runs): {_fmt(m, s, n)}{extra}")
        lines.append("")
        agg = mean_std(d[d["algorithm"].isin(methods)], ["algorithm", "mode", "epsilon"], metric)
        if agg.empty:
            continue
        cols = [(a, m) for a in methods for m in ("paper", "corrected")
                if not agg[(agg["algorithm"] == a) & (agg["mode"] == m)].empty]
        header = ["ε"] + [f"{label(a)} ({m})" for a, m in cols]
        rows = []
        for eps in sorted(agg["epsilon"].unique()):
            row = [f"{eps:g}"]
            for a, m in cols:
                r = agg[(agg["algorithm"] == a) & (agg["mode"] == m) & (agg["epsilon"] == eps)]
                cell = "–" if r.empty else _fmt(r["mean"].iloc[0], r["std"].iloc[0],
                                                int(r["n"].iloc[0]))
                pv = (_paper_value(cal, ds, a, eps) if m == "paper" and metric == "nmi_rows"
                      else None)
                if pv is not None:
                    cell += f" [paper {pv:.2f}]"
                row.append(cell)
            rows.append(row)
        n_seeds = int(agg["n"].max())
        lines += _table(header, rows)
        lines += ["", f"(up to {n_seeds} seeds per cell)", ""]
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
            label(alg), str(mode), str(len(d)),
            "–" if ratio.dropna().empty else
            f"{ratio.min():.3g} / {ratio.median():.3g} / {ratio.max():.3g}",
            "∞" if (eps_sp == float("inf")).all() else
            ("–" if eps_sp.dropna().empty else f"{eps_sp.median():.3g}"),
            "–" if d["delta"].dropna().empty else f"{d['delta'].median():.3g}",
            "–" if d["delta_spent"].dropna().empty else f"{d['delta_spent'].median():.3g}",
            f"{100 * d['end_to_end_dp'].fillna(False).astype(bool).mean():.0f}%",
            ", ".join(steps) or "–",
        ])
    header = ["method", "mode", "fits", "ε spent/claimed (min/median/max)", "median ε spent",
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


def heatmap_section(frames: dict[str, pd.DataFrame]) -> list[str]:
    lines = []
    for exp, param, name in (("fig3_iterations", "p_n_iterations", "I"), ("supp_h", "p_h", "h")):
        df = frames.get(exp)
        if df is None:
            continue
        agg = mean_std(df, ["dataset", param], "tau_rc")
        best = agg.loc[agg.groupby("dataset")["mean"].idxmax()] if not agg.empty else agg
        lines += [f"## {exp}: mean τ̂_R|C over ε per {name} (all ε pooled)", ""]
        rows = [[r["dataset"], f"{r[param]:g}", f"{r['mean']:.3f}"] for _, r in best.iterrows()]
        lines += _table(["dataset", f"best {name}", "mean τ̂_R|C"], rows) + [""]
    return lines


def synthetic_section(df: pd.DataFrame) -> list[str]:
    """Row and column NMI at the paper's ε = "1" (0.99999) per size, on the synthetic data."""
    d = df[((df["epsilon"] - 0.99999).abs() < 1e-9) | df["epsilon"].isna()]
    lines = ["## Synthetic biclusters (supp. Figs. 4-5): NMI at ε = 0.99999", ""]
    d = d.assign(mode=d["mode"].fillna("–"))
    sizes = sorted(d["n_cols"].dropna().unique())
    if len(sizes) > 8:  # eight sizes spread over the grid (works for partial grids too)
        sizes = [sizes[i] for i in sorted({round(j * (len(sizes) - 1) / 7) for j in range(8)})]
    rows = []
    for side in ("rows", "cols"):
        agg = mean_std(d, ["algorithm", "mode", "n_cols"], f"nmi_{side}")
        for (alg, mode), a in agg.groupby(["algorithm", "mode"]):
            row = [label(alg), str(mode), side]
            for m in sizes:
                r = a[a["n_cols"] == m]
                row.append("–" if r.empty else _fmt(r["mean"].iloc[0], r["std"].iloc[0],
                                                    int(r["n"].iloc[0])))
            rows.append(row)
    return lines + _table(["method", "mode", "NMI of", *[f"m={int(m)}" for m in sizes]],
                          rows) + [""]


def write_report(results_dir: str | os.PathLike = "results") -> Path:
    results_dir = Path(results_dir)
    frames = {e: df for e in EXPERIMENTS if (df := load_table(results_dir, e)) is not None}
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# dptaucc-bench: results", "",
             f"Generated {now} by `python -m dptaucc.bench.report` from "
             f"`{results_dir.name}/<experiment>.parquet`; figures in `figures/`.", ""]
    shas = sorted({s for df in frames.values() for s in df["git_sha"].dropna()})
    if shas:
        lines += [f"Code versions (git): {', '.join(s[:12] for s in shas)}", ""]
    lines += [f"- {e}: {len(df)} records, {df['seed'].nunique()} seeds, datasets "
              f"{', '.join(_datasets(df))}" + (f" (m = {int(df['n_cols'].min())}"
                                               f"..{int(df['n_cols'].max())})"
                                               if set(df["dataset"]) == {"biclusters"} else "")
              for e, df in frames.items()]
    lines += ["", "Paper scale is 10 seeds per point (`make reproduce`); fewer seeds mean a "
              "quick-scale run (`make reproduce-quick`).", ""]
    if "fig2_real" in frames:
        lines += fig2_section(frames["fig2_real"], "nmi_rows")
        lines += fig2_section(frames["fig2_real"], "ari_rows")
    if frames:
        lines += privacy_section(frames)
        lines += runtime_section(frames)
        lines += heatmap_section(frames)
        if "supp_synthetic" in frames:
            lines += synthetic_section(frames["supp_synthetic"])
        lines += status_section(frames)
    path = results_dir / "REPORT.md"
    results_dir.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.report", description=__doc__)
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    args = ap.parse_args(argv)
    print(write_report(args.results_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
