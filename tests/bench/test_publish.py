"""What the figures and REPORT.md publish means what it says: private lines are the private
outputs, bands stay in range, heatmap ticks are the grid's, runtime bars stay positive, empty
panels say so, and the report opens with its headline."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dptaucc.bench import figures, headline, report
from dptaucc.bench.aggregate import NEIGHBOURS, label
from dptaucc.bench.published import published_values


def _row(alg, mode, ds, eps, seed, **kw):
    private = alg not in ("fast_taucc", "fccm")
    rec = {"run_id": f"{alg}-{mode}-{ds}-{eps}-{seed}", "experiment": "fig2_real",
           "algorithm": alg, "mode": mode if private else None, "dataset": ds, "seed": seed,
           "epsilon": eps if private else np.nan, "status": "ok", "private": private,
           "nmi_rows": 0.5, "ari_rows": 0.4, "nmi_rows_private": np.nan,
           "ari_rows_private": np.nan, "nmi_cols": np.nan, "ari_cols": np.nan,
           "epsilon_spent": eps if mode == "corrected" else np.inf,
           "end_to_end_dp": mode == "corrected", "n_cols": 50, "fit_time_s": 0.1,
           "blas_threads": 1, "cpu": "test CPU", "non_private_steps": "[]",
           "delta": np.nan, "delta_spent": 0.0, "peak_rss_mb": 100.0, "error": None}
    rec.update(kw)
    return rec


@pytest.fixture
def real():
    """DP-τCC whose DP labels score 0.2 and whose paper protocol scores 0.6 (corrected mode);
    DP-KMeans near 0 with a wide spread; DPNMF for ε < 1 only; Fast-τCC as a band."""
    rows = []
    for seed in range(3):
        for eps in (0.5, 0.99999, 2.0):
            rows.append(_row("dp_taucc", "corrected", "cstr", eps, seed, nmi_rows=0.6,
                             nmi_rows_private=0.2 + 0.01 * seed))
            rows.append(_row("dp_taucc", "paper", "cstr", eps, seed, nmi_rows=0.4))
            rows.append(_row("dp_kmeans", "corrected", "cstr", eps, seed,
                             nmi_rows=[0.0, 0.0, 0.3][seed]))
            if eps < 1:
                rows.append(_row("dpnmf", "corrected", "cstr", eps, seed, nmi_rows=0.1))
        rows.append(_row("fast_taucc", None, "cstr", np.nan, seed, nmi_rows=[0.1, 0.9, 0.95][seed]))
    return pd.DataFrame(rows)


def _lines(fig):
    return {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}


def test_the_corrected_line_is_the_dp_output_and_the_paper_protocol_is_named(real):
    fig = figures.fig_metric_vs_eps(real, "nmi_rows", "corrected",
                                    ["dp_taucc", "dp_kmeans", "dpnmf"], ["fast_taucc"], "t")
    lines = _lines(fig)
    dp = lines[f"{label('dp_taucc')}: its DP row labels (DP)"]
    assert dp.get_linestyle() == "-"
    np.testing.assert_allclose(dp.get_ydata(), 0.21)  # nmi_rows_private, not nmi_rows
    protocol = lines[f"{label('dp_taucc')}: {figures.PAPER_PROTOCOL}"]
    np.testing.assert_allclose(protocol.get_ydata(), 0.6)
    assert protocol.get_linestyle() == ":"
    # a baseline releases no row labels: its only series is the paper protocol, named not DP
    assert f"{label('dp_kmeans')}: {figures.PAPER_PROTOCOL}" in lines
    legend = {t.get_text() for t in fig.legends[0].get_texts()}
    assert all("DP" in text for text in legend)  # every entry says whether it is DP
    # the caption gives each method's neighbour relation
    title = " ".join(fig._suptitle.get_text().split())  # wrapped to the figure's width
    for alg in ("dp_taucc", "dp_kmeans", "dpnmf"):
        assert NEIGHBOURS[alg] in title and label(alg) in title
    plt.close(fig)


def test_paper_mode_plots_the_paper_protocol_as_the_paper_does(real):
    fig = figures.fig_metric_vs_eps(real, "nmi_rows", "paper", ["dp_taucc"], [], "t")
    line = _lines(fig)[f"{label('dp_taucc')}: {figures.PAPER_PROTOCOL}"]
    assert line.get_linestyle() == "-"
    np.testing.assert_allclose(line.get_ydata(), 0.4)
    plt.close(fig)


def test_bands_stay_within_the_metric_range(real):
    fig = figures.fig_metric_vs_eps(real, "nmi_rows", "corrected", ["dp_kmeans"],
                                    ["fast_taucc"], "t")
    ax = fig.axes[0]
    # DP-KMeans: mean 0.1, std 0.17 (below 0 unclipped); Fast-τCC: mean 0.65, std 0.48 (above 1)
    assert ax.collections and ax.patches
    for band in ax.collections:  # the curves' bands
        for path in band.get_paths():
            ys = path.vertices[:, 1]
            assert ys.min() >= 0.0 - 1e-12 and ys.max() <= 1.0 + 1e-12
    for span in ax.patches:  # the non-DP band
        assert span.get_y() >= 0.0 and span.get_y() + span.get_height() <= 1.0 + 1e-12
    plt.close(fig)


def test_a_panel_says_where_a_method_has_no_points(real):
    """A note every panel shares is said once, in the figure's title; a note of some panels
    stays in theirs."""
    note = "DPNMF: no points above ε = 0.99999 (runs for ε < 1 only)"
    fig = figures.fig_metric_vs_eps(real, "nmi_rows", "corrected",
                                    ["dp_taucc", "dp_kmeans", "dpnmf"], [], "t")
    assert note in " ".join(fig._suptitle.get_text().split())
    assert note not in fig.axes[0].get_title()
    plt.close(fig)
    other = real[real["algorithm"] != "dpnmf"].assign(dataset="tr11")
    fig = figures.fig_metric_vs_eps(pd.concat([real, other]), "nmi_rows", "corrected",
                                    ["dp_taucc", "dp_kmeans", "dpnmf"], [], "t")
    titles = {ax.get_title().split("\n")[0]: ax.get_title() for ax in fig.axes}
    flat = {k: " ".join(v.split()) for k, v in titles.items()}  # notes wrap to the panel
    assert note in flat["cstr"] and "DPNMF: no points" in flat["tr11"]
    assert "DPNMF: no points" not in " ".join(fig._suptitle.get_text().split())
    plt.close(fig)
    assert figures.coverage_note({"dpnmf": pd.DataFrame({"epsilon": []})}, "n_cols",
                                 eps=3.0) == "DPNMF: no points (runs for ε < 1 only)"


def test_heatmap_ticks_are_the_grids_own_values():
    eps = [0.1, 0.3, 0.99999, 4.5, 10.0]
    iters = [2, 3, 5]
    df = pd.DataFrame([{"dataset": "cstr", "status": "ok", "epsilon": e, "p_n_iterations": i,
                        "seed": 0, "tau_hat_rc": 0.1 * i + e / 100} for e in eps for i in iters])
    fig = figures.fig_heatmap(df, "p_n_iterations", "iterations I", "t")
    ax = fig.axes[0]
    # one equal cell per grid value: the uneven ε grid is not drawn to scale
    mesh = ax.collections[0].get_coordinates()
    np.testing.assert_allclose(np.diff(mesh[0, :, 0]), 1.0)
    np.testing.assert_allclose(np.diff(mesh[:, 0, 1]), 1.0)
    np.testing.assert_allclose(ax.get_xticks(), range(len(eps)))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "0.3", "0.99999", "4.5", "10"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "3", "5"]
    plt.close(fig)


def test_the_two_heatmaps_say_what_they_vary():
    titles = {}
    for exp, param in (("fig3_iterations", "p_n_iterations"), ("supp_h", "p_h")):
        df = pd.DataFrame([{"dataset": "cstr", "status": "ok", "epsilon": e, param: v,
                            "seed": 0, "mode": "paper", "tau_hat_rc": 0.1}
                           for e in (0.5, 1.5) for v in (2, 3)])
        for name, draw in figures.experiment_plots(exp, df):
            fig = draw()
            titles[name] = " ".join(fig._suptitle.get_text().split())
            plt.close(fig)
    assert "vs ε and iterations I (paper mode)" in titles["fig3_supp_fig2_iterations_tau_paper"]
    assert "vs ε and h (paper mode)" in titles["supp_fig3_h_tau_paper"]


def test_runtime_bars_stay_positive_on_the_log_axis():
    # one slow outlier: mean - std would be negative
    times = [0.01, 0.01, 0.012, 0.011, 2.0]
    df = pd.DataFrame([{"algorithm": "dp_taucc", "mode": "corrected", "n_cols": m,
                        "status": "ok", "fit_time_s": t, "blas_threads": 1, "seed": i}
                       for m in (10, 100) for i, t in enumerate(times)])
    fig = figures.fig_runtime(df)
    ax = fig.axes[0]
    bars = [c for c in ax.collections if hasattr(c, "get_segments")]
    lows = [seg[:, 1].min() for c in bars for seg in c.get_segments()]
    assert lows and min(lows) > 0
    assert "percentile" in ax.get_ylabel()
    assert "(serial, BLAS threads: 1)" in ax.get_title()  # not a Python list
    plt.close(fig)
    assert figures.threads_text([2, 2.0, np.nan]) == "BLAS threads: 2"
    assert figures.threads_text([1, 2]) == "BLAS threads: 1–2"


def _write(results_dir, frames: dict[str, pd.DataFrame]) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    for exp, df in frames.items():
        df.assign(experiment=exp).to_parquet(results_dir / f"{exp}.parquet")


def test_the_report_opens_with_its_headline(real, results_dir):
    _write(results_dir, {"fig2_real": real})
    (results_dir / "reproduce.json").write_text(json.dumps({
        "git_sha": "0123456789abcdef", "scale": "quick", "executor": "local", "workers": 2,
        "started_utc": "2026-01-01T00:00:00+00:00", "finished_utc": "x", "sweep_seconds": 60.0,
        "total_seconds": 90.0, "experiments": {"fig2_real": {"jobs": 1, "run": 1, "seconds": 1,
                                                             "statuses": {"ok": 1}}}}))
    figures.make_figures(results_dir, formats=("png",))
    text = report.write_report(results_dir).read_text()
    first_screen = "\n".join(text.splitlines()[:40])
    assert text.splitlines()[4] == "## Headline"
    assert ("| paper figure | our runs | judged on (paper mode) | mean abs. difference | points "
            "outside their error | mean ours − theirs | reproduces? |") in first_screen
    assert "![fig2_nmi_paper](figures/fig2_nmi_paper.png)" in first_screen
    assert headline.RULE in first_screen
    assert "| Supp. Fig. 6: runtime | not run | – | – | – | – | not run |" in first_screen
    # Fig. 2 is judged on cstr's published DP-τCC points at our ε (0.5, 0.99999, 2) and the
    # pooled Fast-τCC point; paper-mode DP-τCC at 0.4 is far above the published ε = 0.5 point
    fig2 = next(line for line in first_screen.splitlines() if line.startswith("| Fig. 2"))
    assert "| 4 points, 1 dataset, from the paper |" in fig2 and fig2.endswith("| **no** |")
    pub = published_values()
    theirs = pub[(pub["figure"] == "fig2") & (pub["source"] == "paper")
                 & (pub["dataset"] == "cstr") & (pub["algorithm"] == "dp_taucc")
                 & (pub["epsilon"] == 0.5)]["value"].item()
    assert ("- Fig. 2: cstr, DP-τCC: 2 of 3 points outside, ours − theirs" in first_screen
            and f"largest {0.4 - theirs:+.3f} at ε = 0.5 (0.400 vs {theirs:.3f})"
            in first_screen)
    assert "no audit table" in first_screen
    assert "wall time 1.5 min on 2 local workers" in first_screen and "test CPU" in first_screen
    assert ("**DP-τCC** (neighbours: one cell +1): mean row NMI 0.40 in paper mode → 0.21 on "
            "its DP row labels, 0.60 by the paper's protocol (not DP)") in first_screen
    # every figure is embedded with a relative link, before the tables
    assert text.index("![fig2_nmi_corrected](figures/fig2_nmi_corrected.png)") < text.index(
        "## Fig. 2: row NMI")
    # the corrected table column of DP-τCC is its DP labels; the paper protocol is named
    table = text[text.index("### cstr (NMI)"):]
    header = next(line for line in table.splitlines() if line.startswith("| ε |"))
    assert "DP-τCC (corrected, DP row labels: DP)" in header
    assert f"DP-τCC (corrected, {figures.PAPER_PROTOCOL})" in header
    row = next(line for line in table.splitlines() if line.startswith("| 0.5 |"))
    assert "0.21 ± 0.01" in row


def test_the_audit_verdict_is_read_defensively(real, results_dir):
    _write(results_dir, {"fig2_real": real})
    pd.DataFrame({"method": ["dp_taucc", "dpnmf"], "verdict": ["ok", "above claim"]}).to_parquet(
        results_dir / "audit.parquet")
    assert headline.audit_verdict(results_dir).startswith("Privacy audit: ok: 1 rows, "
                                                          "above claim: 1 rows")
    pd.DataFrame({"something": [1]}).to_parquet(results_dir / "audit.parquet")
    assert "not understood" in headline.audit_verdict(results_dir)


def test_the_report_lists_references_that_found_fewer_clusters(real):
    """A non-private reference whose fit removed emptied clusters is named with how often; a
    private method's merges are left to the records (k_found, warnings)."""
    df = real.assign(p_n_row_clusters=3, k_found=3)
    fast = df["algorithm"] == "fast_taucc"
    df.loc[fast & (df["seed"] < 2), "k_found"] = 2
    df.loc[df["algorithm"] == "dp_taucc", "k_found"] = 1
    lines = report.clusters_section({"fig2_real": df})
    assert lines[0] == "## Fewer clusters than asked (non-private references)"
    assert "| fig2_real | Fast-τCC | cstr | 2 of 3 | 3 | 2 |" in lines
    assert not any("DP-τCC" in line for line in lines)
    assert report.clusters_section({"fig2_real": real.assign(p_n_row_clusters=3,
                                                             k_found=3)}) == []
    note = figures.fewer_clusters_note(df, ["fast_taucc"])
    assert note.startswith("Fast-τCC found fewer row clusters than asked in 2 of 3 runs")
