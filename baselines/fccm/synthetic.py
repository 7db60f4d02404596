"""A planted co-cluster matrix like Honda et al. (2015) §6.1 (100 objects × 90 items, 4 blocks)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.validation import make_generator

__all__ = ["make_planted_coclusters"]


def make_planted_coclusters(n_rows: int = 100, n_cols: int = 90, n_clusters: int = 4,
                            p_in: float = 0.6, noise: float = 0.15, random_state=None
                            ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Binary matrix with ``n_clusters`` diagonal co-clusters plus background noise.

    Object i and item j of co-cluster k co-occur with probability ``p_in``; every other cell
    with probability ``noise``. Rows and columns come in contiguous near-equal groups (the
    paper's Figure 3(a)); returns (X as CSR, row labels, column labels).

    >>> import numpy as np
    >>> X, rows, cols = make_planted_coclusters(random_state=0)
    >>> X.shape, np.bincount(rows).tolist(), np.bincount(cols).tolist()
    ((100, 90), [25, 25, 25, 25], [22, 23, 23, 22])
    >>> A = X.toarray()
    >>> bool(A[rows == 0][:, cols == 0].mean() > A[rows == 0][:, cols != 0].mean())  # planted
    True
    """
    if not (0 <= noise < p_in <= 1):
        raise ValueError(f"need 0 <= noise < p_in <= 1, got noise={noise}, p_in={p_in}")
    rng = make_generator(random_state)
    rows = np.repeat(np.arange(n_clusters), np.diff(np.linspace(0, n_rows, n_clusters + 1)
                                                    .round().astype(int)))
    cols = np.repeat(np.arange(n_clusters), np.diff(np.linspace(0, n_cols, n_clusters + 1)
                                                    .round().astype(int)))
    prob = np.where(rows[:, None] == cols[None, :], p_in, noise)
    X = (rng.random((n_rows, n_cols)) < prob).astype(np.float64)
    return sp.csr_matrix(X), rows, cols
