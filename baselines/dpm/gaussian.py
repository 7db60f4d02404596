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

:func:`colored_gaussian_mechanism` releases ``x + N(0, Σ)`` with the same shape as the
package's mechanisms (charge first, record the noise scale, draw from the fit's sampler, round
each coordinate to a grid fixed by its own noise scale). DPM's isotropic release uses the
package's :func:`dptaucc.privacy.gaussian_mechanism` directly.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from dptaucc.privacy import PrivacyLedger, Sampler, as_sampler
from dptaucc.privacy.calibration import Declaration, first_draw, note_draw
from dptaucc.privacy.hook import watch
from dptaucc.privacy.mechanisms import GRID_BITS

__all__ = [
    "CALIBRATIONS",
    "max_sensitivity",
    "gamma",
    "analytic_sigma",
    "marginal_sds",
    "snap_coordinates",
    "colored_gaussian_noise",
    "colored_gaussian_mechanism",
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

    >>> from dptaucc.baselines.nmf_dp.gaussian import gaussian_delta
    >>> s = max_sensitivity(1.0, 1e-5)
    >>> round(s, 4), bool(gaussian_delta(1.0 / s, 1.0, 1.0) <= 1e-5)  # σ = 1/s: (1, 1e-5)-DP
    (0.2681, True)
    >>> bool(max_sensitivity(1.0, 1e-5, "pdp") < s), max_sensitivity(float("inf"), 1e-5)
    (True, inf)
    >>> max_sensitivity(1.0, 0.0)
    Traceback (most recent call last):
    ...
    ValueError: delta must lie in (0, 1), got 0.0
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
    """γ(ε, δ) = s_max²: the colored-noise constraint is ``ΔᵀΣ⁻¹Δ ≤ γ`` (Ravi et al. eq. 11).

    >>> gamma(1.0, 1e-5, "pdp") == max_sensitivity(1.0, 1e-5, "pdp") ** 2
    True
    """
    s = max_sensitivity(epsilon, delta, calibration)
    return s * s


def analytic_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Noise scale σ of the analytic Gaussian mechanism for an L2 sensitivity Δ₂ (0 if ε = ∞).

    >>> import math
    >>> from dptaucc.baselines.nmf_dp.gaussian import analytic_gaussian_sigma
    >>> math.isclose(analytic_sigma(1.0, 1e-5, 2.0), analytic_gaussian_sigma(2.0, 1.0, 1e-5))
    True
    >>> analytic_sigma(math.inf, 1e-5, 2.0)
    0.0
    """
    if math.isinf(epsilon):
        return 0.0
    return l2_sensitivity / max_sensitivity(epsilon, delta, "analytic")


def marginal_sds(covariance: np.ndarray) -> np.ndarray:
    """Per-coordinate noise standard deviations of a diagonal (p,) or full (p×p) covariance.

    >>> import numpy as np
    >>> marginal_sds(np.array([4.0, 9.0])).tolist()
    [2.0, 3.0]
    >>> marginal_sds(np.array([[4.0, 1.0], [1.0, 9.0]])).tolist()  # the diagonal
    [2.0, 3.0]
    """
    cov = np.asarray(covariance, dtype=float)
    return np.sqrt(np.maximum(cov if cov.ndim == 1 else np.diag(cov), 0.0))


def snap_coordinates(noisy: np.ndarray, sds: np.ndarray, bits: int = GRID_BITS) -> np.ndarray:
    """Round coordinate j of ``noisy`` to the grid 2^(⌊log₂ sd_j⌋ − bits) (post-processing).

    The per-coordinate form of :func:`dptaucc.privacy.snap_to_grid`: each grid is fixed by that
    coordinate's noise scale alone. Coordinates without noise (sd 0) are left as they are.

    >>> import numpy as np
    >>> snap_coordinates(np.array([[1.23456789, 5.123]]), np.array([1.0, 0.0]), bits=4).tolist()
    [[1.25, 5.123]]
    """
    noisy = np.asarray(noisy, dtype=float)
    sds = np.asarray(sds, dtype=float)
    noisy_cols = sds > 0
    exponent = np.frexp(np.where(noisy_cols, sds, 1.0))[1] - 1  # ⌊log₂ sd⌋, exactly
    g = np.ldexp(1.0, exponent - bits)
    return np.where(noisy_cols, np.round(noisy / g) * g, noisy)


def colored_gaussian_noise(values: np.ndarray, covariance: np.ndarray,
                           sampler: Sampler | np.random.Generator) -> np.ndarray:
    """``values`` (…×p) + N(0, Σ) per row, each coordinate snapped by :func:`snap_coordinates`.

    Draws only (no charge): the caller charges the release. Σ is diagonal (p,) or full (p×p).

    >>> import numpy as np
    >>> cov = np.array([[4.0, 3.0], [3.0, 4.0]])
    >>> noisy = colored_gaussian_noise(np.zeros((20000, 2)), cov, np.random.default_rng(0))
    >>> bool(np.allclose(np.cov(noisy.T), cov, atol=0.2))  # the covariance asked for
    True
    >>> colored_gaussian_noise(np.ones((1, 2)), np.zeros(2), np.random.default_rng(0)).tolist()
    [[1.0, 1.0]]
    """
    values = np.asarray(values, dtype=float)
    cov = np.asarray(covariance, dtype=float)
    sds = marginal_sds(cov)
    if not np.any(sds > 0):
        return values.copy()
    sampler = as_sampler(sampler)
    if cov.ndim == 1:
        noise = sampler.normal(values.shape, sds)
    else:
        z = sampler.standard_normal(values.shape)
        note_draw("gaussian", sampler.source, sds, z.size, covariance=cov)
        w, U = np.linalg.eigh(cov)
        noise = (z * np.sqrt(np.maximum(w, 0.0))) @ U.T
    return snap_coordinates(values + noise, sds)


def colored_gaussian_mechanism(values: np.ndarray, covariance: np.ndarray, epsilon: float,
                               delta: float, l2_sensitivity: float,
                               sampler: Sampler | np.random.Generator, ledger: PrivacyLedger,
                               step: str, note: str = "",
                               mechanism: str = "gaussian (colored)",
                               blocks: tuple[tuple[int, float], ...] | None = None
                               ) -> np.ndarray:
    """Release ``values + N(0, Σ)`` (one draw per row), charged (ε, δ) before drawing.

    Privacy map: if every change Δ a neighbour can make to ``values`` satisfies ΔᵀΣ⁻¹Δ ≤ s²
    with s the :func:`max_sensitivity` of (ε, δ), the whitened release Σ^{-1/2}·values + N(0, I)
    has L2 sensitivity s and is (ε, δ)-DP by the analytic Gaussian mechanism (Balle & Wang); the
    caller establishes the condition (e.g. :func:`gamma` and a covariance built for it) and
    passes the L2 sensitivity of ``values`` for the record. Each coordinate is then rounded to a
    grid fixed by its own noise scale (post-processing), so the possible outputs do not depend
    on the data when Σ does not. The recorded noise scale is the largest marginal σ. Like the
    package's mechanisms, the call is shown to the audit hook (:mod:`dptaucc.privacy.hook`),
    with the change a neighbour can make declared for the audit's privacy map: one row of
    ``values`` moves, its consecutive column ``blocks`` ``(width, L2 bound)`` each within their
    bound (default: the whole row within ``l2_sensitivity``).

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> ledger = PrivacyLedger()
    >>> out = colored_gaussian_mechanism(np.zeros((2, 3)), np.array([1.0, 4.0, 0.25]), 1.0,
    ...                                  1e-5, 0.5, make_sampler(0), ledger, "centres")
    >>> out.shape, [(e.step, e.epsilon, e.delta, e.noise_scale) for e in ledger.entries]
    ((2, 3), [('centres', 1.0, 1e-05, 2.0)])
    """
    sds = marginal_sds(covariance)
    seen = watch(ledger)
    ledger.charge(step, mechanism, epsilon, delta, l2_sensitivity, "sequential", note,
                  float(sds.max()) if sds.size else 0.0)

    sampler = as_sampler(sampler)

    def draw(n=None):  # n: a batch of n outputs (audit redraws)
        batch = values if n is None else np.broadcast_to(values, (n, *np.shape(values)))
        return colored_gaussian_noise(batch, covariance, sampler)
    width = int(np.shape(values)[-1]) if np.ndim(values) else 1
    declared = Declaration("gaussian", float(l2_sensitivity), "l2-blocks", 1,
                           {"blocks": tuple(blocks) if blocks is not None
                            else ((width, float(l2_sensitivity)),)}, exact=values)
    out = first_draw(seen, draw, declared)
    return out if seen is None else seen.released(step, mechanism, out, draw)
