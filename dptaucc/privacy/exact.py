"""Exact exponential mechanism, batched, from the operating system's randomness.

For each row of a score matrix S (doubles, taken as the exact rationals they are) and a scale
β > 0, :func:`exact_choose` returns k with probability exactly

    P(k) = a_k / Σ_j a_j,   a_k = exp(−γ_k),   γ_k = (max_j S_j − S_k)/β ≥ 0,

i.e. P(k) ∝ exp(S_k/β): the exponential mechanism's law, with no floating-point approximation
of any probability. All rows are sampled together by rejection:

1. *Proposal.* Integer weights w_k = ⌈2³²·h_k⌉ ≥ 1, where h_k ≥ a_k is a proven upper bound
   (below); k is drawn with probability w_k/W (W = Σ w_k) by inverting the integer cumulative
   sum with a uniform integer in [0, W) (64-bit OS words, out-of-range words redrawn).
2. *Acceptance* with probability t_k = 2³²·a_k/w_k ≤ 1, by comparing a uniform U on (0, 1)
   with t_k. Then P(k proposed and accepted) = a_k·2³²/W ∝ a_k: the accepted index has the
   exact law, and about 1 − 2⁻³⁰ of the proposals are accepted (one round in practice).

The comparison U < t_k is decided exactly. U is read lazily from OS bits: the first 53 bits
give an interval of width 2⁻⁵³; double-precision bounds t_lo ≤ t_k ≤ t_hi decide it unless U's
interval meets [t_lo, t_hi] (probability about 2⁻⁴⁰). Those rare comparisons are finished in
exact rational arithmetic (:func:`exp_neg_bounds`, Python integers), drawing 64 more bits of U
at a time until the interval of U lies on one side of a rigorous enclosure of t_k.

Why the double bounds hold: d = S_max − S_k and g = d/β are each rounded once (relative error
≤ 2⁻⁵³ each), so |g − γ| ≤ 2⁻⁴⁸·g + 2⁻¹⁰⁰⁰; ``numpy.exp`` is taken to be accurate to 2⁻⁴²
relative (libm and numpy's vector exp are within a few ulp, 2⁻⁵²; a test checks it against
exact bounds), and a further relative margin 2⁻⁴⁰ covers it and the final roundings. γ ≥ 700
(or an overflowed d) uses the bounds [0, e⁻⁷⁰⁰].
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from fractions import Fraction

import numpy as np

__all__ = ["exact_choose", "exp_neg_bounds", "os_words", "uniform_below"]

_SCALE_BITS = 32
_MARGIN = 2.0**-40
_FAR = 700.0
#: bits of U read before giving up (an undecided comparison after that has probability 2⁻⁴⁰⁰⁰)
_MAX_BITS = 53 + 64 * 63


def os_words(count: int) -> np.ndarray:
    """``count`` uniform 64-bit words from the operating system (``os.urandom``).

    >>> words = os_words(4)
    >>> words.dtype, words.shape
    (dtype('uint64'), (4,))
    """
    return np.frombuffer(os.urandom(8 * int(count)), dtype=np.uint64).copy()


def _exp_neg_one_bounds(bits: int) -> tuple[Fraction, Fraction]:
    """[lo, hi] ∋ e⁻¹ with hi − lo ≤ 2⁻ᵇⁱᵗˢ (alternating series)."""
    return _series_bounds(Fraction(1), bits)


def _series_bounds(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """[lo, hi] ∋ e⁻ˣ for 0 ≤ x ≤ 1: consecutive partial sums of the alternating series
    Σ (−x)ⁱ/i! bracket it, since its terms decrease in size."""
    total, term, i = Fraction(1), Fraction(1), 0
    eps = Fraction(1, 2 ** (bits + 2))
    while True:
        i += 1
        term = term * x / i
        nxt = total - term if i % 2 else total + term
        if term <= eps:
            return (min(total, nxt), max(total, nxt))
        total = nxt


def exp_neg_bounds(gamma: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """Rational [lo, hi] ∋ e^(−γ) for γ ≥ 0 with hi − lo ≤ 2⁻ᵇⁱᵗˢ (exact arithmetic).

    >>> from decimal import Decimal, localcontext
    >>> from fractions import Fraction
    >>> lo, hi = exp_neg_bounds(Fraction(5, 2), 60)
    >>> with localcontext() as ctx:
    ...     ctx.prec = 50
    ...     reference = Fraction(Decimal(-2.5).exp())  # e^-2.5 to 50 digits
    >>> bool(lo <= reference <= hi), bool(hi - lo <= Fraction(1, 2**60))
    (True, True)
    """
    if gamma < 0:
        raise ValueError("gamma must be >= 0")
    if gamma >= bits:  # e^(−γ) ≤ e^(−bits) < 2^(−bits)
        return Fraction(0), Fraction(1, 2**bits)
    n = math.floor(gamma)
    work = bits + 2 * n.bit_length() + 8
    lo_f, hi_f = _series_bounds(gamma - n, work)
    lo_e, hi_e = _exp_neg_one_bounds(work + n.bit_length() + 2)
    lo, hi = lo_f * lo_e**n, hi_f * hi_e**n
    # keep the numbers small: round outward to a dyadic grid finer than the width asked
    grid = 2 ** (bits + 4)
    return (Fraction(math.floor(lo * grid), grid), Fraction(math.ceil(hi * grid), grid))


def _float_bounds(gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double bounds lo ≤ e^(−γ) ≤ hi from the rounded γ (module docstring)."""
    finite = np.isfinite(gamma) & (gamma < 2 * _FAR)
    g = np.where(finite, gamma, 2 * _FAR)
    err = g * 2.0**-48 + 2.0**-1000
    with np.errstate(under="ignore"):
        lo = np.exp(-(g + err)) * (1.0 - _MARGIN)
        hi = np.minimum(np.exp(-(g - err)) * (1.0 + _MARGIN), 1.0)
    far = (g - err) > _FAR
    lo = np.where(far, 0.0, lo)
    hi = np.where(far, math.exp(-_FAR), hi)
    return lo, hi


def uniform_below(bound: np.ndarray,
                  words: Callable[[int], np.ndarray] = os_words) -> np.ndarray:
    """Uniform integers in [0, bound) (bound ≤ 2⁶³, uint64) by redrawing out-of-range words
    (OS words by default).

    >>> import numpy as np
    >>> picks = uniform_below(np.full(1000, 3, dtype=np.uint64))
    >>> sorted(set(picks.tolist()))
    [0, 1, 2]
    """
    bound = bound.astype(np.uint64)
    # largest multiple of bound that fits: words below it are uniform modulo bound
    limit = (np.uint64(2**64 - 1) // bound) * bound
    out = np.empty(bound.shape, dtype=np.uint64)
    todo = np.arange(bound.size)
    for _ in range(64):  # each word is out of range with probability < ½
        w = words(todo.size)
        ok = w < limit[todo]
        out[todo[ok]] = w[ok] % bound[todo[ok]]
        todo = todo[~ok]
        if todo.size == 0:
            return out
    raise RuntimeError("uniform integer: 64 rounds of out-of-range words (probability < 2^-64)")


def _decide_exactly(gamma: Fraction, weight: int, prefix: int,
                    words: Callable[[int], np.ndarray]) -> bool:
    """U < 2³²·e^(−γ)/w, where U's first 53 bits are ``prefix``; more bits drawn as needed."""
    num, nbits = prefix, 53
    while nbits <= _MAX_BITS:
        lo, hi = exp_neg_bounds(gamma, nbits + _SCALE_BITS + 8)
        t_lo = lo * 2**_SCALE_BITS / weight
        t_hi = hi * 2**_SCALE_BITS / weight
        if Fraction(num + 1, 2**nbits) <= t_lo:
            return True
        if Fraction(num, 2**nbits) >= t_hi:
            return False
        num = (num << 64) | int(words(1)[0])
        nbits += 64
    raise RuntimeError(f"exact comparison undecided after {_MAX_BITS} random bits")


def exact_choose(scores: np.ndarray, scale: float,
                 words: Callable[[int], np.ndarray] = os_words) -> np.ndarray:
    """One index per row of ``scores`` with P(k) ∝ exp(score_k/scale), exactly (module
    docstring). ``scale`` must be finite and > 0; ``words(n)`` returns n uniform uint64 (OS
    randomness by default; tests inject their own).

    >>> import numpy as np
    >>> scores = np.array([[0.0, 1000.0], [1000.0, 0.0], [3.0, 3.0]])
    >>> chosen = exact_choose(scores, 1.0)  # P(the low score) = e^-1000 in the first two rows
    >>> chosen[:2].tolist(), int(chosen[2]) in (0, 1)
    ([1, 0], True)
    >>> exact_choose(scores, 0.0)
    Traceback (most recent call last):
    ...
    ValueError: scale must be finite and > 0, got 0.0
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError("scores must be a 2-D array with at least one choice per row")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    if scores.shape[1] >= 2**29:
        raise ValueError("too many choices per row for 64-bit proposal weights")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale}")
    n, c = scores.shape
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    top = scores.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        gamma = (top - scores) / scale
    lo, hi = _float_bounds(gamma)
    weight = np.ceil(hi * 2.0**_SCALE_BITS).astype(np.uint64)  # ≥ 1 since hi > 0
    cum = np.cumsum(weight, axis=1)
    with np.errstate(under="ignore"):
        t_lo = (lo * 2.0**_SCALE_BITS / weight) * (1.0 - 2.0**-50)
        t_hi = (hi * 2.0**_SCALE_BITS / weight) * (1.0 + 2.0**-50)
    out = np.empty(n, dtype=np.intp)
    todo = np.arange(n)
    for _ in range(200):  # each round accepts a row with probability > 1 − 2⁻²⁹
        r = uniform_below(cum[todo, -1], words)
        k = np.sum(cum[todo] <= r[:, None], axis=1)
        prefix = words(todo.size) >> np.uint64(11)  # first 53 bits of U
        u_lo = prefix.astype(float) * 2.0**-53  # exact: prefix < 2⁵³
        u_hi = u_lo + 2.0**-53
        tl, th = t_lo[todo, k], t_hi[todo, k]
        accept = u_hi <= tl
        undecided = ~accept & (u_lo < th)
        for j in np.flatnonzero(undecided):
            row, col = int(todo[j]), int(k[j])
            exact_gamma = ((Fraction(float(top[row, 0])) - Fraction(float(scores[row, col])))
                           / Fraction(scale))
            accept[j] = _decide_exactly(exact_gamma, int(weight[row, col]), int(prefix[j]),
                                        words)
        out[todo[accept]] = k[accept]
        todo = todo[~accept]
        if todo.size == 0:
            return out
    raise RuntimeError("exact exponential mechanism: 200 rejection rounds without acceptance "
                       "(probability below 2^-5000)")
