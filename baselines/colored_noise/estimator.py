"""Colored-noise mechanism for DP k-means (Ravi, Scaglione & Peisert 2021).

Rows are first mapped to the unit L2 ball by a public per-record transform (and, where useful,
a data-independent random projection): :mod:`dptaucc.baselines.dpm.rows`.

Two variants:

``variant="hardened"`` (default) — end-to-end DP: DP-Lloyd from a random (data-independent)
partition; each of ``n_iter`` iterations releases the per-cluster (sum, count) vectors with
Gaussian noise whose covariance is optimised against the **public domain** {(x, 1) : ‖x‖₂ ≤ 1}
(one added row changes one block by such a vector). For that domain the optimum is available in
closed form: minimising p·a + b subject to 1/a + 1/b ≤ γ gives a = (√p + 1)/(γ√p) on the sum
coordinates and b = (√p + 1)/γ on the count, trace (√p + 1)²/γ, against 2(p+1)/γ for white
noise; by the rotation and sign symmetry of the domain the full-covariance optimum is this same
diagonal matrix (the unit tests check both against the numerical solvers of :mod:`.solver`).

``variant="local"`` — the paper's formulation, a **leaky reference** that is not DP: non-private
k-means, then one release c̃ = c + N(0, Σ) with Σ optimised against the *local* sensitivity set
Δ_i = (x_i − c_k(i))/(n_k(i) − 1) of "remove row i, keep the partition". The partition and the
data-dependent Σ read the rows outside any mechanism: the ledger names both steps and reports
``epsilon_spent_`` = inf; the (ε, δ) entry records what the paper claims for the centroid
release alone. It runs only with ``mode="paper"``.

``noise``: ``"white"`` (paper Thm. 3), ``"diag"`` or ``"full"`` (eq. 11, solved by
:mod:`.solver` to a certified relative duality gap ``tol``).

Threat model and guarantees
---------------------------
``mode`` states the claim, ``variant`` the algorithm:

* ``mode="corrected"`` (default) is (ε, δ)-DP end to end for the paper's **one-cell**
  neighbours, and accepts only the hardened variant (``variant="local"`` raises: it cannot be
  DP). The Gaussian releases are calibrated with the exact analytic-Gaussian γ (Balle–Wang) at
  the add/remove budget (ε/2, δ/(1+e^{ε/2})), split evenly over the iterations, and group
  privacy over "remove the row, add the modified row" gives (ε, δ) at cell level.
* ``mode="paper"`` uses the paper's (ε, δ)-probabilistic-DP γ at add/remove level (so (2ε,
  (1+e^ε)δ) at cell level, which the ledger records). With the hardened variant that is still
  DP end to end; with the local variant it is the paper's leaky formulation (ε = inf).

What is released: the centres, the last iteration's noisy (sum, count) blocks, the noise
covariances (public for the hardened variant: they depend on p and γ only) and the ledger.
Released values have data-independent possible values: each coordinate of a Gaussian release is
rounded to a grid fixed by its own (public) noise scale, and the centres are those sums divided
by max(count, 1). Labels of rows (:meth:`ColoredNoiseKMeans.predict`), the label churn and cost
ratio (:meth:`ColoredNoiseKMeans.evaluation_clustering_loss`) read the data and are **not
private**; they are methods, never fitted attributes.

Randomness: one seeded sampler built from ``random_state`` (reproducible research runs, not for
a release you publish: the seed replays the noise). For a real release pass ``secure=True``
(``random_state`` None): the Gaussian noise then comes from OpenDP's exact Gaussian with the
operating system's randomness, the initial partition and the projection from a Generator seeded
by the operating system (same ledger).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import Interval, StrOptions

from dptaucc.base import EPSILON, MODE, RANDOM_STATE, SECURE, PrivateEstimator
from dptaucc.methods import NON_NEGATIVE_REALS, MethodInfo
from dptaucc.privacy import (
    DP,
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    POST_PROCESSING,
    PUBLIC,
    PrivacyLedger,
)
from dptaucc.validation import check_count_matrix, check_n_clusters

from ..dpm.estimator import nearest_centre
from ..dpm.gaussian import colored_gaussian_mechanism, colored_gaussian_noise
from ..dpm.gaussian import gamma as gamma_of
from ..dpm.neighbours import (
    charge_capped_rest,
    charge_cell_level_conversion,
    row_level_budget,
)
from ..dpm.rows import TRANSFORMS, make_embedding
from .solver import DenseDeviations, SparseDeviations, min_trace_diag, min_trace_full

__all__ = ["ColoredNoiseKMeans", "NOISES", "VARIANTS", "public_domain_variances",
           "release_cluster_blocks", "DOMAIN_RADIUS"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="colored_noise", estimator="dptaucc.baselines.colored_noise.ColoredNoiseKMeans",
    label="Colored noise", color="tab:brown", linestyle="-", marker="P", family="k-means",
    neighbours="one cell (one row added/removed, group privacy)",
    domain=NON_NEGATIVE_REALS,  # rows are mapped to the unit ball, whatever their values
    uses_delta=True,
    audit="dptaucc.baselines.colored_noise.audit",
    row_level=True,
)

NOISES = ("white", "diag", "full")
VARIANTS = ("hardened", "local")
MAX_FULL_DIM = 200  # the full-covariance solver is O(p³) per iteration
#: public L2 bound of an embedded row (unit ball after the per-record transform)
DOMAIN_RADIUS = 1.0


def public_domain_variances(p: int, gamma: float, noise: str, radius: float = DOMAIN_RADIUS
                            ) -> np.ndarray:
    """Noise variances of one (sum ∈ ℝ^p, count) block for the domain {(x,1): ‖x‖ ≤ radius}.

    White: (R²+1)/γ everywhere. Diagonal = full optimum: minimise p·a + b s.t. R²/a + 1/b ≤ γ,
    i.e. a = R(R√p+1)/(γ√p), b = (R√p+1)/γ.

    >>> import numpy as np
    >>> public_domain_variances(4, 2.0, "white", radius=1.0).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    >>> var = public_domain_variances(4, 2.0, "diagonal", radius=1.0)
    >>> var.tolist()  # a = 1·3/(2·2), b = 3/2: a smaller trace than white noise
    [0.75, 0.75, 0.75, 0.75, 1.5]
    >>> float(1.0 / var[0] + 1.0 / var[-1])  # the worst change (x, 1), ‖x‖ = 1 on one axis: γ
    2.0
    """
    if math.isinf(gamma):
        return np.zeros(p + 1)
    if noise == "white":
        return np.full(p + 1, (radius**2 + 1.0) / gamma)
    rp = radius * math.sqrt(p) + 1.0
    return np.concatenate([np.full(p, radius * rp / (gamma * math.sqrt(p))), [rp / gamma]])


def release_cluster_blocks(sums: np.ndarray, counts: np.ndarray, epsilon: float, delta: float,
                           calibration: str, noise: str, sampler, ledger: PrivacyLedger,
                           step: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One DP-Lloyd release: per-cluster (sum, count) + N(0, Σ), Σ built for the public domain.

    Add/remove one row (‖y‖₂ ≤ 1) changes one cluster's block by (y, 1): with Σ from
    :func:`public_domain_variances` every such change has ΔᵀΣ⁻¹Δ ≤ γ(ε, δ), so the release is
    (ε, δ)-DP (:func:`~dptaucc.baselines.dpm.gaussian.colored_gaussian_mechanism`; L2
    sensitivity √(R² + 1) recorded). Returns (noisy sums, noisy counts, variances, γ).

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> ledger = PrivacyLedger()
    >>> sums, counts, var, gamma = release_cluster_blocks(
    ...     np.array([[1.0, 0.5], [0.0, 2.0]]), np.array([3, 4]), 1.0, 1e-5, "analytic",
    ...     "diagonal", make_sampler(0), ledger, "iteration 0")
    >>> sums.shape, counts.shape
    ((2, 2), (2,))
    >>> bool(np.allclose(var, public_domain_variances(2, gamma, "diagonal")))
    True
    >>> len(ledger.entries), ledger.epsilon_spent, ledger.delta_spent
    (1, 1.0, 1e-05)
    """
    g = gamma_of(epsilon, delta, calibration)
    p = sums.shape[1]
    var = public_domain_variances(p, g, noise)
    noisy = colored_gaussian_mechanism(
        np.hstack([sums, np.asarray(counts, dtype=float)[:, None]]), var, epsilon, delta,
        math.hypot(DOMAIN_RADIUS, 1.0), sampler, ledger, step,
        f"per-cluster (sum, count) with Sigma optimised for {{(x,1): ||x|| <= 1}}; "
        f"gamma = {g:.6g} ({calibration}); one row changes one block",
        mechanism=f"gaussian (colored: {noise}, public domain)",
        blocks=((p, DOMAIN_RADIUS), (1, 1.0)))
    return noisy[:, :p], noisy[:, p], var, g


class ColoredNoiseKMeans(ClusterMixin, PrivateEstimator):
    """k-means centroids released with optimised-covariance Gaussian noise (Ravi et al.).

    Parameters
    ----------
    n_clusters : k.
    epsilon, delta : budget at the paper's one-cell level (``mode="corrected"``).
    noise : ``"white"``, ``"diag"`` or ``"full"``.
    variant : ``"hardened"`` (end-to-end DP, default) or ``"local"`` (the paper's, not DP;
        ``mode="paper"`` only).
    mode : ``"corrected"`` or ``"paper"`` (calibration and neighbouring relation; see module).
    row_transform : per-record row normalisation ``"l2"`` or ``"l1"``.
    n_components : public random-projection dimension; ``"auto"``: 100 for the hardened
        variant when d > 100, 20 for ``variant="local", noise="full"`` when d > 200 (the
        solver is O(p³) per iteration), none otherwise (local white/diag stay sparse in full
        dimension, which is what text needs: random projections lose most of the topic
        structure).
    n_iter : DP-Lloyd iterations of the hardened variant (the budget is split evenly).
    n_init : k-means restarts of the local variant.
    tol, max_solver_iter : certified relative duality gap (default 1e-4: the released
        noise trace is within 0.01 % of the optimum; the covariance is exactly feasible at any
        gap) and iteration cap of the solver.
    random_state : seed of the one Generator all randomness comes from (or a Sampler).
    secure : draw the noise from OpenDP's exact samplers with OS randomness (no seed).

    Attributes
    ----------
    cluster_centers_ : k×p released centres (embedding space).
    cluster_sums_, cluster_counts_ : hardened variant: the last iteration's noisy (sum, count)
        blocks, each coordinate on its noise grid; ``cluster_centers_ = cluster_sums_ /
        max(cluster_counts_, 1)``.
    noise_covariances_ : per cluster: p×p, diagonal (p,), or (p+1,) for the hardened
        (sum, count) block; ``noise_trace_``, ``duality_gap_``, ``gamma_``.
    kmeans_labels_ : local variant only: the non-private k-means partition the noise was
        calibrated for (NON-PRIVATE, kept for audits and the clustering loss).
    row_labels_private_ : False — no labels of the training rows are released; use
        :meth:`predict` (not private) for the paper's nearest-centre protocol.
    partition_private_, n_row_clusters_, embedding_, neighbouring_, n_features_in_,
    privacy_ledger_, epsilon_spent_, delta_spent_.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
    >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
    >>> model = ColoredNoiseKMeans(2, epsilon=1.0, random_state=0).fit(X)
    >>> model.cluster_centers_.shape[0], model.epsilon_spent_
    (2, 1.0)
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "noise": [StrOptions(set(NOISES))],
        "variant": [StrOptions(set(VARIANTS))],
        "mode": MODE,
        "row_transform": [StrOptions(set(TRANSFORMS))],
        "n_components": [None, StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, 1, closed="neither")],
        "max_solver_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _domain = METHOD.domain
    _all_zero_outcome = "centres from noise alone (every release is still charged)"

    _release_kinds = {
        "cluster_centers_": POST_PROCESSING, "cluster_sums_": DP, "cluster_counts_": DP,
        "noise_covariances_": PUBLIC, "noise_trace_": PUBLIC, "duality_gap_": PUBLIC,
        "gamma_": PUBLIC, "partition_private_": PUBLIC, "n_row_clusters_": PUBLIC,
        "embedding_": PUBLIC, "neighbouring_": PUBLIC, "n_features_in_": PUBLIC,
        "row_labels_private_": PUBLIC,
        **LEDGER_ATTRIBUTES,
    }
    # the local variant (paper mode only): partition and covariances read the raw rows
    _local_release_kinds = {
        "cluster_centers_": NON_PRIVATE, "kmeans_labels_": NON_PRIVATE,
        "noise_covariances_": NON_PRIVATE, "noise_trace_": NON_PRIVATE,
        "duality_gap_": NON_PRIVATE,
    }

    def __init__(self, n_clusters=8, epsilon=1.0, delta=1e-5, noise="full", variant="hardened",
                 mode="corrected", row_transform="l2", n_components="auto", n_iter=3, n_init=3,
                 tol=1e-4, max_solver_iter=20_000, random_state=None, secure=False):
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
        self.secure = secure

    def release_kinds(self) -> dict[str, str]:
        kinds = super().release_kinds()
        if self.variant == "local":
            kinds.update(self._local_release_kinds)
        return kinds

    # ------------------------------------------------------------------ checks
    def _check_parameters(self) -> None:
        super()._check_parameters()
        if self.variant == "local" and self.mode == "corrected":
            raise ValueError("variant='local' is the paper's formulation and is not DP (its "
                             "partition and noise covariance read the raw rows); "
                             "mode='corrected' promises end-to-end DP: use variant='hardened', "
                             "or mode='paper' to run the paper's variant")

    def _check_params(self, n: int, d: int):
        """Checks that need the data shape."""
        k = check_n_clusters(self.n_clusters, n, "n_clusters", "rows")
        eps = float(self.epsilon)
        p = self.n_components
        if p == "auto":
            if self.variant == "hardened":
                p = 100 if d > 100 else None
            else:
                p = 20 if (self.noise == "full" and d > MAX_FULL_DIM) else None
        if self.variant == "local" and self.noise == "full" and (p or d) > MAX_FULL_DIM:
            raise ValueError(f"noise='full' solves a {(p or d)}-dimensional covariance; use "
                             f"n_components <= {MAX_FULL_DIM} or noise='diag'")
        return k, eps, float(self.delta), p

    # --------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Cluster the rows of a non-negative count matrix and release noisy centroids."""
        X = self._check_fit(X)
        n, d = X.shape
        k, eps, delta, p = self._check_params(n, d)
        corrected = self.mode == "corrected"
        sampler = self._sampler()
        ledger = PrivacyLedger(budget_epsilon=eps, budget_delta=delta, strict=corrected)
        eps_r, delta_r = row_level_budget(eps, delta) if corrected else (eps, delta)
        calibration = "analytic" if corrected else "pdp"
        emb = make_embedding(d, p, self.row_transform, sampler.rng)
        Y = emb.apply(X)  # the one pass over X of this fit
        if self.variant == "local":
            centres, covs, gap, g = self._fit_local(Y, k, eps_r, delta_r, calibration, sampler,
                                                    ledger)
        else:
            centres, covs, gap, g = self._fit_hardened(Y, k, eps_r, delta_r, calibration,
                                                       sampler, ledger)
        charge_cell_level_conversion(ledger, ledger.epsilon_mechanisms, ledger.delta_spent)
        if corrected:
            charge_capped_rest(ledger, eps)

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
        self._set_ledger(ledger)
        self.row_labels_private_ = False
        return self

    def _fit_local(self, Y, k, eps_r, delta_r, calibration, sampler, ledger):
        """Paper formulation: non-private k-means + colored noise on local sensitivities."""
        km = KMeans(n_clusters=k, n_init=int(self.n_init),
                    random_state=int(sampler.rng.integers(2**31 - 1))).fit(Y)
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
        noisy = np.vstack([colored_gaussian_noise(centres[c], covs[c], sampler)
                           for c in range(k)])
        self.kmeans_labels_ = labels  # NON-PRIVATE partition (paper formulation), for audits
        return noisy, covs, gap, g

    def _local_covariances(self, blocks, centres, sizes, g):
        """Per-cluster Σ_k against the local sensitivity set (the paper's eq. 11 per block)."""
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

    def _fit_hardened(self, Y, k, eps_r, delta_r, calibration, sampler, ledger):
        """DP-Lloyd with (sum, count) releases noised for the public domain."""
        n, p = Y.shape
        T = int(self.n_iter)
        labels = sampler.rng.integers(0, k, size=n)  # data-independent initial partition
        for it in range(T):
            ind = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
            sums = ind @ Y
            sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            counts = np.bincount(labels, minlength=k)
            sums_t, counts_t, var, g = release_cluster_blocks(
                sums, counts, eps_r / T, delta_r / T, calibration, self.noise, sampler, ledger,
                f"lloyd_iteration_{it}")
            centres = sums_t / np.maximum(counts_t, 1.0)[:, None]
            if it < T - 1:
                labels = nearest_centre(Y, centres)  # part of the next release's query
        self.cluster_sums_, self.cluster_counts_ = sums_t, counts_t
        return centres, [var.copy() for _ in range(k)], 0.0, g

    # ------------------------------------------------------- reads the data
    def predict(self, X) -> np.ndarray:
        """NOT PRIVATE: each row of X → its nearest released centroid (reads the rows of X).

        >>> import numpy as np
        >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = ColoredNoiseKMeans(2, epsilon=1.0, random_state=0).fit(X)
        >>> labels = model.predict(X)
        >>> labels.shape, set(labels.tolist()) <= {0, 1}
        ((40,), True)
        """
        X = self._check_fitted_input(X, "cluster_centers_")
        return nearest_centre(self.embedding_.apply(X), self.cluster_centers_)

    def fit_predict(self, X, y=None) -> np.ndarray:
        """``fit(X)`` then :meth:`predict` on the same rows — the labels are NOT PRIVATE.

        >>> import numpy as np
        >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = ColoredNoiseKMeans(2, epsilon=1.0, random_state=0).fit(X)
        >>> labels = ColoredNoiseKMeans(2, epsilon=1.0, random_state=0).fit_predict(X)
        >>> bool(np.array_equal(labels, model.predict(X)))
        True
        """
        return self.fit(X).predict(X)

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY (not private): the paper's protocol, :meth:`predict`.

        >>> import numpy as np
        >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = ColoredNoiseKMeans(2, epsilon=1.0, random_state=0).fit(X)
        >>> bool(np.array_equal(model.evaluation_row_labels(X), model.predict(X)))
        True
        """
        return self.predict(X)

    def evaluation_clustering_loss(self, X) -> dict:
        """EVALUATION ONLY, NOT PRIVATE (local variant, training X): Ravi et al.'s Fig. 2
        "fractional clustering loss" in its two readings — ``label_churn``, the fraction of
        rows whose nearest noisy centroid differs from their k-means cluster, and
        ``cost_ratio``, the k-means cost with the noisy centroids (nearest assignment) over the
        cost of the exact partition and centroids.

        >>> import numpy as np
        >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4)) + np.arange(40)[:, None] % 3
        >>> exact = ColoredNoiseKMeans(2, epsilon=float("inf"), variant="local", mode="paper",
        ...                            random_state=0).fit(X)  # no noise: no loss
        >>> loss = exact.evaluation_clustering_loss(X)
        >>> loss["label_churn"], round(loss["cost_ratio"], 9)
        (0.0, 1.0)
        >>> noisy = ColoredNoiseKMeans(2, epsilon=0.05, variant="local", noise="white",
        ...                            mode="paper", random_state=0).fit(X)
        >>> noisy.evaluation_clustering_loss(X)["cost_ratio"] > 1.0
        True
        """
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
