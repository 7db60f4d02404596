"""The vectorised samplers draw the same distributions as diffprivlib's scalar mechanisms."""

import numpy as np
import pytest
from diffprivlib.mechanisms import GeometricFolded, LaplaceBoundedDomain
from dptaucc.baselines.dp_sampling import (
    bounded_domain_laplace,
    bounded_laplace_scale,
    folded_geometric,
)
from scipy import stats


def truncated_laplace_cdf(x, v, b, lo, hi):
    def g(t):
        return np.where(t < v, 0.5 * np.exp((t - v) / b), 1 - 0.5 * np.exp(-(t - v) / b))
    return np.clip((g(x) - g(lo)) / (g(hi) - g(lo)), 0, 1)


@pytest.mark.parametrize("eps,sens,lo,hi", [
    (0.01, 1.0, 0.0, 5.0), (0.5, 2.0, 0.0, 3.0), (2.0, 0.3, 0.0, 100.0),
    (3e-3, 1.0 / 4303, 0.0, 250.0), (1.0, 1.0, -2.0, 7.5)])
def test_scale_matches_diffprivlib_bisection(eps, sens, lo, hi):
    mech = LaplaceBoundedDomain(epsilon=eps, sensitivity=sens, lower=lo, upper=hi, random_state=0)
    assert bounded_laplace_scale(eps, sens, hi - lo) == pytest.approx(mech._find_scale(), rel=1e-12)


def test_scale_vectorised_equals_elementwise():
    eps = np.array([0.1, 1.0, 0.01])
    sens = np.array([1.0, 0.5, 2.0])
    diam = np.array([10.0, 3.0, 40.0])
    vec = bounded_laplace_scale(eps, sens, diam)
    one = [float(bounded_laplace_scale(e, s, d)) for e, s, d in zip(eps, sens, diam, strict=True)]
    np.testing.assert_allclose(vec, one, rtol=1e-12)


@pytest.mark.parametrize("value,eps,sens,lo,hi", [
    (3.0, 0.5, 2.0, 0.0, 10.0),     # interior, wide noise
    (0.0, 1.0, 1.0, 0.0, 4.0),      # at the lower bound
    (12.0, 0.2, 1.0, 0.0, 10.0),    # outside: clipped to the upper bound first
    (50.0, 5.0, 1.0, 0.0, 100.0)])  # narrow noise
def test_bounded_laplace_matches_diffprivlib(value, eps, sens, lo, hi):
    mech = LaplaceBoundedDomain(epsilon=eps, sensitivity=sens, lower=lo, upper=hi, random_state=7)
    ref = np.array([mech.randomise(value) for _ in range(3000)])
    scale = float(bounded_laplace_scale(eps, sens, hi - lo))
    rng = np.random.default_rng(11)
    ours = bounded_domain_laplace(np.full(20000, value), scale, lo, hi, rng)
    assert ours.min() >= lo and ours.max() <= hi
    v = min(max(value, lo), hi)
    # against the exact truncated-Laplace law, and against diffprivlib's own samples
    assert stats.kstest(ours, lambda x: truncated_laplace_cdf(x, v, scale, lo, hi)).pvalue > 1e-3
    assert stats.ks_2samp(ref, ours[:3000]).pvalue > 1e-3


def test_bounded_laplace_ks_has_power():
    """The KS check above can fail: a 30 % too wide scale is rejected."""
    rng = np.random.default_rng(3)
    scale = float(bounded_laplace_scale(0.5, 2.0, 10.0))
    wrong = bounded_domain_laplace(np.full(20000, 3.0), 1.3 * scale, 0.0, 10.0, rng)
    p = stats.kstest(wrong, lambda x: truncated_laplace_cdf(x, 3.0, scale, 0.0, 10.0)).pvalue
    assert p < 1e-6


def test_bounded_laplace_degenerate_and_errors():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(bounded_domain_laplace(np.array([2.0, 9.0]), 1.0, 4.0, 4.0, rng),
                                  [4.0, 4.0])
    with pytest.raises(ValueError, match="lower bound"):
        bounded_domain_laplace(np.zeros(2), 1.0, 1.0, 0.0, rng)


def folded_geometric_pmf(value, eps, lower, support):
    q = np.exp(-eps)
    c = (1 - q) / (1 + q)
    raw = np.arange(-400, 400) + value
    p = c * q ** np.abs(raw - value)
    folded = np.where(raw < lower, 2 * lower - raw, raw).astype(int)
    return np.array([p[folded == s].sum() for s in support])


@pytest.mark.parametrize("value,eps", [(2, 0.3), (40, 0.05), (1, 2.0)])
@pytest.mark.slow
def test_folded_geometric_matches_diffprivlib(value, eps):
    mech = GeometricFolded(epsilon=eps, sensitivity=1, lower=0.5, upper=float("inf"),
                           random_state=5)
    ref = np.array([mech.randomise(value) for _ in range(4000)])
    rng = np.random.default_rng(9)
    ours = folded_geometric(np.full(40000, value), eps, 1, 0.5, np.inf, rng)
    assert ours.min() >= 1
    # chi-square against the exact folded two-sided geometric law (cells with E >= 20)
    support = np.arange(1, ours.max() + 1)
    expected = folded_geometric_pmf(value, eps, 0.5, support) * ours.size
    keep = expected >= 20
    observed = np.bincount(ours, minlength=support.max() + 1)[1:][keep]
    exp_k = expected[keep] * observed.sum() / expected[keep].sum()
    assert stats.chisquare(observed, exp_k).pvalue > 1e-3
    # and against diffprivlib's samples: two-sample chi-square on shared bins (E >= 10)
    edges = np.unique(np.quantile(np.concatenate([ref, ours]), np.linspace(0, 1, 11)))
    edges[-1] += 1
    table = np.array([np.histogram(ref, edges)[0], np.histogram(ours, edges)[0]])
    table = table[:, table.min(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > 1e-3


def test_folded_geometric_chisquare_has_power():
    rng = np.random.default_rng(1)
    ours = folded_geometric(np.full(40000, 2), 0.45, 1, 0.5, np.inf, rng)  # wrong ε
    support = np.arange(1, 30)
    expected = folded_geometric_pmf(2, 0.3, 0.5, support) * ours.size
    observed = np.bincount(ours, minlength=31)[1:30]
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue < 1e-6


def test_folded_geometric_two_sided_fold_and_types():
    rng = np.random.default_rng(2)
    out = folded_geometric(np.full(5000, 3), 0.1, 1, 0.5, 5.5, rng)
    assert out.min() >= 1 and out.max() <= 5
    with pytest.raises(TypeError, match="integer"):
        folded_geometric(np.array([1.5]), 1.0, 1, 0.5, np.inf, rng)


def test_infinite_epsilon_adds_no_noise():
    rng = np.random.default_rng(4)
    assert float(bounded_laplace_scale(np.inf, 1.0, 10.0)) == 0.0
    v = np.array([0.0, 2.5, 10.0])
    np.testing.assert_array_equal(bounded_domain_laplace(v, 0.0, 0.0, 10.0, rng), v)
    np.testing.assert_array_equal(folded_geometric(np.array([1, 5, 9]), np.inf, 1, 0.5, np.inf,
                                                   rng), [1, 5, 9])


class _Uniforms:
    """A stand-in generator returning given uniforms in turn (one array per call)."""

    def __init__(self, *arrays):
        self.arrays = [np.asarray(a, dtype=float) for a in arrays]

    def random(self, shape):
        out = self.arrays.pop(0)
        assert out.shape == (shape if isinstance(shape, tuple) else (shape,))
        return out.copy()


def test_folded_geometric_redraws_a_uniform_of_exactly_one_half():
    """Audit finding: a uniform of exactly ½ gives u = 0 and log(0) (an infinite noise that
    became a garbage int64). It is redrawn: the second uniform decides."""
    eps = 0.7
    q = np.exp(-eps)
    out = folded_geometric(np.array([5, 5, 5]), eps, 1, 0.5, np.inf,
                           _Uniforms([0.5, 0.9, 0.5], [0.25, 0.75]))
    # reference formula of Geometric.randomise on the uniforms actually used
    def noise(r):
        u = (r - 0.5) * (1 + q)
        s = -1.0 if u < 0 else 1.0
        return s * np.floor(np.log(s * u) / -eps)
    np.testing.assert_array_equal(out, [5 + noise(0.25), 5 + noise(0.9), 5 + noise(0.75)])
    assert out.dtype == np.int64
