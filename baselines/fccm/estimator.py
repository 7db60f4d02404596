"""Whole-data FCCM as an estimator: the non-private co-clustering reference (ε = ∞).

Centralised FCCM (Oh et al. 2001; Honda et al. 2015, eqs. 1-3) on the whole matrix, hard
co-clusters by maximum membership / typicality. No differential privacy: every fitted attribute
that depends on the data is declared non-private, and the ledger reports ε = inf.
"""

from __future__ import annotations

import hashlib
import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from dptaucc.base import SEED, CoClustererMixin, SuiteEstimator
from dptaucc.methods import NON_NEGATIVE_REALS
from dptaucc.objective import contingency_table
from dptaucc.privacy import (
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    PUBLIC,
    PrivacyLedger,
)
from dptaucc.validation import check_count_matrix, make_generator

from ._params import (
    check_co_clusters,
    check_lambda,
    check_normalize,
    check_positive_int,
    default_lambdas,
    normalize_rows,
)
from .core import FCCMResult, fccm_iterate, init_memberships, object_aggregates

__all__ = ["FCCM", "FCCMFittedMixin", "FCCM_PARAMETER_CONSTRAINTS"]

NO_DP_NOTE = "no differential privacy: the co-clusters are computed from the raw data"


def _fingerprint(X: sp.csr_matrix) -> str:
    """Digest of a validated CSR matrix (shape and entries), to recognise the training data."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.asarray(X.shape, dtype=np.int64).tobytes())
    for arr in (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


#: scikit-learn parameter constraints shared by the whole-data and collaborative FCCM
FCCM_PARAMETER_CONSTRAINTS = {
    "n_row_clusters": [Interval(Integral, 1, None, closed="left")],
    "n_col_clusters": [None, Interval(Integral, 1, None, closed="left")],
    "lambda_u": [None, Interval(Real, 0, None, closed="neither")],
    "lambda_w": [None, Interval(Real, 0, None, closed="neither")],
    "normalize": [None, StrOptions({"l1"})],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "random_state": SEED,
}


class FCCMFittedMixin(CoClustererMixin):
    """Fitted attributes and evaluation shared by the whole-data and collaborative FCCM.

    FCCM is not differentially private: every attribute computed from the data is declared
    non-private; shapes, parameters and the data-independent column split are public.

    >>> from dptaucc.privacy.releases import NON_PRIVATE, PUBLIC
    >>> kinds = FCCM(2).release_kinds()
    >>> kinds["row_labels_"] == NON_PRIVATE, kinds["lambda_u_"] == PUBLIC
    (True, True)
    """

    _domain = NON_NEGATIVE_REALS
    # every distance is 0: uniform memberships, whose argmax puts every object in cluster 0
    _all_zero_outcome = ("uniform memberships (one row cluster, one column cluster) and an "
                         "all-zero table")

    _release_kinds = {
        **dict.fromkeys(
            ["memberships_", "typicalities_", "row_labels_", "column_labels_",
             "n_row_clusters_", "n_col_clusters_", "rows_", "columns_", "contingency_",
             "tau_rc_", "tau_cr_", "tau_hat_rc_", "tau_hat_cr_", "objective_", "n_iter_",
             "converged_", "message_log_"],
            NON_PRIVATE),
        **dict.fromkeys(["n_features_in_", "row_labels_private_", "lambda_u_", "lambda_w_",
                         "site_columns_"], PUBLIC),
        **LEDGER_ATTRIBUTES,
    }

    def _set_fitted(self, X: sp.csr_matrix, U: np.ndarray, W: np.ndarray, res: FCCMResult,
                    ledger: PrivacyLedger, contingency: np.ndarray | None = None) -> None:
        C = U.shape[0]
        self.n_features_in_ = X.shape[1]
        self._fit_fingerprint = _fingerprint(X)
        self.memberships_ = np.ascontiguousarray(U.T)  # n × C
        self.typicalities_ = W  # C × m
        self.row_labels_ = np.argmax(U, axis=0).astype(np.intp)
        self.column_labels_ = np.argmax(W, axis=0).astype(np.intp)
        self.n_row_clusters_ = int(np.unique(self.row_labels_).size)
        self.n_col_clusters_ = int(np.unique(self.column_labels_).size)
        self.rows_ = self.row_labels_[None, :] == np.arange(C)[:, None]
        self.columns_ = self.column_labels_[None, :] == np.arange(C)[:, None]
        if contingency is None:
            contingency = contingency_table(X, self.row_labels_, self.column_labels_, C, C)
        self._set_table(contingency)
        self.objective_ = res.objective
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.row_labels_private_ = False
        self.privacy_ledger_ = ledger
        # No mechanism protects the output: the ledger holds only non-private steps, so the
        # privacy loss is unbounded (ε = ∞); δ is reported as the ledger's (no δ is claimed).
        self.epsilon_spent_ = math.inf if not ledger.end_to_end_dp else ledger.epsilon_spent
        self.delta_spent_ = ledger.delta_spent

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, not private: the co-cluster each row of X is assigned to.

        For the training matrix this returns the fitted assignment ``row_labels_`` (argmax of
        the released memberships U: FCCM releases a membership for every object, so U itself is
        the paper protocol's "best prototype"). For any other matrix with the same columns,
        row i goes to argmax_c Σ_j w_cj r_ij (eq. 2 before the softmax, R row-normalised as in
        the fit), which equals ``row_labels_`` on the training matrix at convergence.
        """
        check_is_fitted(self, "typicalities_")
        X = check_count_matrix(X, integer=False)
        if X.shape[1] != self.typicalities_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns, the model was fitted on "
                             f"{self.typicalities_.shape[1]}")
        if _fingerprint(X) == self._fit_fingerprint:
            return self.row_labels_.copy()
        R = normalize_rows(X, self.normalize)
        return np.argmax(object_aggregates(R, self.typicalities_), axis=0).astype(np.intp)


class FCCM(FCCMFittedMixin, SuiteEstimator):
    """Fuzzy co-clustering for categorical multivariate data (whole data, non-private).

    Parameters
    ----------
    n_row_clusters : number C of co-clusters.
    n_col_clusters : None or C (FCCM pairs each object cluster with one item typicality vector).
    lambda_u, lambda_w : fuzzifiers of eq. (1); None = shape-based defaults 0.01/m and 6·n/m
        (tuned on L1-row-normalised text; give explicit values for raw or binary data).
    normalize : "l1" (divide each row by its total, a per-record transform) or None (raw).
    n_init : random restarts; the one with the largest objective J (eq. 1) is kept.
    max_iter, tol : stop when max|ΔU| < tol or after max_iter rounds.
    random_state : seed of the one Generator (Dirichlet initial memberships).

    Fitted: ``memberships_`` (n × C), ``typicalities_`` (C × m), ``row_labels_``,
    ``column_labels_`` (argmax, co-cluster ids 0..C-1), ``n_row_clusters_``/``n_col_clusters_``
    (co-clusters actually used), ``contingency_``, ``tau_rc_``, ``tau_cr_`` (normalised
    Goodman–Kruskal τ),
    ``tau_hat_rc_``, ``tau_hat_cr_`` (τ̂ of eq. 3.2), ``objective_``,
    ``privacy_ledger_``, ``epsilon_spent_`` (= inf), ``delta_spent_``.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.fccm import FCCM
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 3))
    >>> model = FCCM(2, random_state=0).fit(X)
    >>> sorted(np.bincount(model.row_labels_).tolist()), model.epsilon_spent_
    ([5, 5], inf)
    """

    _parameter_constraints = FCCM_PARAMETER_CONSTRAINTS

    def __init__(self, n_row_clusters: int = 3, n_col_clusters: int | None = None,
                 lambda_u: float | None = None, lambda_w: float | None = None,
                 normalize: str | None = "l1", n_init: int = 5, max_iter: int = 300,
                 tol: float = 1e-7, random_state=None):
        self.n_row_clusters = n_row_clusters
        self.n_col_clusters = n_col_clusters
        self.lambda_u = lambda_u
        self.lambda_w = lambda_w
        self.normalize = normalize
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None) -> FCCM:
        X = self._check_fit(X)
        n, m = X.shape
        C = check_co_clusters(self.n_row_clusters, self.n_col_clusters, n, m)
        check_normalize(self.normalize)
        n_init = check_positive_int(self.n_init, "n_init")
        max_iter = check_positive_int(self.max_iter, "max_iter")
        tol = check_lambda(self.tol, "tol")
        lu_default, lw_default = default_lambdas(n, m)
        lambda_u = check_lambda(lu_default if self.lambda_u is None else self.lambda_u,
                                "lambda_u")
        lambda_w = check_lambda(lw_default if self.lambda_w is None else self.lambda_w,
                                "lambda_w")
        rng = make_generator(self.random_state)
        inits = [init_memberships(rng, C, n) for _ in range(n_init)]
        ledger = PrivacyLedger()
        ledger.mark_non_private("fccm_fit", "whole-data FCCM on the raw matrix; " + NO_DP_NOTE)
        R = normalize_rows(X, self.normalize)
        best = None
        for U0 in inits:
            res = fccm_iterate(R, U0, lambda_u, lambda_w, max_iter=max_iter, tol=tol)
            if best is None or res.objective > best.objective:
                best = res
        self.lambda_u_, self.lambda_w_ = lambda_u, lambda_w
        self._set_fitted(X, best.memberships, best.typicalities, best, ledger)
        self._warn_if_fewer_clusters()
        return self
