"""Each mechanism: its charge, the noise it really draws, and neighbour tests at its own ε.

The neighbour tests use that mechanism's own ε = 1 and events of large mass, so that a
sensitivity or noise scale off by a factor 2 moves the true log ratio to 2 and fails them;
each has a companion power test on a deliberately broken variant.
"""

import itertools
import math

import numpy as np
import pytest

from dptaucc.privacy import (
    PrivacyLedger,
    SeededSampler,
    discrete_laplace_mechanism,
    exponential_mechanism,
    float_laplace_mechanism,
    gaussian_mechanism,
    linear_exponential_mechanism,
    snap_to_grid,
)
from dptaucc.privacy.checks import (
    RecordingSampler,
    choice_pvalue,
    discrete_laplace_pvalue,
    neighbour_log_ratio_bounds,
)
from dptaucc.privacy.mechanisms import grid_granularity


def sampler(seed):
    return SeededSampler(np.random.default_rng(seed))


# ------------------------------------------------------------------ discrete Laplace
@pytest.mark.parametrize("eps,sens", [(1.0, 1), (0.3, 1), (2.0, 3)])
def test_discrete_laplace_charges_and_draws_its_scale(eps, sens):
    ledger = PrivacyLedger(budget_epsilon=eps, strict=True)
    rec = RecordingSampler(sampler(0))
    values = np.arange(60_000).reshape(300, 200)
    out = discrete_laplace_mechanism(values, epsilon=eps, sensitivity=sens, sampler=rec,
                                     ledger=ledger, step="t")
    assert out.dtype == np.int64
    (entry,) = ledger.entries
    assert (entry.epsilon, entry.sensitivity, entry.mechanism) == (eps, sens, "discrete-laplace")
    assert entry.noise_scale == pytest.approx(sens / eps)
    (draw,) = rec.draws
    assert draw.scale == pytest.approx(sens / eps)
    np.testing.assert_array_equal(out - values, draw.output)
    assert discrete_laplace_pvalue(out - values, sens / eps) > 1e-4


def test_discrete_laplace_refuses_fractional_values():
    with pytest.raises(TypeError, match="integer"):
        discrete_laplace_mechanism(np.array([0.5, 1.0]), epsilon=1.0, sensitivity=1,
                                   sampler=sampler(0), ledger=PrivacyLedger(), step="t")


def _tail_counts(mechanism, eps, sens, runs, seed):
    """Hits of the event {out <= x} for x and for its neighbour x + sens."""
    x = np.zeros(runs, dtype=np.int64)
    a = mechanism(x, epsilon=eps, sensitivity=sens, sampler=sampler(seed),
                  ledger=PrivacyLedger(), step="t")
    b = mechanism(x + sens, epsilon=eps, sensitivity=sens, sampler=sampler(seed + 1),
                  ledger=PrivacyLedger(), step="t")
    return int(np.sum(a <= 0)), int(np.sum(b <= 0))


def test_discrete_laplace_neighbours_at_its_own_epsilon():
    """P(out <= x | x) / P(out <= x | x + 1) = e^ε exactly for this mechanism: the bounds must
    contain ε = 1 (they would sit at 2 with half the noise)."""
    runs = 40_000
    ha, hb = _tail_counts(discrete_laplace_mechanism, 1.0, 1, runs, 10)
    lower, upper = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    assert lower <= 1.0 <= upper and upper < 1.3


def test_neighbour_test_has_power_against_half_the_noise():
    def broken(values, *, epsilon, sensitivity, sampler, ledger, step):
        return discrete_laplace_mechanism(values, epsilon=2 * epsilon, sensitivity=sensitivity,
                                          sampler=sampler, ledger=ledger, step=step)

    runs = 40_000
    ha, hb = _tail_counts(broken, 1.0, 1, runs, 20)
    lower, _ = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    assert lower > 1.0


# ------------------------------------------------------------------ exponential
def test_exponential_mechanism_samples_exp_eps_u_over_delta_and_charges():
    u = np.array([0.0, 0.4, 1.0, -0.7, 0.9]) * 3.0
    eps, delta, n = 1.3, 1.5, 40_000
    ledger = PrivacyLedger()
    labels = exponential_mechanism(np.tile(u, (n, 1)), epsilon=eps, sensitivity=delta,
                                   sampler=sampler(1), ledger=ledger, step="s")
    (entry,) = ledger.entries
    assert (entry.epsilon, entry.sensitivity, entry.composition) == (eps, delta, "parallel")
    assert entry.noise_scale == pytest.approx(delta / eps)
    p = np.exp(eps * (u - u.max()) / delta)
    assert choice_pvalue(labels, p / p.sum()) > 1e-3


def test_exponential_mechanism_infinite_epsilon_is_argmax():
    labels = exponential_mechanism(np.array([[0.0, 2.0, 1.0]] * 5), epsilon=math.inf,
                                   sensitivity=1.0, sampler=sampler(0),
                                   ledger=PrivacyLedger(), step="s")
    assert labels.tolist() == [1] * 5


def _brute_force_range_sensitivity(profiles, weights):
    """max over neighbours (one profile entry ±1) of the range of the utility change."""
    worst = 0.0
    n, d = profiles.shape
    base = profiles @ weights.T
    for i, j, step in itertools.product(range(n), range(d), (1, -1)):
        moved = profiles.astype(float).copy()
        moved[i, j] += step
        change = (moved @ weights.T - base)[i]
        worst = max(worst, change.max() - change.min())
    return worst


def test_linear_mechanism_sensitivity_is_the_range_over_neighbours():
    rng = np.random.default_rng(3)
    for _ in range(5):
        profiles = rng.integers(0, 5, size=(4, 3)).astype(float)
        weights = rng.normal(size=(5, 3))
        ledger = PrivacyLedger()
        linear_exponential_mechanism(profiles, weights=weights, epsilon=1.0, sampler=sampler(0),
                                     ledger=ledger, step="s")
        assert ledger.entries[0].sensitivity == pytest.approx(
            _brute_force_range_sensitivity(profiles, weights), rel=1e-12)


def test_linear_mechanism_scratch_changes_nothing_and_is_left_alone_under_a_hook():
    """Utilities written to a caller's scratch: the same choices; while an audit hook watches,
    the scratch is not used (the hook's redraws read the utilities after the call)."""
    from dptaucc.privacy.hook import MECHANISM_HOOK

    rng = np.random.default_rng(4)
    profiles, weights = rng.integers(0, 9, size=(500, 6)).astype(float), rng.normal(size=(4, 6))

    def choose(scratch=None):
        return linear_exponential_mechanism(profiles, weights=weights, epsilon=2.0,
                                            sampler=sampler(1), ledger=PrivacyLedger(),
                                            step="s", scratch=scratch)
    scratch = np.full(500 * 4 + 3, np.nan)
    np.testing.assert_array_equal(choose(scratch), choose())
    np.testing.assert_array_equal(scratch[:2000].reshape(500, 4), profiles @ weights.T)

    class Keep:
        def released(self, step, mechanism, entries, output, redraw=None):
            self.redraw = redraw
            return output
    hook, scratch = Keep(), np.full(500 * 4, np.nan)
    token = MECHANISM_HOOK.set(hook)
    try:
        choose(scratch)
    finally:
        MECHANISM_HOOK.reset(token)
    assert np.isnan(scratch).all()
    scratch[:] = 0.0  # a later call overwrites the caller's memory: the redraws do not see it
    assert (hook.redraw(50) == choose()[None, :]).mean() > 0.5


def test_linear_mechanism_frequencies_follow_eq_4_9_and_4_10():
    """σ and Δ written out by hand (eqs. 4.9/4.10) for the row assignment of DP-τCC."""
    table = np.array([[7.0, 2.0, 0.5], [1.0, 5.0, 3.0], [2.0, 2.0, 2.0], [0.0, 1.0, 6.0]])
    a_l = np.array([5.0, 0.0, 2.0])  # one row's counts summed over three column clusters
    K, L = table.shape
    t, t_k, t_l = table.sum(), table.sum(axis=1), table.sum(axis=0)
    beta = np.array([[table[k, l] / t_l[l] - t_k[k] / t for l in range(L)] for k in range(K)])
    sigma = np.array([sum(a_l[l] * beta[k, l] for l in range(L)) for k in range(K)])
    delta = max(beta[:, l].max() - beta[:, l].min() for l in range(L))
    eps, n = 0.8, 30_000
    labels = linear_exponential_mechanism(np.tile(a_l, (n, 1)), weights=beta, epsilon=eps,
                                          sampler=sampler(9),
                                          ledger=PrivacyLedger(), step="s")
    p = np.exp(eps * (sigma - sigma.max()) / delta)
    assert choice_pvalue(labels, p / p.sum()) > 1e-3


def _choice_counts(eps, runs, seed, delta=None):
    """Row 0's choice under profiles P and its neighbour P + e_{0,1}; utilities P Wᵀ."""
    weights = np.array([[0.0, 1.0], [1.0, 0.0]])  # Δ = 1: choice 0 gains 1 under the neighbour
    p_a = np.tile([0.0, 0.0], (runs, 1))
    p_b = np.tile([0.0, 1.0], (runs, 1))
    out = []
    for k, prof in enumerate((p_a, p_b)):
        if delta is None:
            labels = linear_exponential_mechanism(prof, weights=weights, epsilon=eps,
                                                  sampler=sampler(seed + k),
                                                  ledger=PrivacyLedger(), step="s")
        else:
            labels = exponential_mechanism(prof @ weights.T, epsilon=eps, sensitivity=delta,
                                           sampler=sampler(seed + k),
                                           ledger=PrivacyLedger(), step="s")
        out.append(int(np.sum(labels == 1)))
    return out


def test_exponential_neighbours_at_its_own_epsilon():
    """Event {choice 1}: P = 1/2 under P, 1/(1+e^ε) under the neighbour: log ratio
    log((1+e)/2) ≈ 0.62 at ε = 1 (1.07 with half the noise, above ε)."""
    runs = 60_000
    ha, hb = _choice_counts(1.0, runs, 30)
    lower, upper = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    true = math.log((1 + math.e) / 2)
    assert lower <= true <= upper and lower <= 1.0


def test_exponential_neighbour_test_has_power_against_half_the_sensitivity():
    runs = 60_000
    ha, hb = _choice_counts(1.0, runs, 40, delta=0.5)
    lower, _ = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    assert lower > math.log((1 + math.e) / 2) + 0.2  # true value log((1+e²)/2) ≈ 1.43


def test_zero_weight_range_is_a_uniform_charged_choice():
    ledger = PrivacyLedger()
    labels = linear_exponential_mechanism(np.ones((30_000, 2)), weights=np.ones((3, 2)),
                                          epsilon=1.0,
                                          sampler=sampler(5), ledger=ledger, step="s")
    assert ledger.epsilon_spent == 1.0 and "uniform" in ledger.entries[0].note
    assert choice_pvalue(labels, np.full(3, 1 / 3)) > 1e-3


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_are_refused_before_any_charge(bad):
    scores = np.zeros((4, 3))
    scores[2, 1] = bad
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="utilities must be finite"):
        exponential_mechanism(scores, epsilon=1.0, sensitivity=1.0, sampler=sampler(0),
                              ledger=ledger, step="s")
    weights = np.ones((3, 2))
    weights[1, 0] = np.nan
    with pytest.raises(ValueError, match="weights contain NaN"):
        linear_exponential_mechanism(np.ones((4, 2)), weights=weights, epsilon=1.0,
                                     sampler=sampler(0), ledger=ledger, step="s")
    assert len(ledger) == 0


# ------------------------------------------------------------------ float Laplace, Gaussian
def test_float_laplace_is_labelled_paper_only_and_draws_its_scale():
    ledger = PrivacyLedger()
    out = float_laplace_mechanism(np.zeros(100_000), epsilon=0.5, sensitivity=2.0,
                                  sampler=sampler(6), ledger=ledger, step="t")
    assert ledger.entries[0].mechanism == "laplace-float"
    assert np.mean(np.abs(out)) == pytest.approx(4.0, rel=0.02)  # E|Lap(b)| = b = 2/0.5


def test_gaussian_release_lies_on_a_data_independent_grid_with_std_sigma():
    ledger = PrivacyLedger()
    sigma = 0.37
    values = np.random.default_rng(0).random(50_000) * 1e-3
    out = gaussian_mechanism(values, sigma=sigma, epsilon=1.0, delta=1e-6, sensitivity=0.1,
                             sampler=sampler(7), ledger=ledger, step="g")
    g = grid_granularity(sigma)
    np.testing.assert_array_equal(out / g, np.round(out / g))
    assert np.std(out - values) == pytest.approx(sigma, rel=0.02)
    entry = ledger.entries[0]
    assert (entry.epsilon, entry.delta, entry.sensitivity, entry.noise_scale) == (
        1.0, 1e-6, 0.1, sigma)


def test_snap_to_grid_is_idempotent_and_keeps_values_close():
    x = np.random.default_rng(1).normal(size=1000)
    y = snap_to_grid(x, 1.0)
    np.testing.assert_array_equal(snap_to_grid(y, 1.0), y)
    assert np.max(np.abs(y - x)) <= grid_granularity(1.0) / 2
