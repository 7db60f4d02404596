"""Statistical checks of mechanisms: record the noise a fit draws, test it against its law.

Used by the test suite (and usable on your own estimator): wrap a sampler in
:class:`RecordingSampler`, pass it as ``random_state`` to an estimator of this package, and
every noise draw of the fit is kept with the scale it was drawn at, in call order (the same
order as the mechanism entries of the fit's ledger).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dptaucc.privacy.samplers import Sampler, SeededSampler

__all__ = ["Draw", "RecordingSampler", "ScaledSampler", "discrete_laplace_pmf",
           "discrete_laplace_pvalue", "choice_pvalue", "neighbour_log_ratio_bounds"]


@dataclass(frozen=True)
class Draw:
    """One sampler call: ``kind`` is "discrete_laplace", "choose" or "standard_normal";
    ``inputs`` the scores of a choice (None for noise draws); ``output`` the noise or the
    chosen indices.

    >>> import numpy as np
    >>> draw = Draw("discrete_laplace", 2.0, None, np.array([1, -3]))
    >>> draw.kind, draw.scale, draw.output.tolist()
    ('discrete_laplace', 2.0, [1, -3])
    """

    kind: str
    scale: float
    inputs: np.ndarray | None
    output: np.ndarray


class RecordingSampler(Sampler):
    """A sampler that delegates to ``inner`` and records every call (see :class:`Draw`).

    >>> import numpy as np
    >>> sampler = RecordingSampler(0)
    >>> noise = sampler.discrete_laplace(4, 3.0)
    >>> chosen = sampler.choose(np.array([[0.0, 1.0]]), 0.5)
    >>> [(d.kind, d.scale) for d in sampler.draws]  # in call order, with the scale drawn at
    [('discrete_laplace', 3.0), ('choose', 0.5)]
    >>> bool(np.array_equal(sampler.of_kind("discrete_laplace")[0].output, noise))
    True
    """

    def __init__(self, inner: Sampler | np.random.Generator | int | None = None):
        if not isinstance(inner, Sampler):
            inner = SeededSampler(np.random.default_rng(inner))
        self.inner = inner
        self.exact = inner.exact
        self.rng = inner.rng
        self.draws: list[Draw] = []

    def discrete_laplace(self, size, scale):
        out = self.inner.discrete_laplace(size, scale)
        self.draws.append(Draw("discrete_laplace", float(scale), None, np.array(out)))
        return out

    def choose(self, scores, scale):
        out = self.inner.choose(scores, scale)
        self.draws.append(Draw("choose", float(scale), np.array(scores, dtype=float),
                               np.array(out)))
        return out

    def standard_normal(self, size):
        out = self.inner.standard_normal(size)
        self.draws.append(Draw("standard_normal", 1.0, None, np.array(out)))
        return out

    def bernoulli(self, p):
        return self.inner.bernoulli(p)

    def integers(self, high):
        return self.inner.integers(high)

    def of_kind(self, kind: str) -> list[Draw]:
        return [d for d in self.draws if d.kind == kind]


class ScaledSampler(Sampler):
    """A deliberately broken sampler for power tests: every noise scale multiplied by
    ``factor`` (½ is what a halved sensitivity or a doubled ε at a call site does).

    >>> import numpy as np
    >>> honest = RecordingSampler(ScaledSampler(SeededSampler(np.random.default_rng(1)), 1.0))
    >>> broken = RecordingSampler(ScaledSampler(SeededSampler(np.random.default_rng(1)), 0.5))
    >>> a, b = honest.discrete_laplace(2000, 8.0), broken.discrete_laplace(2000, 8.0)
    >>> bool(np.abs(b).mean() < 0.6 * np.abs(a).mean())  # half the noise is drawn
    True
    """

    def __init__(self, inner: Sampler | np.random.Generator | int | None = None,
                 factor: float = 0.5):
        if not isinstance(inner, Sampler):
            inner = SeededSampler(np.random.default_rng(inner))
        self.inner = inner
        self.factor = float(factor)
        self.exact = inner.exact
        self.rng = inner.rng

    def discrete_laplace(self, size, scale):
        return self.inner.discrete_laplace(size, scale * self.factor)

    def choose(self, scores, scale):
        return self.inner.choose(scores, scale * self.factor)

    def standard_normal(self, size):
        return self.inner.standard_normal(size) * self.factor

    def normal(self, size, sigma):
        return self.inner.normal(size, sigma * self.factor)

    def bernoulli(self, p):
        return self.inner.bernoulli(p)

    def integers(self, high):
        return self.inner.integers(high)


def discrete_laplace_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    """P(Z = z) = (1 − q)/(1 + q)·q^|z| with q = e^{−1/scale}.

    >>> import numpy as np
    >>> pmf = discrete_laplace_pmf(np.arange(-200, 201), 3.0)
    >>> round(float(pmf.sum()), 12), bool(pmf[200] > pmf[201] == pmf[199])
    (1.0, True)
    """
    q = math.exp(-1.0 / scale)
    return (1.0 - q) / (1.0 + q) * np.power(q, np.abs(np.asarray(z, dtype=float)))


def discrete_laplace_pvalue(samples: np.ndarray, scale: float, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit of integer ``samples`` to the discrete Laplace of ``scale``.

    Central integers with at least ``min_expected`` expected counts are bins of their own;
    each tail beyond them is one bin.

    >>> import numpy as np
    >>> noise = SeededSampler(np.random.default_rng(0)).discrete_laplace(5000, 2.0)
    >>> discrete_laplace_pvalue(noise, 2.0) > 1e-3, discrete_laplace_pvalue(noise, 1.0) < 1e-9
    (True, True)
    """
    samples = np.asarray(samples, dtype=np.int64).ravel()
    n = samples.size
    q = math.exp(-1.0 / scale)
    top = 0
    while n * float(discrete_laplace_pmf(top + 1, scale)[()]) >= min_expected:
        top += 1
    inner = np.arange(-top, top + 1)
    tail = q ** (top + 1) / (1.0 + q)  # P(Z > top) = P(Z < −top)
    expected = np.concatenate([[tail], discrete_laplace_pmf(inner, scale), [tail]]) * n
    clipped = np.clip(samples, -top - 1, top + 1) + top + 1
    observed = np.bincount(clipped, minlength=inner.size + 2)
    return float(stats.chisquare(observed, expected).pvalue)


def choice_pvalue(choices: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit of sampled indices to the given probabilities.

    >>> import numpy as np
    >>> choices = np.random.default_rng(0).choice(3, size=3000, p=[0.2, 0.3, 0.5])
    >>> choice_pvalue(choices, [0.2, 0.3, 0.5]) > 1e-3, choice_pvalue(choices, [1/3] * 3) < 1e-9
    (True, True)
    """
    probabilities = np.asarray(probabilities, dtype=float)
    observed = np.bincount(np.asarray(choices), minlength=probabilities.size)
    return float(stats.chisquare(observed, probabilities * observed.sum()).pvalue)


def neighbour_log_ratio_bounds(hits_a: int, n_a: int, hits_b: int, n_b: int,
                               alpha: float = 1e-3) -> tuple[float, float]:
    """Two-sided bounds on log(P_a(E)/P_b(E)) from Clopper–Pearson intervals at level α/2 each.

    Returns (lower, upper): with probability ≥ 1 − α the true log ratio lies between them.
    A mechanism claimed ε-DP fails a neighbour test when ``lower > ε``.

    >>> lower, upper = neighbour_log_ratio_bounds(3000, 5000, 1000, 5000)  # ratio 3: log 1.0986
    >>> bool(lower < 1.0986 < upper), bool(lower > 0.9)  # an ε = 0.9 claim fails
    (True, True)
    """
    a = alpha / 4.0
    lo_a = stats.beta.ppf(a, hits_a, n_a - hits_a + 1) if hits_a > 0 else 0.0
    hi_a = stats.beta.ppf(1 - a, hits_a + 1, n_a - hits_a) if hits_a < n_a else 1.0
    lo_b = stats.beta.ppf(a, hits_b, n_b - hits_b + 1) if hits_b > 0 else 0.0
    hi_b = stats.beta.ppf(1 - a, hits_b + 1, n_b - hits_b) if hits_b < n_b else 1.0
    lower = math.log(lo_a / hi_b) if lo_a > 0 else -math.inf
    upper = math.log(hi_a / lo_b) if lo_b > 0 else math.inf
    return lower, upper
