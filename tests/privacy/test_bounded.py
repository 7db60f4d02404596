"""The bounded-domain discrete Laplace mechanism: its privacy map against brute force, its law,
the scale each call draws, and neighbour tests at its own ε = 1 (with a power test on a
deliberately broken variant).

The reference law is written out here from its definition, P(y) ∝ exp(−|y − w|/s) on
{0, …, M}; the privacy loss of a scale is computed by brute force over every pair of inputs
and every output, never with the code under test.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dptaucc.privacy import (
    PrivacyLedger,
    SecureSampler,
    SeededSampler,
    bounded_discrete_laplace,
    bounded_discrete_laplace_epsilon,
    bounded_discrete_laplace_mechanism,
    bounded_discrete_laplace_scale,
)
from dptaucc.privacy.checks import (
    RecordingSampler,
    ScaledSampler,
    neighbour_log_ratio_bounds,
)
from dptaucc.privacy.samplers import _bernoulli_from_uniforms


def sampler(seed):
    return SeededSampler(np.random.default_rng(seed))


def pmf(w, upper, scale):
    y = np.arange(upper + 1)
    p = np.exp(-np.abs(y - w) / scale)
    return p / p.sum()


def brute_force_epsilon(scale, sensitivity, upper):
    """max over w, w' in {0..M} with |w − w'| ≤ Δ and over y of log P_w(y)/P_w'(y)."""
    table = np.log(np.array([pmf(w, upper, scale) for w in range(upper + 1)]))
    worst = 0.0
    for w in range(upper + 1):
        for w2 in range(max(0, w - sensitivity), min(upper, w + sensitivity) + 1):
            worst = max(worst, float(np.max(table[w] - table[w2])))
    return worst


def expected_scale(epsilon, sensitivity, upper):
    """The scale at which the brute-force privacy loss equals ε (loss decreases in the scale
    over the bracket used here)."""
    return optimize.brentq(lambda s: brute_force_epsilon(s, sensitivity, upper) - epsilon,
                           sensitivity / epsilon * 0.999, 4 * sensitivity / epsilon,
                           xtol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("sensitivity,upper", [(1, 10), (2, 12), (3, 4), (5, 5), (1, 1),
                                               (4, 40), (7, 9)])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0, 50.0])
def test_privacy_map_bounds_the_brute_force_loss_and_is_tight_for_small_sensitivity(
        sensitivity, upper, scale):
    claimed = float(bounded_discrete_laplace_epsilon(scale, sensitivity, upper))
    true = brute_force_epsilon(scale, sensitivity, upper)
    assert true <= claimed * (1 + 1e-12)
    if 2 * sensitivity <= upper:
        assert true == pytest.approx(claimed, rel=1e-10)


@pytest.mark.parametrize("eps,sensitivity,upper", [(1.0, 1, 10), (0.7, 2, 12), (0.1, 4, 40),
                                                   (3.0, 1, 2), (1.0, 3, 30)])
def test_scale_spends_the_whole_epsilon_and_never_more(eps, sensitivity, upper):
    scale = float(bounded_discrete_laplace_scale(eps, sensitivity, upper))
    assert brute_force_epsilon(scale, sensitivity, upper) <= eps
    assert scale == pytest.approx(expected_scale(eps, sensitivity, upper), rel=1e-8)


def test_scale_is_computed_per_range_and_special_cases():
    scales = bounded_discrete_laplace_scale(1.0, 2, np.array([[10, 40], [10, 0]]))
    assert scales[0, 0] == scales[1, 0] < scales[0, 1]
    assert scales[1, 1] == 2.0  # M = 0: a single output, any scale is private
    assert np.all(bounded_discrete_laplace_scale(math.inf, 2, np.array([3, 9])) == 0.0)


@pytest.mark.parametrize("w,upper,scale", [(0, 10, 1.2), (3, 10, 2.0), (10, 10, 0.5),
                                           (5, 7, 50.0), (2, 300, 40.0), (1, 1, 0.8)])
def test_samples_follow_the_bounded_law(w, upper, scale):
    out = bounded_discrete_laplace(np.full(100_000, w), upper, scale, sampler(w + upper))
    assert out.dtype == np.int64 and out.min() >= 0 and out.max() <= upper
    observed = np.bincount(out, minlength=upper + 1)
    expected = pmf(w, upper, scale) * out.size
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_law_test_has_power_against_a_wrong_scale():
    out = bounded_discrete_laplace(np.full(100_000, 3), 20, 2.6, sampler(1))
    expected = pmf(3, 20, 2.0) * out.size
    observed = np.bincount(out, minlength=21)
    keep = expected >= 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum()
                           / expected[keep].sum()).pvalue < 1e-6


def test_mechanism_charges_the_composition_and_draws_each_ranges_scale():
    eps, sensitivity, unit = 0.8, 3, 0.25
    upper = np.array([[12, 12, 12], [30, 30, 30]])
    values = np.array([[0, 5, 12], [7, 40, 30]])
    ledger = PrivacyLedger()
    rec = RecordingSampler(sampler(3))
    out = bounded_discrete_laplace_mechanism(values, upper=upper, epsilon=eps,
                                             sensitivity=sensitivity, sampler=rec, ledger=ledger,
                                             step="s",
                                             n_changed=4, unit=unit)
    want = sorted(expected_scale(eps, sensitivity, m) for m in (12, 30))
    assert [d.scale for d in rec.draws] == pytest.approx(want, rel=1e-8)
    assert [d.output.size for d in rec.draws] == [3, 3]
    (entry,) = ledger.entries
    assert (entry.epsilon, entry.sensitivity, entry.mechanism) == pytest.approx(
        (4 * eps, sensitivity * unit, "bounded-discrete-laplace"))
    assert entry.noise_scale == pytest.approx(want[0] * unit, rel=1e-8)
    assert out.dtype == np.int64 and np.all((out >= 0) & (out <= upper))
    # each output is one of the two values the recorded draw gives (one per side of w)
    w = np.clip(values, 0, upper)
    for row, draw in enumerate(rec.draws):
        z = draw.output
        g = np.where(z >= 0, z, -z - 1)
        low = w[row] - g % (w[row] + 1)
        high = w[row] + 1 + g % np.maximum(upper[row] - w[row], 1)
        assert np.all((out[row] == low) | (out[row] == high))


def test_mechanism_refuses_bad_input():
    ledger = PrivacyLedger()
    with pytest.raises(TypeError, match="integer"):
        bounded_discrete_laplace_mechanism(np.array([0.5]), upper=3, epsilon=1.0, sensitivity=1,
                                           sampler=sampler(0), ledger=ledger, step="s")
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="sensitivity"):
            bounded_discrete_laplace_mechanism(np.array([1]), upper=3, epsilon=1.0,
                                               sensitivity=bad, sampler=sampler(0), ledger=ledger,
                                               step="s")
    with pytest.raises(ValueError, match="n_changed"):
        bounded_discrete_laplace_mechanism(np.array([1]), upper=3, epsilon=1.0, sensitivity=1,
                                           sampler=sampler(0), ledger=ledger, step="s",
                                           n_changed=0)
    with pytest.raises(ValueError, match="too small"):
        bounded_discrete_laplace_mechanism(np.array([1]), upper=2**50, epsilon=1e-9,
                                           sensitivity=2**40, sampler=sampler(0),
                                           ledger=ledger, step="s")
    assert len(ledger) == 0  # nothing charged by a refused call


def test_infinite_epsilon_and_single_point_ranges_release_the_clipped_value():
    rec = RecordingSampler(sampler(0))
    out = bounded_discrete_laplace_mechanism(np.array([4, -2, 9]), upper=np.array([6, 6, 6]),
                                             epsilon=math.inf, sensitivity=1, sampler=rec,
                                             ledger=PrivacyLedger(), step="s")
    np.testing.assert_array_equal(out, [4, 0, 6])
    out = bounded_discrete_laplace_mechanism(np.array([3, 0]), upper=np.array([0, 0]), epsilon=1.0,
                                             sensitivity=1, sampler=rec,
                                             ledger=PrivacyLedger(), step="s")
    np.testing.assert_array_equal(out, [0, 0])
    assert rec.draws == []


def _bernoulli(p, rng):
    return _bernoulli_from_uniforms(p, rng.random(p.shape), rng.random(p.shape))


def test_bernoulli_resolves_probabilities_below_the_53_bit_grid():
    rng = np.random.default_rng(0)
    assert not _bernoulli(np.zeros(10_000), rng).any()
    hits = int(_bernoulli(np.full(200_000, 0.3), rng).sum())
    assert stats.binomtest(hits, 200_000, 0.3).pvalue > 1e-4

    class Fixed:  # hi = 0 exactly: the comparison falls to the second 53 bits
        def __init__(self, lo):
            self.values = [np.zeros(1), np.array([lo])]

        def random(self, shape):
            return self.values.pop(0)

    tiny = 2.0**-60  # = 2⁻⁵³ · 2⁻⁷: true when lo < 2⁻⁷
    assert _bernoulli(np.array([tiny]), Fixed(2.0**-8))[0]
    assert not _bernoulli(np.array([tiny]), Fixed(2.0**-6))[0]


def _bottom_hits(runs, sensitivity, upper, seed, broken):
    """Hits of {y = 0} for the inputs w = 0 and its neighbour w = Δ, at ε = 1."""
    hits = []
    for k, w in enumerate((0, sensitivity)):
        source = ScaledSampler(seed + k) if broken else sampler(seed + k)
        out = bounded_discrete_laplace_mechanism(np.full(runs, w), upper=upper, epsilon=1.0,
                                                 sensitivity=sensitivity,
                                                 sampler=source, ledger=PrivacyLedger(), step="s")
        hits.append(int(np.sum(out == 0)))
    return hits


@pytest.mark.parametrize("sensitivity,upper", [(1, 10), (2, 9)])
def test_neighbours_at_its_own_epsilon(sensitivity, upper):
    """w = 0 against w = Δ ≤ M/2, event {y = 0}: the log ratio is exactly ε = 1 (the privacy
    map is attained there), of probability about ½; half the noise would put it near 2."""
    runs = 40_000
    ha, hb = _bottom_hits(runs, sensitivity, upper, 10, broken=False)
    lower, upper_bound = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    assert lower <= 1.0 <= upper_bound and upper_bound < 1.3


def test_neighbour_test_has_power_against_half_the_noise():
    runs = 40_000
    ha, hb = _bottom_hits(runs, 1, 10, 20, broken=True)
    lower, _ = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    assert lower > 1.0


def test_secure_bernoulli_reads_its_second_word_below_the_53_bit_grid(monkeypatch):
    """The secure sampler's U = hi + lo·2⁻⁵³ from two OS words: with the first word at 0 the
    decision falls to the second word's top 53 bits, read as a uniform on [0, 1)."""
    import dptaucc.privacy.samplers as samplers_module

    def words_then(second):
        queue = [np.zeros(1, dtype=np.uint64), np.array([second], dtype=np.uint64)]
        return lambda count: queue.pop(0)

    tiny = 2.0**-60  # true when lo < 2⁻⁷, i.e. the second word below 2⁵⁷
    for second, expected in ((np.uint64(2**56), True), (np.uint64(2**58), False)):
        monkeypatch.setattr(samplers_module, "os_words", words_then(second))
        assert bool(SecureSampler().bernoulli(np.array([tiny]))[0]) is expected


def test_bernoulli_breaks_the_tie_on_the_53_bit_grid_with_the_low_uniform():
    """When hi = ⌊p·2⁵³⌋·2⁻⁵³ the answer is lo < frac(p·2⁵³): true just below, false at and
    above it (an error there moves P by at most 2⁻⁵³, below any sampling test)."""
    p = np.array([0.3, 0.7, 2.0**-60 * 3])
    a = p * 2.0**53
    whole, frac = np.floor(a), a - np.floor(a)
    tie = whole / 2.0**53
    below, above = np.nextafter(frac, 0.0), np.nextafter(frac, 1.0)
    assert _bernoulli_from_uniforms(p, tie, below)[frac > 0].all()
    assert not _bernoulli_from_uniforms(p, tie, frac).any()
    assert not _bernoulli_from_uniforms(p, tie, above).any()
    assert _bernoulli_from_uniforms(p[:2], (whole[:2] - 1) / 2.0**53, np.ones(2) * 0.99).all()
    assert not _bernoulli_from_uniforms(p, (whole + 1) / 2.0**53, np.zeros(3)).any()
