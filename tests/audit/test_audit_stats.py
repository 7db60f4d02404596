"""Clopper–Pearson bounds and the simultaneous ε lower bound: exactness and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from dptaucc.audit.stats import cp_lower, cp_upper, epsilon_candidates, epsilon_lower_bound


@pytest.mark.parametrize("n", [1, 7, 100, 3000])
def test_closed_forms_at_the_edges(n):
    a = 0.01
    assert cp_lower(0, n, a) == 0.0 and cp_upper(n, n, a) == 1.0
    assert cp_upper(0, n, a) == pytest.approx(1 - a ** (1 / n), rel=1e-9)
    assert cp_lower(n, n, a) == pytest.approx(a ** (1 / n), rel=1e-9)


@pytest.mark.parametrize("k,n", [(1, 10), (5, 10), (37, 200), (1999, 2000)])
def test_bounds_solve_the_binomial_tail_equations(k, n):
    """The CP lower bound p_l solves P(Bin(n, p_l) >= k) = α, the upper P(Bin(n, p_u) <= k) = α."""
    a = 0.025
    lo, up = float(cp_lower(k, n, a)), float(cp_upper(k, n, a))
    assert binom.sf(k - 1, n, lo) == pytest.approx(a, rel=1e-6)
    assert binom.cdf(k, n, up) == pytest.approx(a, rel=1e-6)
    assert lo < k / n < up


@pytest.mark.parametrize("n,p", [(20, 0.05), (20, 0.5), (200, 0.02), (200, 0.7), (1000, 0.999)])
def test_one_sided_coverage_on_simulated_counts(n, p):
    rng = np.random.default_rng(12345)
    k = rng.binomial(n, p, size=20000)
    a = 0.1
    miss_lo = np.mean(cp_lower(k, n, a) > p)
    miss_up = np.mean(cp_upper(k, n, a) < p)
    # exact intervals are conservative: misses <= α (plus Monte-Carlo slack, 4 sd)
    slack = 4 * math.sqrt(a * (1 - a) / k.size)
    assert miss_lo <= a + slack and miss_up <= a + slack


def _simulate_bounds(p_d, p_dp, n, reps, alpha, rng, bonferroni=True):
    names = [f"e{i}" for i in range(len(p_d))]
    out = np.empty(reps)
    for r in range(reps):
        k_d = rng.binomial(n, p_d)
        k_dp = rng.binomial(n, p_dp)
        if bonferroni:
            out[r] = epsilon_lower_bound(names, k_d, k_dp, n, n, alpha)[0]
        else:  # every one-sided statement at α: what the correction is for
            out[r] = max(epsilon_lower_bound([e], [a], [b], n, n, 4 * alpha)[0]
                         for e, a, b in zip(names, k_d, k_dp, strict=True))
    return out


def test_simultaneous_bound_holds_where_uncorrected_bounds_fail():
    """Ten events that do not depend on the data (true ε = 0): the bound is above 0 in
    <= 5 % of audits; the same statistics without Bonferroni are above 0 far more often."""
    rng = np.random.default_rng(7)
    p = np.full(10, 0.5)
    corrected = _simulate_bounds(p, p, 200, 1000, 0.05, rng)
    naive = _simulate_bounds(p, p, 200, 400, 0.05, rng, bonferroni=False)
    assert np.mean(corrected > 0) <= 0.05
    assert np.mean(naive > 0) > 0.1


def test_simultaneous_bound_with_known_positive_epsilon():
    """The true ε of an event family is the largest log ratio over events, complements and
    directions; the bound exceeds it in <= 5 % of audits and is not vacuous."""
    rng = np.random.default_rng(8)
    p_d = np.array([0.5] * 4 + [0.6, 0.2])
    p_dp = np.array([0.5] * 4 + [0.3, 0.1])
    truth = np.max(np.concatenate([np.log(p_d / p_dp), np.log((1 - p_dp) / (1 - p_d)),
                                   np.log(p_dp / p_d), np.log((1 - p_d) / (1 - p_dp))]))
    bounds = _simulate_bounds(p_d, p_dp, 400, 1000, 0.05, rng)
    assert np.mean(bounds > truth) <= 0.05
    assert np.median(bounds) > 0.3


def test_candidates_cover_events_complements_and_directions():
    cands = epsilon_candidates(["a", "b"], [60, 10], [5, 10], 100, 100, 0.05)
    assert len(cands) == 8
    labels = {c.label for c in cands}
    assert "a [D/D']" in labels and "not (a) [D'/D]" in labels
    best = max(cands, key=lambda c: c.epsilon_lower)
    assert best.event == "a" and not best.complement and best.direction == "D/D'"
    assert (best.count_num, best.count_den) == (60, 5)


def test_delta_lowers_the_bound_and_no_signal_gives_zero():
    eps0, best0 = epsilon_lower_bound(["a"], [500], [100], 1000, 1000, 0.05)
    eps1, _ = epsilon_lower_bound(["a"], [500], [100], 1000, 1000, 0.05, delta=0.1)
    assert eps0 > eps1 > 0 and best0.event == "a"
    assert epsilon_lower_bound(["a"], [500], [500], 1000, 1000) == (0.0, None)


@pytest.mark.parametrize("bad", [{"alpha": 0.0}, {"alpha": 1.0}, {"delta": -0.1}, {"delta": 1.0}])
def test_bad_parameters_are_refused(bad):
    kw = {"alpha": 0.05, "delta": 0.0, **bad}
    with pytest.raises(ValueError):
        epsilon_candidates(["a"], [1], [1], 10, 10, **kw)
