"""Fast-τCC, the non-private reference co-clustering (supplement Algorithms 1-2).

Row move (supplement Alg. 1, eq. A.1-A.3): with Q = Rᵀ P C, β_kl = q_kl/q_·l − q_k· and
Σ = P C βᵀ (n×K); every row goes to argmax_k σ_ik; repeat until no row moves, removing empty
clusters. Column move symmetrically with γ_kl = q_kl/q_k· − q_·l and Σ = (Rᵀ P)ᵀ γ (m×L).
Outer loop (Alg. 2): alternate row and column moves until neither changes anything.

While C is fixed, P C (n×L) does not change, so a row pass costs O(nKL) after one O(nnz)
scatter-add; likewise Rᵀ P for the column passes. Zero marginals (0/0) count as 0.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from dptaucc._common import indicator_rows
from dptaucc.base import SEED, CoClustererMixin, SuiteEstimator
from dptaucc.methods import NON_NEGATIVE_REALS, MethodInfo
from dptaucc.objective import (
    aggregate_columns,
    aggregate_rows,
    column_weights,
    contingency_table,
    group_sum,
    relabel,
    row_weights,
)
from dptaucc.privacy import NON_PRIVATE, PUBLIC
from dptaucc.validation import check_n_clusters, make_generator

__all__ = ["FastTauCC"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="fast_taucc", estimator="dptaucc.FastTauCC",
    label="Fast-τCC", color="black", linestyle="--", marker="o", family="co-clustering",
    neighbours="none (not private)",
    domain=NON_NEGATIVE_REALS,  # τ is defined on any non-negative table (P = A / ΣA)
    modes=(),
    role="reference",
    coclusters=True,
)


def _move(profiles: np.ndarray, labels: np.ndarray, n_clusters: int, weights_fn, max_passes: int):
    """Inner loop of supplement Alg. 1 on one mode.

    ``profiles`` (N×D) are the objects aggregated over the other mode's clusters; the table
    is ``group_sum(labels, profiles)`` (clusters × D). Returns (labels, k, passes, changed).
    """
    changed_any = False
    passes = 0
    for _ in range(max_passes):
        passes += 1
        table = group_sum(labels, profiles, n_clusters)
        scores = profiles @ weights_fn(table).T
        new = np.argmax(scores, axis=1)
        if np.array_equal(new, labels):
            break
        changed_any = True
        labels, n_clusters = relabel(new)
    return labels, n_clusters, passes, changed_any


def _row_w(table):
    return row_weights(table, guard=True)


def _col_w_t(table_t):
    # table_t is the transposed table (L×K); column weights of T, transposed back.
    return column_weights(table_t.T, guard=True).T


class FastTauCC(CoClustererMixin, SuiteEstimator):
    """Non-private Fast-τCC co-clustering (Battaglia, Peiretti & Pensa 2024).

    Parameters
    ----------
    n_row_clusters, n_col_clusters : int
        Initial K, L of the random initial partitions; clusters that empty are removed.
    max_iter : int
        Maximum number of outer iterations (row moves then column moves).
    max_iter_per_mode : int
        Maximum number of passes of each inner loop (the reference: 101).
    random_state : None, int or numpy Generator

    Fractional non-negative input is accepted (the algorithm works on P = A / ΣA).
    Non-private: no ``epsilon``, no ``mode``; ``row_labels_private_`` is False and there is
    no privacy ledger.

    Attributes
    ----------
    row_labels_, column_labels_, rows_, columns_, n_row_clusters_, n_col_clusters_,
    contingency_ : the exact final table T (K×L),
    tau_rc_, tau_cr_ : normalised Goodman–Kruskal τ of T (as the reference reports),
    tau_hat_rc_, tau_hat_cr_ : de-normalised τ̂ (eq. 3.2) of T,
    n_iter_ : total number of inner passes (the reference's ``_actual_n_iterations``),
    n_outer_iter_, converged_, row_labels_private_ (False), n_features_in_.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc import FastTauCC
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))
    >>> model = FastTauCC(3, 3, random_state=0).fit(X)  # start above K, L: it merges
    >>> model.n_row_clusters_, model.n_col_clusters_, round(model.tau_rc_, 3)
    (2, 2, 1.0)
    """

    _parameter_constraints = {
        "n_row_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_col_clusters": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_iter_per_mode": [Interval(Integral, 1, None, closed="left")],
        "random_state": SEED,
    }
    _domain = METHOD.domain
    # every score is 0: every row and column goes to cluster 0
    _all_zero_outcome = "one row cluster, one column cluster and an all-zero table"

    # non-private: everything it learns is read from the data
    _release_kinds = {
        **dict.fromkeys(("row_labels_", "column_labels_", "n_row_clusters_", "n_col_clusters_",
                         "contingency_", "tau_rc_", "tau_cr_", "tau_hat_rc_", "tau_hat_cr_",
                         "rows_", "columns_", "n_iter_", "n_outer_iter_", "converged_"),
                        NON_PRIVATE),
        "row_labels_private_": PUBLIC, "n_features_in_": PUBLIC,
    }

    def __init__(self, n_row_clusters=2, n_col_clusters=2, max_iter=500, max_iter_per_mode=101,
                 random_state=None):
        self.n_row_clusters = n_row_clusters
        self.n_col_clusters = n_col_clusters
        self.max_iter = max_iter
        self.max_iter_per_mode = max_iter_per_mode
        self.random_state = random_state

    def fit(self, X, y=None):
        """Co-cluster X (dense or scipy.sparse, non-negative, fractional values allowed)."""
        X = self._check_fit(X)
        max_iter, max_passes = int(self.max_iter), int(self.max_iter_per_mode)
        n, m = X.shape
        K = check_n_clusters(self.n_row_clusters, n, "n_row_clusters", "rows")
        L = check_n_clusters(self.n_col_clusters, m, "n_col_clusters", "columns")
        rng = make_generator(self.random_state)
        # The weights β, γ are scale-free and Σ scales by 1/ΣA, so we work on the counts A
        # (same argmax as on P = A/ΣA) and the table below is the exact count table.

        r, K = relabel(rng.integers(0, K, size=n))
        c, L = relabel(rng.integers(0, L, size=m))
        n_passes = 0
        converged = False
        outer = 0
        for outer in range(1, max_iter + 1):  # noqa: B007 - outer is reported
            PC = aggregate_columns(X, c, L)
            r, K, p_r, changed_r = _move(PC, r, K, _row_w, max_passes)
            RP_t = aggregate_rows(X, r, K).T  # m×K
            c, L, p_c, changed_c = _move(RP_t, c, L, _col_w_t, max_passes)
            n_passes += p_r + p_c
            if not (changed_r or changed_c):
                converged = True
                break

        table = contingency_table(X, r, c, K, L)
        self.row_labels_ = r
        self.column_labels_ = c
        self.row_labels_private_ = False
        self.n_row_clusters_ = K
        self.n_col_clusters_ = L
        self._set_table(table)
        self.rows_ = indicator_rows(r, K)
        self.columns_ = indicator_rows(c, L)
        self.n_iter_ = n_passes
        self.n_outer_iter_ = outer
        self.converged_ = converged
        self.n_features_in_ = m
        self._warn_if_fewer_clusters()
        return self

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY (non-private method): the fitted row labels.

        Fast-τCC is evaluated on its own fitted partition (the paper's reference line), so
        this returns a copy of ``row_labels_``; X must be the fitted matrix's shape. It exists
        so the experiment engine treats every method alike.

        >>> import numpy as np
        >>> from dptaucc import FastTauCC
        >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))
        >>> model = FastTauCC(2, 2, random_state=0).fit(X)
        >>> bool(np.array_equal(model.evaluation_row_labels(X), model.row_labels_))
        True
        """
        X = self._check_fitted_input(X, "row_labels_")
        if X.shape != (self.row_labels_.size, self.n_features_in_):
            raise ValueError(f"X has shape {X.shape}, the model was fitted on "
                             f"{(self.row_labels_.size, self.n_features_in_)}")
        return self.row_labels_.copy()
