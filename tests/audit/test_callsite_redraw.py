"""The call-site audit draws each call through the mechanism's redraw: many draws from one
replayed fit per side see a 2x error at a Gaussian or a discrete Laplace call site, and
nothing on the correct code (evidence that can fail)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from toys import TwoCallRelease

from dptaucc.audit.callsite import audit_call_site

D, D_PRIME = np.array([[3]]), np.array([[4]])


def _build(count_sensitivity=1, sigma_factor=1.0):
    """random_state -> estimator"""
    return functools.partial(TwoCallRelease, count_sensitivity, sigma_factor)


@pytest.mark.parametrize("k,build,violates", [
    (0, _build(), False),
    (0, _build(count_sensitivity=0.5), True),   # discrete Laplace drawn for half its Δ
    (1, _build(), False),
    (1, _build(sigma_factor=0.5), True),        # Gaussian σ halved, (ε, δ) charged as before
])
def test_batched_call_site_audit_sees_a_halved_scale(k, build, violates):
    res = audit_call_site(build, D, D_PRIME, k, n_fits=60_000, alpha=0.05, n_histories=1,
                          looks=1)
    assert res.n_fits == 60_000 and res.epsilon_claimed == pytest.approx([1.0, 2.0][k])
    assert res.delta == pytest.approx([0.0, 0.01][k])
    assert (res.verdict == "violation") is violates, res
    if not violates:
        assert res.epsilon_lower > 0.5 * res.epsilon_claimed, res  # power, not blindness


@pytest.mark.parametrize("bug,violates", [(None, False), ("dpnmf.sensitivity_halved", True)])
def test_dpnmf_worst_case_history_shows_a_halved_sensitivity(bug, violates):
    from dptaucc.audit.experiment import AuditJob
    from dptaucc.audit.methods import call_site_setup

    setup = call_site_setup("dpnmf")[0]  # orthonormal topics
    build = AuditJob("dpnmf", "corrected", None, 1).factory(setup.params)
    res = audit_call_site(build, setup.pair.D, setup.pair.D_prime, setup.first, n_fits=60_000,
                          alpha=0.05, bug=bug, looks=1, craft=setup.craft)
    assert res.mechanism == "gaussian" and res.delta > 0
    assert (res.verdict == "violation") is violates, res


def _dpnmf_setup(craft: str):
    from dptaucc.audit.experiment import AuditJob
    from dptaucc.audit.methods import call_site_setup

    setup, = (s for s in call_site_setup("dpnmf") if s.craft.__name__ == craft)
    return setup, AuditJob("dpnmf", "corrected", None, 1).factory(setup.params)


@pytest.mark.parametrize("craft,binds", [("orthonormal_topics", False), ("short_topics", True)])
def test_dpnmf_coefficient_projection_binds_under_short_topics(monkeypatch, craft, binds):
    from dptaucc.baselines.nmf_dp import updates

    from dptaucc.audit.transcript import open_call, record

    setup, build = _dpnmf_setup(craft)
    history = setup.craft(record(build(0), setup.pair.D))
    norms, project = [], updates.project_columns

    def seen(A):
        norms.append(float(np.sqrt((np.asarray(A) ** 2).sum(axis=0)).max()))
        return project(A)
    monkeypatch.setattr(updates, "project_columns", seen)
    open_call(build(1), setup.pair.D, history, setup.first)
    assert norms and (max(norms) > 1.5) is binds, max(norms)


@pytest.mark.slow
@pytest.mark.parametrize("craft,violates", [("orthonormal_topics", False),
                                            ("short_topics", True)])
def test_a_coefficient_ball_of_radius_two_shows_where_the_projection_binds(craft, violates):
    """Under orthonormal topics every document's best coefficient has norm 1, so a ball of
    radius 2 changes nothing; under short topics the projection binds and the release moves
    by 2.2 times the charged sensitivity (measured: 3.9 against a charge of 2)."""
    setup, build = _dpnmf_setup(craft)
    res = audit_call_site(build, setup.pair.D, setup.pair.D_prime, setup.first, n_fits=40_000,
                          alpha=0.05, bug="dpnmf.coefficient_ball_radius_two", looks=1,
                          craft=setup.craft)
    assert (res.verdict == "violation") is violates, res


def test_redrawn_audit_conditions_both_sides_on_the_same_fit_seed():
    """Regression: the redraw driver replayed D and D' with different fit seeds, so DP-τCC's
    random start (data-independent, not a mechanism) differed between the sides and the
    correct code's first table call read as a violation (5.1 against 1.25)."""
    from dptaucc import DPTauCC
    from dptaucc.audit.pairs import make_pair
    from dptaucc.audit.redrawn import audit_call_site_redrawn

    pair = make_pair("moving_row")

    def build(seed):
        return DPTauCC(2, 2, epsilon=100.0, random_state=seed)

    res = audit_call_site_redrawn(build, pair.D, pair.D_prime, 1, n_samples=2000, alpha=0.05,
                                  n_pilot=500)
    assert res.step == "iter1/table-before-rows" and res.verdict == "ok"


def test_redrawn_held_out_draws_are_not_the_draws_that_chose_the_events(monkeypatch):
    """Regression: the streamed held-out draws of a redrawn call site were replayed from the
    first kept shard's fit seed, so they began with the very draws that chose the events (a
    biased count). The first streamed draws on each side must differ from the kept ones."""
    from dptaucc import DPTauCC
    from dptaucc.audit import redrawn
    from dptaucc.audit.pairs import make_pair

    pair = make_pair("moving_row")
    kept, streamed = [], []
    both_sides, side = redrawn._both_sides, redrawn._Side

    def keep(*args, **kwargs):
        out = both_sides(*args, **kwargs)
        if isinstance(out, tuple):
            kept.append(out[0][:50])
        return out

    class Recorded(side):
        def draw(self, n):
            rows = super().draw(n)
            streamed.append(rows[:50])
            return rows

    monkeypatch.setattr(redrawn, "_both_sides", keep)
    monkeypatch.setattr(redrawn, "_Side", Recorded)

    def build(seed):
        return DPTauCC(2, 2, epsilon=1.0, random_state=seed)

    res = redrawn.audit_call_site_redrawn(build, pair.D, pair.D_prime, 3, n_samples=500,
                                          alpha=0.05, n_histories=1, n_held=500)
    assert res.n_fits == 1000 and kept and streamed
    assert not np.array_equal(kept[-1], streamed[0])  # D's first streamed draws
