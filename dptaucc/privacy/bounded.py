"""The bounded-domain discrete Laplace mechanism: integers released inside a public range.

For an integer ``w`` in ``{0, …, M}`` (M ≥ 0 public) and a scale s > 0, it outputs
``y ∈ {0, …, M}`` with

    P(y) = q^|y − w| / Z(w),   q = e^(−1/s),   Z(w) = Σ_{y=0..M} q^|y − w|
         = (1 + q − q^(w+1) − q^(M−w+1)) / (1 − q).

It is the integer counterpart of the bounded-domain Laplace mechanism (Holohan, Antonatos,
Braghin & Mac Aonghusa 2020) that diffprivlib uses for DP-KMeans: the noise stays inside the
domain instead of being clipped onto its ends, and, being integer-valued, its possible outputs
do not depend on the input, so the floating-point attack on textbook Laplace noise (Mironov
2012) has nothing to read. A caller with real values works on a public grid (one integer step =
``unit``).

Privacy map (proved here). Let neighbours move w to w′ with |w − w′| ≤ Δ. For every y,

    ln P_w(y)/P_w′(y) = (|y − w′| − |y − w|)/s + ln Z(w′)/Z(w) ≤ min(Δ, M)/s + ln R,
    R = Z(a)/Z(0),  a = min(Δ, M/2).

Why R bounds Z(w′)/Z(w): extended to real w, φ = ln Z is concave (Z is a constant minus a
positive multiple of q^w + q^(M−w), which is convex) and symmetric about M/2, so it increases
on [0, M/2]. By symmetry take w ≤ M/2. If w′ ≤ w then φ(w′) ≤ φ(w). Otherwise
φ(w′) ≤ φ(min(w + Δ, M/2)), and φ(min(w + Δ, M/2)) − φ(w) does not increase with w (concavity
while w + Δ ≤ M/2, monotonicity after), so it is largest at w = 0. Hence each released value is
ε(s)-DP with ε(s) = min(Δ, M)/s + ln R(s), a bound that is attained when Δ ≤ M/2 (w = 0,
w′ = Δ, y = 0). :func:`bounded_discrete_laplace_scale` finds by bisection a scale with
ε(s) ≤ ε (never above it; a relative margin of 10⁻¹² absorbs the rounding of ε(s)).

Sampling (:func:`bounded_discrete_laplace`): the side of w is drawn first — ``{w, w−1, …, 0}``
with mass (1 − q^(w+1))/(1 − q) or ``{w+1, …, M}`` with mass q(1 − q^(M−w))/(1 − q) — by a
Bernoulli draw of the *smaller* side's probability against a 106-bit uniform; then the distance
inside the side is G mod (side length) for a geometric G (P(G = g) = (1 − q)q^g), which is
exactly the truncated geometric law. G is read off one discrete-Laplace variate Z of the fit's
sampler (G = Z if Z ≥ 0, else −Z − 1: exactly geometric). So every output's probability is the
ideal one up to the double rounding of the side probability (relative 2⁻⁴⁸), plus the
sampler's own tail cut (δ < 2⁻¹⁰⁰ per value with the seeded sampler, none with the secure one);
side probabilities below 2⁻⁵⁶ are realised to within 2⁻¹⁰⁶. Both draws come from the fit's
sampler: the geometric from its discrete Laplace, the side from its
:meth:`~dptaucc.privacy.samplers.Sampler.bernoulli` — the seeded generator on the seeded path,
OS words on the secure one (whose every draw is then OS randomness).
"""

from __future__ import annotations

import math

import numpy as np

from dptaucc.privacy.calibration import Declaration, first_draw, note_draw
from dptaucc.privacy.hook import watch
from dptaucc.privacy.ledger import PrivacyLedger
from dptaucc.privacy.mechanisms import _integer_values, as_sampler
from dptaucc.privacy.samplers import MAX_NOISE_SCALE, Sampler

__all__ = ["bounded_discrete_laplace_epsilon", "bounded_discrete_laplace_scale",
           "bounded_discrete_laplace", "bounded_discrete_laplace_mechanism"]

#: relative margin kept below the target ε by the scale search (absorbs rounding of ε(s))
_MARGIN = 1e-12


def bounded_discrete_laplace_epsilon(scale, sensitivity: int, upper) -> np.ndarray:
    """ε(s) = min(Δ, M)/s + ln Z(a)/Z(0), a = min(Δ, M/2): the privacy of one released value
    (see the module docstring), element-wise over ``scale`` s > 0 and ``upper`` M ≥ 0.

    At scale 1 a single possible output costs nothing, and wider ranges cost more than the
    unbounded mechanism's Δ/s = 1 (the ln R term):

    >>> bounded_discrete_laplace_epsilon(1.0, 1, [0, 1, 1000]).round(3).tolist()
    [0.0, 1.064, 1.209]
    """
    s, m = np.broadcast_arrays(np.asarray(scale, dtype=float), np.asarray(upper, dtype=float))
    delta = float(sensitivity)
    h = 1.0 / s
    a = np.minimum(delta, m / 2.0)
    z_a = -np.expm1(-(a + 1.0) * h) - np.exp(-h) * np.expm1(-(m - a) * h)
    z_0 = -np.expm1(-(m + 1.0) * h)
    return np.minimum(delta, m) * h + np.log(z_a / z_0)


def bounded_discrete_laplace_scale(epsilon: float, sensitivity: int, upper) -> np.ndarray:
    """A scale s per ``upper`` M with ε(s) ≤ ε (bisection between min(Δ, M)/ε, where ε(s) ≥ ε,
    and 2·min(Δ, M)/ε, where ε(s) < ε because ln R ≤ a/s). ε = ∞ gives 0 (no noise); M = 0 gives
    Δ/ε (the single output needs no noise; any scale is private).

    >>> scales = bounded_discrete_laplace_scale(1.0, 1, [1, 10, 1000])
    >>> bool(scales[0] < scales[1] < scales[2])  # a larger range needs more noise
    True
    >>> bool((bounded_discrete_laplace_epsilon(scales, 1, [1, 10, 1000]) <= 1.0).all())
    True
    """
    upper = np.asarray(upper, dtype=float)
    if math.isinf(epsilon):
        return np.zeros(upper.shape)
    if upper.size > 1:  # one search per distinct range
        distinct, inverse = np.unique(upper, return_inverse=True)
        if distinct.size < upper.size:
            scales = bounded_discrete_laplace_scale(epsilon, sensitivity, distinct)
            return scales[inverse.ravel()].reshape(upper.shape)
    reach = np.minimum(float(sensitivity), upper)
    out = np.full(upper.shape, float(sensitivity) / epsilon)
    live = reach > 0
    if not live.any():
        return out
    reach = reach[live]
    m = upper[live]
    target = epsilon * (1.0 - _MARGIN)
    lo = reach / epsilon
    hi = 2.0 * reach / epsilon * (1.0 + 1e-9)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        ok = bounded_discrete_laplace_epsilon(mid, sensitivity, m) <= target
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
        if np.all(hi - lo <= hi * 2.0**-50):
            break
    if np.any(bounded_discrete_laplace_epsilon(hi, sensitivity, m) > target):
        raise RuntimeError("bounded discrete Laplace: no scale found within the budget")
    out[live] = hi
    return out


def bounded_discrete_laplace(values, upper, scale, sampler: Sampler | np.random.Generator
                             ) -> np.ndarray:
    """Draw the bounded-domain discrete Laplace around integer ``values`` (clipped into
    ``{0, …, upper}`` first) at ``scale``, all broadcast together; int64 result.

    One discrete-Laplace draw of the sampler per distinct scale (in increasing order), then a
    106-bit Bernoulli per value from ``sampler.bernoulli`` (see the module docstring).

    >>> import numpy as np
    >>> bounded_discrete_laplace([-3, 5, 12], 10, 0.0, np.random.default_rng(0))  # no noise
    array([ 0,  5, 10])
    >>> out = bounded_discrete_laplace(np.arange(11), 10, 2.0, np.random.default_rng(0))
    >>> bool(((0 <= out) & (out <= 10)).all())  # the noise never leaves the range
    True
    """
    sampler = as_sampler(sampler)
    w, m, s = np.broadcast_arrays(np.asarray(values, dtype=np.int64),
                                  np.asarray(upper, dtype=np.int64),
                                  np.asarray(scale, dtype=float))
    if np.any(m < 0) or np.any(~(s >= 0)):
        raise ValueError("upper must be >= 0 and scale >= 0")
    out = np.clip(w, 0, m).astype(np.int64).ravel()
    m, s = m.ravel(), s.ravel()
    note_draw("bounded-discrete-laplace", sampler.source, s, s.size, upper=m,
              **({"rng": sampler.rng} if sampler.source == "seeded" else {}))
    idx = np.flatnonzero((s > 0) & (m > 0))
    if idx.size == 0:
        return out.reshape(w.shape)
    wi, mi, si = out[idx], m[idx], s[idx]
    geo = np.empty(idx.size, dtype=np.int64)
    for value in np.unique(si):
        pick = si == value
        z = np.asarray(sampler.discrete_laplace(int(pick.sum()), float(value)), dtype=np.int64)
        geo[pick] = np.where(z >= 0, z, -z - 1)
    h = 1.0 / si
    low_mass = -np.expm1(-(wi + 1) * h)                    # {w, …, 0}, up to 1/(1 − q)
    high_mass = -np.exp(-h) * np.expm1(-(mi - wi) * h)     # {w+1, …, M}
    high_is_smaller = high_mass < low_mass
    p = np.where(high_is_smaller, high_mass, low_mass) / (low_mass + high_mass)
    hit = sampler.bernoulli(p)
    high = np.where(high_is_smaller, hit, ~hit)
    out[idx] = np.where(high, wi + 1 + geo % np.maximum(mi - wi, 1), wi - geo % (wi + 1))
    return out.reshape(w.shape)


def bounded_discrete_laplace_mechanism(
    values,
    *,
    upper,
    epsilon: float,
    sensitivity: int,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    n_changed: int = 1,
    unit: float = 1.0,
    note: str = "",
) -> np.ndarray:
    """Release integer ``values`` inside ``{0, …, upper}`` (broadcast; values outside are
    clipped in first, which moves no two inputs further apart) with bounded-domain discrete
    Laplace noise, each value at its own ε; int64 result.

    Privacy map: if neighbours move each value by at most ``sensitivity`` (an integer Δ ≥ 1)
    and change at most ``n_changed`` of the values, every value's release is ε-DP (module
    docstring) and the whole release (n_changed·ε)-DP by basic composition, which is what is
    charged. Each value's scale depends on its own ``upper`` (a larger range needs more
    noise); the ledger records Δ and the smallest scale, both times ``unit`` (the size of one
    integer step in the caller's units).

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> out = bounded_discrete_laplace_mechanism(np.array([3, 0, 7]), upper=7, epsilon=1.0,
    ...                                          sensitivity=1, sampler=np.random.default_rng(0),
    ...                                          ledger=ledger, step="sizes", n_changed=2)
    >>> out.dtype, bool(((0 <= out) & (out <= 7)).all()), ledger.epsilon_spent
    (dtype('int64'), True, 2.0)
    """
    exact = _integer_values(values)
    if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or sensitivity < 1:
        raise ValueError(f"sensitivity must be a whole number >= 1, got {sensitivity!r}")
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    if isinstance(n_changed, bool) or int(n_changed) != n_changed or n_changed < 1:
        raise ValueError(f"n_changed must be a whole number >= 1, got {n_changed!r}")
    upper = _integer_values(upper)
    scales = bounded_discrete_laplace_scale(float(epsilon), int(sensitivity), upper)
    if scales.size and scales.max() > MAX_NOISE_SCALE:
        raise ValueError(f"bounded discrete Laplace scale {scales.max():.3g} exceeds the "
                         f"samplers' limit {MAX_NOISE_SCALE:g}: ε is too small for this grid")
    smallest = float(scales.min()) if scales.size else 0.0
    sampler = as_sampler(sampler)
    seen = watch(ledger)
    ledger.charge(step, "bounded-discrete-laplace", int(n_changed) * float(epsilon), 0.0,
                  float(sensitivity) * unit, "sequential", note, smallest * unit)

    def draw(n=None):  # n: a batch of n outputs (audit redraws)
        if n is None:
            return bounded_discrete_laplace(exact, upper, scales, sampler)
        shape = (n, *np.broadcast_shapes(exact.shape, upper.shape, scales.shape))
        return bounded_discrete_laplace(*(np.broadcast_to(a, shape) for a in
                                          (exact, upper, scales)), sampler)
    declared = Declaration("bounded-discrete-laplace", float(sensitivity), "per-value",
                           int(n_changed), {"unit": unit, "upper": upper}, exact=exact)
    out = first_draw(seen, draw, declared)
    return out if seen is None else seen.released(step, "bounded-discrete-laplace", out, draw)
