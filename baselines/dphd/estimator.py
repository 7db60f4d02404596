"""DPHD (Balcan et al. 2017, "Differentially private clustering in high-dimensional Euclidean
spaces"), as run in the DP-τCC experiments, behind the suite's estimator contract.

The algorithm runs in GNU Octave (our own vectorised ``*.m`` files next to this module; see
``dphd_fit.m``) in one persistent process per Python process
(:mod:`~dptaucc.baselines.dphd.octave`); this module validates the input, applies the public
preprocessing, hands Octave the matrix (once per matrix content) and the fit's parameters,
and serves the fit's mechanism calls (:mod:`~dptaucc.baselines.dphd.mechanisms`).

Threat model of ``mode="corrected"`` (the default). Released: ``cluster_centers_`` (k
centres), ``selected_round_``, ``n_candidates_`` and the public facts (bounds, side lengths,
the ledger). Nothing else about the training rows is kept: their labels, the k-means loss and
the per-round losses are not attributes; :meth:`DPHD.predict` and
:meth:`DPHD.evaluation_row_labels` compute labels of rows you pass in, which reads those rows
and is **not private**. The fit is ε-DP when one row of X is replaced by any other row
(n stays public), which covers the suite's relation of one count changed by one,
``A' = A + e_u e_vᵀ``. Each step and its fix of the authors' code, in order:

1. public bounds: counts clipped to ``max_value`` M (default :data:`DEFAULT_MAX_VALUE`, never
   read from the data) and rows scaled down to a public L1 bound B1 (default M·d, so no row
   is scaled); ρ = min(M√d, B1) bounds every row's L2 norm;
2. candidates: 3 grid partitions of the rows projected to p = max(1, ⌊½ ln n⌋) dimensions (a
   data-independent Gaussian matrix G); the side length restarts at s = 2M in every
   partition; at each of the L = ⌈ln n⌉ − 1 levels every one of the 3^p buckets of every
   cell (empty ones included) gets discrete Laplace noise at ε_p/L (count sensitivity 2) and
   the buckets whose noisy count passes the threshold become cells; levels not reached are
   charged all the same (where a partition stops is part of what it reveals);
3. local search: min(k, 20) swaps and a final pick, each an exponential mechanism over
   utility −loss/Λ² with Λ = ‖G‖₂ρ + max‖candidate‖ at range sensitivity √2: rows are
   non-negative, so a replaced row moves two centre sets' utilities apart by at most
   2(c′ − c)·(y′ − y)/Λ² ≤ 4R·√2‖G‖₂ρ/Λ² ≤ √2 (R = max‖candidate‖; proof in
   ``dphd_local_search.m``); the authors use Λ = 2ρ/d and omit the factor ½;
4. recover (4 per round: after the local search and after each of 3 Lloyd steps): the k×d
   cluster sums of the rows floored to a public grid of power-of-two step g, released as
   integers in units of g with discrete Laplace noise (L1 sensitivity 2·B1/g units), and the
   k cluster sizes with discrete Laplace noise (sensitivity 2); the centre is noisy sum · g /
   max(noisy size, 1), projected onto [0, M]^d. The centres are post-processing of integer
   releases, so their possible values do not depend on the data (no floating-point attack).
   g is 2^24 times finer than the sums' noise scale (coarser only where a sum of n rows
   would leave the exact integers of a double), so flooring moves an entry by less than g,
   and not at all for whole counts when g <= 1 (the default bounds);
5. round selection (T > 1): an exponential mechanism over −loss_r/(ρ + min_j‖z_j‖)² (each row
   adds at most 1, range sensitivity 2), charged;
6. budget: 5 % to the selection (T > 1), the rest split evenly over rounds and, inside a
   round, in the paper's proportions 2/3 : 1/12 : 1/6 : 3×1/6 normalised to 1 (or the six
   public ``budget_weights`` given: candidates, local search, initial recover, each Lloyd
   step's recover); the ledger is strict and totals exactly ε.

Randomness. Every mechanism's noise comes from the fit's sampler in Python: seeded from
``random_state`` (106-bit uniforms: a discrete-Laplace variate is never larger than 74.2
scales and a choice trailing the best by more than 78.5 logits is never drawn, so each call
is (ε, δ)-DP with δ below 2⁻¹⁰⁰ per value drawn instead of pure ε-DP), or with
``secure=True`` OpenDP's exact
samplers with OS randomness (no seed: use it to publish a release). Octave draws only what is
data-independent (G, the grid shifts, the local search's starting centres), from generators
seeded from the same sampler. Octave's own 53-bit samplers serve paper mode only.

``mode="paper"`` keeps what shapes the published curves: range ρ = maxval·√d and side length
s = 2·maxval from the NON-PRIVATE data maximum, the global side length halved on every grid
level and never reset, Λ = 2ρ/d in the local search, recover noise ρ·d/(ε|S|) with the exact
|S| (textbook float Laplace), Octave's sampler on under/overflow, the unbudgeted round
selection, and labels and losses of the training rows computed from the raw data. Its ledger
holds the nominal charges the code makes, 17/12·ε in all, plus the non-private steps by name
(so ``epsilon_spent_`` is inf).

Both modes use p = max(1, ⌊½ ln n⌋) (the authors' code breaks for n < 8, where p = 0).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClusterMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from dptaucc.base import EPSILON, MODE, RANDOM_STATE, SECURE, PrivateEstimator
from dptaucc.methods import NON_NEGATIVE_REALS, MethodInfo
from dptaucc.privacy import (
    DP,
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    POST_PROCESSING,
    PUBLIC,
    PrivacyLedger,
    Sampler,
)
from dptaucc.privacy.hook import watch
from dptaucc.validation import check_n_clusters, dense_counts

from . import octave
from .matrix_keys import MatrixFacts
from .mechanisms import MechanismServer, ObservedServer

__all__ = ["DPHD", "DEFAULT_MAX_VALUE", "DENSE_MIN_DENSITY"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dphd", estimator="dptaucc.baselines.dphd.DPHD",
    label="DPHD", color="tab:green", linestyle="-", marker="^", family="k-means",
    neighbours="one row replaced (covers one cell)",
    # any row within the public bounds may replace another; sums are floored to a public grid
    domain=NON_NEGATIVE_REALS,
    role="paper",
    audit="dptaucc.baselines.dphd.audit",
    row_level=True,
)

#: Public cap on one count used by ``mode="corrected"`` when ``max_value`` is None (counts
#: above it are clipped). A data-independent constant, so it costs no privacy.
DEFAULT_MAX_VALUE = 10.0

#: A matrix with at least this share of non-zero entries is used dense, in Python and in
#: Octave: its products run on BLAS, and dense storage (8 bytes an entry) is then at most 4/3
#: of sparse storage (12-16 bytes a non-zero), so the dense path adds no cost beyond the
#: non-zeros (:func:`dptaucc.validation.dense_counts`; a matrix storing every cell is not
#: even copied).
DENSE_MIN_DENSITY = 0.5

#: content key and data maximum of the matrix fitted last (its paper and corrected fits share
#: them): kept on a frozen matrix (the engine's datasets); of any other, one copy of its arrays
#: is kept to recognise it
_FACTS = MatrixFacts(size=1)


def _rows_of(X: sp.csr_matrix) -> sp.csr_matrix | np.ndarray:
    """A validated matrix as DPHD computes on it: a dense array when at least
    :data:`DENSE_MIN_DENSITY` of it is non-zero, else the CSR matrix itself."""
    dense = dense_counts(X, DENSE_MIN_DENSITY)
    return X if dense is None else dense


def _public_preprocess(X: sp.csr_matrix | np.ndarray, max_value: float,
                       row_l1_bound: float) -> sp.csr_matrix | np.ndarray:
    """Clip counts to ``max_value`` and scale rows down to L1 norm ``row_l1_bound`` (row-wise,
    data-independent bounds, so neighbouring inputs stay neighbouring). A new matrix of the
    same kind (CSR or dense array)."""
    if isinstance(X, np.ndarray):
        X = np.minimum(X, max_value)
        sums = X.sum(axis=1)
        if np.any(sums > row_l1_bound):
            X *= np.minimum(1.0, row_l1_bound / np.maximum(sums, 1e-300))[:, None]
        return X
    X = X.copy()
    np.minimum(X.data, max_value, out=X.data)
    sums = np.asarray(X.sum(axis=1)).ravel()
    if np.any(sums > row_l1_bound):
        scale = np.minimum(1.0, row_l1_bound / np.maximum(sums, 1e-300))
        X = sp.csr_matrix(sp.diags(scale) @ X)
    return X


def _octave_seeds(sampler: Sampler, ledger: PrivacyLedger) -> np.ndarray:
    """Seeds of Octave's data-independent draws (G, the grid shifts, the local search's
    first centres), from the fit's sampler. Under the audit hook they are a release charged
    nothing (step "public seeds"): a replayed fit keeps the public randomness of the history
    it replays, so its calls compare D and D' under the same G, shifts and starts."""
    def draw() -> np.ndarray:
        return sampler.rng.integers(0, 2**31 - 1, size=2)
    seeds, seen = draw(), watch(ledger)
    return seeds if seen is None else np.asarray(seen.released("public seeds", "public",
                                                               seeds, draw))


def _sq_distances(X: sp.csr_matrix | np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ‖x‖² − 2x·c + ‖c‖², n × k, of the rows of a CSR matrix or
    a dense array (whose products run as ``(C Xᵀ)ᵀ``, streaming it once)."""
    if isinstance(X, np.ndarray):
        rowsq = np.einsum("ij,ij->i", X, X)
        cross = (centers @ X.T).T
    else:
        rowsq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        cross = np.asarray(X @ centers.T)
    return rowsq[:, None] - 2.0 * cross + (centers**2).sum(axis=1)[None, :]


def octave_matrix(X: sp.csr_matrix | np.ndarray) -> np.ndarray | sp.csc_matrix:
    """X as Octave's d × n operand (one row per column): dense when at least
    :data:`DENSE_MIN_DENSITY` of it is non-zero (a dense array's transpose is a view: nothing
    is copied), else sparse (the CSR arrays of X are the CSC arrays of Xᵀ, so nothing is
    reordered)."""
    rows = X if isinstance(X, np.ndarray) else _rows_of(X)
    if isinstance(rows, np.ndarray):
        return rows.T  # column-major d × n view of the row-major n × d array
    return X.T.tocsc()


class DPHD(ClusterMixin, PrivateEstimator):
    """Differentially private k-means in high dimensions (Balcan et al. 2017), run in Octave.

    Parameters
    ----------
    n_clusters : number of centres k (the experiments use the number of classes).
    epsilon : privacy budget ε (finite, > 0).
    n_rounds : independent rounds T (the experiments: 4).
    mode : "corrected" (default) or "paper" (see the module docstring).
    max_value : public bound M on one count. None: paper mode reads the data maximum
        (non-private, marked in the ledger); corrected mode uses :data:`DEFAULT_MAX_VALUE`.
    row_l1_bound : corrected mode only: public bound on a row's L1 norm (rows above are scaled
        down). None: M·d, implied by the count cap, so no row is scaled.
    random_state : None, int, numpy Generator or a :class:`~dptaucc.privacy.Sampler`: the
        source of every random choice (mechanism noise and Octave's seeds).
    secure : corrected mode only: draw every mechanism's noise from OpenDP's exact samplers
        with OS randomness (``random_state`` must be None). For releases you publish.
    budget_weights : corrected mode only: None (the paper's proportions 2/3 : 1/12 : 1/6 :
        1/6 : 1/6 : 1/6) or six positive weights of a round's stages — candidates, local
        search, initial recover, Lloyd 1, 2 and 3 recovers — normalised to the round's budget.
        A public choice (the privacy audit puts most of ε on the last recover with it).
    timeout : seconds a fit may take in Octave (start-up and sending the matrix included)
        before Octave is killed and the fit raises
        :class:`~dptaucc.baselines.dphd.octave.OctaveTimeoutError`; None waits forever.

    Attributes
    ----------
    cluster_centers_ : (k, d) released centres of the selected round.
    selected_round_ : the selected round (0-based).
    n_candidates_ : number of candidate centres per round (from the private partitions).
    side_lengths_ : grid side length per round (corrected: 2M; paper: the global side length).
    max_value_, row_l1_bound_ : the bounds used; n_features_in_.
    privacy_ledger_, epsilon_spent_ (ε; paper mode inf), delta_spent_ (= 0).

    Paper mode adds the authors' non-private outputs: ``row_labels_`` (= ``labels_``; the
    assignment at the start of the third Lloyd step of the selected round, empty clusters
    dropped), ``row_labels_private_`` (False), ``n_row_clusters_``, ``assignment_centers_``
    (the centres those labels were assigned to), ``loss_`` and ``round_losses_`` (k-means
    losses). In corrected mode the labels of rows come from :meth:`predict` (not private).

    Examples
    --------
    >>> from dptaucc.baselines.dphd import DPHD
    >>> model = DPHD(n_clusters=3, epsilon=1.0, random_state=0)   # fit(X) runs in GNU Octave
    >>> model.get_params()["n_rounds"], model.mode
    (4, 'corrected')
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "mode": MODE,
        "max_value": [None, Interval(Real, 0, None, closed="neither")],
        "row_l1_bound": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": RANDOM_STATE,
        "secure": SECURE,
        "timeout": [None, Interval(Real, 0, None, closed="neither")],
        "budget_weights": [None, "array-like"],
    }

    _release_kinds = {
        "cluster_centers_": DP, "selected_round_": DP, "n_candidates_": POST_PROCESSING,
        "side_lengths_": PUBLIC, "max_value_": PUBLIC, "row_l1_bound_": PUBLIC,
        "n_features_in_": PUBLIC, **LEDGER_ATTRIBUTES,
    }
    # the authors' code: noise scaled by exact cluster sizes, data-derived range, unbudgeted
    # selection, labels and losses of the raw rows
    _paper_release_kinds = {
        "cluster_centers_": NON_PRIVATE, "selected_round_": NON_PRIVATE,
        "n_candidates_": NON_PRIVATE, "side_lengths_": NON_PRIVATE, "max_value_": NON_PRIVATE,
        "row_labels_": NON_PRIVATE, "labels_": NON_PRIVATE, "row_labels_private_": PUBLIC,
        "n_row_clusters_": NON_PRIVATE, "assignment_centers_": NON_PRIVATE,
        "loss_": NON_PRIVATE, "round_losses_": NON_PRIVATE,
    }

    def __init__(self, n_clusters: int = 8, epsilon: float = 1.0, n_rounds: int = 4,
                 mode: str = "corrected", max_value: float | None = None,
                 row_l1_bound: float | None = None, random_state=None, secure: bool = False,
                 timeout: float | None = octave.DEFAULT_TIMEOUT, budget_weights=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.n_rounds = n_rounds
        self.mode = mode
        self.max_value = max_value
        self.row_l1_bound = row_l1_bound
        self.random_state = random_state
        self.secure = secure
        self.timeout = timeout
        self.budget_weights = budget_weights

    # -- validation -------------------------------------------------------------------------
    _domain = METHOD.domain
    _all_zero_outcome = "centres from noise alone (every release is still charged)"

    def _check_parameters(self) -> None:
        super()._check_parameters()
        if self.mode == "paper" and self.row_l1_bound is not None:
            raise ValueError("row_l1_bound is a corrected-mode bound; leave it None in paper mode")
        self._weights()

    def _weights(self) -> np.ndarray:
        """``budget_weights`` as Octave takes them: an empty array for the paper's
        proportions, else the six positive finite weights (checked)."""
        if self.budget_weights is None:
            return np.zeros((1, 0))
        if self.mode == "paper":
            raise ValueError("budget_weights is a corrected-mode setting; leave it None in "
                             "paper mode")
        w = np.asarray(self.budget_weights, dtype=float).reshape(-1)
        if w.size != 6 or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("budget_weights must be 6 positive finite numbers (candidates, "
                             "local search, initial recover, Lloyd 1-3 recovers), got "
                             f"{self.budget_weights!r}")
        return w.reshape(1, 6)

    def _check_params(self, n: int) -> int:
        """Checks scikit-learn's constraints cannot express (the data's shape, combinations)."""
        if n < 3:
            raise ValueError(f"DPHD needs at least 3 rows (its grid has ln(n) - 1 levels), "
                             f"got n_samples={n}")
        return check_n_clusters(self.n_clusters, n, "n_clusters", "rows")

    # -- fit --------------------------------------------------------------------------------
    def fit(self, X, y=None) -> DPHD:
        """Run DPHD on the rows of the non-negative count matrix ``X`` (dense or sparse)."""
        X = self._check_fit(X)
        n, d = X.shape
        k = self._check_params(n)
        paper = self.mode == "paper"
        rows = _rows_of(X)
        sampler = self._sampler()
        facts = _FACTS.of(X)

        if self.max_value is None and paper:
            max_value = facts.get("max", lambda M: float(M.max()))
        else:
            max_value = float(self.max_value) if self.max_value is not None \
                else DEFAULT_MAX_VALUE
        if paper:
            row_l1_bound = math.inf
            key = facts.key("paper")

            def build():
                return octave_matrix(rows)
        else:
            row_l1_bound = (float(self.row_l1_bound) if self.row_l1_bound is not None
                            else max_value * d)
            key = facts.key("corrected", max_value, row_l1_bound)

            def build():
                return octave_matrix(_public_preprocess(rows, max_value, row_l1_bound))

        params = {"k": k, "epsilon": float(self.epsilon), "n_rounds": int(self.n_rounds),
                  "max_value": max_value, "row_l1_bound": row_l1_bound, "paper": paper,
                  "trace": False, "budget_weights": self._weights()}
        out, ledger = self._run(key, build, params, sampler)
        if paper and self.max_value is None:
            ledger.mark_non_private(
                "max value", "maxval = max(X) read from the data; sets range rho = maxval*sqrt(d) "
                "and side length s = 2*maxval")
        if paper:
            self._replay_log(out["log"], ledger)
        self._set_attributes(out, k, d, paper)
        self.max_value_ = max_value
        self.row_l1_bound_ = row_l1_bound
        self.n_features_in_ = d
        self._set_ledger(ledger)
        self._warn_if_fewer_clusters()
        return self

    def _run(self, key, build, params, sampler: Sampler) -> tuple[dict, PrivacyLedger]:
        """One fit in Octave with a fresh ledger; if Octave dies during it, once more in a
        fresh Octave from the same sampler state (so a seeded fit gives the same result; the
        first attempt released nothing), then the error."""
        state = sampler.rng.bit_generator.state
        for attempt in (1, 2):
            ledger = PrivacyLedger(budget_epsilon=float(self.epsilon),
                                   strict=self.mode != "paper")
            seeds = _octave_seeds(sampler, ledger)
            params = dict(params, seed_rand=float(seeds[0]), seed_randn=float(seeds[1]))
            try:
                out = octave.run_fit(key, build, params,
                                     ObservedServer(MechanismServer(sampler, ledger)),
                                     self.timeout)
                return out, ledger
            except octave.OctaveDiedError as exc:
                if attempt == 2:
                    raise octave.OctaveDiedError(
                        f"Octave died twice running this DPHD fit: {exc}") from exc
                sampler.rng.bit_generator.state = state
        raise AssertionError("unreachable")  # pragma: no cover

    def _set_attributes(self, out: dict, k: int, d: int, paper: bool) -> None:
        self.cluster_centers_ = np.asarray(out["centers"], dtype=float).reshape(k, d)
        self.selected_round_ = int(np.asarray(out["selected_round"]).ravel()[0]) - 1
        self.side_lengths_ = np.asarray(out["side_lengths"], dtype=float).ravel()
        self.n_candidates_ = np.asarray(out["n_candidates"]).ravel().astype(np.int64)
        if not paper:
            return
        raw = np.asarray(out["labels"]).astype(np.int64).ravel() - 1
        _, labels = np.unique(raw, return_inverse=True)
        self.row_labels_ = labels.astype(np.int64)
        self.labels_ = self.row_labels_
        self.row_labels_private_ = False
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1
        self.assignment_centers_ = np.asarray(out["label_centers"], dtype=float).reshape(k, d)
        self.loss_ = float(np.asarray(out["loss"]).ravel()[0])
        self.round_losses_ = np.asarray(out["round_losses"], dtype=float).ravel()

    @staticmethod
    def _replay_log(log: dict, ledger: PrivacyLedger) -> None:
        """Charge every nominal paper-mode charge Octave reports (in order) to the ledger."""
        fields = ("step", "mechanism", "epsilon", "sensitivity", "composition", "note")
        cols = [list(log[f]) if isinstance(log[f], list) else np.asarray(log[f]).ravel()
                for f in fields]
        for step, mech, eps, sens, comp, note in zip(*cols, strict=True):
            if comp == "non-private":
                ledger.mark_non_private(str(step), str(note))
            else:
                ledger.charge(str(step), str(mech), float(eps), 0.0, float(sens), str(comp),
                              str(note))

    # -- labels of rows you hold (read those rows: not private) ---------------------------------
    def _rows(self, X) -> sp.csr_matrix | np.ndarray:
        X = self._check_fitted_input(X, "cluster_centers_")
        rows = _rows_of(X)
        if self.mode != "paper":
            rows = _public_preprocess(rows, self.max_value_, self.row_l1_bound_)
        return rows

    def predict(self, X) -> np.ndarray:
        """NOT PRIVATE: the index of each row's nearest released centre (corrected mode after
        the same public clipping as in fit). It reads the rows of ``X``; on the training
        matrix these labels are a function of the private data, not a DP release."""
        check_is_fitted(self, "cluster_centers_")
        return np.argmin(_sq_distances(self._rows(X), self.cluster_centers_),
                         axis=1).astype(np.int64)

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit, then :meth:`predict` on the same rows (not private); paper mode: the
        authors' labels ``labels_``."""
        self.fit(X)
        return self.labels_ if self.mode == "paper" else self.predict(X)

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, not private: the paper's protocol, each row of ``X`` to its nearest
        centre (paper mode: ``assignment_centers_``, which reproduces ``row_labels_`` on the
        training matrix up to label names; corrected mode: :meth:`predict`)."""
        check_is_fitted(self, "cluster_centers_")
        if self.mode != "paper":
            return self.predict(X)
        return np.argmin(_sq_distances(self._rows(X), self.assignment_centers_),
                         axis=1).astype(np.int64)
