"""Agreement of item typicalities with a reference, as in Honda et al. (2015) Tables 1-3."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["typicality_correlation"]


def _row_corr(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Pearson correlation of every row of A with every row of B (constant rows give 0)."""
    a = A - A.mean(axis=1, keepdims=True)
    b = B - B.mean(axis=1, keepdims=True)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    den = np.outer(na, nb)
    return np.divide(a @ b.T, den, out=np.zeros(den.shape), where=den > 0)


def typicality_correlation(W: np.ndarray, W_ref: np.ndarray) -> float:
    """Mean Pearson correlation of matched cluster typicality vectors (C × k each).

    Clusters are matched one-to-one to maximise the total correlation (Hungarian method),
    since co-cluster indices are arbitrary. Pearson correlation is scale-free, so a site's W^t
    (normalised over its own items) compares directly with the reference restricted to them.

    >>> import numpy as np
    >>> W = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    >>> round(typicality_correlation(W[::-1] * 3.0, W), 12)  # relabelled and rescaled: a match
    1.0
    >>> typicality_correlation(W, W[:, :2])
    Traceback (most recent call last):
    ...
    ValueError: shapes differ: (2, 3) vs (2, 2)
    """
    W = np.asarray(W, dtype=float)
    W_ref = np.asarray(W_ref, dtype=float)
    if W.shape != W_ref.shape:
        raise ValueError(f"shapes differ: {W.shape} vs {W_ref.shape}")
    corr = _row_corr(W, W_ref)
    rows, cols = linear_sum_assignment(-corr)
    return float(corr[rows, cols].mean())
