"""collect, figures and report from a small stored table (records written through the store)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dptaucc.bench import aggregate, collect, figures, report
from dptaucc.bench.aggregate import mean_std, pooled
from dptaucc.bench.calibration import calibration
from dptaucc.bench.store import RunStore


def _rec(i, exp, alg, mode, ds, eps, seed, **kw):
    rng = np.random.default_rng(i)
    private = alg not in ("fast_taucc", "fccm")
    rec = {"run_id": f"{exp}-{i:05d}", "experiment": exp, "algorithm": alg,
           "mode": mode if private else None, "dataset": ds, "seed": seed,
           "epsilon": eps if private else float("nan"), "delta": float("nan"),
           "epsilon_spent": (eps * (3.0 if (alg == "dp_kmeans" and mode == "paper") else 1.0))
           if private else float("nan"), "delta_spent": 0.0,
           "end_to_end_dp": private and mode == "corrected",
           "non_private_steps": json.dumps([] if mode == "corrected" else ["final"]),
           "private": private, "n_rows": 100, "n_cols": 50, "nnz": 500, "n_classes": 3,
           "nmi_rows": float(rng.uniform(0, 1)), "ari_rows": float(rng.uniform(-0.1, 1)),
           "nmi_cols": float(rng.uniform(0, 1)), "ari_cols": float(rng.uniform(0, 1)),
           "tau_rc": float(rng.uniform(0, 0.5)), "tau_cr": float(rng.uniform(0, 0.5)),
           "tau_hat_rc": float(rng.uniform(0, 0.3)), "tau_hat_cr": float(rng.uniform(0, 0.3)),
           "k_found": 3, "l_found": 3, "fit_time_s": float(rng.uniform(0.01, 1)),
           "peak_rss_mb": 200.0, "status": "ok", "error": None, "git_sha": "abc",
           "versions": "{}", "started_at": "2026-01-01T00:00:00+00:00", "blas_threads": 1,
           "ledger": "[]"}
    rec.update(kw)
    return rec


@pytest.fixture
def stored(results_dir):
    i = 0
    runs = results_dir / "runs"
    for exp in ("fig2_real", "fig3_iterations", "supp_h", "supp_synthetic", "supp_runtime"):
        store = RunStore(runs, exp)
        for seed in range(3):
            if exp == "fig2_real":
                for ds in ("cstr", "classic3"):
                    for alg in ("dp_taucc", "dp_kmeans", "dphd", "dpnmf", "dpm"):
                        for mode in ("paper", "corrected"):
                            for eps in (0.5, 0.99999, 2.0):
                                i += 1
                                store.write(_rec(i, exp, alg, mode, ds, eps, seed))
                    for alg in ("fast_taucc", "fccm"):
                        i += 1
                        store.write(_rec(i, exp, alg, None, ds, 1.0, seed))
                i += 1
                store.write(_rec(i, exp, "colored_noise", "paper", "cstr", 0.5, seed,
                                 status="error", error="ValueError: boom"))
            elif exp in ("fig3_iterations", "supp_h"):
                key, vals = (("p_n_iterations", (2, 4)) if exp == "fig3_iterations"
                             else ("p_h", (0.1, 0.9)))
                for v in vals:
                    for eps in (0.5, 5.0):
                        i += 1
                        store.write(_rec(i, exp, "dp_taucc", "paper", "cstr", eps, seed,
                                         **{key: v}))
            else:
                for alg in ("dp_taucc", "fast_taucc"):
                    for m in (10, 100, 1000):
                        grid = (0.5, 0.99999) if exp == "supp_synthetic" else (0.99999,)
                        for eps in grid[:1] if alg == "fast_taucc" else grid:  # once per seed
                            i += 1
                            store.write(_rec(i, exp, alg, "paper", "biclusters", eps, seed,
                                             n_cols=m, p_n_cols=m))
    return results_dir


def test_collect_figures_report(stored):
    counts = collect.collect(stored)
    assert counts["fig2_real"] == 3 * (2 * (5 * 2 * 3 + 2) + 1)
    df = pd.read_parquet(stored / "fig2_real.parquet")
    assert list(df.columns[:6]) == ["run_id", "experiment", "algorithm", "mode", "dataset",
                                    "seed"]
    assert df["epsilon"].dtype == float and (df["status"] == "error").sum() == 3
    csv = pd.read_csv(stored / "fig2_real.csv")
    assert len(csv) == len(df) and "ledger" not in csv.columns

    files = figures.make_figures(stored, formats=("png",))  # PDFs: same code path, slower
    names = {p.name for p in files}
    for stem in ("fig2_nmi_paper", "fig2_nmi_corrected", "supp_fig1_ari_paper",
                 "fig2_extra_methods_corrected", "fig3_supp_fig2_iterations_tau_paper",
                 "supp_fig3_h_tau_paper", "supp_fig4_synthetic_nmi_vs_eps_paper",
                 "supp_fig5_synthetic_ari_vs_size_paper", "supp_fig6_runtime"):
        assert f"{stem}.png" in names, stem
    assert all(p.stat().st_size > 5000 for p in files)

    text = report.write_report(stored).read_text()
    cal = calibration().set_index(["dataset", "algorithm", "eps"])["nmi"]
    # DP-τCC next to the paper's values: classic3 at ε = 0.5, cstr at the paper's "1" (0.99999)
    assert f"[paper {cal['classic3', 'dp_taucc', 0.5]:.2f}]" in text
    assert f"[paper {cal['cstr', 'dp_taucc', 0.99999]:.2f}]" in text
    assert "| Fig. 2: row NMI vs ε, real data | 192/195 ok, 3 seeds |" in text
    assert "| DP-KMeans | paper | one row replaced (covers one cell) | 18 | 3 / 3 / 3 |" in text
    assert "Colored noise | 3 | 3 | ValueError: boom" in text
    assert "- fig2_real: 195 records, 3 seeds, datasets classic3, cstr" in text


def test_aggregation_matches_the_notebooks(stored):
    collect.collect(stored, ["fig2_real"])
    df = pd.read_parquet(stored / "fig2_real.parquet")
    d = df[(df["algorithm"] == "dp_taucc") & (df["mode"] == "paper") & (df["dataset"] == "cstr")]
    agg = mean_std(d, ["epsilon"], "nmi_rows").set_index("epsilon")
    sel = d[d["epsilon"] == 0.5]["nmi_rows"]
    assert agg.loc[0.5, "mean"] == pytest.approx(sel.mean())
    assert agg.loc[0.5, "std"] == pytest.approx(np.std(sel.to_numpy(), ddof=1))
    assert agg.loc[0.5, "n"] == 3
    m, s, n = pooled(df[(df["algorithm"] == "fast_taucc") & (df["dataset"] == "cstr")],
                     "nmi_rows")
    assert n == 3 and s > 0
    # error records are left out of every aggregate
    assert mean_std(df[df["algorithm"] == "colored_noise"], ["epsilon"], "nmi_rows").empty


def test_dry_run_estimate_from_stored_timings(stored, composer):
    from dptaucc.bench import reproduce as rp
    from dptaucc.bench.configs import enumerate_jobs

    times = rp.measured_times(str(stored / "runs"))
    jobs = enumerate_jobs(composer, "fig3_iterations", "quick",
                          [f"paths.results_dir={stored / 'other'}"],
                          {"dataset": "cstr", "algorithm.params.n_iterations": "2,4,6",
                           "epsilon": "0.5,1.5,5", "seed": "range(2)"})
    cpu, unknown = rp.estimate(jobs, times)
    assert unknown == 0 and len(jobs) == 18
    sel = pd.concat([pd.DataFrame(list(RunStore(stored / "runs", e).records()))
                     for e in ("fig3_iterations", "supp_h", "fig2_real")])
    sel = sel[(sel["algorithm"] == "dp_taucc") & (sel["mode"] == "paper")
              & (sel["dataset"] == "cstr")]
    assert cpu == pytest.approx(18 * sel["fit_time_s"].mean())


@pytest.mark.parametrize("n_sizes", [9, 26, 32])
def test_synthetic_report_section_on_partial_size_grids(n_sizes):
    """A sweep stopped part-way stores any number of sizes; the report picks 8 spread over them."""
    sizes = [10 * (i + 1) for i in range(n_sizes)]
    df = pd.DataFrame([_rec(i, "supp_synthetic", "dp_taucc", "paper", "biclusters", 0.99999, 0,
                            n_cols=m) for i, m in enumerate(sizes)])
    text = "\n".join(report.synthetic_section(df))
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    shown = [int(c.strip()[2:]) for c in header.strip("|").split("|")
             if c.strip().startswith("m=")]
    assert shown[0] == sizes[0] and shown[-1] == sizes[-1] and len(shown) == 8


def test_figures_and_report_beside_the_privacy_audit_table(stored):
    """results/ also holds audit.parquet (make audit): not an experiment table, so figures and
    report leave it to the audit section instead of reading it as job records."""
    from dptaucc.audit.experiment import load_config, plan, run_all

    collect.collect(stored, ["fig2_real"])
    cfg = load_config("quick")
    cfg.update(epsilons=[1.0], n_fits=4, n_fits_per_method={}, time_limit=30)
    run_all(cfg, plan(cfg, ["fast_taucc"]), stored / "audit.parquet", n_jobs=1, progress=False)
    assert list(figures.experiment_tables(stored)) == ["fig2_real"]
    assert figures.make_figures(stored, formats=("png",))
    text = report.write_report(stored).read_text()
    assert "- fig2_real: 195 records" in text and "## Empirical privacy audit" in text


def _table(results_dir, exp="fig2_real"):
    return pd.read_parquet(results_dir / f"{exp}.parquet").set_index("run_id")


def test_collect_merges_into_the_existing_table(results_dir):
    """A user adds a method by running only its jobs: the committed rows stay, the newer record
    of a run_id wins, and --replace rebuilds from the local records alone."""
    import shutil

    store = RunStore(results_dir / "runs", "fig2_real")
    for i in range(4):
        store.write(_rec(i, "fig2_real", "dp_taucc", "paper", "cstr", 0.5, i))
    collect.collect(results_dir)
    committed = _table(results_dir)
    assert len(committed) == 4
    shutil.rmtree(results_dir / "runs")  # a fresh clone: the table only

    store.write(_rec(10, "fig2_real", "mine", "corrected", "cstr", 0.5, 0))       # a new method
    store.write(_rec(1, "fig2_real", "dp_taucc", "paper", "cstr", 0.5, 1, nmi_rows=0.99,
                     started_at="2026-02-01T00:00:00+00:00"))                   # rerun, newer
    store.write(_rec(2, "fig2_real", "dp_taucc", "paper", "cstr", 0.5, 2, nmi_rows=0.01,
                     started_at="2025-12-01T00:00:00+00:00"))                   # stale copy
    assert collect.main(["--results-dir", str(results_dir)]) == 0
    merged = _table(results_dir)
    assert len(merged) == 5 and "fig2_real-00010" in merged.index
    assert merged.loc["fig2_real-00001", "nmi_rows"] == 0.99
    assert merged.loc["fig2_real-00002", "nmi_rows"] == committed.loc["fig2_real-00002",
                                                                       "nmi_rows"] != 0.01
    for rid in ("fig2_real-00000", "fig2_real-00003"):
        assert merged.loc[rid, "nmi_rows"] == committed.loc[rid, "nmi_rows"]
    assert len(pd.read_csv(results_dir / "fig2_real.csv")) == 5

    assert collect.collect(results_dir, replace=True) == {"fig2_real": 3}
    assert set(_table(results_dir).index) == {"fig2_real-00010", "fig2_real-00001",
                                              "fig2_real-00002"}


def test_a_complete_paper_run_rebuilds_its_tables_from_the_store(results_dir, monkeypatch):
    """Rows of older code (other job ids) do not survive a full reproduction; quick and partial
    runs keep merging."""
    from dptaucc.bench import outputs
    from dptaucc.bench import reproduce as rp

    folder = results_dir / "quick"  # the paper folder itself only takes complete grids
    store = RunStore(folder / "runs", "fig2_real")
    store.write(_rec(1, "fig2_real", "dp_taucc", "paper", "cstr", 0.5, 0))
    outputs.publish(folder, ["fig2_real"], steps=("collect",))
    store.path("fig2_real-00001").unlink()
    store.write(_rec(2, "fig2_real", "dp_taucc", "paper", "cstr", 0.5, 0))  # new code, new id
    outputs.publish(folder, ["fig2_real"], steps=("collect",), replace=True)
    assert list(_table(folder).index) == ["fig2_real-00002"]

    calls = []
    monkeypatch.setattr(outputs, "publish", lambda *a, **kw: calls.append(kw["replace"]))
    rp._outputs(str(folder), ["fig2_real"], True, [])
    rp._outputs(str(folder), ["fig2_real"], False, [])
    assert calls == [True, False]


def test_merge_keeps_the_local_record_on_a_tie_and_the_timed_one_over_a_missing_time():
    old = collect.records_frame([_rec(1, "e", "dp_taucc", "paper", "cstr", 0.5, 0, nmi_rows=0.1),
                                 _rec(2, "e", "dp_taucc", "paper", "cstr", 0.5, 1, nmi_rows=0.2)])
    new = collect.records_frame([_rec(1, "e", "dp_taucc", "paper", "cstr", 0.5, 0, nmi_rows=0.3),
                                 _rec(2, "e", "dp_taucc", "paper", "cstr", 0.5, 1, nmi_rows=0.4,
                                      started_at=None)])
    merged = collect.merge(old, new).set_index("run_id")
    assert merged.loc["e-00001", "nmi_rows"] == 0.3 and merged.loc["e-00002", "nmi_rows"] == 0.2


def _titles(fig):
    texts = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    return "\n".join(texts + [ax.get_title() for ax in fig.axes])


def test_every_figure_states_its_scale(stored):
    import matplotlib.pyplot as plt

    collect.collect(stored)
    seen = 0
    for exp, df in figures.experiment_tables(stored).items():
        for name, fig in figures.experiment_figures(exp, df):
            text = _titles(fig)
            assert "3 seeds per point" in text or "3 seeds per cell" in text, (name, text)
            seen += 1
            plt.close(fig)
    assert seen == 13
    # uneven scales are shown as a range; bands say how many runs they pool
    df = figures.experiment_tables(stored)["fig2_real"]
    uneven = df[~((df["seed"] == 2) & (df["epsilon"] == 0.5) & (df["algorithm"] == "dp_taucc"))]
    fig = figures.fig_metric_vs_eps(uneven, "nmi_rows", "paper", ["dp_taucc"], ["fast_taucc"],
                                    "t")
    assert " ".join(fig._suptitle.get_text().split()) == (
        "t neighbours: one cell +1 (DP-τCC) 2–3 seeds per point; a non-private method's band: "
        "mean ± 1 std of its 3 runs (it takes no ε)")
    plt.close(fig)


def test_unknown_algorithms_are_discovered_with_their_own_style(stored):
    import matplotlib.pyplot as plt

    store = RunStore(stored / "runs", "fig2_real")
    for seed in range(2):
        for eps in (0.5, 2.0):
            store.write(_rec(900 + 2 * seed + int(eps), "fig2_real", "my_method", "corrected",
                             "cstr", eps, seed))
        store.write(_rec(950 + seed, "fig2_real", "my_reference", None, "cstr", 1.0, seed,
                         private=False))
    collect.collect(stored, ["fig2_real"])
    df = collect.load_table(stored, "fig2_real")
    assert figures.discovered(df) == (["my_method"], ["my_reference"])
    figures.register_algorithms(["my_method", "my_reference"])
    styles = {a: figures.style(a) for a in (*aggregate.LABELS, "my_method", "my_reference")}
    assert len(set(styles.values())) == len(styles)  # nobody shares colour and marker
    figs = dict(figures.experiment_figures("fig2_real", df))
    for name in ("fig2_nmi_corrected", "supp_fig1_ari_corrected", "fig2_extra_methods_corrected"):
        labels = figs[name].legends[0].get_texts()
        assert {"my_method (not declared DP)", "my_reference (not DP)"} <= {
            t.get_text() for t in labels}, name
    for fig in figs.values():
        plt.close(fig)
    text = report.write_report(stored).read_text()
    cstr = text[text.index("### cstr (NMI)"):]
    header = next(line for line in cstr.splitlines() if line.startswith("| ε |"))
    assert header.endswith("| my_method (corrected) |")
    assert "- my_reference (not DP, 2 runs)" in text


def test_figures_drawn_in_new_processes_are_the_same_files(stored):
    """Worker processes draw byte-identical PNGs, in the styles this process handed out (a
    name registered before shifts the spare styles of the table's own algorithms)."""
    store = RunStore(stored / "runs", "fig2_real")
    for seed in range(2):
        store.write(_rec(980 + seed, "fig2_real", "my_method", "corrected", "cstr", 0.5, seed))
    collect.collect(stored, ["fig2_real", "supp_runtime"])  # their figures only: faster
    figures.register_algorithms(["a_method_drawn_earlier"])
    serial = {p: p.read_bytes() for p in figures.make_figures(stored, formats=("png",))}
    parallel = figures.make_figures(stored, formats=("png",), n_jobs=2)
    assert parallel == list(serial) and len(parallel) > 3
    assert all(p.read_bytes() == serial[p] for p in parallel)
