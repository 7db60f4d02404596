"""DPM's leaf sums as an audited call site (:func:`dptaucc.baselines.dpm.audit.leaf_sums_site`):
the added row, of L2 norm 1 once normalised, moves one leaf's sum by exactly the declared
sensitivity, so the pair's exact cost is the charge and the sampled bound comes close to it;
the catalogue bug that calibrates the sums for half the sensitivity is a violation there."""

from __future__ import annotations

import numpy as np
import pytest

from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.experiment import AuditJob
from dptaucc.audit.methods import call_site_setup
from dptaucc.audit.pair_cost import declared_move_exceeded, pair_cost
from dptaucc.audit.transcript import open_call, record
from dptaucc.audit.workers import bug_context

BUG = "dpm.leaf_sums_sensitivity_halved"


def _setup():
    [setup] = [s for s in call_site_setup("dpm") if s.first == 4]
    return setup, AuditJob("dpm", "corrected", None, 1, scope="call-site").factory(setup.params)


def _leaf_sums_calls(bug=None):
    setup, build = _setup()
    with bug_context(bug):
        history = record(build(0), setup.pair.D)
        assert history[4].step == "leaf_sums"
        return [open_call(build(1), X, history, 4)[0]
                for X in (setup.pair.D, setup.pair.D_prime)]


def test_the_added_row_moves_one_leaf_sum_by_the_declared_bound():
    a, b = _leaf_sums_calls()
    (decl,) = a.calibration.declarations
    assert decl.mechanism == "gaussian" and decl.norm == "l2" and decl.sensitivity == 1.0
    diff = np.asarray(b.calibration.declarations[0].exact) - np.asarray(decl.exact)
    assert np.count_nonzero(diff) == 1 and np.linalg.norm(diff) == pytest.approx(1.0)
    assert declared_move_exceeded(a.calibration, b.calibration) == ""
    assert (a.epsilon, round(a.delta, 4)) == (1.94, 0.0477)
    assert pair_cost(a.calibration, b.calibration, a.delta).epsilon == pytest.approx(a.epsilon)


def test_the_leaf_sums_call_site_comes_close_to_its_charge():
    setup, build = _setup()
    res = audit_call_site(build, setup.pair.D, setup.pair.D_prime, 4, n_fits=200_000,
                          alpha=0.05, n_histories=1, looks=1)
    assert res.step == "leaf_sums" and res.verdict == "ok", res.event
    assert 0.85 * res.epsilon_claimed < res.epsilon_lower <= res.epsilon_claimed


def test_halving_the_leaf_sums_sensitivity_is_a_violation_at_the_call_site():
    """σ calibrated (and declared) for Δ = 1/2: ledger and privacy map agree, the pair's exact
    cost and the sampled bound do not."""
    a, b = _leaf_sums_calls(BUG)
    assert "L2 move 1 > sensitivity 0.5" in declared_move_exceeded(a.calibration,
                                                                   b.calibration)
    setup, build = _setup()
    res = audit_call_site(build, setup.pair.D, setup.pair.D_prime, 4, n_fits=50_000,
                          alpha=0.05, n_histories=1, looks=1, bug=BUG)
    assert res.pair_exceeds and res.verdict == "violation"
    assert res.epsilon_lower > 1.5 * res.epsilon_claimed  # the draws alone see it


def test_halving_the_leaf_sums_sensitivity_is_found_by_the_sweep():
    """The quick gate's first finding (its sweep runs before the draws): the leaf sums move
    by the row bound 1, declared 1/2."""
    from dptaucc.audit.neighbour_sweep import sweep_record

    job = AuditJob("dpm", "corrected", 1.0, 10)
    with bug_context(BUG):
        rec = sweep_record(job.factory, "dpm", seed=0, n_pairs=8)
    assert rec["verdict"] == "violation", rec["event"]
    assert "leaf_sums: gaussian: L2 move 1 > sensitivity 0.5" in rec["event"]
