"""The noise samplers: their laws, their tails, and seeded == secure in distribution."""

import math

import numpy as np
import pytest
from scipy import stats

from dptaucc.privacy import SecureSampler, SeededSampler, make_sampler
from dptaucc.privacy.checks import choice_pvalue, discrete_laplace_pvalue


def seeded(seed=0):
    return SeededSampler(np.random.default_rng(seed))


@pytest.mark.parametrize("scale", [0.4, 1.0, 3.0, 80.0])
def test_seeded_discrete_laplace_has_its_law(scale):
    z = seeded(1).discrete_laplace(200_000, scale)
    assert z.dtype == np.int64
    assert discrete_laplace_pvalue(z, scale) > 1e-4
    # variance 2q/(1-q)^2 with q = exp(-1/scale)
    q = math.exp(-1 / scale)
    assert z.var() == pytest.approx(2 * q / (1 - q) ** 2, rel=0.03)


@pytest.mark.parametrize("shape", [(3, 20_000), 40_001, (2, 0)])
def test_seeded_discrete_laplace_is_the_difference_of_two_floored_exponentials(shape):
    """⌊E₁·b⌋ − ⌊E₂·b⌋ value for value, the two exponential arrays drawn in that order (the
    sampler works in blocks: every block, the last partial one included)."""
    scale = 7.3
    source = seeded(5)
    e1, e2 = source.standard_exponential(shape), source.standard_exponential(shape)
    expected = (np.floor(e1 * scale) - np.floor(e2 * scale)).astype(np.int64)
    z = seeded(5).discrete_laplace(shape, scale)
    assert z.dtype == np.int64 and z.shape == expected.shape
    np.testing.assert_array_equal(z, expected)


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_discrete_laplace_law_check_detects_a_scale_off_by_two(scale):
    z = seeded(2).discrete_laplace(50_000, scale / 2)
    assert discrete_laplace_pvalue(z, scale) < 1e-6


def test_standard_exponential_has_its_law_and_a_106_bit_tail():
    e = seeded(3).standard_exponential(200_000)
    assert stats.kstest(e, "expon").pvalue > 1e-3

    class Extreme:  # a generator whose every draw is its largest (or smallest) value
        def __init__(self, value):
            self.value = value

        def random(self, size):
            return np.full(size, self.value)

    top = SeededSampler.__new__(SeededSampler)
    top.rng = Extreme(1.0 - 2.0**-53)
    bottom = SeededSampler.__new__(SeededSampler)
    bottom.rng = Extreme(0.0)
    # U = 1 - 2^-107 gives E ≈ 2^-107; U = 2^-107 gives E ≈ 74.2: beyond a 53-bit draw's 36.7
    assert top.standard_exponential(1)[0] == pytest.approx(2.0**-107, rel=1e-9)
    assert bottom.standard_exponential(1)[0] == pytest.approx(107 * math.log(2), rel=1e-12)
    assert bottom.gumbel(1)[0] == pytest.approx(-math.log(107 * math.log(2)))


def test_seeded_choose_follows_softmax_of_scores_over_scale():
    scores = np.array([0.0, 0.4, 1.0, -0.7, 0.9]) * 1e6
    scale = 0.8e6
    labels = seeded(4).choose(np.tile(scores, (40_000, 1)), scale)
    p = np.exp((scores - scores.max()) / scale)
    assert choice_pvalue(labels, p / p.sum()) > 1e-3
    # and a scale off by two is rejected
    wrong = seeded(5).choose(np.tile(scores, (40_000, 1)), scale / 2)
    assert choice_pvalue(wrong, p / p.sum()) < 1e-6


def test_zero_scale_is_argmax_with_uniform_ties():
    labels = seeded(6).choose(np.tile([1.0, 3.0, 3.0, 0.0], (20_000, 1)), 0.0)
    assert set(np.unique(labels)) == {1, 2}
    assert abs(np.mean(labels == 1) - 0.5) < 0.02
    assert (seeded().discrete_laplace((3, 2), 0.0) == 0).all()


def test_bad_scales_are_refused():
    with pytest.raises(ValueError, match="noise scale"):
        seeded().discrete_laplace(3, -1.0)
    with pytest.raises(ValueError, match="noise scale"):
        seeded().discrete_laplace(3, math.inf)


def test_make_sampler():
    assert isinstance(make_sampler(3), SeededSampler)
    s = seeded()
    assert make_sampler(s) is s
    with pytest.raises(ValueError, match="random_state"):
        make_sampler(3, secure=True)
    with pytest.raises(ValueError, match="exact sampler"):
        make_sampler(s, secure=True)
    secure = make_sampler(None, secure=True)
    assert isinstance(secure, SecureSampler) and secure.exact


def _two_sample_chi2(a, b, n_bins):
    table = np.vstack([np.bincount(a, minlength=n_bins), np.bincount(b, minlength=n_bins)])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table).pvalue


def test_secure_discrete_laplace_matches_the_seeded_law():
    scale = 2.5
    a = SecureSampler().discrete_laplace(20_000, scale)
    assert discrete_laplace_pvalue(a, scale) > 1e-4
    b = seeded(7).discrete_laplace(20_000, scale)
    clip = 12
    assert _two_sample_chi2(np.clip(a, -clip, clip) + clip, np.clip(b, -clip, clip) + clip,
                            2 * clip + 1) > 1e-4


def test_secure_choose_matches_the_seeded_law():
    scores = np.array([0.0, 1.5, 2.0, -1.0])
    rows = np.tile(scores, (6_000, 1))
    a = SecureSampler().choose(rows, 1.3)
    # the seeded sample is fixed: ten times larger, its own deviation from the law barely
    # moves the two-sample test, whose false alarms stay near their nominal 1e-4
    b = seeded(8).choose(np.tile(scores, (60_000, 1)), 1.3)
    p = np.exp(scores / 1.3)
    assert choice_pvalue(a, p / p.sum()) > 1e-4
    assert _two_sample_chi2(a, b, 4) > 1e-4


def test_standard_normal_seeded_and_secure_have_the_same_law():
    a = seeded(9).standard_normal(20_000)
    b = SecureSampler().standard_normal(5_000)
    assert stats.kstest(a, "norm").pvalue > 1e-3
    assert stats.kstest(b, "norm").pvalue > 1e-3
    assert stats.ks_2samp(a, b).pvalue > 1e-3


def test_inversion_resolves_a_choice_far_below_double_precision():
    """Weights e^0 and e^-40 (p ≈ 4e-18, below 2^-53): the small one comes first, so the
    low half of a 106-bit uniform decides it, as its probability says."""
    from dptaucc.kernels import choose_by_inversion

    logits = np.array([[0.0, -40.0]] * 2)
    picked = choose_by_inversion(logits, np.array([0.0, 0.0]), np.array([0.01, 0.5]))
    assert picked.tolist() == [1, 0]
    assert choose_by_inversion(logits[:1], np.array([0.7]), np.array([0.0])).tolist() == [0]


def test_standard_exponential_reads_a_second_uniform_below_the_first():
    """U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³ takes its low part from a second, independent draw: with
    hi = 0 and lo near 1, U ≈ 2⁻⁵³ (E ≈ 36.7); reusing the first draw gives U = 2⁻¹⁰⁷."""
    class Sequence:  # a generator returning the arrays given, in order
        def __init__(self, *draws):
            self.draws = list(draws)

        def random(self, size):
            return np.full(size, self.draws.pop(0))

    sampler = SeededSampler.__new__(SeededSampler)
    sampler.rng = Sequence(0.0, 1.0 - 2.0**-53)
    u = (1.0 - 2.0**-53 + 2.0**-54) * 2.0**-53
    assert sampler.standard_exponential(1)[0] == pytest.approx(-math.log(u), rel=1e-12)
