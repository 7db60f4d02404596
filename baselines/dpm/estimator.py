"""DPM (Liebenow et al., CCS 2024): DP clustering by recursive separation, no k needed.

Our reconstruction of the authors' method, adapted to document-term counts:

1. public per-record transform: rows scaled to unit L2 (or L1) norm, then a data-independent
   Gaussian projection to ``n_components`` dimensions (drawn from the fit's sampler) and
   renormalised, so ‖y‖₂ ≤ 1; coordinates clipped per record to the public box [−b, b],
   b = min(1, coord_clip/√p), and mapped affinely to [−100, 100] for the interval step's σ grid;
2. noisy root count, DP interval size (Smith quantile + public simulated table);
3. recursive splits (exponential mechanism on centreness/emptiness scores), noisy child counts;
4. noisy leaf sums (analytic Gaussian, L2 sensitivity 1 = the public row bound) ÷ noisy counts.

Budget fractions (f_int, f_cnt, f_exp, f_avg) = (0.04, 0.18, 0.18, 0.60); per-level ε ∝ √(2^ℓ);
δ_cnt = 0.2·δ'/(L+1) per count level, δ_avg = 0.8·δ'.

Threat model and guarantees
---------------------------
What is released: the fitted attributes (centres, leaf sums and counts, the split tree, the
interval σ and the bin count, the public projection) and the privacy ledger. Nothing in a
fitted model is read from the data outside a mechanism: labels of rows come from
:meth:`DPM.predict` / :meth:`DPM.evaluation_row_labels` on data the caller holds, and are
**not private** (they read the rows).

``mode="corrected"`` (default): (ε, δ)-DP end to end for the paper's **one-cell** neighbours
(one count changed by one). The mechanisms are (ε', δ')-DP for **add/remove one row** (rows in
the public ball) at ε' = ε/2, δ' = δ/(1+e^{ε/2}); a one-cell change is "remove the row, add the
modified row", so group privacy gives (ε, δ) (:mod:`.neighbours`). Every release has a
data-independent set of possible values: counts are integers from the exact discrete Laplace;
the split choices and the interval σ are indices into public candidate sets (the exponential
mechanism, sampled from 106-bit uniforms, i.e. exact up to a tail below 2⁻¹⁰⁰); the
interval quantile is drawn on a public grid and only its nearest σ of a public table is kept;
the leaf sums are Gaussian draws rounded to a grid fixed by σ
(:func:`dptaucc.privacy.snap_to_grid`); the centres are those sums divided by max(count, 1), a
fixed function of outputs whose possible values are data-independent. The interval step uses
pooled per-coordinate gaps whose utility sensitivity is proven (:mod:`.interval`); the split
scores are normalised by the released count itself. n is treated as public: the one-cell relation
never changes it (δ defaults to 1/(n√n), the paper's choice).

``mode="paper"`` follows the reference code: (ε, δ) at add/remove level (hence (2ε,
(1+e^ε)δ) at cell level, which the ledger records), the box-diagonal averaging sensitivity
b·√p, float Laplace counts, and the averaged-gap interval step whose claimed sensitivity 2 is
false for p > 1: a named non-private step (``epsilon_spent_`` = inf), and every attribute that
depends on it is declared non-private.

Randomness: every draw comes from one seeded sampler built from ``random_state`` (reproducible
research runs, not for a release you publish: the seed replays the noise). For a real release
pass ``secure=True`` (``random_state`` None): counts, choices and the Gaussian noise then come
from OpenDP's exact samplers with the operating system's randomness, the public projection from
a Generator seeded by the operating system (same ledger).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClusterMixin
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

from .core import DEFAULT_FRACTIONS, SCALE, dpm_release
from .neighbours import (
    charge_capped_rest,
    charge_cell_level_conversion,
    row_level_budget,
)
from .rows import TRANSFORMS, RowEmbedding, make_embedding

__all__ = ["DPM", "nearest_centre"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dpm", estimator="dptaucc.baselines.dpm.DPM",
    label="DPM", color="tab:purple", linestyle="-", marker="D", family="recursive separation",
    neighbours="one cell (one row added/removed, group privacy)",
    domain=NON_NEGATIVE_REALS,  # rows are mapped to the unit ball, whatever their values
    uses_delta=True,
    audit="dptaucc.baselines.dpm.audit",
    row_level=True,
)

MAX_DENSE = 50_000_000


def nearest_centre(Y, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest centre (squared Euclidean) for each row of dense or CSR ``Y``.

    >>> import numpy as np, scipy.sparse as sp
    >>> Y = np.array([[0.0, 1.0], [1.0, 0.0], [0.9, 0.8]])
    >>> centres = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> nearest_centre(Y, centres).tolist(), nearest_centre(sp.csr_matrix(Y), centres).tolist()
    ([1, 0, 0], [1, 0, 0])
    """
    cross = np.asarray(Y @ centres.T)
    return np.argmin((centres * centres).sum(axis=1)[None, :] - 2.0 * cross, axis=1)


class DPM(ClusterMixin, PrivateEstimator):
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
    random_state : seed of the one Generator all randomness comes from (or a Sampler).
    secure : draw the noise from OpenDP's exact samplers with OS randomness (no seed).

    Attributes
    ----------
    cluster_centers_ : k×p centres in the embedding space (post-processing of the releases).
    leaf_sums_, leaf_counts_ : the leaves' noisy sums (on the Gaussian's grid) and noisy counts
        (int64 in corrected mode); ``cluster_centers_ = leaf_sums_ / max(leaf_counts_, 1)``.
    split_tree_ : (level, dimension, threshold in embedding units, used) per split.
    interval_sigma_, n_bins_, tree_depth_, n_row_clusters_ : post-processing of the releases.
    embedding_ : the public row map (per-record normalisation + data-independent projection).
    row_labels_private_ : False — DPM releases no labels of the training rows; use
        :meth:`predict` (not private) for the paper's nearest-centre protocol.
    privacy_ledger_, epsilon_spent_, delta_spent_, neighbouring_, n_features_in_.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.dpm import DPM
    >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
    >>> model = DPM(epsilon=1.0, max_depth=2, n_components=None, random_state=0).fit(X)
    >>> model.predict(X).shape, model.epsilon_spent_ <= 1.0
    ((40,), True)
    """

    _parameter_constraints = {
        "epsilon": EPSILON,
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "mode": MODE,
        "row_transform": [StrOptions(set(TRANSFORMS))],
        "n_components": [None, Interval(Integral, 1, None, closed="left")],
        "coord_clip": [Interval(Real, 0, None, closed="neither")],
        "max_depth": [Interval(Integral, 1, 16, closed="both")],
        "budget_fractions": ["array-like"],
        "t": [Interval(Real, 0, 1, closed="neither")],
        "q": [Interval(Real, 0, 0.5, closed="neither")],
        "w_c": [Interval(Real, 0, None, closed="left")],
        "w_e": [Interval(Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _domain = METHOD.domain
    _all_zero_outcome = "a tree and centres from noise alone (every release is still charged)"

    _release_kinds = {
        "leaf_sums_": DP, "leaf_counts_": DP, "split_tree_": DP,
        "cluster_centers_": POST_PROCESSING, "interval_sigma_": POST_PROCESSING,
        "n_bins_": POST_PROCESSING, "tree_depth_": POST_PROCESSING,
        "n_row_clusters_": POST_PROCESSING,
        "embedding_": PUBLIC, "n_features_in_": PUBLIC, "neighbouring_": PUBLIC,
        "row_labels_private_": PUBLIC,
        **LEDGER_ATTRIBUTES,
    }

    def __init__(self, epsilon=1.0, delta=None, mode="corrected", row_transform="l2",
                 n_components=20, coord_clip=3.0, max_depth=7,
                 budget_fractions=DEFAULT_FRACTIONS, t=0.3, q=1.0 / 12.0, w_c=1.0,
                 w_e=5.0, random_state=None, secure=False):
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
        self.secure = secure

    def release_kinds(self) -> dict[str, str]:
        """As declared; in a paper-mode fit whose interval step was not DP (p > 1), every
        release that depends on it (all of them) is non-private."""
        kinds = super().release_kinds()
        ledger = getattr(self, "privacy_ledger_", None)
        if self.mode == "paper" and ledger is not None and not ledger.end_to_end_dp:
            kinds.update({a: NON_PRIVATE for a, k in kinds.items()
                          if k in (DP, POST_PROCESSING) and a not in LEDGER_ATTRIBUTES})
        return kinds

    # ------------------------------------------------------------------ checks
    def _check_params(self, n: int) -> tuple[float, float, np.ndarray]:
        """Checks that need the data shape or more than one parameter."""
        eps = float(self.epsilon)
        if n < 2:
            raise ValueError(f"DPM needs at least 2 rows, got n_samples = {n}")
        delta = 1.0 / (n * math.sqrt(n)) if self.delta is None else float(self.delta)
        fr = np.asarray(self.budget_fractions, dtype=float)
        if fr.shape != (4,) or np.any(~np.isfinite(fr)) or np.any(fr <= 0) \
                or abs(fr.sum() - 1.0) > 1e-9:
            raise ValueError("budget_fractions must be 4 positive numbers summing to 1, got "
                             f"{self.budget_fractions!r}")
        if self.w_c + self.w_e <= 0:
            raise ValueError("score weights w_c, w_e must not both be 0")
        return eps, delta, fr

    def _box(self, p: int) -> tuple[float, float]:
        """Public per-coordinate box of the embedded rows."""
        if self.n_components is None:
            return 0.0, 1.0  # non-negative rows of unit norm
        b = min(1.0, self.coord_clip / math.sqrt(p))
        return -b, b

    def _embed(self, X: sp.csr_matrix, emb: RowEmbedding) -> np.ndarray:
        """The rows of X in the public box: one projection pass, dense n×p."""
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
        X = self._check_fit(X)
        n, d = X.shape
        eps, delta, (f_int, f_cnt, f_exp, f_avg) = self._check_params(n)
        corrected = self.mode == "corrected"
        sampler = self._sampler()
        ledger = PrivacyLedger(budget_epsilon=eps, budget_delta=delta, strict=corrected)
        eps_r, delta_r = row_level_budget(eps, delta) if corrected else (eps, delta)

        emb = make_embedding(d, self.n_components, self.row_transform, sampler.rng)
        Y = self._embed(X, emb)
        p = Y.shape[1]
        lo, hi = self._box(p)
        # public L2 bound of a row: 1 after the transform (corrected); the reference code's
        # box diagonal max(|lo|, |hi|)·√p in paper mode
        bound = 1.0 if corrected else max(abs(lo), abs(hi)) * math.sqrt(p)
        rel = dpm_release(Y, lo, hi, bound, eps_r, delta_r, sampler, ledger,
                          corrected=corrected, max_depth=int(self.max_depth),
                          fractions=(f_int, f_cnt, f_exp, f_avg), t=self.t, q=self.q,
                          w_c=self.w_c, w_e=self.w_e)
        charge_cell_level_conversion(ledger, ledger.epsilon_mechanisms, ledger.delta_spent)
        if corrected:
            charge_capped_rest(ledger, eps)

        self.embedding_ = emb
        self.n_features_in_ = d
        self.cluster_centers_ = rel.centres
        self.leaf_sums_ = rel.sums
        self.leaf_counts_ = rel.counts
        scale = (hi - lo) / (2.0 * SCALE)
        self.split_tree_ = [(s.level, s.dim, lo + (s.threshold + SCALE) * scale, s.used)
                            for s in rel.tree.splits]
        self.interval_sigma_ = rel.sigma
        self.n_bins_ = rel.n_bins
        self.tree_depth_ = rel.tree.depth
        self.n_row_clusters_ = int(rel.centres.shape[0])
        self.neighbouring_ = ("one cell (group privacy over add/remove one row)" if corrected
                              else "add/remove one row (paper); cell level costs 2x")
        self._set_ledger(ledger)
        self.row_labels_private_ = False
        return self

    # ------------------------------------------------------- reads the data
    def predict(self, X) -> np.ndarray:
        """NOT PRIVATE: each row of X → its nearest released centre (reads the rows of X).

        >>> import numpy as np
        >>> from dptaucc.baselines.dpm import DPM
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = DPM(epsilon=1.0, max_depth=2, random_state=0).fit(X)
        >>> labels = model.predict(X)
        >>> labels.shape, bool(labels.min() >= 0)
        ((40,), True)
        """
        X = self._check_fitted_input(X, "cluster_centers_")
        return nearest_centre(self._embed(X, self.embedding_), self.cluster_centers_)

    def fit_predict(self, X, y=None) -> np.ndarray:
        """``fit(X)`` then :meth:`predict` on the same rows — the labels are NOT PRIVATE.

        >>> import numpy as np
        >>> from dptaucc.baselines.dpm import DPM
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = DPM(epsilon=1.0, max_depth=2, random_state=0).fit(X)
        >>> bool(np.array_equal(DPM(epsilon=1.0, max_depth=2, random_state=0).fit_predict(X),
        ...                         model.predict(X)))
        True
        """
        return self.fit(X).predict(X)

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY (not private): the paper's protocol, :meth:`predict`.

        >>> import numpy as np
        >>> from dptaucc.baselines.dpm import DPM
        >>> X = np.kron(np.eye(2, dtype=int), np.full((20, 3), 4))
        >>> model = DPM(epsilon=1.0, max_depth=2, random_state=0).fit(X)
        >>> bool(np.array_equal(model.evaluation_row_labels(X), model.predict(X)))
        True
        """
        return self.predict(X)
