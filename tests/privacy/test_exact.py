"""The exact batched exponential mechanism of the secure path: its law, its exact fallback."""

import math
from fractions import Fraction

import numpy as np
import pytest

from dptaucc.privacy import SecureSampler
from dptaucc.privacy import exact as exact_module
from dptaucc.privacy.checks import choice_pvalue
from dptaucc.privacy.exact import _decide_exactly, exact_choose, exp_neg_bounds


def softmax(scores, scale):
    p = np.exp((np.asarray(scores) - np.max(scores)) / scale)
    return p / p.sum()


@pytest.mark.parametrize("scores,scale", [
    ([0.0, 0.4, 1.0, -0.7, 0.9], 0.8),
    (np.array([0.0, 0.4, 1.0, -0.7, 0.9]) * 1e6, 0.8e6),  # large magnitudes
    ([0.0, -3.0, -30.0, 2.0], 1.0),                         # a choice of probability ~1e-14
    ([5.0, 5.0], 1e-3),                                     # ties
])
def test_secure_choose_has_the_exponential_mechanism_law(scores, scale):
    n = 200_000
    labels = SecureSampler().choose(np.tile(scores, (n, 1)), scale)
    assert labels.dtype.kind == "i" and labels.shape == (n,)
    assert choice_pvalue(labels, softmax(scores, scale)) > 1e-4


def test_secure_choose_law_test_catches_a_scale_off_by_two():
    scores = np.array([0.0, 0.4, 1.0, -0.7, 0.9])
    labels = SecureSampler().choose(np.tile(scores, (200_000, 1)), 0.4)
    assert choice_pvalue(labels, softmax(scores, 0.8)) < 1e-6


def test_rows_are_sampled_each_with_its_own_scores():
    scores = np.array([[0.0, 50.0], [50.0, 0.0], [0.0, 0.0]])
    labels = SecureSampler().choose(np.tile(scores, (20_000, 1)), 1.0).reshape(-1, 3)
    assert (labels[:, 0] == 1).all() and (labels[:, 1] == 0).all()
    assert abs(labels[:, 2].mean() - 0.5) < 0.02


def test_exp_bounds_enclose_and_numpy_exp_is_within_the_assumed_error():
    rng = np.random.default_rng(0)
    gammas = np.concatenate([rng.random(300) * 40, rng.random(50) * 700, [0.0, 1.0, 2.5]])
    for g in gammas:
        lo, hi = exp_neg_bounds(Fraction(float(g)), 80)
        assert lo <= hi and hi - lo <= Fraction(1, 2**80)
        value = float(np.exp(-g))
        if value > 1e-300:  # numpy's exp within 2^-42 relative of the exact value
            mid = (lo + hi) / 2
            assert abs(Fraction(value) - mid) <= mid * Fraction(1, 2**42) + (hi - lo)


def _ambiguous_prefix(gamma, weight):
    """A 53-bit prefix of U whose interval contains t = 2³²·e^(−γ)/w: undecided in doubles."""
    lo, _ = exp_neg_bounds(gamma, 200)
    return math.floor(lo * 2**32 / weight * 2**53)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(41, 7)])
def test_exact_fallback_decides_like_the_exact_comparison(gamma):
    weight = int(math.ceil(float(exp_neg_bounds(gamma, 80)[1]) * 2**32))
    prefix = _ambiguous_prefix(gamma, weight)
    lo, hi = exp_neg_bounds(gamma, 400)
    t_lo, t_hi = lo * 2**32 / weight, hi * 2**32 / weight
    judged = 0
    for extra in (0, 2**63, 2**64 - 1, 12345):
        u_lo = Fraction((prefix << 64) | extra, 2**117)
        u_hi = u_lo + Fraction(1, 2**117)
        if not (u_hi <= t_lo or u_lo >= t_hi):
            continue  # still undecided at 117 bits: not a case this check can judge
        decision = _decide_exactly(gamma, weight, prefix,
                                   lambda n, e=extra: np.full(n, e, dtype=np.uint64))
        assert decision == (u_hi <= t_lo)
        judged += 1
    assert judged >= 2


@pytest.mark.slow
def test_law_stays_exact_when_most_comparisons_need_the_fallback(monkeypatch):
    """With a relative margin of ¼ instead of 2⁻⁴⁰, the double bounds decide few comparisons and
    the exact path does most of the work: the law must not move."""
    monkeypatch.setattr(exact_module, "_MARGIN", 0.25)
    scores = np.array([0.0, 0.7, -0.4])
    labels = exact_choose(np.tile(scores, (4_000, 1)), 0.5)
    assert choice_pvalue(labels, softmax(scores, 0.5)) > 1e-4


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="scale"):
        exact_choose(np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="2-D"):
        exact_choose(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="finite"):
        exact_choose(np.array([[0.0, np.nan]]), 1.0)
    assert exact_choose(np.zeros((0, 3)), 1.0).shape == (0,)


def test_many_choices_per_row_are_accepted_below_the_64_bit_limit():
    """Rows of thousands of choices (a wide column assignment) draw normally; only
    2**29 choices or more are refused (their proposal weights would overflow 64 bits)."""
    import numpy as np

    from dptaucc.privacy.exact import exact_choose

    scores = np.zeros((3, 5000))
    scores[:, 4321] = 1000.0  # every other choice has probability e^-1000
    assert exact_choose(scores, 1.0).tolist() == [4321] * 3


@pytest.mark.parametrize("gamma", [0.0, 2.0**-30, 1e-3, 0.5, 1.0, 7.25, 100.0, 699.0])
def test_float_bounds_enclose_exp_minus_gamma_tightly(gamma):
    """The double bounds behind every quick accept/reject hold against exact rational bounds
    and are tight (a relative 2⁻³⁶): an upper bound below e^(−γ) (halved, or e⁻⁷⁰⁰ where γ is
    small) makes the law wrong for choices of tiny probability, which no sampling test sees."""
    lo, hi = exact_module._float_bounds(np.array([gamma]))
    exact_lo, exact_hi = exp_neg_bounds(Fraction(gamma), 80 + int(gamma / math.log(2)) + 8)
    assert Fraction(float(lo[0])) <= exact_lo and exact_hi <= Fraction(float(hi[0]))
    assert float(hi[0]) <= float(lo[0]) * (1 + 2.0**-36)


def test_float_bounds_far_from_the_top_are_zero_and_exp_minus_700():
    lo, hi = exact_module._float_bounds(np.array([701.0, 1e300, np.inf]))
    assert lo.tolist() == [0.0, 0.0, 0.0] and hi.tolist() == [math.exp(-700.0)] * 3
