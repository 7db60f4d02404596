"""DPM's interval quantile as an audited call site: it declares its law over the public grid
(``"exponential-grid"``: u as a step function of the grid index, Δ in the ``"linf"`` norm),
so the ledger's privacy map, the exact pair cost, the declared-move check and the sweep all
read it. A sensitivity without its factor p (the mechanism run at p× the ε charged, the
ledger none the wiser) is a violation there; the correct code is not."""

from __future__ import annotations

import numpy as np
import pytest

from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.experiment import AuditJob
from dptaucc.audit.methods import call_site_setup
from dptaucc.audit.pair_cost import declared_move_exceeded, pair_cost
from dptaucc.audit.transcript import open_call, record


def _without_p(monkeypatch):
    """The interval sensitivity of corrected mode without its factor p."""
    import dptaucc.baselines.dpm.core as core

    original = core.interval_sensitivity
    monkeypatch.setattr(core, "interval_sensitivity",
                        lambda p, corrected: original(1, corrected))


def _interval_setup():
    [setup] = [s for s in call_site_setup("dpm") if s.pair.name == "row_inside_gaps"]
    return setup, AuditJob("dpm", "corrected", None, 1, scope="call-site").factory(setup.params)


def _interval_calls():
    setup, build = _interval_setup()
    history = record(build(0), setup.pair.D)
    assert history[1].step == "interval_size"
    return [open_call(build(1), X, history, 1)[0] for X in (setup.pair.D, setup.pair.D_prime)]


def test_the_interval_call_declares_one_grid_law_and_is_no_longer_skipped():
    from dptaucc.audit.ledger_check import check_fit

    assert all("interval_size" not in s.skip for s in call_site_setup("dpm"))
    a, b = _interval_calls()
    (decl,) = a.calibration.declarations  # one call, one law (the inner choice's replaced)
    assert decl.mechanism == "exponential-grid" and decl.norm == "linf"
    assert decl.sensitivity == pytest.approx(1.35 * 2)  # max(q, 2 − q)·p, p = 2
    setup, build = _interval_setup()
    checked = check_fit(build(0), setup.pair.D)
    [call] = [c for c in checked.calls if c.step == "interval_size"]
    assert call.epsilon_cost == pytest.approx(call.epsilon_charged) and checked.verdict == "ok"
    # the pair moves u by (2 − q)·p = Δ both ways: within Δ, at 0.98 of the charge
    assert declared_move_exceeded(a.calibration, b.calibration) == ""
    cost = pair_cost(a.calibration, b.calibration).epsilon
    assert 0.95 * a.epsilon < cost <= a.epsilon


def test_dropping_p_from_the_interval_sensitivity_is_a_violation_at_the_call_site(monkeypatch):
    """Δ = 1.35 instead of 1.35·p: drawn at β = Δ/ε, charged ε, so the ledger and its privacy
    map agree; the pair's exact cost (1.74 × the charge) and the declared move see it."""
    setup, build = _interval_setup()
    honest = audit_call_site(build, setup.pair.D, setup.pair.D_prime, 1, n_fits=400,
                             alpha=0.05, n_histories=1, looks=1)
    assert honest.step == "interval_size" and not honest.pair_exceeds
    assert honest.verdict == "ok"
    _without_p(monkeypatch)
    a, b = _interval_calls()
    assert "the utility moved by 2.7 at an output > sensitivity 1.35" in \
        declared_move_exceeded(a.calibration, b.calibration)
    broken = audit_call_site(build, setup.pair.D, setup.pair.D_prime, 1, n_fits=400,
                             alpha=0.05, n_histories=1, looks=1)
    assert broken.epsilon_pair > 1.5 * broken.epsilon_claimed
    assert broken.pair_exceeds and broken.verdict == "violation"


def test_dropping_p_from_the_interval_sensitivity_is_found_by_the_sweep(monkeypatch):
    from dptaucc.audit.neighbour_sweep import sweep_record

    _without_p(monkeypatch)
    job = AuditJob("dpm", "corrected", 1.0, 10)
    rec = sweep_record(job.factory, "dpm", seed=3, n_pairs=8)
    assert rec["verdict"] == "violation", rec["event"]
    assert "interval_size" in rec["event"]


def test_the_audited_quantile_draws_what_the_plain_one_does():
    """Declaring the grid law changes no draw: under the audit hook the released grid point
    is the one the same sampler gives without it."""
    from dptaucc.baselines.dpm.interval import smith_quantile

    from dptaucc.audit.ledger_check import observing
    from dptaucc.privacy import PrivacyLedger, make_sampler

    values = np.random.default_rng(0).exponential(3.0, 500)
    for seed in range(5):
        plain = smith_quantile(values, 0.65, 0.0, 200.0, 2.0, 3.3, make_sampler(seed),
                               PrivacyLedger())
        with observing() as calls:
            audited = smith_quantile(values, 0.65, 0.0, 200.0, 2.0, 3.3, make_sampler(seed),
                                     PrivacyLedger())
        assert audited == plain
        [(step, mech, _, calib)] = calls
        assert [d.mechanism for d in calib.declarations] == ["exponential-grid"]
        assert calib.laws() == ["choice", "uniform"]


def test_an_interval_law_drawn_with_other_weights_is_found_by_the_law_fit(monkeypatch):
    """The interval pick drawn with the runs' lengths weighted by 1/ε instead of Δ/ε (a
    held-out bug, recompiled here from the source with that one change) while the call still
    declares and is charged for P(run) ∝ L·exp(u/(2β)): no single output concentrates, no
    declared input moves, only the draws' fit to the declared law sees it
    (dptaucc.audit.law_check.grid_fit_differs)."""
    import inspect
    import textwrap

    import dptaucc.baselines.dpm.core as core
    import dptaucc.baselines.dpm.interval as interval

    setup, build = _interval_setup()

    def audited():
        return audit_call_site(build, setup.pair.D, setup.pair.D_prime, 1, n_fits=2000,
                               alpha=0.05, n_histories=1, looks=1)

    honest = audited()
    assert honest.step == "interval_size" and honest.law_differs == "", honest.law_differs
    source = textwrap.dedent(inspect.getsource(interval.smith_quantile))
    assert source.count("sensitivity / epsilon") == 1
    namespace = dict(vars(interval))
    exec(compile(source.replace("sensitivity / epsilon", "1.0 / epsilon"), "mutant", "exec"),
         namespace)
    monkeypatch.setattr(core, "smith_quantile", namespace["smith_quantile"])
    broken = audited()
    assert "do not fit the declared law" in broken.law_differs, broken.law_differs
    assert broken.verdict == "violation"
