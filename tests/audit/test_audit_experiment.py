"""The audit experiment end to end on a tiny grid: table, report section, figure, CLI guards."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from dptaucc.audit.__main__ import main
from dptaucc.audit.experiment import RECORD_COLUMNS, load_config, measurable_max, plan, run_all
from dptaucc.audit.report import audit_section, draw_figure, verdicts


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    cfg = load_config("quick")
    # a sweep of 8 random pairs (every correct method on 40: test_neighbour_sweep.py)
    cfg.update(modes=["paper", "corrected"], epsilons=[1.0], n_fits=40, n_fits_per_method={},
               call_site_modes=[], neighbour_sweep_pairs=8)
    out = tmp_path_factory.mktemp("results") / "audit.parquet"
    run_all(cfg, plan(cfg, ["dp_taucc", "fast_taucc"]), out, n_jobs=1, progress=False)
    return out


def test_records(table):
    df = pd.read_parquet(table)
    assert list(df.columns) == RECORD_COLUMNS
    assert set(df["scope"]) == {"end-to-end", "ledger", "refit", "sweep"}
    assert set(df["size"]) == {"quick"}
    # one refit record and one neighbour sweep per private method, in its first corrected job
    for scope in ("refit", "sweep"):
        rows = df[df["scope"] == scope]
        assert rows[["method", "mode", "verdict"]].values.tolist() == [["dp_taucc", "corrected",
                                                                       "ok"]]
    assert df[df["scope"] == "sweep"]["epsilon_pair"].iloc[0] <= 1.0 + 1e-6
    ledger, df = df[df["scope"] == "ledger"], df[df["scope"] == "end-to-end"]
    # one ledger record per private scenario: the paper mode's ∞ is reported, corrected is ok
    assert len(ledger) == 8 and set(ledger["method"]) == {"dp_taucc"}
    assert set(ledger[ledger["mode"] == "corrected"]["verdict"]) == {"ok"}
    assert set(ledger[ledger["mode"] == "paper"]["verdict"]) == {"violation"}
    assert len(df) == 9  # DP-τCC: four scenarios per mode
    assert set(df["bug"]) == {""}
    taucc = df[df["method"] == "dp_taucc"]
    assert taucc["alpha"].tolist() == pytest.approx([0.05 / 4] * len(taucc))
    assert (df[df["method"] == "fast_taucc"]["alpha"] == 0.05).all()
    paper = taucc[taucc["mode"] == "paper"].iloc[0]
    assert math.isinf(paper["epsilon_spent"]) and not paper["end_to_end_dp"]
    corrected = taucc[taucc["mode"] == "corrected"].iloc[0]
    assert corrected["epsilon_spent"] == pytest.approx(1.0) and corrected["end_to_end_dp"]
    assert corrected["epsilon_claimed"] == 1.0 and corrected["verdict"] in ("ok", "no evidence")
    fast = df[df["method"] == "fast_taucc"].iloc[0]
    assert fast["mode"] == "–" and math.isnan(fast["epsilon"]) and math.isinf(fast["epsilon_spent"])
    assert fast["verdict"] == "not DP" and fast["epsilon_lower"] > 0.5  # the exact table
    assert df["git_sha"].notna().all()
    assert "fit raised" in df["events"].iloc[0]


def test_report_section_and_figure(table, tmp_path):
    lines = audit_section(table.parent)
    text = "\n".join(lines)
    assert lines[0].startswith("## Empirical privacy audit")
    assert "**DP-τCC (paper)**" in text and "**DP-τCC (corrected)**" in text
    assert "**Fast-τCC (not DP)**" in text and "| scope | fit ε | claim |" in text
    assert "**Expected.**" in text and "**Found.**" in text
    assert "### The ledger against the noise" in text
    assert "### Refits against fresh fits" in text and "| dp_taucc | corrected |" in text
    paths = draw_figure(table, tmp_path / "figures")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size for p in paths)
    assert audit_section(tmp_path) == []  # no table, no section


def _row(method, mode, eps, lower):
    return {"method": method, "mode": mode, "epsilon": eps, "epsilon_lower": lower,
            "scope": "end-to-end", "step": "", "epsilon_claimed": eps,
            "event": "e", "epsilon_spent": eps, "n_fits": 10, "pair": "p",
            "epsilon_lower_max": 5.0, "git_sha": "abc"}


def test_verdicts_name_corrected_bugs_and_missed_expectations():
    df = pd.DataFrame([_row("dp_taucc", "paper", 1.0, 3.0), _row("dp_taucc", "corrected", 1.0, 2.5),
                       _row("dp_kmeans", "paper", 1.0, 0.4), _row("dpm", "corrected", 1.0, 1.0),
                       _row("fccm", "–", math.nan, 4.0)])
    v = verdicts(df)
    assert v["paper_above"] == ["DP-τCC"]
    assert v["corrected_above"] == ["DP-τCC at ε = 1 (up to 2.50 for a claim of 1: "
                                    "end-to-end p, e)"]
    assert v["paper_expected_missing"] == ["DP-KMeans"]


def test_measurable_max_is_the_all_or_nothing_event():
    assert measurable_max(3000, 5, 0.05) == pytest.approx(math.log(3000 / 6), abs=0.05)
    assert measurable_max(200, 5, 0.05) < measurable_max(3000, 5, 0.05)


def test_quick_run_never_overwrites_the_full_table(tmp_path):
    with pytest.raises(SystemExit):
        main(["--size", "quick", "--results-dir", str(tmp_path), "--output",
              str(tmp_path / "audit.parquet"), "--no-progress"])


def test_dry_run_with_power_is_refused_before_any_work(capsys):
    """--power --dry-run used to ignore --dry-run and run the whole power measurement."""
    with pytest.raises(SystemExit) as stop:
        main(["--power", "--dry-run", "--methods", "dp_taucc", "--jobs", "1"])
    assert stop.value.code == 2
    assert "does not apply to --power" in capsys.readouterr().err


def test_dry_run_estimates(capsys, monkeypatch):
    from dptaucc.audit import experiment

    # the call sites timed at a tenth of the draws (the estimate's arithmetic: the next test)
    monkeypatch.setattr(experiment, "ESTIMATE_DRAWS", (5_000, 20_000))
    assert main(["--size", "quick", "--methods", "dp_kmeans", "--dry-run", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "dp_kmeans/corrected ε=1" in out and "call sites" in out and "estimated total" in out


def test_call_site_estimate_counts_each_calls_own_draws(monkeypatch):
    """The --dry-run estimate of a call-site job costs each call at the draws it really gets
    (DP-KMeans' second sums are drawn 4 times the job's draws): it once assumed every call got
    the job's draws."""
    from types import SimpleNamespace

    from dptaucc.audit import experiment

    per_draw = 1e-6

    def timed(build, D, D_prime, index, n_fits, **kwargs):  # a run costing 1 s + its draws
        return SimpleNamespace(elapsed_s=1.0 + n_fits * per_draw)

    monkeypatch.setattr(experiment, "audit_call_site", timed)
    [job] = [j for j in plan(load_config("quick"), ["dp_kmeans"]) if j.scope == "call-site"]
    units = experiment._n_units(job, None)
    draws = [experiment.unit_draws(job, u) for u in units]
    assert max(draws) == 4 * job.n_fits and sum(draws) > len(units) * job.n_fits
    [row] = experiment.estimate([job], n_jobs=1)
    assert row["estimated_s"] == pytest.approx(len(units) + per_draw * sum(draws))


def _python_block(path: str, first: str) -> str:
    text = (Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return next(b for b in blocks if first in b)


@pytest.mark.parametrize("path", ["docs/audit.md", "README.md"])
def test_the_documented_example_runs(path):
    """The audit example of docs/audit.md and of the README runs (fewer fits and draws: the
    blocks run as written, at their own sizes, in tests/packaging/test_doc_examples.py)."""
    code = _python_block(path, "from dptaucc.audit import").replace("n_fits=500", "n_fits=30")
    code = code.replace("n_fits=100_000", "n_fits=2_000")
    exec(compile(code, path, "exec"), {"__name__": "example"})


def test_a_methods_gate_holds_at_alpha_in_all(monkeypatch):
    """The corrected jobs of one method (call sites and every ε end to end) share the
    config's α; paper-mode and non-private jobs keep it whole."""
    import dptaucc.audit.experiment as experiment

    cfg = load_config("full")
    cfg.update(epsilons=[0.5, 1.0])
    jobs = plan(cfg, ["dp_taucc", "dp_kmeans", "fast_taucc"])
    seen = []
    monkeypatch.setattr(experiment, "run_job", lambda job, **kw: seen.append(
        (job, kw["alpha"])) or [])
    run_all(cfg, jobs, None, n_jobs=1, progress=False)
    for method in ("dp_taucc", "dp_kmeans"):
        corrected = [a for job, a in seen if job.method == method and job.mode == "corrected"]
        assert len(corrected) == 3 and sum(corrected) == pytest.approx(0.05)
        assert all(a == 0.05 for job, a in seen if job.method == method and job.mode == "paper")
    assert [a for job, a in seen if job.method == "fast_taucc"] == [0.05]


def test_every_method_is_audited_on_both_input_forms():
    """A method's first call-site setup is also audited on its pair's twin in the other input
    form (a sparse pair filled, a half-full one widened), with the relation unchanged."""
    import numpy as np
    from dptaucc.baselines.dpm import rows

    from dptaucc.audit.experiment import AuditJob, _n_units
    from dptaucc.audit.pairs import DENSE_FILL

    assert DENSE_FILL == rows.DENSE_FILL  # the threshold the twin crosses is the methods' own
    for method, form in (("dp_taucc", "(filled)"), ("dpm", "(widened)")):
        units = _n_units(AuditJob(method, "corrected", None, 10, scope="call-site"), None)
        twins = [(setup, call) for setup, call in units if setup.pair.name.endswith(form)]
        assert len(twins) == 2, [s.pair.name for s, _ in units]
        setup = twins[0][0]
        first = next(s for s, _ in units if not s.pair.name.endswith(form))
        D, Dp = setup.pair.D, setup.pair.D_prime
        filled = D.nnz >= DENSE_FILL * D.shape[0] * D.shape[1]
        assert filled == (form == "(filled)")
        n = min(D.shape[0], Dp.shape[0])
        change = (Dp[:n, :first.pair.D.shape[1]] - D[:n, :first.pair.D.shape[1]]).toarray()
        want = (first.pair.D_prime[:n] - first.pair.D[:n]).toarray()
        assert np.array_equal(change, want)
        assert setup.limit_of("any step").startswith("the other-form twin")


def test_the_gate_runs_the_seeded_primitives_and_exits_3_on_a_broken_one(tmp_path, monkeypatch,
                                                                           capsys):
    """``--methods primitives`` (and a run without ``--methods``) audits every primitive on
    the seeded sampler, α split over them; a primitive whose noise is drawn for half its
    sensitivity makes the gate exit 3. Both runs on 2,000 outputs per side: the quick config's
    400,000 per primitive are test_primitives.py's (each primitive within its ε there, at
    α = 0.05, and above it with half its noise); the privacy map reads a halved scale from any
    number of outputs."""
    import dptaucc.audit.__main__ as cli
    from dptaucc.audit import primitives

    load = cli.load_config
    monkeypatch.setattr(cli, "load_config", lambda size: {**load(size), "primitive_outputs": 2000})
    out = tmp_path / "p.parquet"
    args = ["--size", "quick", "--methods", "primitives", "--jobs", "1", "--no-progress",
            "--output", str(out)]
    assert main(args) == 0
    df = pd.read_parquet(out)
    names = primitives.primitive_names(secure=False)
    from dptaucc.audit.conformance import GROUPS

    # the exact conformance records first (no share of α), then one record per primitive
    assert df["step"].tolist() == ([f"conformance: {g}" for g in GROUPS]
                                   + [f"{n} (seeded)" for n in names])
    assert (df["method"] == "primitives").all() and (df["verdict"] == "ok").all()
    assert (df[df["step"].str.endswith("(seeded)")]["n_fits"] == 2000).all()
    assert df["alpha"].sum() == pytest.approx(0.05)
    run, uses_delta = primitives.PRIMITIVES["exponential-many"]

    def halved(side, n, eps, delta, sampler, ledger):
        from dptaucc.privacy.checks import ScaledSampler
        return run(side, n, eps, delta, ScaledSampler(sampler, 0.5), ledger)

    monkeypatch.setitem(primitives.PRIMITIVES, "exponential-many", (halved, uses_delta))
    capsys.readouterr()
    assert main(args) == 3
    assert "VIOLATION primitives" in capsys.readouterr().out
    df = pd.read_parquet(out)
    assert df[df["verdict"] == "violation"]["step"].tolist() == ["exponential-many (seeded)"]
