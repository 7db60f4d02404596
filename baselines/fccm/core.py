"""FCCM: entropy-regularised fuzzy co-clustering (Oh, Honda & Ichihashi 2001).

Notation of Honda et al. (2015), §4. For a non-negative
co-occurrence matrix R (n objects × m items) FCCM maximises

    J = Σ_c Σ_i Σ_j u_ci w_cj r_ij − λ_u Σ_c Σ_i u_ci log u_ci − λ_w Σ_c Σ_j w_cj log w_cj   (eq. 1)

with Σ_c u_ci = 1 (object memberships) and Σ_j w_cj = 1 (item typicalities). Its alternating
closed-form updates are softmaxes:

    u_ci = softmax_c(a_ci / λ_u),  A = W Rᵀ   (eq. 2)
    w_cj = softmax_j(b_cj / λ_w),  B = U R    (eq. 3)

Both products cost O(nnz·C) with R in CSR. ``column_groups`` imposes the item constraint per
group of columns (Σ_{j∈g} w_cj = 1 for every group g), the model the collaborative protocol of
Honda et al. §5.2 actually optimises when the columns are split across sites.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

__all__ = [
    "FCCMResult",
    "init_memberships",
    "object_update",
    "item_update",
    "fccm_objective",
    "fccm_iterate",
]


@dataclass
class FCCMResult:
    """Outcome of one FCCM run from one initialisation.

    >>> import numpy as np
    >>> from dptaucc.baselines.fccm.synthetic import make_planted_coclusters
    >>> X, _, _ = make_planted_coclusters(40, 30, 3, random_state=0)
    >>> res = fccm_iterate(X, init_memberships(np.random.default_rng(0), 3, 40), 0.01, 1.0)
    >>> res.memberships.shape, res.typicalities.shape, res.converged
    ((3, 40), (3, 30), True)
    """

    memberships: np.ndarray  # U, C × n, columns sum to 1
    typicalities: np.ndarray  # W, C × m, rows sum to 1 (per column group)
    objective: float  # J of eq. (1) at (U, W)
    n_iter: int
    converged: bool


def init_memberships(rng: np.random.Generator, n_clusters: int, n_objects: int) -> np.ndarray:
    """Random Dirichlet(1,…,1) object memberships, C × n (data-independent).

    >>> import numpy as np
    >>> U = init_memberships(np.random.default_rng(0), 3, 5)
    >>> U.shape, bool(np.allclose(U.sum(axis=0), 1.0)), bool(U.min() >= 0)
    ((3, 5), True, True)
    """
    return rng.dirichlet(np.ones(n_clusters), size=n_objects).T.copy()


def _softmax(z: np.ndarray, axis: int) -> np.ndarray:
    """exp(z) normalised along ``axis``, shifted by the maximum (log-sum-exp, no overflow)."""
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def object_update(a: np.ndarray, lambda_u: float) -> np.ndarray:
    """Eq. (2): u_ci = exp(a_ci/λ_u) / Σ_ℓ exp(a_ℓi/λ_u), via log-sum-exp (a is C × n).

    >>> import numpy as np
    >>> U = object_update(np.array([[0.0, 1000.0], [0.0, 0.0]]), 1.0)  # no overflow
    >>> U.tolist()
    [[0.5, 1.0], [0.5, 0.0]]
    """
    return _softmax(a / lambda_u, axis=0)


def item_update(b: np.ndarray, lambda_w: float) -> np.ndarray:
    """Eq. (3): w_cj = exp(b_cj/λ_w) / Σ_k exp(b_ck/λ_w), via log-sum-exp (b is C × m).

    >>> import numpy as np
    >>> W = item_update(np.array([[0.0, np.log(3.0)], [5.0, 5.0]]), 1.0)  # rows sum to 1
    >>> np.round(W, 12).tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    return _softmax(b / lambda_w, axis=1)


def object_aggregates(R: sp.csr_matrix, W: np.ndarray) -> np.ndarray:
    """A = W Rᵀ (C × n): a_ci = Σ_j w_cj r_ij, computed as (R Wᵀ)ᵀ in O(nnz·C)."""
    return np.ascontiguousarray((R @ W.T).T)


def item_aggregates(R: sp.csr_matrix, U: np.ndarray, Rt: sp.csc_matrix | None = None
                    ) -> np.ndarray:
    """B = U R (C × m): b_cj = Σ_i u_ci r_ij, computed as (Rᵀ Uᵀ)ᵀ in O(nnz·C). ``Rt``: ``R.T``
    kept by a caller that multiplies by it at every iteration (the same product)."""
    return np.ascontiguousarray(((R.T if Rt is None else Rt) @ U.T).T)


def _groups(m: int, column_groups) -> list[np.ndarray]:
    if column_groups is None:
        return [np.arange(m)]
    return [np.asarray(g, dtype=np.intp) for g in column_groups]


def _item_update_grouped(b: np.ndarray, lambda_w, groups: list[np.ndarray]) -> np.ndarray:
    lams = np.broadcast_to(np.asarray(lambda_w, dtype=float), (len(groups),))
    if len(groups) == 1 and groups[0].size == b.shape[1]:
        return item_update(b, float(lams[0]))
    W = np.empty_like(b)
    for g, lam in zip(groups, lams, strict=True):
        W[:, g] = item_update(b[:, g], float(lam))
    return W


def fccm_objective(R: sp.csr_matrix, U: np.ndarray, W: np.ndarray, lambda_u: float,
                   lambda_w, column_groups=None) -> float:
    """J of eq. (1); with column groups the item entropy of group g is weighted by its λ_w.

    >>> import numpy as np, scipy.sparse as sp
    >>> R = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> U = W = np.eye(2)  # crisp: no entropy, J = Σ u w r
    >>> fccm_objective(R, U, W, 0.5, 0.5)
    2.0
    >>> U = W = np.full((2, 2), 0.5)  # uniform: J = 1 + (λ_u + λ_w)·2 ln 2
    >>> round(fccm_objective(R, U, W, 0.5, 0.5) - 2 * float(np.log(2)), 12)
    1.0
    """
    groups = _groups(R.shape[1], column_groups)
    lams = np.broadcast_to(np.asarray(lambda_w, dtype=float), (len(groups),))
    agg = float(np.sum(U * object_aggregates(R, W)))
    ent_w = sum(float(lam) * float(xlogy(W[:, g], W[:, g]).sum())
                for g, lam in zip(groups, lams, strict=True))
    return agg - lambda_u * float(xlogy(U, U).sum()) - ent_w


def fccm_iterate(R: sp.csr_matrix, U0: np.ndarray, lambda_u: float, lambda_w,
                 max_iter: int = 100, tol: float = 1e-7, column_groups=None) -> FCCMResult:
    """Alternate eq. (3) then eq. (2) from ``U0`` until max|ΔU| < tol or ``max_iter`` rounds.

    ``lambda_w`` is one number, or one per column group when ``column_groups`` (a list of
    disjoint index arrays covering the columns) is given.

    >>> import numpy as np
    >>> from dptaucc.baselines.fccm.synthetic import make_planted_coclusters
    >>> X, _, _ = make_planted_coclusters(40, 30, 3, random_state=0)
    >>> U0 = init_memberships(np.random.default_rng(0), 3, 40)
    >>> res = fccm_iterate(X, U0, 0.01, 1.0)
    >>> bool(np.allclose(res.memberships.sum(axis=0), 1))  # Σ_c u_ci = 1
    True
    >>> bool(np.allclose(res.typicalities.sum(axis=1), 1))  # Σ_j w_cj = 1
    True
    >>> res.objective == fccm_objective(X, res.memberships, res.typicalities, 0.01, 1.0)
    True
    >>> groups = [np.arange(15), np.arange(15, 30)]  # the item constraint per group
    >>> W = fccm_iterate(X, U0, 0.01, [1.0, 2.0], column_groups=groups).typicalities
    >>> np.round(W[:, :15].sum(axis=1), 12).tolist()
    [1.0, 1.0, 1.0]
    """
    groups = _groups(R.shape[1], column_groups)
    U = np.array(U0, dtype=np.float64, copy=True)
    converged = False
    n_iter = 0
    Rt = R.T
    W = _item_update_grouped(item_aggregates(R, U, Rt), lambda_w, groups)
    for it in range(1, max_iter + 1):
        n_iter = it
        U_new = object_update(object_aggregates(R, W), lambda_u)
        delta = float(np.max(np.abs(U_new - U)))
        U = U_new
        W = _item_update_grouped(item_aggregates(R, U, Rt), lambda_w, groups)
        if delta < tol:
            converged = True
            break
    J = fccm_objective(R, U, W, lambda_u, lambda_w, column_groups)
    return FCCMResult(U, W, J, n_iter, converged)
