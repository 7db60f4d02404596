"""DPHD (Balcan et al. 2017, "Differentially private clustering in high-dimensional Euclidean
spaces"), as run in the DP-τCC experiments, behind the suite's estimator contract.

The algorithm runs in GNU Octave (our own vectorised ``*.m`` files next to this module; see
``dphd_fit.m``); this module validates the input, applies the public preprocessing, drives
Octave (:mod:`dptaucc.baselines.dphd.octave`) and replays Octave's mechanism log into the fit's
:class:`~dptaucc.privacy.PrivacyLedger`. Specification: ``reference-experiments.md`` §6.

``mode="paper"`` keeps what shapes the published curves: range ρ = maxval·√d and side length
s = 2·maxval from the NON-PRIVATE data maximum, the global side length halved on every grid
level and never reset, Λ = 2ρ/d in the local search, recover noise ρ·d/(ε|S|) with the exact
|S|, Octave's sampler on under/overflow, and the unbudgeted round selection. Its ledger holds
the nominal charges the code makes, 17/12·ε in all, plus the non-private steps by name.

``mode="corrected"`` (default) is ε-DP under the replacement of one row, which covers the
suite's cell-level relation ``A' = A + e_u e_vᵀ`` and keeps n public. Each fix, with the
file that makes it:

1. public bounds: counts clipped to ``max_value`` M (default :data:`DEFAULT_MAX_VALUE`, never
   read from the data) and rows scaled to a public L1 bound B1 (default M·d); ρ = min(M√d, B1)
   (this module; ``dphd_fit.m``);
2. the side length restarts at s = 2M in every partition call (``dphd_candidates.m``);
3. partition tests all 3^p buckets of every cell, empty ones included, with Laplace scale
   2L/ε_p over L = ⌈ln n⌉−1 levels (count sensitivity 2 under replacement) (``dphd_partition.m``);
4. local search: utility −loss with range Λ² = (R_y + R_c)², R_y = ‖G‖₂·ρ, R_c the largest
   candidate norm, weights exp(ε u/(2Λ²)) (factor ½), sampled in log space (Gumbel-max)
   (``dphd_local_search.m``; the authors use Λ = 2ρ/d and no ½);
5. recover releases noisy cluster sums (Laplace, L1 sensitivity 2·B1) and noisy sizes
   (sensitivity 2), no ×d, no exact |S|; the centre is projected onto [0, M]^d
   (``dphd_recover.m``);
6. round selection is an exponential mechanism over −loss_r/(ρ + min_j‖z_j‖)² (range 1, ½),
   charged (``dphd_fit.m``);
7. budget: 5 % to the selection (T > 1), the rest split evenly over rounds and, inside a
   round, in the paper's proportions 2/3 : 1/12 : 1/6 : 3×1/6 normalised to 1; the ledger
   total is exactly ε (strict ledger).

Both modes use p = max(1, ⌊½ ln n⌋) (the authors' code breaks for n < 8, where p = 0).
The released labels come from assigning the rows to the released centres, which reads the
data (``row_labels_private_ = False``), as the paper's evaluation protocol does.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from dptaucc.privacy import PrivacyLedger, check_epsilon
from dptaucc.validation import check_count_matrix, check_n_clusters, make_generator

from . import octave

__all__ = ["DPHD", "DEFAULT_MAX_VALUE"]

#: Public cap on one count used by ``mode="corrected"`` when ``max_value`` is None (counts
#: above it are clipped). A data-independent constant, so it costs no privacy.
DEFAULT_MAX_VALUE = 10.0

MODES = ("corrected", "paper")


def _public_preprocess(X: sp.csr_matrix, max_value: float, row_l1_bound: float) -> sp.csr_matrix:
    """Clip counts to ``max_value`` and scale rows down to L1 norm ``row_l1_bound`` (row-wise,
    data-independent bounds, so neighbouring inputs stay neighbouring)."""
    X = X.copy()
    np.minimum(X.data, max_value, out=X.data)
    sums = np.asarray(X.sum(axis=1)).ravel()
    if np.any(sums > row_l1_bound):
        scale = np.minimum(1.0, row_l1_bound / np.maximum(sums, 1e-300))
        X = sp.csr_matrix(sp.diags(scale) @ X)
    return X


def _sq_distances(X: sp.csr_matrix, centers: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ‖x‖² − 2x·c + ‖c‖², n × k, sparse X."""
    rowsq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return rowsq[:, None] - 2.0 * np.asarray(X @ centers.T) + (centers**2).sum(axis=1)[None, :]


class DPHD(ClusterMixin, BaseEstimator):
    """Differentially private k-means in high dimensions (Balcan et al. 2017), run in Octave.

    Parameters
    ----------
    n_clusters : number of centres k (the experiments use the number of classes).
    epsilon : privacy budget ε (finite, > 0).
    n_rounds : independent rounds T (the experiments: 4), each with ε/T in paper mode.
    mode : "corrected" (default) or "paper" (see the module docstring).
    max_value : public bound M on one count. None: paper mode reads the data maximum
        (non-private, marked in the ledger); corrected mode uses :data:`DEFAULT_MAX_VALUE`.
    row_l1_bound : corrected mode only: public bound on a row's L1 norm (rows above are scaled
        down). None: M·d, implied by the count cap, so no row is scaled.
    random_state : None, int or numpy Generator; Octave's generators are seeded from it.

    Attributes
    ----------
    row_labels_ : labels 0..k'-1 (empty clusters dropped). Paper mode: the authors' clusters
        (assignment at the start of the third Lloyd step of the selected round); corrected:
        nearest released centre. Both read the data: ``row_labels_private_`` is False.
    cluster_centers_ : (k, d) released centres of the selected round.
    assignment_centers_ : the centres ``row_labels_`` were assigned to (paper mode: the Lloyd
        iterate before the last; corrected: ``cluster_centers_``).
    loss_ : k-means loss of the selected round (the authors' ``L_loss``; reads the data).
    round_losses_, selected_round_ (0-based), side_lengths_, n_candidates_ : diagnostics.
    privacy_ledger_, epsilon_spent_, delta_spent_ (= 0), n_row_clusters_.
    """

    def __init__(self, n_clusters: int = 8, epsilon: float = 1.0, n_rounds: int = 4,
                 mode: str = "corrected", max_value: float | None = None,
                 row_l1_bound: float | None = None, random_state=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.n_rounds = n_rounds
        self.mode = mode
        self.max_value = max_value
        self.row_l1_bound = row_l1_bound
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------------
    def _check_params(self, n: int, d: int) -> tuple[int, float, int, bool]:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        paper = self.mode == "paper"
        if n < 3:
            raise ValueError(f"DPHD needs at least 3 rows (its grid has ln(n) - 1 levels), "
                             f"got n_samples={n}")
        k = check_n_clusters(self.n_clusters, n, "n_clusters", "rows")
        eps = check_epsilon(self.epsilon)
        if not math.isfinite(eps):
            raise ValueError("epsilon must be finite for DPHD")
        if isinstance(self.n_rounds, bool) or not isinstance(self.n_rounds, numbers.Integral) \
                or self.n_rounds < 1:
            raise ValueError(f"n_rounds must be an int >= 1, got {self.n_rounds!r}")
        for name in ("max_value", "row_l1_bound"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, numbers.Real)
                                      or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be None or a finite number > 0, got {value!r}")
        if paper and self.row_l1_bound is not None:
            raise ValueError("row_l1_bound is a corrected-mode bound; leave it None in paper mode")
        return k, eps, int(self.n_rounds), paper

    # -- fit --------------------------------------------------------------------------------
    def fit(self, X, y=None) -> DPHD:
        """Run DPHD on the rows of the non-negative count matrix ``X`` (dense or sparse)."""
        X = check_count_matrix(X)
        n, d = X.shape
        k, eps, n_rounds, paper = self._check_params(n, d)
        rng = make_generator(self.random_state)
        ledger = PrivacyLedger(budget_epsilon=eps, strict=not paper)

        if self.max_value is None and paper:
            max_value = float(X.max())
            ledger.mark_non_private(
                "max value", "maxval = max(X) read from the data; sets range rho = maxval*sqrt(d) "
                "and side length s = 2*maxval")
        elif self.max_value is None:
            max_value = DEFAULT_MAX_VALUE
        else:
            max_value = float(self.max_value)
        if paper:
            row_l1_bound = math.inf
            Xw = X
        else:
            row_l1_bound = (float(self.row_l1_bound) if self.row_l1_bound is not None
                            else max_value * d)
            Xw = _public_preprocess(X, max_value, row_l1_bound)

        seeds = rng.integers(0, 2**31 - 1, size=2)
        out = octave.run_dphd({
            "X": Xw, "k": float(k), "epsilon": eps, "n_rounds": float(n_rounds),
            "max_value": max_value, "row_l1_bound": row_l1_bound, "mode": self.mode,
            "seed_rand": float(seeds[0]), "seed_randn": float(seeds[1]),
        })
        self._replay_log(out, ledger)

        raw = np.atleast_1d(np.asarray(out["labels"])).astype(np.int64).ravel() - 1
        _, self.row_labels_ = np.unique(raw, return_inverse=True)
        self.row_labels_ = self.row_labels_.astype(np.int64)
        self.row_labels_private_ = False
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1
        self.labels_ = self.row_labels_
        self.cluster_centers_ = np.asarray(out["centers"], dtype=float).reshape(k, d)
        self.assignment_centers_ = np.asarray(out["label_centers"], dtype=float).reshape(k, d)
        self.loss_ = float(out["loss"])
        self.round_losses_ = np.atleast_1d(np.asarray(out["round_losses"], dtype=float))
        self.selected_round_ = int(out["selected_round"]) - 1
        self.side_lengths_ = np.atleast_1d(np.asarray(out["side_lengths"], dtype=float))
        self.n_candidates_ = np.atleast_1d(np.asarray(out["n_candidates"])).astype(np.int64)
        self.max_value_ = max_value
        self.row_l1_bound_ = row_l1_bound
        self.n_features_in_ = d
        self.privacy_ledger_ = ledger
        self.epsilon_spent_ = ledger.epsilon_spent
        self.delta_spent_ = 0.0
        return self

    @staticmethod
    def _replay_log(out: dict, ledger: PrivacyLedger) -> None:
        """Charge every mechanism call Octave reports (in order) to the fit's ledger."""
        fields = ("log_step", "log_mechanism", "log_epsilon", "log_sensitivity",
                  "log_composition", "log_note")
        cols = [np.atleast_1d(np.asarray(out[f], dtype=object)) for f in fields]
        for step, mech, eps, sens, comp, note in zip(*cols, strict=True):
            if comp == "non-private":
                ledger.mark_non_private(str(step), str(note))
            else:
                ledger.charge(str(step), str(mech), float(eps), 0.0, float(sens), str(comp),
                              str(note))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.non_deterministic = False
        return tags

    # -- evaluation ---------------------------------------------------------------------------
    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, not private: each row of ``X`` goes to its nearest released centre
        (``assignment_centers_``; corrected mode after the same public clipping as in fit).
        On the training matrix this reproduces ``row_labels_`` up to label names: these are
        centre indices 0..k-1."""
        check_is_fitted(self, "assignment_centers_")
        X = check_count_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} columns, the model was fitted on "
                             f"{self.n_features_in_}")
        if self.mode != "paper":
            X = _public_preprocess(X, self.max_value_, self.row_l1_bound_)
        return np.argmin(_sq_distances(X, self.assignment_centers_), axis=1).astype(np.int64)
