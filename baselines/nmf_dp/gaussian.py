"""Gaussian-mechanism calibration: classical (Dwork & Roth A.1) and analytic (Balle & Wang 2018).

For L2 sensitivity Δ and noise N(0, σ²), the exact privacy profile (Balle & Wang 2018, Thm 8) is
``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``; the mechanism is (ε, δ)-DP iff δ(ε) ≤ δ.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = ["classical_gaussian_sigma", "paper_noise_std", "analytic_gaussian_sigma",
           "gaussian_delta", "gaussian_epsilon"]


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ* = Δ·√(2 ln(1.25/δ))/ε — the classical calibration (valid for ε < 1).

    >>> sigma = classical_gaussian_sigma(1.0, 0.5, 1e-5)
    >>> round(sigma, 4), gaussian_delta(sigma, 1.0, 0.5) <= 1e-5  # (ε, δ)-DP, with room
    (9.6896, True)
    """
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def paper_noise_std(sensitivity: float, epsilon: float, delta: float) -> float:
    """The std the authors' DPNMF adds: 2(Δ/ε)² ln(1.25/δ) = σ*², the classical variance.

    >>> import math
    >>> math.isclose(paper_noise_std(1.0, 0.5, 1e-5), classical_gaussian_sigma(1.0, 0.5, 1e-5)**2)
    True
    """
    return 2.0 * (sensitivity / epsilon) ** 2 * math.log(1.25 / delta)


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise σ and L2 sensitivity Δ.

    >>> gaussian_delta(0.0, 1.0, 1.0), gaussian_delta(2.0, 1.0, 0.5) > gaussian_delta(4.0, 1.0, 0.5)
    (1.0, True)
    """
    if sigma <= 0:
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(ndtr(a - b) - np.exp(epsilon + log_ndtr(-a - b)))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest σ with δ(ε) ≤ δ (bisection on log σ; δ(ε) decreases in σ). Valid for any ε > 0.

    >>> sigma = analytic_gaussian_sigma(1.0, 0.5, 1e-5)
    >>> round(sigma, 4), sigma < classical_gaussian_sigma(1.0, 0.5, 1e-5)  # tighter
    (7.0318, True)
    >>> gaussian_delta(sigma, 1.0, 0.5) <= 1e-5 < gaussian_delta(0.999 * sigma, 1.0, 0.5)
    True
    """
    if not (sensitivity > 0 and epsilon > 0 and 0 < delta < 1):
        raise ValueError("need sensitivity > 0, epsilon > 0 and 0 < delta < 1")
    if math.isinf(epsilon):
        return 0.0
    lo, hi = 1e-12 * sensitivity, sensitivity
    while gaussian_delta(hi, sensitivity, epsilon) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if gaussian_delta(mid, sensitivity, epsilon) > delta:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return hi


def gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """Smallest ε with δ(ε) ≤ δ for a given σ: what a release with that noise really costs.

    >>> round(gaussian_epsilon(analytic_gaussian_sigma(1.0, 0.5, 1e-5), 1.0, 1e-5), 6)
    0.5
    >>> gaussian_epsilon(0.0, 1.0, 1e-5)
    inf
    """
    if sigma <= 0:
        return math.inf
    lo, hi = 0.0, 1.0
    while gaussian_delta(sigma, sensitivity, hi) > delta:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if gaussian_delta(sigma, sensitivity, mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return hi
