"""Float reachability of a Laplace release (Mironov 2012) for numpy's ``Generator.laplace``.

``Generator.laplace(loc, scale)`` draws one uniform ``U = j·2^-53`` (j a 53-bit integer,
``j > 0``) and returns ``loc − scale·log((2 − U) − U)`` when ``U >= 1/2`` and
``loc + scale·log(U + U)`` otherwise, each operation rounded to a double. A textbook release
``y = x + Laplace(0, s)`` is therefore one of at most 2^53 doubles, and *which* doubles depends
on x: for neighbouring inputs x and x' most released values are reachable from one and not the
other, so the low-order bits of y name the input (Mironov, "On significance of the least
significant bits for differential privacy", CCS 2012).

:func:`laplace_reachable` answers exactly whether a double y equals ``fl(x + noise(j))`` for
some j. The map j -> fl(x + noise(j)) is non-decreasing (every step is a monotone, correctly
rounded operation, and the two branches meet at noise 0), so a binary search over the 2^53
values of j finds the smallest j with ``fl(x + noise(j)) >= y`` in 53 steps; y is reachable iff
that value equals y. ``math.log`` is the C library's ``log``, the one numpy's sampler calls.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["numpy_laplace_noise", "laplace_reachable", "laplace_reachable_array"]

_TWO53 = 1 << 53
_HALF = 1 << 52  # j >= 2^52  <=>  U >= 1/2
_INV_TWO53 = 1.0 / 9007199254740992.0  # numpy's next_double factor, 2^-53


def numpy_laplace_noise(j: int, scale: float) -> float:
    """The value ``Generator.laplace(0.0, scale)`` returns for the uniform ``U = j·2^-53``.

    >>> numpy_laplace_noise(1 << 52, 1.0)  # U = ½: the centre
    0.0
    >>> round(numpy_laplace_noise(1, 1.0), 4)  # the smallest U: the far left tail, 52·ln 2
    -36.0437
    """
    u = j * _INV_TWO53
    if j >= _HALF:
        return 0.0 - scale * math.log((2.0 - u) - u)
    return 0.0 + scale * math.log(u + u)


def _release(x: float, j: int, scale: float, clip_min: float | None) -> float:
    y = x + numpy_laplace_noise(j, scale)
    return y if clip_min is None else max(y, clip_min)


def laplace_reachable(y: float, x: float, scale: float, clip_min: float | None = None) -> bool:
    """True iff the double ``y`` can be released as ``x + Generator.laplace(0, scale)``
    (then ``max(·, clip_min)`` when ``clip_min`` is given, as a clipped table does).

    >>> import numpy as np
    >>> y = 5.0 + np.random.default_rng(1).laplace(0.0, 2.0)  # textbook float Laplace noise
    >>> laplace_reachable(y, 5.0, 2.0)
    True
    >>> laplace_reachable(3.0, 5.0, 2.0, clip_min=3.0)  # every draw below 3 releases 3.0
    True
    >>> laplace_reachable(y, 5.0, 0.0)  # no noise: nothing is reachable
    False
    """
    y, x, scale = float(y), float(x), float(scale)
    if not (math.isfinite(y) and math.isfinite(x) and scale > 0 and math.isfinite(scale)):
        return False
    lo, hi = 1, _TWO53 - 1  # U == 0 is rejected by numpy
    if _release(x, hi, scale, clip_min) < y or _release(x, lo, scale, clip_min) > y:
        return False
    while lo < hi:  # smallest j with release(j) >= y
        mid = (lo + hi) // 2
        if _release(x, mid, scale, clip_min) >= y:
            hi = mid
        else:
            lo = mid + 1
    return _release(x, lo, scale, clip_min) == y


def laplace_reachable_array(y, x, scale: float, clip_min: float | None = None) -> np.ndarray:
    """:func:`laplace_reachable` element-wise over broadcast arrays ``y`` and ``x``.

    >>> import numpy as np
    >>> ys = 5.0 + np.random.default_rng(0).laplace(0.0, 2.0, size=3)
    >>> laplace_reachable_array(ys, 5.0, 2.0).tolist()  # every release reachable from x = 5
    [True, True, True]
    >>> laplace_reachable_array(ys, 6.0, 2.0).tolist()  # most are not from x = 6: a leak
    [True, False, False]
    """
    y, x = np.broadcast_arrays(np.asarray(y, float), np.asarray(x, float))
    out = np.empty(y.shape, dtype=bool)
    for idx in np.ndindex(y.shape):
        out[idx] = laplace_reachable(y[idx], x[idx], scale, clip_min)
    return out
