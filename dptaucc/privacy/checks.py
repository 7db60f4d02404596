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
    chosen indices."""

    kind: str
    scale: float
    inputs: np.ndarray | None
    output: np.ndarray


class RecordingSampler(Sampler):
    """A sampler that delegates to ``inner`` and records every call (see :class:`Draw`)."""

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

    def of_kind(self, kind: str) -> list[Draw]:
        return [d for d in self.draws if d.kind == kind]


class ScaledSampler(Sampler):
    """A deliberately broken sampler for power tests: every noise scale multiplied by
    ``factor`` (½ is what a halved sensitivity or a doubled ε at a call site does)."""

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


def discrete_laplace_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    """P(Z = z) = (1 − q)/(1 + q)·q^|z| with q = e^{−1/scale}."""
    q = math.exp(-1.0 / scale)
    return (1.0 - q) / (1.0 + q) * np.power(q, np.abs(np.asarray(z, dtype=float)))


def discrete_laplace_pvalue(samples: np.ndarray, scale: float, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit of integer ``samples`` to the discrete Laplace of ``scale``.

    Central integers with at least ``min_expected`` expected counts are bins of their own;
    each tail beyond them is one bin.
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
    """Chi-square goodness of fit of sampled indices to the given probabilities."""
    probabilities = np.asarray(probabilities, dtype=float)
    observed = np.bincount(np.asarray(choices), minlength=probabilities.size)
    return float(stats.chisquare(observed, probabilities * observed.sum()).pvalue)


def neighbour_log_ratio_bounds(hits_a: int, n_a: int, hits_b: int, n_b: int,
                               alpha: float = 1e-3) -> tuple[float, float]:
    """Two-sided bounds on log(P_a(E)/P_b(E)) from Clopper–Pearson intervals at level α/2 each.

    Returns (lower, upper): with probability ≥ 1 − α the true log ratio lies between them.
    A mechanism claimed ε-DP fails a neighbour test when ``lower > ε``.
    """
    a = alpha / 4.0
    lo_a = stats.beta.ppf(a, hits_a, n_a - hits_a + 1) if hits_a > 0 else 0.0
    hi_a = stats.beta.ppf(1 - a, hits_a + 1, n_a - hits_a) if hits_a < n_a else 1.0
    lo_b = stats.beta.ppf(a, hits_b, n_b - hits_b + 1) if hits_b > 0 else 0.0
    hi_b = stats.beta.ppf(1 - a, hits_b + 1, n_b - hits_b) if hits_b < n_b else 1.0
    lower = math.log(lo_a / hi_b) if lo_a > 0 else -math.inf
    upper = math.log(hi_a / lo_b) if lo_b > 0 else math.inf
    return lower, upper
