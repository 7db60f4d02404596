"""Gaussian-mechanism calibration shared by DPM and the colored-noise mechanism.

Two conditions on the Mahalanobis (whitened) L2 sensitivity ``s`` of a Gaussian release:

* **analytic Gaussian mechanism** (Balle & Wang, ICML 2018, Thm. 8) — the exact (ε, δ)-DP
  condition ``Φ(s/2 − ε/s) − e^ε Φ(−s/2 − ε/s) ≤ δ`` for unit-variance noise. Used by both
  estimators in ``mode="corrected"`` and by DPM's averaging step in every mode (the DPM
  reference code uses the analytic mechanism too).
* **probabilistic DP** (Machanavajjhala et al. 2008; Ravi et al., Thm. 4) — the privacy loss
  ``L ~ N(s²/2, s²)`` satisfies ``P(|L| > ε) = Q((ε − s²/2)/s) + Q((ε + s²/2)/s) ≤ δ``. It
  implies (ε, δ)-DP and is the colored-noise paper's own calibration (``mode="paper"``).

Both left-hand sides increase with ``s``; :func:`max_sensitivity` finds the largest admissible
``s`` by bisection, so a release ``x + σ·N(0, I)`` with ``σ = Δ₂ / s_max`` is private, and the
colored-noise constraint is ``ΔᵀΣ⁻¹Δ ≤ γ`` with ``γ = s_max²``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from dptaucc.privacy import PrivacyLedger

__all__ = [
    "CALIBRATIONS",
    "max_sensitivity",
    "gamma",
    "analytic_sigma",
    "gaussian_mechanism",
    "group_privacy_delta",
]

CALIBRATIONS = ("analytic", "pdp", "classical")


def _analytic_excess(s: float, epsilon: float) -> float:
    """Balle–Wang δ(s) = Φ(s/2 − ε/s) − e^ε Φ(−s/2 − ε/s), computed in log space."""
    a = log_ndtr(s / 2.0 - epsilon / s)
    b = epsilon + log_ndtr(-s / 2.0 - epsilon / s)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def _pdp_excess(s: float, epsilon: float) -> float:
    """P(|L| > ε) for the Gaussian privacy loss L ~ N(s²/2, s²)."""
    return float(ndtr(-(epsilon - s * s / 2.0) / s) + ndtr(-(epsilon + s * s / 2.0) / s))


def max_sensitivity(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """The largest whitened sensitivity ``s`` a unit-variance Gaussian release may have.

    ``calibration`` is ``"analytic"`` (exact DP, Balle–Wang), ``"pdp"`` (probabilistic DP,
    Ravi et al. Thm. 4) or ``"classical"`` (Dwork–Roth Thm. A.1, ``s = ε/√(2 ln(1.25/δ))``,
    valid for ε < 1 only). ``epsilon = inf`` gives ``inf`` (no noise needed).
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if math.isinf(epsilon):
        return math.inf
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if calibration == "classical":
        return epsilon / math.sqrt(2.0 * math.log(1.25 / delta))
    excess = _analytic_excess if calibration == "analytic" else _pdp_excess
    lo, hi = 0.0, 1.0
    while excess(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e8:  # pragma: no cover - absurd budgets
            return hi
    for _ in range(200):  # bisection to machine precision; keep the feasible end
        mid = 0.5 * (lo + hi)
        if mid == lo or mid == hi:
            break
        if excess(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def gamma(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """γ(ε, δ) = s_max²: the colored-noise constraint is ``ΔᵀΣ⁻¹Δ ≤ γ`` (Ravi et al. eq. 11)."""
    s = max_sensitivity(epsilon, delta, calibration)
    return s * s


def analytic_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Noise scale σ of the analytic Gaussian mechanism for an L2 sensitivity Δ₂ (0 if ε = ∞)."""
    if math.isinf(epsilon):
        return 0.0
    return l2_sensitivity / max_sensitivity(epsilon, delta, "analytic")


def gaussian_mechanism(
    values: np.ndarray,
    epsilon: float,
    delta: float,
    l2_sensitivity: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    composition: str = "sequential",
    note: str = "",
) -> np.ndarray:
    """Release ``values + N(0, σ² I)`` with σ from the analytic Gaussian mechanism; charge it."""
    values = np.asarray(values, dtype=float)
    if not (math.isfinite(l2_sensitivity) and l2_sensitivity > 0):
        raise ValueError(f"l2_sensitivity must be finite and > 0, got {l2_sensitivity}")
    sigma = analytic_sigma(epsilon, delta, l2_sensitivity) if delta > 0 or math.isinf(epsilon) \
        else math.inf
    if math.isinf(sigma):
        raise ValueError("the Gaussian mechanism needs delta > 0 for a finite epsilon")
    ledger.charge(step, "gaussian (analytic)", epsilon, delta, l2_sensitivity, composition,
                  (note + f"; sigma={sigma:.6g}").lstrip("; "))
    if sigma == 0.0:
        return values.copy()
    return values + rng.normal(0.0, sigma, size=values.shape)


def group_privacy_delta(epsilon_row: float, delta_row: float) -> float:
    """δ of a two-step group: (ε', δ') add/remove ⇒ (2ε', (1+e^{ε'})δ') one-cell change (§0.1)."""
    if math.isinf(epsilon_row):
        return math.inf if delta_row > 0 else 0.0
    return (1.0 + math.exp(epsilon_row)) * delta_row
