"""Minimum-trace noise covariance under the colored-noise privacy constraint.

Problem (Ravi et al. eq. 11, one centroid block at a time): given sensitivity vectors
v_1..v_N ∈ ℝ^p and γ = γ(ε, δ),

    minimise tr(Σ)  subject to  v_iᵀ Σ⁻¹ v_i ≤ γ  for every i,

the minimum-trace centred ellipsoid containing the v_i/√γ. Lagrangian duality: for λ ≥ 0 the
minimiser over Σ is Σ = M(λ)^{1/2} with M(λ) = Σ_i λ_i v_i v_iᵀ and the dual function is
g(λ) = 2 tr M(λ)^{1/2} − γ Σλ_i (concave). For normalised weights (Σλ̂ = 1) the best scaling
gives the certified lower bound D(λ̂) = (tr M(λ̂)^{1/2})²/γ ≤ OPT. The primal candidate
Σ(λ̂) = M(λ̂)^{1/2}, rescaled by max_i q_i/γ with q_i = v_iᵀ M^{−1/2} v_i, is exactly feasible
with trace P = T·max_i q_i/γ where T = tr M^{1/2} = Σ_i λ̂_i q_i. Hence the relative duality gap
is (P − D)/P = 1 − (Σ_i λ̂_i q_i)/max_i q_i, and we iterate the multiplicative update
λ̂_i ∝ λ̂_i·(q_i/max q)^κ (a Titterington-type fixed point for κ = 1) until it is below ``tol``.

The diagonal variant (Σ = diag(σ²)) is the same problem with M replaced by diag(M):
σ_j² ∝ √(Σ_i λ_i v_ij²); it only needs the row-wise quadratic forms Σ_j a_ij τ_j and the
weighted column sums Σ_i λ_i a_ij of a_ij = v_ij², so sparse data never has to be densified
(:class:`SparseDeviations`).

Whatever the gap, the returned covariance is **feasible** (the final rescale), so the privacy
constraint holds exactly; only optimality depends on convergence.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

__all__ = ["SolverResult", "DenseDeviations", "SparseDeviations", "min_trace_full",
           "min_trace_diag", "white_variance", "constraint_values"]

_TINY = 1e-300


@dataclass(frozen=True)
class SolverResult:
    """A feasible covariance and its optimality certificate.

    >>> import numpy as np
    >>> result = min_trace_full(np.array([[1.0, 0.0], [0.0, 2.0]]), gamma=1.0)
    >>> # orthogonal vectors: each needs its own axis, Σ = diag(1, 4)
    >>> result.converged, bool(result.dual <= result.primal), round(result.primal, 4)
    (True, True, 5.0)
    """

    covariance: np.ndarray  # p×p (full) or the p diagonal variances (diag)
    primal: float  # tr Σ of the returned (feasible) Σ
    dual: float  # certified lower bound on the optimum
    gap: float  # (primal − dual)/primal
    n_iter: int
    converged: bool


class DenseDeviations:
    """Sensitivity vectors as rows of a dense N×p array.

    >>> import numpy as np
    >>> dev = DenseDeviations(np.array([[1.0, 2.0], [3.0, 0.0]]))
    >>> dev.quad(np.array([1.0, 0.5])).tolist(), dev.moment(np.array([1.0, 1.0])).tolist()
    ([3.0, 9.0], [10.0, 4.0])
    """

    def __init__(self, V: np.ndarray):
        self.V = np.asarray(V, dtype=float)

    @property
    def shape(self) -> tuple[int, int]:
        return self.V.shape

    def quad(self, tau: np.ndarray) -> np.ndarray:
        """Σ_j v_ij² τ_j for every i."""
        return (self.V * self.V) @ tau

    def moment(self, lam: np.ndarray) -> np.ndarray:
        """Σ_i λ_i v_ij² for every j."""
        return lam @ (self.V * self.V)


class SparseDeviations:
    """v_i = (x_i − c)·s for the rows x_i of a CSR block, never densified (s: a scalar).

    Σ_j (x_ij − c_j)² τ_j = (X∘X)τ − 2X(c∘τ) + (c²)ᵀτ, and likewise for the column moments.

    >>> import numpy as np, scipy.sparse as sp
    >>> X, centre = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), np.array([0.5, 1.0, 0.0])
    >>> sparse = SparseDeviations(sp.csr_matrix(X), centre, scale=2.0)
    >>> dense = DenseDeviations((X - centre) * 2.0)  # the same vectors, densified
    >>> tau, lam = np.array([1.0, 0.5, 2.0]), np.array([0.3, 0.7])
    >>> bool(np.allclose(sparse.quad(tau), dense.quad(tau)))
    True
    >>> bool(np.allclose(sparse.moment(lam), dense.moment(lam)))
    True
    """

    def __init__(self, X: sp.csr_matrix, centre: np.ndarray, scale: float):
        self.X = sp.csr_matrix(X)
        self.X2 = self.X.multiply(self.X).tocsr()
        self.c = np.asarray(centre, dtype=float)
        self.s2 = float(scale) ** 2

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape

    def quad(self, tau: np.ndarray) -> np.ndarray:
        out = self.X2 @ tau - 2.0 * (self.X @ (self.c * tau)) + float((self.c**2) @ tau)
        return np.maximum(out, 0.0) * self.s2

    def moment(self, lam: np.ndarray) -> np.ndarray:
        out = self.X2.T @ lam - 2.0 * self.c * (self.X.T @ lam) + self.c**2 * lam.sum()
        return np.maximum(out, 0.0) * self.s2


def white_variance(sq_norms: np.ndarray, gamma: float) -> float:
    """Paper Thm. 3: σ² = max_i ‖v_i‖² / γ (the same variance in every coordinate).

    >>> import numpy as np
    >>> white_variance(np.array([1.0, 4.0]), 2.0), white_variance(np.array([]), 2.0)
    (2.0, 0.0)
    """
    return float(np.max(sq_norms)) / gamma if np.size(sq_norms) else 0.0


def constraint_values(V: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """v_iᵀ Σ⁺ v_i for a full (p×p) or diagonal (p,) covariance; +inf if v_i ∉ range(Σ).

    >>> import numpy as np
    >>> V = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> constraint_values(V, np.array([1.0, 4.0])).tolist()  # diagonal
    [1.0, 1.0]
    >>> constraint_values(V, np.diag([1.0, 0.0])).tolist()  # v_2 outside the range
    [1.0, inf]
    """
    V = np.asarray(V, dtype=float)
    if cov.ndim == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(V != 0, V * V / cov, 0.0)
        return terms.sum(axis=1)
    w, U = np.linalg.eigh(cov)
    keep = w > w.max() * 1e-12 if w.size and w.max() > 0 else np.zeros_like(w, bool)
    Z = V @ U
    q = (Z[:, keep] ** 2 / w[keep]).sum(axis=1)
    resid = (Z[:, ~keep] ** 2).sum(axis=1)
    return np.where(resid > 1e-18 * np.maximum((V * V).sum(axis=1), _TINY), np.inf, q)


def _initial_weights(sq_norms: np.ndarray) -> np.ndarray:
    lam = np.maximum(sq_norms, 0.0)
    if lam.sum() <= 0:
        return np.full(lam.size, 1.0 / max(lam.size, 1))
    return lam / lam.sum()


def _finish(T: float, qmax: float, gamma: float, it: int, tol: float, gap: float,
            what: str) -> tuple[float, float, bool]:
    primal, dual = T * qmax / gamma, T * T / gamma
    converged = gap <= tol
    if not converged:
        warnings.warn(f"{what} stopped at duality gap {gap:.2e} > tol {tol:.1e} after {it} "
                      "iterations; the covariance is feasible (private) but not optimal",
                      ConvergenceWarning, stacklevel=3)
    return primal, dual, converged


def _update(lam: np.ndarray, q: np.ndarray, qmax: float, kappa: float) -> np.ndarray:
    """Multiplicative step λ_i ∝ λ_i·(q_i/q_max)^κ (κ = 1: the classical fixed point)."""
    lam = lam * (q / qmax) ** kappa
    return np.maximum(lam / lam.sum(), _TINY)


def min_trace_full(V: np.ndarray, gamma: float, tol: float = 1e-6, max_iter: int = 20_000,
                   kappa: float = 4.0, check_every: int = 10) -> SolverResult:
    """Full-covariance optimum for the rows of dense V (N×p); see the module docstring.

    Works in the span of the v_i (thin SVD), so rank-deficient blocks get noise only where
    the sensitivity vectors live. Speed-ups that do not affect the certificate: the step uses
    the exponent κ (halved whenever the dual value T decreases, so it falls back to the
    monotone κ = 1), and between full checks every ``check_every`` iterations only the
    *active* rows (weight > 1e-12 of the largest) are evaluated; the gap is always certified
    on all rows.

    >>> import numpy as np
    >>> V = np.random.default_rng(0).normal(size=(30, 3))
    >>> result = min_trace_full(V, gamma=2.0)
    >>> result.converged, bool(constraint_values(V, result.covariance).max() <= 2.0 * (1 + 1e-9))
    (True, True)
    >>> bool(result.primal <= 3 * white_variance((V**2).sum(axis=1), 2.0))  # ≤ white noise
    True
    """
    V = np.asarray(V, dtype=float)
    N, p = V.shape
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    if N == 0 or not np.any(V):
        return SolverResult(np.zeros((p, p)), 0.0, 0.0, 0.0, 0, True)
    _, s, Wt = np.linalg.svd(V, full_matrices=False)
    r = int((s > s[0] * 1e-10).sum())
    B = Wt[:r]  # r×p orthonormal rows spanning the v_i
    Zc = V @ B.T  # coordinates in the span
    lam = _initial_weights((Zc * Zc).sum(axis=1))
    active = np.arange(N)
    it, gap, T_prev = 0, np.inf, -np.inf
    for it in range(1, max_iter + 1):
        Za, la = Zc[active], lam[active]
        M = (Za * la[:, None]).T @ Za
        w, U = np.linalg.eigh(M)
        root = np.sqrt(np.maximum(w, w.max() * 1e-15))
        T = float(root.sum())
        full_check = it % check_every == 0 or it == 1
        rows = np.arange(N) if full_check else active
        Y = Zc[rows] @ U
        q = (Y * Y / root).sum(axis=1)
        qmax = float(q.max())
        gap = 1.0 - T / qmax
        if gap <= tol and not full_check:  # certify on every row before stopping
            Y = Zc @ U
            q = (Y * Y / root).sum(axis=1)
            qmax, rows = float(q.max()), np.arange(N)
            gap = 1.0 - T / qmax
        if gap <= tol:
            break
        if T < T_prev * (1.0 - 1e-12):
            kappa = max(1.0, kappa / 2.0)
        T_prev = T
        new = np.zeros(N) if not full_check else None
        if full_check:
            lam = _update(lam, q, qmax, kappa)
            active = np.flatnonzero(lam > lam.max() * 1e-12)
        else:
            new[active] = _update(la, q, qmax, kappa)
            lam = np.where(new > 0, new, _TINY)
    primal, dual, conv = _finish(T, qmax, gamma, it, tol, gap, "min_trace_full")
    cov_r = (U * (root * (qmax / gamma))) @ U.T
    return SolverResult(B.T @ cov_r @ B, primal, dual, float(gap), it, conv)


def min_trace_diag(dev: DenseDeviations | SparseDeviations, gamma: float, tol: float = 1e-6,
                   max_iter: int = 20_000, kappa: float = 4.0) -> SolverResult:
    """Diagonal-covariance optimum: minimise Σ_j σ_j² s.t. Σ_j v_ij²/σ_j² ≤ γ for all i.

    Same certificate and κ-safeguarded multiplicative step as :func:`min_trace_full`; each
    iteration costs two passes over the rows (O(nnz) for :class:`SparseDeviations`).

    >>> import numpy as np
    >>> V = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> result = min_trace_diag(DenseDeviations(V), gamma=1.0)
    >>> np.round(result.covariance, 4).tolist(), round(result.primal, 4)  # σ_j² = v_ij²/γ
    ([1.0, 4.0], 5.0)
    >>> bool(constraint_values(V, result.covariance).max() <= 1.0 + 1e-9)  # feasible
    True
    """
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    N, p = dev.shape
    ones = np.ones(p)
    lam = _initial_weights(dev.quad(ones)) if N else np.zeros(0)
    if N == 0 or lam.sum() == 0 or not np.any(dev.moment(lam) > 0):
        return SolverResult(np.zeros(p), 0.0, 0.0, 0.0, 0, True)
    it, gap, T_prev = 0, np.inf, -np.inf
    while it < max_iter:
        it += 1
        m = dev.moment(lam)
        root = np.sqrt(m)
        tau = np.divide(1.0, root, out=np.zeros_like(root), where=root > 0)
        q = dev.quad(tau)
        T = float(root.sum())
        qmax = float(q.max())
        if qmax <= 0.0:  # every deviation is (numerically) zero: no noise is needed
            return SolverResult(np.zeros(p), 0.0, 0.0, 0.0, it, True)
        gap = 1.0 - T / qmax
        if gap <= tol:
            break
        if T < T_prev * (1.0 - 1e-12):
            kappa = max(1.0, kappa / 2.0)
        T_prev = T
        lam = _update(lam, q, qmax, kappa)
    primal, dual, conv = _finish(T, qmax, gamma, it, tol, gap, "min_trace_diag")
    return SolverResult(root * (qmax / gamma), primal, dual, float(gap), it, conv)
