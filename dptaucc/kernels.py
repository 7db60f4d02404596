"""Compiled kernels (numba): one-pass aggregations over the non-zeros of a CSR matrix, and the
106-bit exponential transform of the seeded sampler.

Each sparse kernel streams ``indptr``/``indices``/``data`` once and writes into an output of
size O((n + m)·k): no temporary of the size of the matrix, no cost term in n·m. Data may be
integer or floating point (integer counts are summed exactly in float64 up to 2⁵³).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["sum_by_column_label", "sum_by_row_label", "transpose_times_dense", "value_summary",
           "exponential_from_uniforms", "choose_by_inversion", "sum_rows_by_label"]

_JIT = dict(cache=True, nogil=True, boundscheck=False)


@njit(**_JIT)
def _sum_by_column_label(indptr, indices, data, labels, n_labels, out):  # pragma: no cover
    acc = np.zeros(n_labels)
    for i in range(indptr.size - 1):
        for t in range(n_labels):
            acc[t] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc[labels[indices[p]]] += data[p]
        base = i * n_labels
        for t in range(n_labels):
            out[base + t] = acc[t]


@njit(**_JIT)
def _sum_by_row_label(indptr, indices, data, labels, n_cols, out):  # pragma: no cover
    for i in range(indptr.size - 1):
        base = labels[i] * n_cols
        for p in range(indptr[i], indptr[i + 1]):
            out[base + indices[p]] += data[p]


@njit(**_JIT)
def _transpose_times_dense(indptr, indices, data, dense, out):  # pragma: no cover
    width = dense.shape[1]
    for i in range(indptr.size - 1):
        row = i * width
        for p in range(indptr[i], indptr[i + 1]):
            a = data[p]
            col = indices[p] * width
            for t in range(width):
                out[col + t] += a * dense.flat[row + t]


@njit(**_JIT)
def _value_summary(data):  # pragma: no cover
    lowest = np.inf
    whole = True
    finite = True
    zeros = 0
    for p in range(data.size):
        v = data[p]
        if not np.isfinite(v):
            finite = False
            continue
        if v < lowest:
            lowest = v
        if whole and v != np.floor(v):
            whole = False
        if v == 0:
            zeros += 1
    return lowest, whole, finite, zeros


@njit(**_JIT)
def _exponential_from_uniforms(hi, lo, out):  # pragma: no cover
    for i in range(hi.size):
        tail = (lo[i] + 2.0**-54) * 2.0**-53
        h = hi[i]
        if h >= 0.5:
            out[i] = -np.log1p(-((1.0 - h) - tail))
        else:
            out[i] = -np.log(h + tail)


def exponential_from_uniforms(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """−log U for U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³, hi and lo two arrays of 53-bit uniforms: an
    Exp(1) variate from a uniform on a 2⁻¹⁰⁶ grid (midpoints) of (0, 1). For U ≥ ½ the
    logarithm is taken of 1 − U = (1 − hi) − tail, which has no cancellation."""
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    out = np.empty_like(hi)
    _exponential_from_uniforms(hi.ravel(), np.ascontiguousarray(lo, dtype=np.float64).ravel(),
                               out.ravel())
    return out


@njit(**_JIT)
def _choose_by_inversion(logits, hi, lo, out):  # pragma: no cover
    n, k = logits.shape
    weights = np.empty(k)
    order = np.empty(k, dtype=np.intp)
    for i in range(n):
        top = logits[i, 0]
        for j in range(1, k):
            if logits[i, j] > top:
                top = logits[i, j]
        total = 0.0
        for j in range(k):
            w = np.exp(logits[i, j] - top)
            weights[j] = w
            total += w
            # insertion sort of the indices by weight, ascending
            pos = j
            while pos > 0 and weights[order[pos - 1]] > w:
                order[pos] = order[pos - 1]
                pos -= 1
            order[pos] = j
        u = (hi[i] + (lo[i] + 2.0**-54) * 2.0**-53) * total
        acc = 0.0
        out[i] = order[k - 1]
        for j in range(k):
            acc += weights[order[j]]
            if u < acc:
                out[i] = order[j]
                break


def choose_by_inversion(logits: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """One index per row with P(j) ∝ exp(logit_j), by inverting the cumulative distribution
    of the weights exp(logit − max) taken in ascending order, with U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³
    from two 53-bit uniforms per row. Small weights come first, where the 106-bit uniform
    resolves them: a choice is lost only if its probability is below about 2⁻¹⁰⁶ (or its
    weight underflows, below e⁻⁷⁴⁵)."""
    logits = np.ascontiguousarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] == 0 or not (len(hi) == len(lo) == logits.shape[0]):
        raise ValueError("need logits (n, k >= 1) and one pair of uniforms per row")
    out = np.empty(logits.shape[0], dtype=np.intp)
    _choose_by_inversion(logits, np.ascontiguousarray(hi, dtype=np.float64),
                         np.ascontiguousarray(lo, dtype=np.float64), out)
    return out


@njit(**_JIT)
def _sum_rows_by_label(values, labels, out):  # pragma: no cover
    n, width = values.shape
    for i in range(n):
        g = labels[i]
        for t in range(width):
            out[g, t] += values[i, t]


def sum_rows_by_label(values: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """``Rᵀ V`` (n_groups×L): the rows of a dense ``values`` (n×L) summed by label, O(nL)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.zeros((n_groups, values.shape[1]))
    _sum_rows_by_label(values, _labels(labels, n_groups), out)
    return out


def _labels(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """Labels in the narrowest unsigned type: a small label table stays in the L1 cache, which
    makes the per-non-zero gather about 1.5x faster."""
    dtype = np.uint8 if n_labels <= 2**8 else np.uint16 if n_labels <= 2**16 else np.intp
    return np.ascontiguousarray(labels, dtype=dtype)


def sum_by_column_label(X, col_labels: np.ndarray, n_labels: int) -> np.ndarray:
    """``A C`` (n×L): each row's entries summed by the label of their column; one pass."""
    out = np.zeros(X.shape[0] * n_labels)
    _sum_by_column_label(X.indptr, X.indices, X.data, _labels(col_labels, n_labels), n_labels,
                         out)
    return out.reshape(X.shape[0], n_labels)


def sum_by_row_label(X, row_labels: np.ndarray, n_labels: int) -> np.ndarray:
    """``Rᵀ A`` (K×m): each column's entries summed by the label of their row; one pass."""
    n_cols = X.shape[1]
    out = np.zeros(n_labels * n_cols)
    _sum_by_row_label(X.indptr, X.indices, X.data, _labels(row_labels, n_labels), n_cols, out)
    return out.reshape(n_labels, n_cols)


def transpose_times_dense(X, dense: np.ndarray) -> np.ndarray:
    """``Aᵀ G`` (m×k) for a dense G (n×k), without converting integer data to float."""
    dense = np.ascontiguousarray(dense, dtype=np.float64)
    out = np.zeros(X.shape[1] * dense.shape[1])
    _transpose_times_dense(X.indptr, X.indices, X.data, dense, out)
    return out.reshape(X.shape[1], dense.shape[1])


def value_summary(data: np.ndarray) -> tuple[float, bool, bool, int]:
    """(minimum of the finite values, all whole numbers, all finite, number of zeros): one
    pass over the stored values."""
    if data.size == 0:
        return np.inf, True, True, 0
    lowest, whole, finite, zeros = _value_summary(data)
    return float(lowest), bool(whole), bool(finite), int(zeros)
