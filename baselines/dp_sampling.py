"""Vectorised samplers with the same distributions as diffprivlib's scalar mechanisms.

diffprivlib's DP-KMeans builds one mechanism object per cluster × coordinate × iteration, each
running its own bisection and rejection loop (about a minute per fit on reviews). The functions here
draw the same distributions for whole arrays at once. They serve ``mode="paper"`` of
:class:`~dptaucc.baselines.dp_kmeans.DPKMeans`, which reproduces diffprivlib's float noise
(53-bit uniforms, real-valued sums whose possible values depend on the data); corrected mode
uses the integer mechanisms of :mod:`dptaucc.privacy` instead.

* :func:`bounded_laplace_scale` — the scale of ``LaplaceBoundedDomain`` (Holohan et al. 2020,
  "The bounded Laplace mechanism", Eq. for Δ_C), found by the same bisection, element-wise;
* :func:`bounded_domain_laplace` — a Laplace(value, b) variate conditioned on ``[lower, upper]``
  (diffprivlib samples it by rejection; here by exact inverse CDF, same law);
* :func:`folded_geometric` — ``GeometricFolded``: the two-sided geometric variate of
  ``Geometric.randomise`` (same transformation of one uniform), rounded and folded into
  ``[lower, upper]``.

These are raw samplers: the caller charges the privacy ledger.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bounded_laplace_scale", "bounded_domain_laplace", "folded_geometric"]


def bounded_laplace_scale(
    epsilon: np.ndarray | float,
    sensitivity: np.ndarray | float,
    diameter: np.ndarray | float,
    delta: float = 0.0,
) -> np.ndarray:
    """Scale b of the bounded-domain Laplace mechanism, element-wise (HABM20 bisection).

    Solves ``b = Δ / (ε − ln Δ_C(b) − ln(1 − δ))`` with
    ``Δ_C(b) = (2 − e^{−Δ/b} − e^{−(D−Δ)/b}) / (1 − e^{−D/b})`` (D = domain diameter) by the
    same bisection and stopping rule as ``LaplaceBoundedDomain._find_scale``: halve until the
    bracket stops shrinking in floating point.

    >>> import numpy as np
    >>> from diffprivlib.mechanisms import LaplaceBoundedDomain
    >>> reference = LaplaceBoundedDomain(epsilon=0.5, delta=0.0, sensitivity=1.0, lower=0,
    ...                                  upper=10)._find_scale()
    >>> scales = bounded_laplace_scale(0.5, 1.0, np.array([10.0, 1e9]))
    >>> bool(scales[0] == reference), bool(scales.min() > 1 / 0.5)  # wider than Laplace's Δ/ε
    (True, True)
    """
    eps, dq, diam = np.broadcast_arrays(
        np.asarray(epsilon, dtype=float), np.asarray(sensitivity, dtype=float),
        np.asarray(diameter, dtype=float))
    eps, dq, diam = eps.astype(float), dq.astype(float), diam.astype(float)
    log1md = np.log1p(-delta)

    def f(shape: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dc = (2.0 - np.exp(-dq / shape) - np.exp(-(diam - dq) / shape)) / (
                1.0 - np.exp(-diam / shape))
            dc = np.where(shape == 0, 2.0, dc)
            return dq / (eps - np.log(dc) - log1md)

    left = dq / (eps - log1md)
    right = f(left)
    old = (right - left) * 2.0
    active = old > right - left
    while np.any(active):
        old = np.where(active, right - left, old)
        middle = (right + left) / 2.0
        fm = f(middle)
        left = np.where(active & (fm >= middle), middle, left)
        right = np.where(active & (fm <= middle), middle, right)
        active = active & (old > right - left)
    return (right + left) / 2.0


def bounded_domain_laplace(
    values: np.ndarray,
    scale: np.ndarray | float,
    lower: np.ndarray | float,
    upper: np.ndarray | float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Laplace(v, b) conditioned on ``[lower, upper]``, v first clipped into the domain.

    Exact inverse-CDF sampling: pick the side of v with probability proportional to its
    Laplace mass inside the domain, then a truncated exponential on that side
    (``log1p``/``expm1`` keep precision when a side is short or long relative to b).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> out = bounded_domain_laplace(np.full(5000, 9.0), 3.0, 0.0, 10.0, rng)
    >>> bool(out.min() >= 0.0), bool(out.max() <= 10.0), bool(np.median(out) < 9.0)
    (True, True, True)
    >>> bounded_domain_laplace(np.array([5.0, 12.0]), 0.0, 0.0, 10.0, rng).tolist()  # b = 0
    [5.0, 10.0]
    """
    v, b, lo, hi = np.broadcast_arrays(
        np.asarray(values, dtype=float), np.asarray(scale, dtype=float),
        np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
    if np.any(lo > hi):
        raise ValueError("lower bound greater than upper bound")
    v = np.clip(v, lo, hi)
    d_lo = v - lo
    d_hi = hi - v
    u_side = rng.random(v.shape)
    u_len = rng.random(v.shape)
    with np.errstate(invalid="ignore", divide="ignore"):  # b = 0 (ε = ∞): returns v
        # mass of Laplace(v, b) on [lo, v) and (v, hi], each up to the common factor 1/2
        m_lo = -np.expm1(-d_lo / b)
        m_hi = -np.expm1(-d_hi / b)
        total = m_lo + m_hi
        go_low = u_side * total < m_lo
        mass = np.where(go_low, m_lo, m_hi)
        # truncated exponential on [0, D]: t = −b·ln(1 − u·(1 − e^{−D/b}))
        t = -b * np.log1p(-u_len * mass)
    out = np.where(go_low, v - t, v + t)
    out = np.where(total > 0, out, v)  # empty domain (lo == hi): the single point
    return np.clip(out, lo, hi)


def folded_geometric(
    values: np.ndarray,
    epsilon: float,
    sensitivity: int,
    lower: float,
    upper: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """``GeometricFolded.randomise`` for an integer array.

    Noise: u ~ U[−½, ½)·(1 + q), q = e^{−ε/Δ}; sign s of u; ``s·⌊ln(s·u)/ln q⌋`` (the
    two-sided geometric of ``Geometric.randomise``), added, rounded, then folded about
    ``lower``/``upper`` (half-integers allowed) until inside.

    A uniform of exactly ½ gives u = 0 and ln 0 (diffprivlib then fails converting an infinite
    noise); such a draw (probability 2⁻⁵³) is redrawn, which is the law of u conditioned on
    u ≠ 0, an event of probability 1 for the continuous uniform the formula assumes.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> out = folded_geometric(np.full(4000, 1), 0.5, 1, 0.5, np.inf, rng)
    >>> out.dtype.kind, bool(out.min() >= 1), bool(out.std() > 1)  # folded about ½: ≥ 1
    ('i', True, True)
    >>> folded_geometric(np.array([1.5]), 0.5, 1, 0.5, np.inf, rng)
    Traceback (most recent call last):
    ...
    TypeError: folded_geometric randomises integer values
    """
    if not (lower <= upper):
        raise ValueError("lower bound greater than upper bound")
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise TypeError("folded_geometric randomises integer values")
    log_q = -float(epsilon) / float(sensitivity)
    r = rng.random(v.shape)
    while True:
        zero = r == 0.5
        if not zero.any():
            break
        r[zero] = rng.random(int(zero.sum()))
    u = (r - 0.5) * (1.0 + np.exp(log_q))
    sgn = np.where(u < 0, -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = sgn * np.floor(np.log(sgn * u) / log_q)
    noise = np.nan_to_num(noise, nan=0.0)  # ε = ∞ (log q = −∞): no noise
    noisy = np.round(v + noise)
    while True:
        below = noisy < lower
        above = noisy > upper
        if not (below.any() or above.any()):
            break
        noisy = np.where(below, 2 * lower - noisy, noisy)
        noisy = np.where(above, 2 * upper - noisy, noisy)
    return np.round(noisy).astype(np.int64)
