"""The call sites' exact pair cost: each law's loss between D's and D''s inputs, checked against
brute-force enumeration, and a sensitivity slip too small for any draw count at a tight call
site, which the exact cost sees from a few hundred draws."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logsumexp

from dptaucc import DPTauCC
from dptaucc.audit.bugs import scale_argument
from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.pair_cost import exceeds, pair_cost
from dptaucc.audit.pairs import make_pair
from dptaucc.audit.privacy_map import bounded_laplace_epsilon, gaussian_epsilon
from dptaucc.audit.transcript import open_call, record
from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw, StepUtility


def _choice(u, beta):
    u = np.asarray(u, dtype=float)
    return Calibration((Declaration("exponential", 1.0, "range", exact=u),),
                       (NoiseDraw("choice", "seeded", beta, u.shape[0]),))


def _bounded(w, upper, scale):
    w = np.asarray(w, dtype=np.int64)
    m = np.broadcast_to(np.asarray(upper, dtype=np.int64), w.shape).ravel()
    s = np.broadcast_to(np.asarray(scale, dtype=float), w.shape).ravel()
    return Calibration((Declaration("bounded-discrete-laplace", 1.0, "per-value", 1,
                                    {"upper": np.asarray(upper)}, exact=w),),
                       (NoiseDraw("bounded-discrete-laplace", "seeded", s, s.size,
                                  {"upper": m}),))


def _gauss(x, sigma, covariance=None):
    x = np.asarray(x, dtype=float)
    detail = {} if covariance is None else {"covariance": np.asarray(covariance)}
    return Calibration((Declaration("gaussian", 1.0, "l2", exact=x),),
                       (NoiseDraw("gaussian", "seeded", sigma, x.size, detail),))


def test_exponential_pair_cost_is_the_largest_log_ratio_of_the_two_laws():
    rng = np.random.default_rng(0)
    for _ in range(20):
        ua, ub = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
        ub[1] = ua[1]  # an unchanged row costs nothing
        beta = float(rng.uniform(0.2, 2.0))
        la = ua / beta - logsumexp(ua / beta, axis=1, keepdims=True)
        lb = ub / beta - logsumexp(ub / beta, axis=1, keepdims=True)
        want = float(np.abs(la - lb).max(axis=1).sum())
        assert pair_cost(_choice(ua, beta), _choice(ub, beta)).epsilon == pytest.approx(want)
    # a range move of Δ costs at most Δ/β; a uniform shift of every utility costs nothing
    u = np.zeros((1, 4))
    assert pair_cost(_choice(u, 0.5), _choice(u + 3.0, 0.5)).epsilon == pytest.approx(0.0)
    up = u.copy()
    up[0, 0] = 1.0
    assert pair_cost(_choice(u, 0.5), _choice(up, 0.5)).epsilon < 1.0 / 0.5


def test_a_temperature_read_from_the_data_is_part_of_the_pair_law():
    rng = np.random.default_rng(3)
    ua, ub = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    la = ua / 0.5 - logsumexp(ua / 0.5, axis=1, keepdims=True)
    lb = ub / 2.0 - logsumexp(ub / 2.0, axis=1, keepdims=True)
    want = float(np.abs(la - lb).max(axis=1).sum())
    assert pair_cost(_choice(ua, 0.5), _choice(ub, 2.0)).epsilon == pytest.approx(want)
    # equal utilities, different temperatures: the law still moves
    assert pair_cost(_choice(ua, 0.5), _choice(ua, 2.0)).epsilon > 0
    # a Laplace whose scale is read from the data: its tails part without bound
    def laplace(x, b):
        return Calibration((Declaration("discrete-laplace", 1.0, "l1", exact=np.array(x)),),
                           (NoiseDraw("discrete-laplace", "seeded", b, len(x)),))
    assert pair_cost(laplace([1, 2], 1.0), laplace([1, 2], 1.5)).epsilon == math.inf


def _bounded_pmf(w, m, s):
    y = np.arange(m + 1)
    logp = -np.abs(y - w) / s
    return logp - logsumexp(logp)


def test_bounded_pair_cost_matches_the_enumerated_law_and_the_worst_case_map():
    rng = np.random.default_rng(1)
    for _ in range(40):
        m = int(rng.integers(1, 30))
        s = float(rng.uniform(0.3, 5.0))
        wa, wb = (int(v) for v in rng.integers(0, m + 1, size=2))
        want = float(np.abs(_bounded_pmf(wa, m, s) - _bounded_pmf(wb, m, s)).max())
        got = pair_cost(_bounded([wa], m, s), _bounded([wb], m, s)).epsilon
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    for _ in range(40):  # each side at its own scale (a scale read from the data)
        m = int(rng.integers(1, 30))
        sa, sb = (float(v) for v in rng.uniform(0.3, 5.0, size=2))
        wa, wb = (int(v) for v in rng.integers(0, m + 1, size=2))
        want = float(np.abs(_bounded_pmf(wa, m, sa) - _bounded_pmf(wb, m, sb)).max())
        got = pair_cost(_bounded([wa], m, sa), _bounded([wb], m, sb)).epsilon
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    # from the edge w = 0 to w' = Δ it is the bounded mechanism's worst case, the map's ε
    worst = bounded_laplace_epsilon(2.0, 20, 3)[()]
    assert pair_cost(_bounded([0], 20, 2.0), _bounded([3], 20, 2.0)).epsilon == \
        pytest.approx(worst, rel=1e-12)
    # inputs outside the range are clipped first, as the mechanism does; values add up
    two = pair_cost(_bounded([-4, 25], 20, 2.0), _bounded([3, 17], 20, 2.0)).epsilon
    assert two == pytest.approx(2 * worst, rel=1e-12)


def test_gaussian_pair_cost_whitens_the_move():
    move = pair_cost(_gauss([0.0, 0.0], 2.0), _gauss([3.0, 4.0], 2.0), delta=1e-5).epsilon
    assert move == pytest.approx(gaussian_epsilon(2.5, 1e-5))
    cov = np.array([[4.0, 1.0], [1.0, 2.0]])
    d = np.array([1.0, -2.0])
    mu = math.sqrt(float(d @ np.linalg.solve(cov, d)))
    got = pair_cost(_gauss([0.0, 0.0], 2.0, cov), _gauss(d, 2.0, cov), delta=1e-4).epsilon
    assert got == pytest.approx(gaussian_epsilon(mu, 1e-4))


def test_sides_that_differ_in_law_give_no_exact_cost():
    a = _gauss([0.0, 1.0], 2.0)
    assert math.isnan(pair_cost(a, _gauss([0.0, 1.0], 1.0)).epsilon)   # σ differs
    assert math.isnan(pair_cost(a, _choice([[0.0, 1.0]], 1.0)).epsilon)  # another mechanism
    assert math.isnan(pair_cost(None, a).epsilon)
    assert not exceeds(math.nan, 1.0)


def test_open_call_keeps_the_calls_calibration_with_its_exact_input():
    pair = make_pair("moving_row")
    history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    calls = [open_call(DPTauCC(2, 2, epsilon=1.0, random_state=1), X, history, 3)[0]
             for X in (pair.D, pair.D_prime)]
    (decl_a,), (decl_b,) = (c.calibration.declarations for c in calls)
    assert decl_a.mechanism == "discrete-laplace" and decl_a.exact.shape == (2, 2)
    # one count moved: the exact tables differ by 1 in one cell
    assert int(np.abs(decl_a.exact - decl_b.exact).sum()) == 1
    assert history[3].calibration is None  # a recorded history does not keep inputs


def _table_call(bug_factor: float | None, monkeypatch, n_fits: int = 400):
    if bug_factor is not None:
        import dptaucc.dp_taucc as taucc

        patched = scale_argument("sensitivity", bug_factor)(taucc.discrete_laplace_mechanism)
        monkeypatch.setattr(taucc, "discrete_laplace_mechanism", patched)
    pair = make_pair("all_zero_row")

    def build(seed):
        return DPTauCC(2, 2, epsilon=16.0, n_iterations=2, h=0.5, random_state=seed)

    return audit_call_site(build, pair.D, pair.D_prime, 1, n_fits=n_fits, alpha=0.05,
                           n_histories=1, looks=1)


def test_a_sensitivity_slip_no_draw_count_resolves_is_a_violation(monkeypatch):
    """The table's noise drawn for sensitivity 0.8 (charged for it too: the ledger agrees):
    the pair moves one count, a loss of 1.25 × the charge; 400 draws bound it far below."""
    honest = _table_call(None, monkeypatch)
    assert honest.epsilon_pair == pytest.approx(honest.epsilon_claimed, rel=1e-9)
    assert honest.verdict == "ok" and honest.epsilon_lower < honest.epsilon_claimed
    slipped = _table_call(0.8, monkeypatch)
    assert slipped.epsilon_pair == pytest.approx(1.25 * slipped.epsilon_claimed, rel=1e-9)
    assert slipped.epsilon_lower < slipped.epsilon_claimed  # the draws alone see nothing
    assert slipped.pair_exceeds and slipped.verdict == "violation"


def test_the_exact_power_table_sees_dpm_count_bugs_and_passes_its_correct_code():
    from dptaucc.auditscore.exact_power import bug_rows

    rows = {r["bug"]: r for r in bug_rows("dpm")}
    assert not rows[""]["seen"] and rows[""]["max_ratio"] == pytest.approx(1.0, rel=1e-6)
    assert rows["dpm.count_sensitivity_halved"]["seen"]
    assert rows["dpm.count_sensitivity_halved"]["max_ratio"] == pytest.approx(2.0, rel=1e-6)


def _grid_law(values, beta, bits=4, q=0.65):
    from dptaucc.baselines.dpm.interval import step_utility

    return Calibration((Declaration("exponential-grid", 1.0, "linf",
                                    exact=step_utility(values, q, 0.0, 16.0, bits=bits)),),
                       (NoiseDraw("choice", "seeded", beta, 1),))


def test_grid_pair_cost_matches_the_enumerated_law():
    """DPM's quantile law P(o) ∝ exp(u(o)/(2β)) over a tiny public grid (bits = 4: the 17
    points 0, 1, …, 16), every output enumerated: the exact cost from the merged runs is the
    largest log-ratio, and the declared move is the largest |u − u'| over the outputs."""
    from dptaucc.baselines.dpm.interval import public_grid, rank_utility

    from dptaucc.audit.pair_cost import declared_move_exceeded

    rng = np.random.default_rng(0)
    grid = np.arange(17) * public_grid(0.0, 16.0, bits=4)
    assert grid[-1] == 16.0
    for _ in range(30):
        values = rng.uniform(0.0, 16.0, int(rng.integers(1, 12))).round(1)
        added = np.append(values, rng.uniform(0.0, 16.0, int(rng.integers(1, 3))).round(1))
        beta_a = float(rng.uniform(0.2, 3.0))
        beta_b = beta_a if rng.random() < 0.7 else float(rng.uniform(0.2, 3.0))
        ua, ub = rank_utility(values, grid), rank_utility(added, grid)
        la, lb = ua / (2 * beta_a), ub / (2 * beta_b)
        want = float(np.abs((la - logsumexp(la)) - (lb - logsumexp(lb))).max())
        a, b = _grid_law(values, beta_a), _grid_law(added, beta_b)
        assert pair_cost(a, b).epsilon == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert pair_cost(b, a).epsilon == pytest.approx(want, rel=1e-9, abs=1e-12)
        moved = float(np.abs(ua - ub).max())
        tight = Calibration((replace(a.declarations[0], sensitivity=moved),), a.draws)
        slack = Calibration((replace(a.declarations[0], sensitivity=moved * 0.99),), a.draws)
        assert declared_move_exceeded(tight, b) == ""
        assert "exponential-grid: the utility moved by" in declared_move_exceeded(slack, b)
    # the same utilities at the same β cost nothing; a grid that differs is infinitely far
    same = _grid_law([1.0, 5.0], 1.0)
    assert pair_cost(same, _grid_law([1.0, 5.0], 1.0)).epsilon == 0.0
    other = Calibration((Declaration("exponential-grid", 1.0, "linf",
                                     exact=StepUtility(np.array([0, 8]), np.array([0.0]))),),
                        same.draws)
    assert pair_cost(same, other).epsilon == math.inf


def test_the_grid_law_costs_its_declared_sensitivity_in_the_privacy_map():
    """The ledger's independent map reads Δ and the β drawn: ε = Δ/β (the softmax of the
    scores u/2, a range of at most Δ); the largest single output probability is the law's."""
    from dptaucc.audit.law_check import log_top_probability
    from dptaucc.audit.privacy_map import call_cost

    calib = _grid_law([1.0, 5.0, 9.0], 0.5)
    decl = replace(calib.declarations[0], sensitivity=2.0)
    assert call_cost(Calibration((decl,), calib.draws)).epsilon == pytest.approx(4.0)
    u = decl.exact.at(np.arange(17)) / (2 * 0.5)
    assert math.exp(log_top_probability(calib)) == pytest.approx(
        math.exp(u.max() - logsumexp(u)))
