"""DPM (Liebenow et al., CCS 2024): DP clustering by recursive separation, no k needed.

Reconstruction of spec §1 (``../shared/specs/other-seed-methods.md``), adapted to
document-term counts as §0.1/§1.9 advise:

1. public per-record transform: rows scaled to unit L2 (or L1) norm, then a data-independent
   Gaussian projection to ``n_components`` dimensions (drawn from the fit's Generator) and
   renormalised, so ‖y‖₂ ≤ 1; coordinates clipped per record to the public box
   [−b, b], b = min(1, coord_clip/√p), and mapped affinely to [−100, 100] for the interval
   step's σ grid (§1.9);
2. noisy root count (Laplace), DP interval size (Smith quantile + public simulated table);
3. recursive splits (exponential mechanism on centreness/emptiness scores), noisy child counts;
4. noisy leaf sums (analytic Gaussian, L2 sensitivity 1 = the public row bound) ÷ noisy counts.

Budget fractions (f_int, f_cnt, f_exp, f_avg) = (0.04, 0.18, 0.18, 0.60); per-level ε ∝ √(2^ℓ);
δ_cnt = 0.2·δ'/(L+1) per count level, δ_avg = 0.8·δ' (§1.2, §1.4).

Privacy. The mechanisms are (ε', δ')-DP for **add/remove one row** (rows in the public ball).
``mode="corrected"`` runs them at ε' = ε/2, δ' = δ/(1+e^{ε/2}) and claims (ε, δ) at the paper's
**one-cell** level by group privacy (§0.1; :mod:`dptaucc.baselines.dpm.neighbours`); the interval
step uses pooled per-coordinate gaps with a proven sensitivity. ``mode="paper"`` follows the
reference code: (ε, δ) at add/remove level (hence (2ε, (1+e^ε)δ) at cell level, which the ledger
records), the box-diagonal averaging sensitivity b·√p, and the averaged-gap interval step whose
claimed sensitivity 2 is false for p > 1 (a named non-private step).

δ defaults to 1/(n√n) (the paper's choice). n is treated as public: it is invariant under the
one-cell relation in which the guarantee is stated; internally DPM uses only its noisy count.
Row labels are the nearest released centre, an evaluation-only step (``row_labels_private_``
is False); the released model is the centres, their noisy counts and the split tree.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin

from dptaucc.privacy import PrivacyLedger, check_epsilon
from dptaucc.validation import (
    CountMatrixTagsMixin,
    check_count_matrix,
    check_fraction,
    make_generator,
)

from .core import DEFAULT_FRACTIONS, SCALE, dpm_release
from .neighbours import charge_cell_level_conversion, row_level_budget
from .rows import RowEmbedding, make_embedding

__all__ = ["DPM", "MODES", "nearest_centre"]

MODES = ("corrected", "paper")
MAX_DENSE = 50_000_000


def nearest_centre(Y, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest centre (squared Euclidean) for each row of dense or CSR ``Y``."""
    cross = np.asarray(Y @ centres.T)
    return np.argmin((centres * centres).sum(axis=1)[None, :] - 2.0 * cross, axis=1)


class DPM(CountMatrixTagsMixin, ClusterMixin, BaseEstimator):
    """Differentially private clustering by recursive separation (Liebenow et al., CCS'24).

    Parameters
    ----------
    epsilon, delta : privacy budget at the paper's one-cell level (``mode="corrected"``);
        ``delta=None`` means 1/(n√n).
    mode : ``"corrected"`` (default) or ``"paper"`` (reference-code behaviour, see module doc).
    row_transform : per-record row normalisation, ``"l2"`` or ``"l1"``.
    n_components : dimension of the public random projection (None: none, for small d only).
    coord_clip : public per-coordinate clip b = coord_clip/√p of the projected rows.
    max_depth : L, at most 2^L clusters.
    budget_fractions : (f_int, f_cnt, f_exp, f_avg), positive, summing to 1.
    t, q, w_c, w_e : centreness shape and score weights (paper Defs. 6–7).
    random_state : seed of the one Generator all randomness comes from.

    Fitted attributes: ``cluster_centers_`` (k×p, in the embedding space), ``leaf_counts_``,
    ``split_tree_``, ``embedding_``, ``n_row_clusters_``, ``row_labels_``,
    ``row_labels_private_`` (False), ``privacy_ledger_``, ``epsilon_spent_``, ``delta_spent_``,
    ``interval_sigma_``, ``n_bins_``, ``tree_depth_``, ``neighbouring_``.
    """

    def __init__(self, epsilon=1.0, delta=None, mode="corrected", row_transform="l2",
                 n_components=20, coord_clip=3.0, max_depth=7,
                 budget_fractions=DEFAULT_FRACTIONS, t=0.3, q=1.0 / 12.0, w_c=1.0,
                 w_e=5.0, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.mode = mode
        self.row_transform = row_transform
        self.n_components = n_components
        self.coord_clip = coord_clip
        self.max_depth = max_depth
        self.budget_fractions = budget_fractions
        self.t = t
        self.q = q
        self.w_c = w_c
        self.w_e = w_e
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self, n: int) -> tuple[float, float, np.ndarray]:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        eps = check_epsilon(self.epsilon)
        if n < 2:
            raise ValueError(f"DPM needs at least 2 rows, got n_samples = {n}")
        delta = 1.0 / (n * math.sqrt(n)) if self.delta is None else check_fraction(
            self.delta, "delta")
        L = self.max_depth
        if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or not 1 <= L <= 16:
            raise ValueError(f"max_depth must be an int in [1, 16], got {L!r}")
        fr = np.asarray(self.budget_fractions, dtype=float)
        if fr.shape != (4,) or np.any(~np.isfinite(fr)) or np.any(fr <= 0) \
                or abs(fr.sum() - 1.0) > 1e-9:
            raise ValueError("budget_fractions must be 4 positive numbers summing to 1, got "
                             f"{self.budget_fractions!r}")
        if not (0 < self.q < 0.5 and 0 < self.t < 1):
            raise ValueError(f"need 0 < q < 1/2 and 0 < t < 1, got q={self.q}, t={self.t}")
        if not (self.w_c >= 0 and self.w_e >= 0 and self.w_c + self.w_e > 0):
            raise ValueError("score weights w_c, w_e must be >= 0 and not both 0")
        if not (self.coord_clip > 0):
            raise ValueError(f"coord_clip must be > 0, got {self.coord_clip}")
        return eps, delta, fr

    def _box(self, p: int) -> tuple[float, float]:
        """Public per-coordinate box of the embedded rows."""
        if self.n_components is None:
            return 0.0, 1.0  # non-negative rows of unit norm
        return -min(1.0, self.coord_clip / math.sqrt(p)), min(1.0, self.coord_clip / math.sqrt(p))

    def _embed(self, X: sp.csr_matrix, emb: RowEmbedding) -> np.ndarray:
        Y = emb.apply(X)
        if sp.issparse(Y):
            if Y.shape[0] * Y.shape[1] > MAX_DENSE:
                raise ValueError(f"n_components=None needs a dense {Y.shape} array; use a "
                                 "projection (n_components=20) for high-dimensional rows")
            Y = Y.toarray()
        lo, hi = self._box(Y.shape[1])
        return np.clip(Y, lo, hi)


    # --------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Run DPM on the rows of a non-negative count matrix ``X`` (dense or sparse)."""
        X = check_count_matrix(X, integer=False)
        n, d = X.shape
        eps, delta, (f_int, f_cnt, f_exp, f_avg) = self._check_params(n)
        corrected = self.mode == "corrected"
        rng = make_generator(self.random_state)
        ledger = PrivacyLedger(budget_epsilon=eps, budget_delta=delta, strict=corrected)
        eps_r, delta_r = row_level_budget(eps, delta) if corrected else (eps, delta)

        emb = make_embedding(d, self.n_components, self.row_transform, rng)
        Y = self._embed(X, emb)
        p = Y.shape[1]
        lo, hi = self._box(p)
        # public L2 bound of a row: 1 after the transform (corrected); the reference code's
        # box diagonal max(|lo|, |hi|)·√p in paper mode
        bound = 1.0 if corrected else max(abs(lo), abs(hi)) * math.sqrt(p)
        rel = dpm_release(Y, lo, hi, bound, eps_r, delta_r, rng, ledger, corrected=corrected,
                          max_depth=int(self.max_depth), fractions=(f_int, f_cnt, f_exp, f_avg),
                          t=self.t, q=self.q, w_c=self.w_c, w_e=self.w_e)
        centres, counts, tree, sigma, n_bins = (rel.centres, rel.counts, rel.tree, rel.sigma,
                                                rel.n_bins)

        eps_row_spent, delta_row_spent = ledger.epsilon_mechanisms, ledger.delta_spent
        charge_cell_level_conversion(ledger, eps_row_spent, delta_row_spent)

        self.embedding_ = emb
        self.n_features_in_ = d
        self.cluster_centers_ = centres
        self.leaf_counts_ = counts
        scale = (hi - lo) / (2.0 * SCALE)
        self.split_tree_ = [(s.level, s.dim, lo + (s.threshold + SCALE) * scale, s.used)
                            for s in tree.splits]
        self.interval_sigma_ = sigma
        self.n_bins_ = n_bins
        self.tree_depth_ = tree.depth
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

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY (not private): each row of X → its nearest released centre."""
        if not hasattr(self, "cluster_centers_"):
            raise AttributeError("DPM is not fitted yet; call fit first")
        X = check_count_matrix(X, integer=False)
        return nearest_centre(self._embed(X, self.embedding_), self.cluster_centers_)
