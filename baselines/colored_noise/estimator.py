"""Colored-noise mechanism for DP k-means (Ravi, Scaglione & Peisert 2021), spec §2.

Rows are first mapped to the unit L2 ball by a public per-record transform (and, where the
spec advises, a data-independent random projection): :mod:`dptaucc.baselines.dpm.rows`.

``variant="local"`` — the paper's formulation ("CN-local", a **leaky reference**): non-private
k-means, then one release c̃ = c + N(0, Σ) with Σ optimised against the *local* sensitivity set
Δ_i = (x_i − c_k(i))/(n_k(i) − 1) of "remove row i, keep the partition" (§2.2). Both the
partition and the data-dependent Σ are named non-private steps in the ledger; the (ε, δ) entry
records what the paper claims for the centroid release.

``variant="hardened"`` — "CN-hardened" (§2.6 b), end-to-end DP: DP-Lloyd from a random
(data-independent) partition; each of ``n_iter`` iterations releases the per-cluster
(sum, count) vectors with Gaussian noise whose covariance is optimised against the **public
domain** {(x, 1) : ‖x‖₂ ≤ 1} (one add/remove changes one block by such a vector). For that
domain the optimum is available in closed form: minimising p·a + b subject to 1/a + 1/b ≤ γ
gives a = (√p + 1)/(γ√p) on the sum coordinates and b = (√p + 1)/γ on the count, trace
(√p + 1)²/γ, against 2(p+1)/γ for white noise; by the rotation and sign symmetry of the domain
the full-covariance optimum is this same diagonal matrix (the unit tests check both against
the numerical solvers of :mod:`.solver`).

``noise``: ``"white"`` (paper Thm. 3), ``"diag"`` or ``"full"`` (eq. 11, solved by
:mod:`.solver` to a certified relative duality gap ``tol``).

Calibration and neighbours: ``mode="corrected"`` uses the exact analytic-Gaussian γ (Balle–Wang)
at the add/remove budget (ε/2, δ/(1+e^{ε/2})) and claims (ε, δ) at the paper's one-cell level
by group privacy (§0.1). ``mode="paper"`` uses the paper's (ε, δ)-PDP γ at add/remove level
(so (2ε, (1+e^ε)δ) at cell level, which the ledger records).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans

from dptaucc.privacy import PrivacyLedger, check_epsilon
from dptaucc.validation import (
    CountMatrixTagsMixin,
    check_count_matrix,
    check_fraction,
    check_n_clusters,
    make_generator,
)

from ..dpm.estimator import nearest_centre
from ..dpm.gaussian import gamma as gamma_of
from ..dpm.neighbours import charge_cell_level_conversion, row_level_budget
from ..dpm.rows import make_embedding
from .solver import DenseDeviations, SparseDeviations, min_trace_diag, min_trace_full

__all__ = ["ColoredNoiseKMeans", "NOISES", "VARIANTS", "MODES", "public_domain_variances"]

NOISES = ("white", "diag", "full")
VARIANTS = ("hardened", "local")
MODES = ("corrected", "paper")
MAX_FULL_DIM = 200  # the full-covariance solver is O(p³) per iteration


def public_domain_variances(p: int, gamma: float, noise: str, radius: float = 1.0
                            ) -> np.ndarray:
    """Noise variances of one (sum ∈ ℝ^p, count) block for the domain {(x,1): ‖x‖ ≤ radius}.

    White: (R²+1)/γ everywhere. Diagonal = full optimum: minimise p·a + b s.t. R²/a + 1/b ≤ γ,
    i.e. a = R(R√p+1)/(γ√p), b = (R√p+1)/γ.
    """
    if math.isinf(gamma):
        return np.zeros(p + 1)
    if noise == "white":
        return np.full(p + 1, (radius**2 + 1.0) / gamma)
    rp = radius * math.sqrt(p) + 1.0
    return np.concatenate([np.full(p, radius * rp / (gamma * math.sqrt(p))), [rp / gamma]])


class ColoredNoiseKMeans(CountMatrixTagsMixin, ClusterMixin, BaseEstimator):
    """k-means centroids released with optimised-covariance Gaussian noise (Ravi et al.).

    Parameters
    ----------
    n_clusters : k.
    epsilon, delta : budget at the paper's one-cell level (``mode="corrected"``).
    noise : ``"white"``, ``"diag"`` or ``"full"``.
    variant : ``"hardened"`` (end-to-end DP, default) or ``"local"`` (the paper's, leaky).
    mode : ``"corrected"`` or ``"paper"`` (calibration and neighbouring relation; see module).
    row_transform : per-record row normalisation ``"l2"`` or ``"l1"``.
    n_components : public random-projection dimension; ``"auto"``: 100 for the hardened
        variant when d > 100, 20 for ``variant="local", noise="full"`` when d > 200 (the
        solver is O(p³) per iteration), none otherwise (local white/diag stay sparse in full
        dimension, which is what text needs: random projections lose most of the topic
        structure, see the report).
    n_iter : DP-Lloyd iterations of the hardened variant (the budget is split evenly).
    n_init : k-means restarts of the local variant.
    tol, max_solver_iter : certified relative duality gap (default 1e-4: the released
        noise trace is within 0.01 % of the optimum; the covariance is exactly feasible at any
        gap) and iteration cap of the solver.
    random_state : seed of the one Generator all randomness comes from.

    Fitted: ``cluster_centers_`` (k×p, embedding space), ``row_labels_`` (nearest released
    centre, evaluation only), ``row_labels_private_`` (False), ``n_row_clusters_``,
    ``privacy_ledger_``, ``epsilon_spent_``, ``delta_spent_``, ``gamma_``,
    ``noise_covariances_`` (per cluster: p×p, diagonal (p,), or (p+1,) for the hardened
    (sum, count) block), ``noise_trace_``, ``duality_gap_``, ``partition_private_``,
    ``embedding_``, ``neighbouring_``, ``kmeans_labels_`` (local variant only: the
    non-private k-means partition the noise was calibrated for, kept for audits; None otherwise).
    """

    def __init__(self, n_clusters=8, epsilon=1.0, delta=1e-5, noise="full", variant="hardened",
                 mode="corrected", row_transform="l2", n_components="auto", n_iter=3, n_init=3,
                 tol=1e-4, max_solver_iter=20_000, random_state=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.variant = variant
        self.mode = mode
        self.row_transform = row_transform
        self.n_components = n_components
        self.n_iter = n_iter
        self.n_init = n_init
        self.tol = tol
        self.max_solver_iter = max_solver_iter
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self, n: int, d: int):
        for name, value, allowed in (("noise", self.noise, NOISES),
                                     ("variant", self.variant, VARIANTS),
                                     ("mode", self.mode, MODES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        k = check_n_clusters(self.n_clusters, n, "n_clusters", "rows")
        eps = check_epsilon(self.epsilon)
        delta = check_fraction(self.delta, "delta")
        for name, value in (("n_iter", self.n_iter), ("n_init", self.n_init),
                            ("max_solver_iter", self.max_solver_iter)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not (0 < self.tol < 1):
            raise ValueError(f"tol must lie in (0, 1), got {self.tol}")
        p = self.n_components
        if p == "auto":
            if self.variant == "hardened":
                p = 100 if d > 100 else None
            else:
                p = 20 if (self.noise == "full" and d > MAX_FULL_DIM) else None
        if self.variant == "local" and self.noise == "full" and (p or d) > MAX_FULL_DIM:
            raise ValueError(f"noise='full' solves a {(p or d)}-dimensional covariance; use "
                             f"n_components <= {MAX_FULL_DIM} or noise='diag'")
        return k, eps, delta, p


    # --------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Cluster the rows of a non-negative count matrix and release noisy centroids."""
        X = check_count_matrix(X, integer=False)
        n, d = X.shape
        k, eps, delta, p = self._check_params(n, d)
        self.kmeans_labels_ = None
        corrected = self.mode == "corrected"
        rng = make_generator(self.random_state)
        ledger = PrivacyLedger(budget_epsilon=eps, budget_delta=delta, strict=corrected)
        eps_r, delta_r = row_level_budget(eps, delta) if corrected else (eps, delta)
        calibration = "analytic" if corrected else "pdp"
        emb = make_embedding(d, p, self.row_transform, rng)
        Y = emb.apply(X)
        if self.variant == "local":
            centres, covs, gap, g = self._fit_local(Y, k, eps_r, delta_r, calibration, rng,
                                                    ledger)
        else:
            centres, covs, gap, g = self._fit_hardened(Y, k, eps_r, delta_r, calibration, rng,
                                                       ledger)
        charge_cell_level_conversion(ledger, ledger.epsilon_mechanisms, ledger.delta_spent)

        self.embedding_ = emb
        self.n_features_in_ = d
        self.cluster_centers_ = centres
        self.noise_covariances_ = covs
        self.noise_trace_ = float(sum(np.trace(c) if c.ndim == 2 else c.sum() for c in covs))
        self.duality_gap_ = gap
        self.gamma_ = g
        self.partition_private_ = self.variant == "hardened"
        self.n_row_clusters_ = int(centres.shape[0])
        self.neighbouring_ = ("one cell (group privacy over add/remove one row)" if corrected
                              else "add/remove one row (paper); cell level costs 2x")
        self.privacy_ledger_ = ledger
        self.epsilon_spent_ = ledger.epsilon_spent
        self.delta_spent_ = ledger.delta_spent
        self.row_labels_ = self.evaluation_row_labels(X)
        self.row_labels_private_ = False
        self.labels_ = self.row_labels_
        return self

    def _fit_local(self, Y, k, eps_r, delta_r, calibration, rng, ledger):
        """Paper formulation: non-private k-means + colored noise on local sensitivities."""
        km = KMeans(n_clusters=k, n_init=int(self.n_init),
                    random_state=int(rng.integers(2**31 - 1))).fit(Y)
        labels = km.labels_
        ledger.mark_non_private("kmeans_partition",
                                "paper formulation: the k-means partition is computed on the "
                                "private rows without any mechanism")
        ledger.mark_non_private("local_sensitivity",
                                "paper formulation: the noise covariance is fitted to the actual "
                                "deviations x_i - c_k and sizes n_k (local sensitivity, fixed "
                                "partition); the covariance itself leaks")
        g = gamma_of(eps_r, delta_r, calibration)
        sizes = np.bincount(labels, minlength=k)
        centres = np.zeros((k, Y.shape[1]))
        blocks = []
        for c in range(k):
            rows = Y[labels == c]
            if sizes[c]:
                centres[c] = np.asarray(rows.mean(axis=0)).ravel()
            blocks.append(rows)
        ledger.charge("centroid_release", f"gaussian (colored: {self.noise}, local sensitivity)",
                      eps_r, delta_r, math.nan, "sequential",
                      f"c + N(0, Sigma) with max_i Delta_i' Sigma^-1 Delta_i <= gamma = {g:.6g} "
                      f"({calibration}); Delta_i = (x_i - c_k)/(n_k - 1), partition fixed")
        covs, gap = self._local_covariances(blocks, centres, sizes, g)
        noisy = centres.copy()
        for c in range(k):
            noisy[c] += self._sample(covs[c], rng)
        self.kmeans_labels_ = labels  # NON-PRIVATE partition (paper formulation), for audits
        return noisy, covs, gap, g

    def _local_covariances(self, blocks, centres, sizes, g):
        """Per-cluster Σ_k against the local sensitivity set (spec §2.4)."""
        k, p = centres.shape
        if math.isinf(g):
            return [np.zeros(p) if self.noise != "full" else np.zeros((p, p))] * k, 0.0
        gap = 0.0
        devs = []
        for c in range(k):
            if sizes[c] >= 2:
                scale = 1.0 / (sizes[c] - 1)
                if sp.issparse(blocks[c]) and self.noise != "full":
                    devs.append(SparseDeviations(blocks[c], centres[c], scale))
                else:  # full covariance: p <= MAX_FULL_DIM, dense is small
                    rows = blocks[c].toarray() if sp.issparse(blocks[c]) else blocks[c]
                    devs.append(DenseDeviations((rows - centres[c]) * scale))
            else:
                devs.append(None)  # singleton/empty: removing the row empties the cluster
        singleton_var = 4.0 / g  # ‖x − c‖ ≤ 2 on the unit ball: public fallback
        if self.noise == "white":
            sq = [float(dv.quad(np.ones(p)).max()) for dv in devs if dv is not None]
            var = max(sq) / g if sq else singleton_var
            covs = [np.full(p, var if devs[c] is not None else max(var, singleton_var))
                    for c in range(k)]
            return covs, 0.0
        covs = []
        for c in range(k):
            if devs[c] is None:
                covs.append(np.full(p, singleton_var) if self.noise == "diag"
                            else singleton_var * np.eye(p))
                continue
            if self.noise == "diag":
                res = min_trace_diag(devs[c], g, self.tol, int(self.max_solver_iter))
            else:
                res = min_trace_full(devs[c].V, g, self.tol, int(self.max_solver_iter))
            covs.append(res.covariance)
            gap = max(gap, res.gap)
        return covs, gap

    def _fit_hardened(self, Y, k, eps_r, delta_r, calibration, rng, ledger):
        """DP-Lloyd with (sum, count) releases noised for the public domain (§2.6 b)."""
        n, p = Y.shape
        T = int(self.n_iter)
        eps_t, delta_t = eps_r / T, delta_r / T
        g = gamma_of(eps_t, delta_t, calibration)
        var = public_domain_variances(p, g, self.noise)
        sd = np.sqrt(var)
        labels = rng.integers(0, k, size=n)  # data-independent initial partition
        centres = np.zeros((k, p))
        for it in range(T):
            ind = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
            sums = ind @ Y
            sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            counts = np.bincount(labels, minlength=k).astype(float)
            ledger.charge(
                f"lloyd_iteration_{it}", f"gaussian (colored: {self.noise}, public domain)",
                eps_t, delta_t, math.sqrt(2.0), "sequential",
                f"per-cluster (sum, count) with Sigma optimised for {{(x,1): ||x|| <= 1}}; "
                f"gamma = {g:.6g} ({calibration}); one row changes one block")
            noisy_sums = sums + rng.standard_normal(sums.shape) * sd[:p]
            noisy_counts = counts + rng.standard_normal(k) * sd[p]
            centres = noisy_sums / np.maximum(noisy_counts, 1.0)[:, None]
            if it < T - 1:
                labels = nearest_centre(Y, centres)  # part of the next release's query
        return centres, [var.copy() for _ in range(k)], 0.0, g

    @staticmethod
    def _sample(cov: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if cov.ndim == 1:
            return rng.standard_normal(cov.size) * np.sqrt(np.maximum(cov, 0.0))
        w, U = np.linalg.eigh(cov)
        return U @ (np.sqrt(np.maximum(w, 0.0)) * rng.standard_normal(w.size))

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY (not private): each row of X → its nearest released centroid."""
        if not hasattr(self, "cluster_centers_"):
            raise AttributeError("ColoredNoiseKMeans is not fitted yet; call fit first")
        X = check_count_matrix(X, integer=False)
        return nearest_centre(self.embedding_.apply(X), self.cluster_centers_)

    def evaluation_clustering_loss(self, X) -> dict:
        """EVALUATION ONLY (local variant, training X): Ravi et al.'s Fig. 2 "fractional
        clustering loss" in the two readings of spec §2.7 — ``label_churn``, the fraction of
        rows whose nearest noisy centroid differs from their k-means cluster, and
        ``cost_ratio``, the k-means cost with the noisy centroids (nearest assignment) over the
        cost of the exact partition and centroids."""
        if getattr(self, "kmeans_labels_", None) is None:
            raise ValueError("the clustering loss needs the fitted k-means partition: "
                             "variant='local' only")
        X = check_count_matrix(X, integer=False)
        if X.shape[0] != self.kmeans_labels_.shape[0]:
            raise ValueError("X must be the training matrix (same rows as the fit)")
        Y = self.embedding_.apply(X)
        km = self.kmeans_labels_
        noisy = nearest_centre(Y, self.cluster_centers_)
        k, p = self.cluster_centers_.shape
        ind = sp.csr_matrix((np.ones(len(km)), (km, np.arange(len(km)))), shape=(k, len(km)))
        sizes = np.maximum(np.bincount(km, minlength=k), 1)
        exact = np.asarray((ind @ Y).toarray() if sp.issparse(Y) else ind @ Y) / sizes[:, None]
        sq = np.asarray(Y.multiply(Y).sum(axis=1)).ravel() if sp.issparse(Y) \
            else (Y * Y).sum(axis=1)

        def cost(centres, labels):
            cross = np.asarray(Y @ centres.T)[np.arange(len(labels)), labels]
            return float(np.sum(sq - 2.0 * cross + (centres * centres).sum(axis=1)[labels]))

        base = cost(exact, km)
        return {"label_churn": float(np.mean(noisy != km)),
                "cost_ratio": cost(self.cluster_centers_, noisy) / base if base > 0 else np.inf}
