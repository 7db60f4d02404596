"""An independent privacy map: what one mechanism call's noise really costs.

Input: the call's :class:`~dptaucc.privacy.calibration.Calibration` — the scales its sampler
really drew at and the sensitivity its mechanism declared — and the δ the ledger charged for
it. Output: the ε that noise costs at that δ (:class:`Cost`), computed without reading the
ledger and without the library's own calibration code, so a charge below it is an
under-charge (:mod:`dptaucc.audit.ledger_check`).

Where OpenDP has the mechanism, its measurement's ``map`` is asked, for a measurement built
at the scale drawn (OpenDP 0.16, the ``secure`` extra):

* discrete Laplace of scale b, L1 sensitivity Δ: ``make_laplace`` on an ``i64`` vector domain
  with ``l1_distance``, ``map(Δ)`` = Δ/b (pure ε);
* textbook float Laplace (paper mode): the same on a float vector domain;
* exponential mechanism of Gumbel scale β, range sensitivity Δ (each row's utilities move by
  c with max c − min c ≤ Δ): c − min c is a monotone change of L∞ size ≤ Δ and the constant
  min c changes no noisy-max law, so ``make_noisy_max`` with ``linf_distance(monotonic=True)``
  and ``max_divergence`` at scale β, ``map(Δ)`` = Δ/β per row; rows a neighbour may change
  (``n_changed``) add up. (OpenDP's max-divergence measurement adds exponential noise, ours
  Gumbel noise; both laws are Δ/β-DP for a monotone change of size Δ — McSherry & Talwar 2007,
  Dong, Durfee & Rogers 2020 — and OpenDP's map is that number);
* exponential mechanism over a public grid (``"exponential-grid"``, DPM's quantile), P(o) ∝
  exp(u(o)/(2β)) with |u(o) − u'(o)| ≤ Δ at every output (norm ``"linf"``): the softmax law
  of the scores u/2 at scale β, whose change has range ≤ Δ, so the same ``map(Δ)`` = Δ/β;
* Gaussian of scale σ, L2 sensitivity Δ: ``make_gaussian`` on a float vector domain with
  ``l2_distance``, ``map(Δ)`` = ρ = Δ²/(2σ²) (zCDP). From μ = √(2ρ) = Δ/σ the exact (ε, δ)
  curve of the Gaussian mechanism (Balle & Wang 2018, Thm. 8)

      δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)

  gives the smallest ε with δ(ε) ≤ δ charged (bisection, upper end kept). ρ-zCDP converted
  by OpenDP's general rule would overstate the Gaussian's own curve, so the curve is ours.
  The release is snapped to a grid 2²⁴ finer than σ, which moves each output's probability
  by a relative 2⁻²⁸ at most: 2⁻²⁷ is added to ε (:data:`SNAP_SLACK`).

Our own maps, each written once here:

* colored Gaussian (``"l2-blocks"``): one row of the release changes, block B of it by at most
  r_B in L2, with per-coordinate noise σ_j (a diagonal covariance): whitened, the change has
  L2 norm s with s² = Σ_B r_B² / min_{j∈B} σ_j² (the largest a change within the blocks can
  reach), and the whitened release is a Gaussian of scale 1 and L2 sensitivity s: OpenDP's
  ``make_gaussian(scale=1).map(s)``, then the curve above. A full covariance Σ (paper mode)
  uses s² = λ_max(Σ⁻¹)·Σ_B r_B², an upper bound.
* bounded discrete Laplace on {0, …, M} at scale s (:mod:`dptaucc.privacy.bounded`), values
  moving by at most Δ: P_w(y) = q^|y−w|/Z(w), q = e^(−1/s). The loss between w and w′ at y is
  (|y − w′| − |y − w|)/s + ln Z(w′)/Z(w) ≤ |w − w′|/s + ln Z(w′) − ln Z(w); ln Z is concave,
  so its increase over a distance d is largest from w = 0, and d/s + ln Z(d) grows with d
  (Z(d + 1) ≥ q·Z(d)): each value costs, exactly (attained at w = 0, w′ = D, y = 0),

      ε(s, M) = D/s + ln(Z(D)/Z(0)),  D = min(Δ, M),
      Z(D)/Z(0) = (1 − q^(D+1) + q − q^(M−D+1)) / (1 − q^(M+1)),

  and a call whose neighbours change ``n_changed`` of its values costs the sum of the
  ``n_changed`` largest per-value ε. The geometric draws must be at the per-value scales and
  one side draw must go with every noised value, else the calibration is inconsistent.

A declared mechanism with no draw of its law (noise that was never drawn), a scale of 0 or a
draw no mechanism declared costs ∞.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw

__all__ = ["Cost", "call_cost", "gaussian_epsilon", "bounded_laplace_epsilon",
           "opendp_version", "SNAP_SLACK", "GAUSSIAN_LAWS"]

#: ε added to a grid-snapped Gaussian release (each probability within a relative 2⁻²⁸)
SNAP_SLACK = 2.0**-27
GAUSSIAN_LAWS = ("gaussian",)


@dataclass(frozen=True)
class Cost:
    """What a call's noise costs: ε at the charged δ, and how it was computed.

    >>> Cost(0.5, 0.0, "opendp make_laplace").epsilon
    0.5
    """

    epsilon: float
    delta: float
    how: str


@functools.lru_cache(maxsize=1)
def _dp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def opendp_version() -> str:
    """The installed OpenDP version (the maps asked).

    >>> opendp_version().count(".") >= 1
    True
    """
    from importlib.metadata import version

    return version("opendp")


@functools.lru_cache(maxsize=4096)
def _laplace_map(scale: float, d_in: float, integer: bool) -> float:
    dp = _dp()
    if integer:
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")),
                                 dp.l1_distance(T="i64"), scale=scale)
        return float(meas.map(int(d_in)))
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                             dp.l1_distance(T=float), scale=scale)
    return float(meas.map(float(d_in)))


@functools.lru_cache(maxsize=4096)
def _noisy_max_map(scale: float, d_in: float) -> float:
    dp = _dp()
    meas = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                               dp.linf_distance(T=float, monotonic=True), dp.max_divergence(),
                               scale=scale)
    return float(meas.map(float(d_in)))


@functools.lru_cache(maxsize=4096)
def _gaussian_rho(scale: float, d_in: float) -> float:
    dp = _dp()
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                              dp.l2_distance(T=float), scale=scale)
    return float(meas.map(float(d_in)))


def _gaussian_delta(eps: float, mu: float) -> float:
    """δ(ε) of the Gaussian mechanism with μ = Δ/σ (module docstring), in log space. Not
    shared with the calibration code of the methods (``baselines/dpm/gaussian.py`` solves the
    same condition for σ): the map must not reuse the code it checks."""
    a = log_ndtr(mu / 2.0 - eps / mu)
    b = eps + log_ndtr(-mu / 2.0 - eps / mu)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` for the Gaussian mechanism of μ = Δ/σ
    (∞ at δ = 0 or μ = ∞; 0 at μ = 0).

    >>> round(gaussian_epsilon(1.0, 1e-5), 4)  # Δ = σ
    4.3772
    >>> gaussian_epsilon(1.0, 0.0), gaussian_epsilon(0.0, 1e-5)
    (inf, 0.0)
    """
    if mu == 0:
        return 0.0
    if not math.isfinite(mu) or delta <= 0:
        return math.inf
    if _gaussian_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while _gaussian_delta(hi, mu) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e9:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _gaussian_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def bounded_laplace_epsilon(scale, upper, sensitivity: float) -> np.ndarray:
    """ε(s, M) of each value of a bounded discrete Laplace (module docstring), element-wise;
    0 where M = 0, ∞ where s = 0 < M.

    >>> bounded_laplace_epsilon([1.0, 1.0, 2.0], [0, 1000, 1000], 1).round(4).tolist()
    [0.0, 1.2091, 0.714]
    """
    s, m = np.broadcast_arrays(np.asarray(scale, dtype=float), np.asarray(upper, dtype=float))
    d = np.minimum(float(sensitivity), m)
    out = np.zeros(s.shape)
    live = m > 0
    out[live & ~(s > 0)] = math.inf
    ok = live & (s > 0)
    if ok.any():
        h, dd, mm = 1.0 / s[ok], d[ok], m[ok]
        # 1 − q^(D+1) + q − q^(M−D+1) = (1 − q^(D+1)) + q(1 − q^(M−D))
        num = -np.expm1(-(dd + 1.0) * h) - np.exp(-h) * np.expm1(-(mm - dd) * h)
        den = -np.expm1(-(mm + 1.0) * h)
        out[ok] = dd * h + np.log(num / den)
    return out


def _draws(calib: Calibration, law: str) -> list[NoiseDraw]:
    return [d for d in calib.draws if d.law == law]


def _min_scale(draws: list[NoiseDraw]) -> float:
    return min(d.min_scale for d in draws) if draws else math.nan


def _pure(decl: Declaration, calib: Calibration) -> Cost:
    """Discrete Laplace, float Laplace and the exponential mechanism."""
    law = {"discrete-laplace": "discrete-laplace", "laplace-float": "laplace-float",
           "exponential": "choice", "exponential-grid": "choice"}[decl.mechanism]
    draws = _draws(calib, law)
    if not draws:
        return Cost(math.inf, 0.0, f"declared {decl.mechanism}, no {law} draw")
    scale, sens = _min_scale(draws), float(decl.sensitivity)
    if sens == 0:
        return Cost(0.0, 0.0, "sensitivity 0")
    if not scale > 0:
        return Cost(math.inf, 0.0, f"{law} drawn at scale 0")
    if decl.mechanism == "exponential-grid":
        # P(o) ∝ exp(u(o)/(2β)): the noisy max of the scores u/2, each moving by at most Δ/2
        # either way (|u − u'| ≤ Δ at every o), a range of at most Δ
        eps = _noisy_max_map(scale, sens)
        return Cost(eps, 0.0, f"opendp make_noisy_max(max_divergence, scale={scale:.6g})"
                              f".map({sens:.6g}) on the scores u/2 of the grid law")
    if decl.mechanism == "exponential":
        eps = _noisy_max_map(scale, sens) * max(1, int(decl.n_changed))
        return Cost(eps, 0.0, f"opendp make_noisy_max(max_divergence, scale={scale:.6g})"
                              f".map({sens:.6g}) × {decl.n_changed} row(s)")
    integer = decl.mechanism == "discrete-laplace" and float(sens).is_integer()
    eps = _laplace_map(scale, sens, integer)
    kind = "i64" if integer else "float"
    return Cost(eps, 0.0, f"opendp make_laplace({kind}, scale={scale:.6g}).map({sens:.6g})")


def _whitened_sensitivity(decl: Declaration, draws: list[NoiseDraw]) -> float:
    """s of the colored Gaussian (module docstring), or Δ/σ for one isotropic block."""
    blocks = decl.detail.get("blocks") or ((None, float(decl.sensitivity)),)
    total = 0.0
    for d in draws:
        cov = d.detail.get("covariance")
        sds = np.atleast_1d(np.asarray(d.scale, dtype=float))
        if cov is not None:
            lam = float(np.linalg.eigvalsh(np.asarray(cov, dtype=float)).min())
            if not lam > 0:
                return math.inf
            s2 = sum(float(r) ** 2 for _, r in blocks) / lam
        else:
            s2, start = 0.0, 0
            for width, radius in blocks:
                part = sds if width is None or sds.size == 1 else sds[start:start + int(width)]
                start += 0 if width is None else int(width)
                low = float(part.min()) if part.size else math.nan
                if float(radius) == 0:
                    continue
                if not low > 0:
                    return math.inf
                s2 += (float(radius) / low) ** 2
        total = max(total, s2)
    return math.sqrt(total)


def _gaussian(decl: Declaration, calib: Calibration, delta: float) -> Cost:
    draws = _draws(calib, "gaussian")
    if not draws:
        return Cost(math.inf, delta, "declared gaussian, no gaussian draw")
    if decl.norm == "l2":
        sigma, sens = _min_scale(draws), float(decl.sensitivity)
        if sens == 0:
            return Cost(0.0, delta, "sensitivity 0")
        if not sigma > 0:
            return Cost(math.inf, delta, "gaussian drawn at σ = 0")
        rho = _gaussian_rho(sigma, sens)
        how = f"opendp make_gaussian(scale={sigma:.6g}).map({sens:.6g}) = ρ {rho:.6g}"
    else:
        s = _whitened_sensitivity(decl, draws)
        if not math.isfinite(s):
            return Cost(math.inf, delta, "colored gaussian: a noiseless block moves")
        rho = _gaussian_rho(1.0, s) if s > 0 else 0.0
        how = f"whitened s = {s:.6g}; opendp make_gaussian(scale=1).map(s) = ρ {rho:.6g}"
    mu = math.sqrt(2.0 * rho)
    eps = gaussian_epsilon(mu, delta)
    return Cost(eps + SNAP_SLACK if math.isfinite(eps) and eps > 0 else eps, delta,
                f"{how}; exact Gaussian curve at δ = {delta:.3g} (+2⁻²⁷ grid)")


def _bounded(decl: Declaration, calib: Calibration) -> Cost:
    noted = _draws(calib, "bounded-discrete-laplace")
    if not noted:
        return Cost(math.inf, 0.0, "declared bounded discrete Laplace, no bounded draw")
    s = np.concatenate([np.asarray(d.scale, dtype=float).ravel() for d in noted])
    m = np.concatenate([np.asarray(d.detail["upper"], dtype=float).ravel() for d in noted])
    live = (s > 0) & (m > 0)
    # the geometric draws must be at the per-value scales, one side draw per noised value
    want: dict[float, int] = {}
    for value in s[live]:
        want[float(value)] = want.get(float(value), 0) + 1
    got: dict[float, int] = {}
    for d in _draws(calib, "discrete-laplace"):
        got[float(d.scale)] = got.get(float(d.scale), 0) + int(d.count)
    sides = sum(d.count for d in _draws(calib, "bernoulli"))
    if got != want or sides != int(live.sum()):
        return Cost(math.inf, 0.0, "bounded discrete Laplace: geometric draws at scales "
                    f"{sorted(got)[:3]} or {sides} side draws do not match the per-value "
                    f"calibration ({sorted(want)[:3]}, {int(live.sum())} values)")
    per_value = bounded_laplace_epsilon(s, m, float(decl.sensitivity))
    n = max(1, int(decl.n_changed))
    top = np.sort(per_value)[::-1][:n]
    eps = math.fsum(top.tolist()) if np.all(np.isfinite(top)) else math.inf
    return Cost(eps, 0.0, f"ours: bounded discrete Laplace, sum of the {n} largest per-value "
                          f"ε (largest {float(top[0]) if top.size else 0.0:.6g})")


def call_cost(calib: Calibration, delta: float = 0.0) -> Cost:
    """The ε one call's noise costs at δ ``delta`` (the δ its ledger charged), from its
    calibration (module docstring); declarations of one call add up, the δ split evenly among
    the Gaussian ones.

    >>> from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw
    >>> calib = Calibration((Declaration("discrete-laplace", 1.0, "l1"),),
    ...                     (NoiseDraw("discrete-laplace", "seeded", 2.0, 4),))
    >>> call_cost(calib).epsilon
    0.5
    >>> halved = Calibration(calib.declarations, (NoiseDraw("discrete-laplace", "seeded", 1.0, 4),))
    >>> call_cost(halved).epsilon  # half the scale: twice the cost
    1.0
    """
    if not calib.declarations:
        noisy = [d for d in calib.draws if d.law not in ("uniform",)]
        if noisy:
            return Cost(math.inf, 0.0, f"{', '.join(calib.laws())} drawn with no declared "
                                       "calibration")
        return Cost(0.0, 0.0, "nothing drawn")
    gaussians = [d for d in calib.declarations if d.mechanism == "gaussian"]
    share = delta / len(gaussians) if gaussians else 0.0
    costs = []
    for decl in calib.declarations:
        if decl.mechanism in ("discrete-laplace", "laplace-float", "exponential",
                              "exponential-grid"):
            costs.append(_pure(decl, calib))
        elif decl.mechanism == "gaussian":
            costs.append(_gaussian(decl, calib, share))
        elif decl.mechanism == "bounded-discrete-laplace":
            costs.append(_bounded(decl, calib))
        else:
            costs.append(Cost(math.inf, 0.0, f"no privacy map for {decl.mechanism!r}"))
    eps = math.fsum(c.epsilon for c in costs) if all(math.isfinite(c.epsilon) for c in costs) \
        else math.inf
    return Cost(eps, math.fsum(c.delta for c in costs), "; ".join(c.how for c in costs))
