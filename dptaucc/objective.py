"""Contingency tables, the de-normalised Goodman–Kruskal τ̂ and the DP-τCC utilities.

Everything works on a CSR count matrix ``A`` (n×m) and integer label vectors; no dense n×m
array is ever formed. Aggregations make one pass over the non-zeros, O(nnz), with a
scatter-add by label (:mod:`dptaucc.kernels`) whose cost does not grow with the number of
clusters. A CSR matrix that stores every cell (the supplement's filled synthetic matrices) is
read as the dense array its values already are (no copy), and aggregated by a BLAS product
with the one-hot label matrix (up to :data:`DENSE_MAX_LABELS` clusters): the same sums,
exactly so for whole counts (every partial sum is an integer below 2⁵³), about twice as fast.

Equations cited are those of Battaglia & Pensa (SDM 2025):

* (3.2) τ̂_{R|C} = Σ_kl t_kl²/(T t_·l) − Σ_k t_k·²/T²,
* (3.4)/(3.6) the same value as a sum over rows of the prototype similarity σ (3.5),
* (4.9) σ(a_i, t_k) = Σ_l a_il (t_kl/t_·l − t_k·/T) (row assignment utility),
* (4.10) the range sensitivity Δ(σ) = max_l (max_k β_kl − min_k β_kl).

Zero-marginal guard (``guard=True``): a zero marginal ``t_·l`` (resp. ``t_k·``) or total ``T``
is replaced by 1 *both* in the weights that define the utility and in the sensitivity computed
from them. A zero marginal of a non-negative table means the whole slice is zero, so the guarded
weight is simply ``−t_k·/T`` (resp. ``−t_·l/T``). Because the utility change under a unit
increment of ``a_uv`` is exactly one column (row) of the *guarded* weights, the range of that
column is still the true range sensitivity: the guard keeps Δ finite and a valid bound.
With ``guard=False`` the weights follow the raw formula and 0/0 gives NaN (the authors' code).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.kernels import (
    sum_by_column_label,
    sum_by_column_label_and_group,
    sum_by_row_label,
    sum_rows_by_label,
)
from dptaucc.validation import dense_counts

__all__ = [
    "nnz_row_indices",
    "aggregate_columns",
    "aggregate_columns_and_table",
    "aggregate_rows",
    "group_sum",
    "contingency_table",
    "tau_hat",
    "goodman_kruskal_tau",
    "tau_hat_prototype",
    "row_weights",
    "column_weights",
    "row_range_sensitivity",
    "column_range_sensitivity",
    "relabel",
]


def nnz_row_indices(X: sp.csr_matrix) -> np.ndarray:
    """Row index of every stored entry of a CSR matrix (the COO ``row`` array).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[0, 5, 1], [0, 0, 0], [2, 0, 0]]))
    >>> nnz_row_indices(X).tolist(), X.tocoo().row.tolist()
    ([0, 0, 2], [0, 0, 2])
    """
    return np.repeat(np.arange(X.shape[0], dtype=np.intp), np.diff(X.indptr))


#: Most labels for which the one-hot product beats the scatter-add (its cost grows with them).
DENSE_MAX_LABELS = 16


def _full_array(X, n_labels: int) -> np.ndarray | None:
    """The dense n×m array of a CSR matrix that stores every cell (a view) when the one-hot
    product is the faster aggregation, else None."""
    if n_labels > DENSE_MAX_LABELS or not sp.issparse(X):
        return None
    return dense_counts(X, min_density=1.0)


def _one_hot(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """The n_labels × len(labels) 0/1 matrix with a 1 at (labels[j], j)."""
    return (np.arange(n_labels)[:, None] == np.asarray(labels)[None, :]).astype(np.float64)


def aggregate_columns(X: sp.csr_matrix, col_labels: np.ndarray, n_col_clusters: int,
                      out: np.ndarray | None = None) -> np.ndarray:
    """``A C`` (n×L): row profiles summed over column clusters, one pass over the non-zeros.

    ``out``: a C-contiguous n×L float64 array the sums of a stored-sparse matrix are written
    to (a caller that aggregates again and again reuses its memory); the result is returned
    either way.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.objective import aggregate_columns
    >>> aggregate_columns(sp.csr_matrix(np.array([[1, 2, 3]])), np.array([0, 1, 0]), 2).tolist()
    [[4.0, 2.0]]
    """
    dense = _full_array(X, n_col_clusters)
    if dense is not None:  # (Cᵀ Aᵀ)ᵀ: BLAS streams A once
        return np.ascontiguousarray((_one_hot(col_labels, n_col_clusters) @ dense.T).T)
    return sum_by_column_label(X, col_labels, n_col_clusters, out=out)


def aggregate_columns_and_table(
    X: sp.csr_matrix, col_labels: np.ndarray, n_col_clusters: int, row_labels: np.ndarray,
    n_row_clusters: int, out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``A C`` (:func:`aggregate_columns`) and the contingency table ``Rᵀ A C`` summed from its
    rows (:func:`group_sum`), in one pass where the compiled kernels run; the same values.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.objective import aggregate_columns_and_table
    >>> X = sp.csr_matrix(np.array([[1, 2, 3], [4, 0, 1]]))
    >>> AC, T = aggregate_columns_and_table(X, np.array([0, 1, 0]), 2, np.array([0, 1]), 2)
    >>> T.tolist()
    [[4.0, 2.0], [5.0, 0.0]]
    """
    if _full_array(X, n_col_clusters) is not None:
        AC = aggregate_columns(X, col_labels, n_col_clusters)
        return AC, group_sum(row_labels, AC, n_row_clusters)
    return sum_by_column_label_and_group(X, col_labels, n_col_clusters, row_labels,
                                         n_row_clusters, out=out)


def aggregate_rows(X: sp.csr_matrix, row_labels: np.ndarray, n_row_clusters: int) -> np.ndarray:
    """``Rᵀ A`` (K×m): column profiles summed over row clusters, one pass over the non-zeros.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.objective import aggregate_rows
    >>> aggregate_rows(sp.csr_matrix(np.array([[1, 2], [3, 4]])), np.array([0, 0]), 1).tolist()
    [[4.0, 6.0]]
    >>> labels = np.array([1, 0, 1, 2, 0])  # a sparse matrix: the same sums as R^T A
    >>> X = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    >>> bool(np.allclose(aggregate_rows(X, labels, 3), np.eye(3)[labels].T @ X.toarray()))
    True
    """
    dense = _full_array(X, n_row_clusters)
    if dense is not None:
        return _one_hot(row_labels, n_row_clusters) @ dense
    return sum_by_row_label(X, row_labels, n_row_clusters)


def group_sum(labels: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum the rows of ``values`` (n×L) by ``labels`` -> n_groups×L (``Rᵀ V``), O(nL).

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.objective import group_sum
    >>> group_sum(np.array([0, 1, 0]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), 2).tolist()
    [[6.0, 8.0], [3.0, 4.0]]
    """
    return sum_rows_by_label(values, labels, n_groups)


def contingency_table(
    X: sp.csr_matrix, row_labels: np.ndarray, col_labels: np.ndarray,
    n_row_clusters: int, n_col_clusters: int,
) -> np.ndarray:
    """``T = Rᵀ A C`` (K×L), t_kl = Σ_{i∈R_k, j∈C_l} a_ij: one pass over the non-zeros.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.objective import contingency_table
    >>> X = sp.csr_matrix(np.array([[2, 0], [1, 3], [0, 4]]))
    >>> contingency_table(X, np.array([0, 0, 1]), np.array([0, 1]), 2, 2).tolist()
    [[3.0, 3.0], [0.0, 4.0]]
    """
    return group_sum(row_labels, aggregate_columns(X, col_labels, n_col_clusters),
                     n_row_clusters)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num/den with 0/0 := 0 (only used where num is 0 whenever den is 0)."""
    den = np.where(den == 0, 1.0, den)
    return num / den


def tau_hat(T: np.ndarray) -> tuple[float, float]:
    """De-normalised τ̂_{R|C} and τ̂_{C|R} of a table, eq. (3.2).

    Terms of an all-zero row/column are 0 (0/0 := 0); an all-zero table gives (0, 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.objective import tau_hat
    >>> [round(t, 4) for t in tau_hat(np.array([[5.0, 0.0], [0.0, 5.0]]))]
    [0.5, 0.5]
    >>> tau_hat(np.zeros((2, 2)))
    (0.0, 0.0)
    """
    T = np.asarray(T, dtype=float)
    total = T.sum()
    if total <= 0:
        return 0.0, 0.0
    q = T / total
    q_k, q_l = q.sum(axis=1), q.sum(axis=0)
    rc = float(np.sum(_safe_div(q**2, q_l[None, :])) - np.sum(q_k**2))
    cr = float(np.sum(_safe_div(q**2, q_k[:, None])) - np.sum(q_l**2))
    return rc, cr


def goodman_kruskal_tau(T: np.ndarray) -> tuple[float, float]:
    """Normalised Goodman–Kruskal τ_{R|C}, τ_{C|R}: τ̂ / (1 − Σ q_k·²) (resp. Σ q_·l²).

    A table with a single row (column) cluster has nothing to predict: its τ is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.objective import goodman_kruskal_tau
    >>> goodman_kruskal_tau(np.array([[5.0, 0.0], [0.0, 5.0]]))
    (1.0, 1.0)
    >>> goodman_kruskal_tau(np.ones((2, 2)))
    (0.0, 0.0)
    >>> goodman_kruskal_tau(np.array([[3.0, 4.0]]))[0]  # one row cluster: nothing to predict
    0.0
    """
    T = np.asarray(T, dtype=float)
    total = T.sum()
    if total <= 0:
        return 0.0, 0.0
    rc, cr = tau_hat(T)
    q = T / total
    den_rc = 1.0 - np.sum(q.sum(axis=1) ** 2)
    den_cr = 1.0 - np.sum(q.sum(axis=0) ** 2)
    return (float(rc / den_rc) if den_rc > 1e-15 else 0.0,
            float(cr / den_cr) if den_cr > 1e-15 else 0.0)


def tau_hat_prototype(
    X: sp.csr_matrix, row_labels: np.ndarray, col_labels: np.ndarray,
    n_row_clusters: int, n_col_clusters: int,
) -> float:
    """τ̂_{R|C} as Σ_i σ(p_i, q_{r_i}) with σ of eq. (3.5), i.e. eqs. (3.4)/(3.6).

    σ(p_i, q_k) = Σ_l (p_il / p_·l) q_kl − p_i· q_k·, evaluated at each row's own cluster.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[3, 0, 1], [2, 1, 0], [0, 4, 2], [1, 0, 5]]))
    >>> rows, cols = np.array([0, 0, 1, 1]), np.array([0, 1, 1])
    >>> table = contingency_table(X, rows, cols, 2, 2)
    >>> bool(np.isclose(tau_hat_prototype(X, rows, cols, 2, 2), tau_hat(table)[0]))
    True
    """
    total = X.sum()
    PC = aggregate_columns(X, col_labels, n_col_clusters) / total      # p_il
    Q = group_sum(row_labels, PC, n_row_clusters)                      # q_kl
    p_l = PC.sum(axis=0)                                               # p_·l = q_·l
    p_i = PC.sum(axis=1)                                               # p_i·
    q_k = Q.sum(axis=1)
    sigma_own = np.sum(_safe_div(PC, p_l[None, :]) * Q[row_labels], axis=1) - p_i * q_k[row_labels]
    return float(np.sum(sigma_own))


def _guarded(marginal: np.ndarray, guard: bool) -> np.ndarray:
    if guard:
        return np.where(marginal == 0, 1.0, marginal)
    return marginal


def row_weights(T: np.ndarray, guard: bool = True) -> np.ndarray:
    """β_kl = t_kl/t_·l − t_k·/t (K×L), so that σ(a_i, t_k) = Σ_l (A C)_il β_kl (eq. 4.9).

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.objective import row_weights
    >>> T = np.array([[4.0, 0.0], [1.0, 5.0]])
    >>> row_weights(T).round(4).tolist()  # β_00 = 4/5 − 4/10
    [[0.4, -0.4], [-0.4, 0.4]]
    >>> row_weights(np.zeros((1, 2))).tolist()  # guarded: empty marginals give 0, not NaN
    [[0.0, 0.0]]
    """
    T = np.asarray(T, dtype=float)
    t_k, t_l, t = T.sum(axis=1), T.sum(axis=0), T.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = T / _guarded(t_l, guard)[None, :]
        weights -= t_k[:, None] / _guarded(np.asarray(t), guard)
    return weights


def column_weights(T: np.ndarray, guard: bool = True) -> np.ndarray:
    """γ_kl = t_kl/t_k· − t_·l/t (K×L): column utility u(j,l) = Σ_k (Rᵀ A)_kj γ_kl.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[4.0, 0.0], [1.0, 5.0]])
    >>> column_weights(T).round(4).tolist()  # γ_00 = 4/4 − 5/10
    [[0.5, -0.5], [-0.3333, 0.3333]]
    >>> bool(np.allclose(column_weights(T), row_weights(T.T).T))  # the rows' rule, transposed
    True
    """
    T = np.asarray(T, dtype=float)
    t_k, t_l, t = T.sum(axis=1), T.sum(axis=0), T.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = T / _guarded(t_k, guard)[:, None]
        weights -= t_l[None, :] / _guarded(np.asarray(t), guard)
    return weights


def row_range_sensitivity(beta: np.ndarray) -> float:
    """Eq. (4.10): Δ = max_l (max_k β_kl − min_k β_kl); NaN if any weight is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> row_range_sensitivity(np.array([[0.5, -0.1], [-0.25, 0.25]]))  # column 0: 0.5 + 0.25
    0.75
    >>> row_range_sensitivity(np.array([[0.5, np.nan]]))
    nan
    """
    beta = np.asarray(beta, dtype=float)
    if np.isnan(beta).any():
        return float("nan")
    return float(np.max(beta.max(axis=0) - beta.min(axis=0)))


def column_range_sensitivity(gamma: np.ndarray) -> float:
    """Eq. (4.10) for columns: Δ = max_k (max_l γ_kl − min_l γ_kl); NaN if any weight is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> column_range_sensitivity(np.array([[0.5, -0.125], [-0.25, 0.25]]))  # row 0
    0.625
    """
    gamma = np.asarray(gamma, dtype=float)
    if np.isnan(gamma).any():
        return float("nan")
    return float(np.max(gamma.max(axis=1) - gamma.min(axis=1)))


def relabel(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Map the labels that occur to 0..K'-1 keeping their order; empty clusters disappear.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.objective import relabel
    >>> labels, k = relabel(np.array([4, 4, 1, 7]))
    >>> labels.tolist(), k
    ([1, 1, 0, 2], 3)
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.intp), 0
    top = int(labels.max()) + 1
    present = np.zeros(top, dtype=bool)
    present[labels] = True
    new_ids = np.cumsum(present) - 1
    return new_ids[labels].astype(np.intp), int(present.sum())
