"""Rows mapped into a public L1 ball of whole counts (DP-τCC's row variant, :mod:`.dp_taucc_row`).

Under the "one row replaced" relation the sensitivity of every release grows with how much
mass one row can carry, so every row is first brought to L1 mass at most a public bound B.
The rule reads one row only and never the rest of the data, so it is the same map for every
dataset (it costs no privacy): two neighbours still differ in one row, and that row's two
versions both lie in the ball {a ∈ ℕ^m : ‖a‖₁ <= B}, at L1 distance at most 2B.

Two rules, both giving whole counts (released tables stay integer):

* ``"scale"``: every non-empty row is rescaled to mass exactly B;
* ``"clip"``: rows heavier than B are rescaled to mass B, the others are left as they are.

Rescaling to mass B keeps whole counts by the largest-remainder rule: each count becomes
⌊a_j·B/s⌋ (s the row's mass), and the B − Σ_j ⌊a_j·B/s⌋ units left go one each to the
entries with the largest remainders a_j·B mod s, ties to the smaller column index. Everything
is computed in exact integer arithmetic.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["ROW_SCALINGS", "bound_rows"]

#: the rules of :func:`bound_rows`
ROW_SCALINGS = ("scale", "clip")
#: largest product a_j·B computed in int64 (beyond it, Python integers)
_INT64_SAFE = 2**62


def _rescaled(counts: np.ndarray, row_of: np.ndarray, sums: np.ndarray,
              bound: int) -> np.ndarray:
    """Every entry's count after its row (mass ``sums[row_of]`` > 0, ``row_of`` ascending,
    columns ascending within a row) is rescaled to mass ``bound`` by the largest-remainder
    rule."""
    s = sums[row_of]
    if sums.size and int(sums.max()) * bound >= _INT64_SAFE:  # exact, in Python integers
        product = counts.astype(object) * bound
        base = (product // s.astype(object)).astype(np.int64)
        remainder = (product % s.astype(object)).astype(float)  # only ordered within a row
    else:
        base, remainder = np.divmod(counts * bound, s)
    left = bound - np.bincount(row_of, weights=base, minlength=sums.size).astype(np.int64)
    # rank the entries of each row by remainder (largest first), ties by column index: one
    # stable sort of (row, largest remainder first) keeps the rows in order and, within a
    # row, the entries' column order among equal remainders
    top = float(sums.max()) if sums.size else 0.0
    if isinstance(remainder, np.ndarray) and remainder.dtype.kind == "i" \
            and (sums.size + 1) * (top + 1) < 2**62:
        order = np.argsort(row_of * (int(top) + 1) + (int(top) - remainder), kind="stable")
    else:
        order = np.lexsort((-remainder, row_of))  # lexsort is stable: columns keep their order
    counts_per_row = np.bincount(row_of, minlength=sums.size)
    starts = np.repeat(np.cumsum(counts_per_row) - counts_per_row, counts_per_row)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - starts  # sorted position within its row
    return base + (rank < left[row_of])


def bound_rows(X: sp.csr_matrix, bound: int, scaling: str = "scale") -> sp.csr_matrix:
    """The rows of the count matrix X mapped into the L1 ball of radius ``bound`` (whole counts;
    float64 CSR, as the aggregations read it), by ``scaling`` (see the module docstring).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[3, 1, 0], [1, 1, 1], [0, 0, 0], [20, 0, 0]]))
    >>> bound_rows(X, 4, "scale").toarray().astype(int).tolist()
    [[3, 1, 0], [2, 1, 1], [0, 0, 0], [4, 0, 0]]
    >>> bound_rows(X, 4, "clip").toarray().astype(int).tolist()  # light rows kept
    [[3, 1, 0], [1, 1, 1], [0, 0, 0], [4, 0, 0]]
    >>> bound_rows(X, 4, "cut")
    Traceback (most recent call last):
    ...
    ValueError: scaling must be one of ('scale', 'clip'), got 'cut'
    """
    if scaling not in ROW_SCALINGS:
        raise ValueError(f"scaling must be one of {ROW_SCALINGS}, got {scaling!r}")
    bound = int(bound)
    if bound < 1:
        raise ValueError(f"bound must be an integer >= 1, got {bound}")
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()  # canonical: one entry per cell, columns ascending in each row
    X.eliminate_zeros()
    counts = np.rint(X.data).astype(np.int64)
    if np.any(counts != X.data) or np.any(counts < 0):
        raise ValueError("bound_rows needs non-negative whole counts")
    row_of = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    sums = np.bincount(row_of, weights=counts, minlength=X.shape[0]).astype(np.int64)
    change = sums > 0 if scaling == "scale" else sums > bound
    rows = change[row_of]
    if rows.any():
        renumbered = (np.cumsum(change) - 1)[row_of[rows]]  # the changed rows as 0, 1, ...
        counts[rows] = _rescaled(counts[rows], renumbered, sums[change], bound)
    X.data = counts.astype(np.float64)
    X.eliminate_zeros()
    return X
