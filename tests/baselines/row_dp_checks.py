"""Test helpers for DPM and the colored-noise mechanism, written independently of the code
under test: the analytic Gaussian calibration from its defining condition, spies that record
what a release function was given and returned, and a sampler that refuses 53-bit Gumbel draws.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from dptaucc.privacy import SeededSampler


def analytic_gaussian_s(epsilon: float, delta: float) -> float:
    """Largest L2 sensitivity s of a unit-variance Gaussian release that is (ε, δ)-DP:
    the root of Φ(s/2 − ε/s) − e^ε·Φ(−s/2 − ε/s) = δ (Balle & Wang 2018, Thm. 8)."""
    def excess(s):
        return (norm.cdf(s / 2 - epsilon / s)
                - math.exp(epsilon) * norm.cdf(-s / 2 - epsilon / s) - delta)
    return brentq(excess, 1e-6, 100.0, xtol=1e-14, rtol=1e-14)


def half_line_log_ratio(shift: float) -> float:
    """log P(Z ≤ shift/2) − log P(Z + shift ≤ shift/2) for Z ~ N(0, 1): the log ratio of the
    event halfway between a Gaussian release and its neighbour shifted by ``shift`` σ."""
    return math.log(norm.cdf(shift / 2) / norm.cdf(-shift / 2))


class Spy:
    """Wraps a function; keeps (args, kwargs, result) of every call."""

    def __init__(self, func):
        self.func = func
        self.calls: list[tuple[tuple, dict, object]] = []

    def __call__(self, *args, **kwargs):
        out = self.func(*args, **kwargs)
        self.calls.append((args, kwargs, out))
        return out


class _NoGumbelGenerator:
    """A numpy Generator that refuses to draw Gumbel variates (53-bit tails)."""

    def __init__(self, rng):
        self._rng = rng

    def gumbel(self, *args, **kwargs):
        raise AssertionError("Gumbel noise drawn from 53-bit uniforms, not the fit's sampler")

    def __getattr__(self, name):
        return getattr(self._rng, name)


class NoGumbelSampler(SeededSampler):
    """A seeded sampler whose plain Generator refuses Gumbel draws: every choice must go
    through the sampler's own 106-bit :meth:`choose`."""

    def __init__(self, seed):
        super().__init__(np.random.default_rng(seed))
        self.rng = _NoGumbelGenerator(self.rng)
