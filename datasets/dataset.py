"""The ``Dataset`` record every loader returns, and the seed-only row/column permutation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Dataset", "permutation", "permute", "describe", "PERMUTATION_STREAM"]

# Mixed into the seed so that the data permutation is a stream of its own: an algorithm
# seeded with the same integer (random_state=seed) does not replay the same draws.
PERMUTATION_STREAM = 0x0DA7A5E7


@dataclass(frozen=True, eq=False)
class Dataset:
    """A count matrix with its ground truth.

    ``X``: CSR int64 counts (no explicit zeros, sorted indices); ``row_labels``: int64 classes
    0..k-1 (None only for a user's unlabelled data); ``col_labels``: int64 column groups or
    None (real data has none); ``meta``: at least n_rows, n_cols, nnz, density (percent, as the
    paper's Table 1), n_classes, class_sizes, seed.

    Examples
    --------
    >>> from dptaucc.datasets import as_dataset
    >>> ds = as_dataset([[2, 0], [0, 3], [1, 1]], row_labels=[0, 1, 0], name="toy")
    >>> ds.shape, ds.X.format, ds.meta["class_sizes"], ds.col_labels is None
    ((3, 2), 'csr', [2, 1], True)
    """

    X: sp.csr_matrix
    row_labels: np.ndarray | None
    col_labels: np.ndarray | None
    name: str
    meta: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


def permutation(seed: int, n_rows: int, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column permutations drawn from ``seed`` alone (same seed -> same permutations).

    The authors' scripts shuffle the real data's rows and columns once per run with an unseeded
    generator; here the generator is seeded, so every algorithm of a seed sees the same matrix.

    Examples
    --------
    >>> rows, cols = permutation(0, 4, 3)
    >>> sorted(rows.tolist()), sorted(cols.tolist())
    ([0, 1, 2, 3], [0, 1, 2])
    >>> bool((permutation(0, 4, 3)[0] == rows).all())  # the seed alone decides
    True
    """
    seed = _check_seed(seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, PERMUTATION_STREAM]))
    return rng.permutation(n_rows), rng.permutation(n_cols)


def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative int or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return int(seed)


def permute(X: sp.csr_matrix, row_labels: np.ndarray | None, col_labels: np.ndarray | None,
            seed: int) -> tuple[sp.csr_matrix, np.ndarray | None, np.ndarray | None]:
    """Apply ``permutation(seed, ...)``: new row i is old row ``rows[i]`` (labels follow).

    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3], [4, 0, 0]]))
    >>> Xp, rows_p, cols_p = permute(X, np.array([0, 1, 2, 3]), np.array([0, 1, 2]), seed=5)
    >>> rows, cols = permutation(5, 4, 3)
    >>> rows_p.tolist() == rows.tolist(), bool((Xp.toarray() == X.toarray()[rows][:, cols]).all())
    (True, True)
    """
    rows, cols = permutation(seed, *X.shape)
    Xp = X[rows][:, cols].tocsr()
    Xp.sort_indices()
    return (Xp, None if row_labels is None else row_labels[rows],
            None if col_labels is None else col_labels[cols])


def describe(X: sp.csr_matrix, row_labels: np.ndarray | None, seed: int | None) -> dict:
    """The metadata every Dataset carries (plain Python types, JSON-serialisable); without
    row labels, ``n_classes`` and ``class_sizes`` are None.

    >>> import json
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[2, 0], [0, 5], [1, 0]]))
    >>> meta = describe(X, np.array([0, 1, 0]), seed=3)
    >>> meta["nnz"], meta["density"], meta["class_sizes"], meta["total_count"], meta["max_count"]
    (3, 50.0, [2, 1], 8, 5)
    >>> describe(X, None, None)["n_classes"], json.loads(json.dumps(meta)) == meta
    (None, True)
    """
    n_rows, n_cols = X.shape
    if row_labels is None:
        sizes = None
    else:
        sizes = np.bincount(row_labels) if row_labels.size else np.zeros(0, dtype=np.int64)
    return {
        "n_rows": int(n_rows),
        "n_cols": int(n_cols),
        "nnz": int(X.nnz),
        "density": float(100.0 * X.nnz / (n_rows * n_cols)),
        "n_classes": None if sizes is None else int(sizes.size),
        "class_sizes": None if sizes is None else [int(s) for s in sizes],
        "total_count": int(X.data.sum()),
        "max_count": int(X.data.max()) if X.nnz else 0,
        "seed": None if seed is None else int(seed),
    }
