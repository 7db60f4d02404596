"""The supplement's synthetic biclusters, built as the authors' script builds them.

The authors call ``sklearn.datasets.make_biclusters(shape=(1000, m), n_clusters=3, noise=3,
minval=1, maxval=10, shuffle=True, random_state=42)``, then (undocumented in the paper)
truncation to integers, negatives set to 0, and every 0 replaced by ONE integer
c ~ U{1..4} drawn once per matrix size. One matrix per size serves every run, every ε and
every algorithm: nothing in it depends on a job's seed. The authors drew c from the unseeded
global ``np.random``; here it comes from a Generator seeded by the fixed ``fill_random_state``
and the shape, so each size has its own c and rebuilding a size gives the same matrix. The
size grid of the supplement (m = 10 ... 10000) is experiment configuration, not code.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from .dataset import Dataset, _check_seed, describe

__all__ = ["make_paper_biclusters", "fill_constant", "FILL_STREAM", "FILL_RANDOM_STATE"]

# Seed stream of the fill constant c, distinct from the data-permutation stream and from an
# algorithm seeded with the same integer.
FILL_STREAM = 0xB1C1F111
#: the fixed seed of the fill constants (one c per matrix size, shared by every run)
FILL_RANDOM_STATE = 42


def _check_int(value, name: str, low: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _dense_counts_to_csr(counts: np.ndarray) -> sp.csr_matrix:
    """CSR (sorted indices, no stored zeros) of a dense array, built from the index arrays
    directly: ~5x faster than ``csr_matrix(dense)`` on the 1000 x 10000 grid point."""
    n, m = counts.shape
    index_dtype = np.int32 if n * m < 2**31 else np.int64
    mask = counts != 0
    if mask.all():  # the authors' filled matrices are fully dense
        data = counts.ravel()
        indices = np.tile(np.arange(m, dtype=index_dtype), n)
        indptr = np.arange(0, n * m + 1, m, dtype=index_dtype)
    else:
        data = counts[mask]
        indices = np.nonzero(mask)[1].astype(index_dtype)
        indptr = np.zeros(n + 1, dtype=index_dtype)
        np.cumsum(mask.sum(axis=1), out=indptr[1:])
    X = sp.csr_matrix((data, indices, indptr), shape=(n, m))
    X.has_sorted_indices = True
    return X


def fill_constant(n_rows: int, n_cols: int, fill_random_state: int = FILL_RANDOM_STATE) -> int:
    """The constant c in {1, 2, 3, 4} that fills the zero cells of the n_rows × n_cols matrix:
    drawn once per shape from ``fill_random_state`` (the same c for every run of that size).

    >>> c = fill_constant(1000, 500)
    >>> c in (1, 2, 3, 4), c == fill_constant(1000, 500)  # fixed per shape
    (True, True)
    >>> sorted({fill_constant(1000, m) for m in range(100, 140)})  # other shapes: all four
    [1, 2, 3, 4]
    """
    entropy = [_check_seed(fill_random_state), FILL_STREAM, int(n_rows), int(n_cols)]
    return int(np.random.default_rng(np.random.SeedSequence(entropy)).integers(1, 5))


def make_paper_biclusters(n_cols: int, *, n_rows: int = 1000, n_clusters: int = 3,
                          noise: float = 3.0, minval: float = 1, maxval: float = 10,
                          shuffle: bool = True, generator_random_state: int | None = 42,
                          fill_zeros: bool = True,
                          fill_random_state: int = FILL_RANDOM_STATE) -> Dataset:
    """A (n_rows × n_cols) integer biclustered matrix with row and column ground truth.

    ``generator_random_state`` seeds sklearn's generator (42 as the authors);
    ``fill_random_state`` seeds the fill constant c (:func:`fill_constant`, one per shape;
    ``fill_zeros=True``, the authors' behaviour; ``False`` keeps the zeros, giving a sparse
    matrix). The matrix depends on these arguments only, never on a run's seed. Returns CSR
    int64; ``meta['fill_value']`` records c.

    Examples
    --------
    >>> from dptaucc.datasets.synthetic import make_paper_biclusters
    >>> ds = make_paper_biclusters(100)
    >>> ds.X.shape, ds.meta['n_classes']
    ((1000, 100), 3)
    """
    from sklearn.datasets import make_biclusters

    n_cols = _check_int(n_cols, "n_cols", 1)
    n_rows = _check_int(n_rows, "n_rows", 1)
    n_clusters = _check_int(n_clusters, "n_clusters", 1)
    if n_clusters > min(n_rows, n_cols):
        raise ValueError(f"n_clusters={n_clusters} exceeds the shape ({n_rows}, {n_cols})")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite non-negative number, got {noise!r}")
    if not (np.isfinite(minval) and np.isfinite(maxval)) or minval > maxval:
        raise ValueError(f"need finite minval <= maxval, got {minval!r}, {maxval!r}")
    fill_random_state = _check_seed(fill_random_state)

    dense, rows, cols = make_biclusters(
        shape=(n_rows, n_cols), n_clusters=n_clusters, noise=noise, minval=minval,
        maxval=maxval, shuffle=shuffle, random_state=generator_random_state,
    )
    counts = dense.astype(np.int64)  # truncation toward zero, as numpy's astype(int)
    del dense
    counts[counts < 0] = 0
    zeros = counts == 0
    fill_value = None
    if fill_zeros:
        fill_value = fill_constant(n_rows, n_cols, fill_random_state)
        counts[zeros] = fill_value
    X = _dense_counts_to_csr(counts)
    row_labels = np.argmax(rows, axis=0).astype(np.int64)
    col_labels = np.argmax(cols, axis=0).astype(np.int64)
    meta = describe(X, row_labels, None)
    meta.update(
        col_class_sizes=[int(s) for s in np.bincount(col_labels, minlength=n_clusters)],
        fill_zeros=bool(fill_zeros),
        fill_value=fill_value,
        fill_random_state=fill_random_state,
        fraction_below_one=float(zeros.mean()),
        generator=dict(n_clusters=n_clusters, noise=float(noise), minval=float(minval),
                       maxval=float(maxval), shuffle=bool(shuffle),
                       random_state=generator_random_state),
    )
    name = f"biclusters_{n_rows}x{n_cols}"
    return Dataset(X=X, row_labels=row_labels, col_labels=col_labels, name=name, meta=meta)
