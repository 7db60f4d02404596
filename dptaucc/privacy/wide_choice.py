"""The exponential mechanism's inverse-CDF choice for calls with few rows of many choices.

:func:`dptaucc.kernels.choose_by_inversion` runs column by column, a numpy call per choice,
which suits many rows of a few choices (DP-τCC's assignments) and costs a Python loop over
the choices for one long row: DPM's quantile picks one of up to ~10⁵ grid intervals in one
row, its tree and DPHD's local search one of hundreds. :func:`choose_wide_rows` computes the
same thing row by row with whole-row numpy operations, bit for bit: the same maximum, the
C library's ``exp`` (:func:`dptaucc.kernels.libm_exp`), the total summed in index order
(a cumulative sum, sequential as the loop), the stable ascending order and the running sum
in that order from 0; the choice is the first index whose running sum exceeds U·total (the
last one if none does). Rows with a NaN or infinite maximum go to ``choose_by_inversion``.
"""

from __future__ import annotations

import numpy as np

from dptaucc.kernels import _TAIL_OFFSET, _TAIL_SCALE, choose_by_inversion, libm_exp

__all__ = ["prefers_rows", "choose_wide_rows", "WIDE_RATIO", "WIDE_MIN_CHOICES"]

#: the row-by-row path takes calls with at least this many choices ...
WIDE_MIN_CHOICES = 64
#: ... and at least this many choices per row of the call
WIDE_RATIO = 4


def prefers_rows(n_rows: int, n_choices: int) -> bool:
    """Is a call of ``n_rows`` × ``n_choices`` faster row by row than column by column?

    >>> prefers_rows(1, 75_000), prefers_rows(8, 260), prefers_rows(4000, 5)
    (True, True, False)
    """
    return n_choices >= WIDE_MIN_CHOICES and n_choices >= WIDE_RATIO * n_rows


def choose_wide_rows(logits: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                     scale: float = 1.0) -> np.ndarray:
    """:func:`dptaucc.kernels.choose_by_inversion` (same arguments, same result bit for
    bit), one row at a time.

    >>> import numpy as np
    >>> from dptaucc.kernels import choose_by_inversion
    >>> rng = np.random.default_rng(0)
    >>> logits, hi, lo = rng.normal(size=(3, 500)) * 5, rng.random(3), rng.random(3)
    >>> bool((choose_wide_rows(logits, hi, lo, 0.5)
    ...       == choose_by_inversion(logits, hi, lo, 0.5)).all())
    True
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] == 0 or not (len(hi) == len(lo) == logits.shape[0]):
        raise ValueError("need logits (n, k >= 1) and one pair of uniforms per row")
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    n, k = logits.shape
    out = np.empty(n, dtype=np.intp)
    irregular = []
    for i in range(n):
        row = logits[i] / scale if scale != 1.0 else logits[i]
        top = row.max()                                   # NaN propagates
        if not np.isfinite(top):
            irregular.append(i)
            continue
        weights = libm_exp(row - top)                     # largest is 1
        total = np.cumsum(weights)[-1]                    # index order, sequential
        u = (hi[i] + (lo[i] + _TAIL_OFFSET) * _TAIL_SCALE) * total
        order = np.argsort(weights, kind="stable")        # ascending, ties in index order
        hits = np.flatnonzero(u < np.cumsum(weights[order]))
        out[i] = order[hits[0] if hits.size else k - 1]
    if irregular:
        rows = np.asarray(irregular)
        out[rows] = choose_by_inversion(logits[rows], hi[rows], lo[rows], scale)
    return out
