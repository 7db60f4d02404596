"""The DPNMF estimator (Saha & Imtiaz 2024) in corrected and paper modes.

DPNMF factorises V = Xᵀ (m words × n documents) as W H with topics W (m×K) and per-document
coefficients H (K×n). Each of the I epochs updates H, releases ``Ā = HHᵀ/N`` and
``B̄ = VHᵀ/N`` with Gaussian noise and updates W from (Ā, B̄) alone.

``mode="corrected"`` (default): (ε, δ)-DP end to end for what the fitted model holds.

* Released: the noisy statistics (Ā, B̄) of every epoch — the last epoch's kept as
  ``A_bar_`` and ``B_bar_``: the release the final topics are post-processed from, which a
  user can publish or inspect with them — and their post-processing: the topics
  ``components_`` and the W-step counts. Public: shapes, parameters, σ and the ledger.
  Nothing else: no coefficients, loss or training labels.
* Neighbouring relation: one document replaced (N fixed), which covers the suite's one-cell
  change. Every document is scaled to unit L2 norm and every column of H kept in
  {h ≥ 0, ‖h‖ ≤ 1}; so one document moves the pair by at most Δ = 2/N (proof in
  :mod:`~dptaucc.baselines.nmf_dp.release`). One joint Gaussian release per epoch at
  (ε/I, δ/I), σ from the analytic Gaussian mechanism, snapped to a data-independent grid;
  I epochs compose to (ε, δ).
* Data-independent start: W and H are drawn from the fit's generator (no SVD of the data).
* Fixed work: every epoch runs the same number of H-steps (:data:`LOCAL_H_STEPS`) per
  document, each document's column computed from that document and W only (the documents'
  own share of the work, never released); the W-steps read only (Ā, B̄), so their early stop
  is post-processing. Step sizes are 1/L from W and from Ā (public at that point).
* What reads the data afterwards is a method you call on data you hold, NOT private:
  :meth:`DPNMF.transform` (the documents' coefficients), :meth:`DPNMF.evaluation_row_labels`
  (each document to its nearest topic, the evaluation protocol).
* Randomness: seeded from ``random_state`` (reproducible research); ``secure=True`` draws
  it from the operating system instead (no seed to replay) for a release you publish.
* Utility: B̄ has m·K coordinates, each with noise σ ∝ 1/(Nε), while its entries are at
  most a few hundredths for unit-norm documents. On word-count matrices of a few thousand
  documents and words at ε < 1 the noise dominates and the topics are close to random
  (classic3: NMI ≈ 0.01 at ε ≤ 0.9, 0.4 at ε = 100).

``mode="paper"`` reproduces the authors' runs, quirks included, and is not DP: raw counts
(the sensitivity 2/N assumes unit-norm documents), an SVD initialisation of the data
(NNDSVD), global H-steps whose early stop reads every document's loss, two releases per epoch
at (ε/I, δ/I) each — (2ε, 2δ) in total — with noise std equal to the classical Gaussian
*variance*, and the non-private coefficients, losses and training labels (the *farthest*
topic from ``X/max(X)``, the labels of the published figures) kept on the model. The ledger
names every non-private step, so ``epsilon_spent_`` is inf.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClusterMixin, TransformerMixin
from sklearn.preprocessing import normalize
from sklearn.utils._param_validation import Interval

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
from dptaucc.validation import (
    check_n_clusters,
    dense_counts,
)

from .gaussian import gaussian_epsilon, paper_noise_std
from .init import nndsvd_init, project_columns, random_init
from .release import (
    paper_release,
    paper_sensitivity,
    release_statistics,
    statistics_sigma,
)
from .updates import (
    h_steps,
    half_sq_loss,
    lipschitz,
    local_coefficients,
    relative_improvement_stop,
    w_steps,
)

__all__ = ["DPNMF", "LOCAL_H_STEPS", "TRANSFORM_STEPS", "topic_scores"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dpnmf", estimator="dptaucc.baselines.nmf_dp.DPNMF",
    label="DPNMF", color="tab:red", linestyle="-", marker="v", family="NMF",
    neighbours="one row (document) replaced (covers one cell)",
    domain=NON_NEGATIVE_REALS,  # documents are scaled to unit L2 norm, whatever their values
    role="paper",
    uses_delta=True,
    max_epsilon=1.0,
    audit="dptaucc.baselines.nmf_dp.audit",
    # an exact tie between unit-norm topics in the evaluation assignment is decided by their
    # norms' last bits (BLAS): one committed record differs between machines (docs/records.md)
    float_path=("corrected",),
    row_level=True,
)

ALPHA_W, ALPHA_H = 1e-4, 20.0          # the authors' step sizes (paper mode)
ETA_H, ETA_W = 1e-3, 1e-4              # early-stop tolerances
MAX_H, MAX_W = 50, 200                 # loop caps: the reference runs cap + 1 steps (51, 201)
#: corrected mode: H-steps per document and epoch (a fixed number, whatever the data)
LOCAL_H_STEPS = 50
#: ``transform``: H-steps per document from H = 0
TRANSFORM_STEPS = 200


def topic_scores(documents: sp.csr_matrix | np.ndarray, W: np.ndarray) -> np.ndarray:
    """``WᵀV`` (K×n) from the documents (the rows of X, n×m: CSR, or a dense array, which
    BLAS streams once as ``Wᵀ Xᵀ``).

    >>> import numpy as np, scipy.sparse as sp
    >>> X, W = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), np.eye(3)[:, :2]
    >>> topic_scores(X, W).tolist(), bool((topic_scores(sp.csr_matrix(X), W) == W.T @ X.T).all())
    ([[1.0, 0.0], [0.0, 3.0]], True)
    """
    if isinstance(documents, np.ndarray):
        return W.T @ documents.T
    return np.asarray(documents @ W).T


class DPNMF(ClusterMixin, TransformerMixin, PrivateEstimator):
    """Differentially private NMF clustering of documents (rows of X); see the module
    docstring for what each mode guarantees.

    Parameters
    ----------
    n_clusters : int
        K, the number of topics.
    epsilon, delta : float
        Total privacy budget (ε > 0, possibly inf; 0 < δ < 1).
    n_epochs : int
        I, the number of epochs (one release per epoch in corrected mode, two in paper mode).
    mode : {"corrected", "paper"}
    random_state : None, int, numpy Generator or :class:`~dptaucc.privacy.Sampler`
        Seeds the one generator all randomness of a fit is drawn from.
    secure : bool, default False
        Corrected mode only: draw every random choice from the operating system's randomness
        (``random_state`` must be None). Same ledger and distributions, nothing to replay.

    Attributes
    ----------
    components_ : (K, m) topics, unit-norm rows (corrected: post-processing of DP releases).
    noise_std_ : σ of each release (public: it depends on ε, δ, I and N only).
    epsilon_noise_implied_ : the ε the noise added buys per basic composition (corrected:
        ε; paper: far larger, the under-noising).
    n_h_steps_, n_w_steps_ : H- and W-steps per epoch.
    A_bar_, B_bar_ : the last epoch's released statistics, Ā = HHᵀ/N + noise (K×K,
        symmetrised) and B̄ = VHᵀ/N + noise (m×K), from which its W-steps computed
        ``components_`` (corrected: the DP release itself, no extra cost; earlier epochs'
        releases are not kept). Paper mode keeps its last two releases there too.
    privacy_ledger_, epsilon_spent_, delta_spent_ : the fit's privacy accounting.
    n_features_in_ : m.
    Paper mode only (NON-PRIVATE): ``coefficients_`` (H, K×n), ``loss_`` (½‖V − WH‖²/N at the
    start of each epoch), ``row_labels_``/``labels_`` (the authors' training labels),
    ``row_labels_private_`` (False), ``n_row_clusters_``.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.nmf_dp import DPNMF
    >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
    >>> model = DPNMF(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
    >>> model.components_.shape, model.epsilon_spent_
    ((2, 6), 1.0)
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "mode": MODE,
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _domain = METHOD.domain
    _all_zero_outcome = "topics from noise alone (every release is still charged)"


    _release_kinds = {
        "components_": POST_PROCESSING, "n_w_steps_": POST_PROCESSING,
        "A_bar_": DP, "B_bar_": DP,
        "noise_std_": PUBLIC, "epsilon_noise_implied_": PUBLIC, "n_h_steps_": PUBLIC,
        "n_features_in_": PUBLIC,
        **LEDGER_ATTRIBUTES,
    }
    _paper_release_kinds = {
        "components_": NON_PRIVATE, "n_w_steps_": NON_PRIVATE, "n_h_steps_": NON_PRIVATE,
        "A_bar_": NON_PRIVATE, "B_bar_": NON_PRIVATE,
        "coefficients_": NON_PRIVATE, "loss_": NON_PRIVATE, "row_labels_": NON_PRIVATE,
        "labels_": NON_PRIVATE, "n_row_clusters_": NON_PRIVATE, "row_labels_private_": PUBLIC,
    }

    def __init__(self, n_clusters: int = 8, epsilon: float = 0.5, delta: float = 1e-5,
                 n_epochs: int = 4, mode: str = "corrected", random_state=None,
                 secure: bool = False):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.delta = delta
        self.n_epochs = n_epochs
        self.mode = mode
        self.random_state = random_state
        self.secure = secure

    def _documents(self, X: sp.csr_matrix) -> sp.csr_matrix | np.ndarray:
        """Rows as the model sees them: raw counts (paper) or unit-L2 documents (corrected);
        a dense array when X is dense enough (:func:`dptaucc.validation.dense_counts`: the
        same numbers, products on BLAS), else CSR."""
        dense = dense_counts(X)
        rows = X if dense is None else dense
        return rows if self.mode == "paper" else normalize(rows, norm="l2", axis=1)

    def fit(self, X, y=None) -> DPNMF:
        """Fit on non-negative counts X (n documents × m words, dense or sparse)."""
        X = self._check_fit(X)
        n, m = X.shape
        k = check_n_clusters(self.n_clusters, n, "n_clusters", "rows")
        check_n_clusters(k, m, "n_clusters", "columns")
        sampler = self._sampler()
        Vt = self._documents(X)                           # n × m, sparse stays sparse
        # V (m × n): the dense array's transpose is a view; CSR is converted
        V = Vt.T if isinstance(Vt, np.ndarray) else sp.csr_matrix(Vt.T)
        if self.mode == "paper":
            self._fit_paper(X, V, Vt, k, sampler.rng)
        else:
            self._fit_corrected(V, Vt, k, sampler)
        self.n_features_in_ = m
        self._warn_if_fewer_clusters()
        return self

    def _fit_corrected(self, V, Vt, k: int, sampler: Sampler) -> None:
        """I epochs: local H-steps, one (ε/I, δ/I) release, W-steps on the release. V is
        m×n, Vt its transpose (the documents)."""
        m, n = V.shape
        epsilon, delta, n_epochs = float(self.epsilon), float(self.delta), int(self.n_epochs)
        eps_e, delta_e = epsilon / n_epochs, delta / n_epochs
        ledger = PrivacyLedger(budget_epsilon=epsilon, budget_delta=delta, strict=True)
        W, H = random_init(m, n, k, sampler.rng)
        n_w = []
        for e in range(n_epochs):
            WtV = topic_scores(Vt, W)
            H = local_coefficients(WtV, W.T @ W, H, LOCAL_H_STEPS)
            A, B = release_statistics(V, H, eps_e, delta_e, sampler, ledger,
                                      f"epoch {e + 1}: (HHᵀ/N, VHᵀ/N)")
            W, steps = w_steps(W, A, B, 1.0 / lipschitz(A), ETA_W, MAX_W,
                               stop=relative_improvement_stop)
            n_w.append(steps)
        self.components_ = W.T
        self.A_bar_, self.B_bar_ = A, B                  # the last release (DP)
        self.noise_std_ = statistics_sigma(n, eps_e, delta_e)
        self.epsilon_noise_implied_ = n_epochs * eps_e   # calibrated exactly
        self.n_h_steps_ = [LOCAL_H_STEPS] * n_epochs
        self.n_w_steps_ = n_w
        self._set_ledger(ledger)

    def _fit_paper(self, X: sp.csr_matrix, V, Vt, k: int, rng: np.random.Generator) -> None:
        """The authors' run (bug-compatible, not DP). V is m×n, Vt its transpose."""
        m, n = V.shape
        epsilon, delta, n_epochs = float(self.epsilon), float(self.delta), int(self.n_epochs)
        eps_e, delta_e = epsilon / n_epochs, delta / n_epochs
        ledger = PrivacyLedger(budget_epsilon=epsilon, budget_delta=delta, strict=False)
        ledger.mark_non_private(
            "raw counts", "Δ = 2/N assumes unit-norm documents; raw counts are not "
            "normalised, so the releases' sensitivity is up to 2·max‖a_i‖₂/N")
        v_sq = float(np.einsum("ij,ij->", Vt, Vt) if isinstance(Vt, np.ndarray)
                     else V.multiply(V).sum())
        W, H = nndsvd_init(V, k, rng)
        W, H = project_columns(W), project_columns(H)
        ledger.mark_non_private("initialisation", "rank-K randomized SVD of V + NNDSVD split")
        ledger.mark_non_private("H updates", "global H-steps on V; their early stop reads the "
                                "loss of every document")
        losses, n_h, n_w = [], [], []
        for e in range(n_epochs):
            WtV = topic_scores(Vt, W)
            WtW = W.T @ W
            losses.append(half_sq_loss(v_sq, WtV, WtW, H) / n)
            H, steps = h_steps(H, WtV, WtW, v_sq, n, ALPHA_H, ETA_H, MAX_H)
            n_h.append(steps)
            A, B = paper_release(V, H, eps_e, delta_e, rng, ledger, e + 1)
            W, steps = w_steps(W, A, B, ALPHA_W, ETA_W, MAX_W)
            n_w.append(steps)
        ledger.mark_non_private("training labels, loss and coefficients",
                                "the farthest topic of every raw row, ½‖V − WH‖²/N and H are "
                                "kept on the model")
        self.components_ = W.T
        self.A_bar_, self.B_bar_ = A, B
        self.coefficients_ = H
        self.loss_ = np.asarray(losses)
        std = paper_noise_std(paper_sensitivity(n), eps_e, delta_e)
        self.noise_std_ = std
        # the ε the added noise buys over the 2I releases at δ_e, if Δ held
        self.epsilon_noise_implied_ = 2 * n_epochs * gaussian_epsilon(
            std, paper_sensitivity(n), delta_e)
        self.n_h_steps_, self.n_w_steps_ = n_h, n_w
        self._set_ledger(ledger)
        labels = self._evaluation_assign(X)
        self.row_labels_ = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        self.labels_ = self.row_labels_
        self.row_labels_private_ = False
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1

    # ------------------------------------------------------------ data the user holds
    def _check_X(self, X) -> sp.csr_matrix:
        return self._check_fitted_input(X, "components_")

    def transform(self, X) -> np.ndarray:
        """NOT PRIVATE (reads X): each document's coefficients for the fitted topics, n×K.

        Every document solves its own ``min ½‖v − W h‖²`` over ``{h ≥ 0, ‖h‖ ≤ 1}``
        (:data:`TRANSFORM_STEPS` projected-gradient steps from h = 0), on the documents as the
        mode sees them (unit-norm in corrected mode, raw counts in paper mode). Use it on
        data you hold; never publish its output as DP.
        """
        X = self._check_X(X)
        W = self.components_.T
        WtV = topic_scores(self._documents(X), W)
        H = local_coefficients(WtV, W.T @ W, np.zeros_like(WtV), TRANSFORM_STEPS)
        return np.ascontiguousarray(H.T)

    def _evaluation_assign(self, X: sp.csr_matrix) -> np.ndarray:
        """EVALUATION ONLY (not private). Paper: farthest topic from X/max(X) with the
        reference's tie handling (labels sorted in topic-major order, truncated to n);
        corrected: nearest topic to the unit-norm row."""
        C = self.components_                              # K × m
        rows = self._documents(X)
        top = X.max() if self.mode == "paper" else 1.0   # paper: the rows X/max(X)
        if top <= 0:
            top = 1.0
        if isinstance(rows, np.ndarray):  # dense: scaled after the products, no copy
            x2 = np.einsum("ij,ij->i", rows, rows) / top**2
            cross = (C @ rows.T).T / top
        else:
            Xh = rows / top if top != 1.0 else rows
            x2 = np.asarray(Xh.multiply(Xh).sum(axis=1)).ravel()
            cross = np.asarray(Xh @ C.T)
        dist = x2[:, None] - 2.0 * cross + np.einsum("km,km->k", C, C)[None, :]
        dist = np.sqrt(np.maximum(dist, 0.0))
        if self.mode != "paper":
            return np.argmin(dist, axis=1)
        n = dist.shape[0]
        ks, docs = np.nonzero(dist.T == dist.max(axis=1)[None, :])  # k-major, as the reference
        labels = np.zeros(n, dtype=np.int64)
        labels[docs[:n]] = ks[:n]
        return labels

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, NOT PRIVATE (reads X): the paper's protocol — the farthest topic in
        paper mode (the plotted ``nmi_xc``), the nearest topic in corrected mode.

        >>> import numpy as np
        >>> from dptaucc.baselines.nmf_dp import DPNMF
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> model = DPNMF(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
        >>> labels = model.evaluation_row_labels(X)
        >>> labels.shape, set(labels.tolist()) <= {0, 1}
        ((20,), True)
        """
        return self._evaluation_assign(self._check_X(X))

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit, then label the documents of X. NOT PRIVATE in either mode (reads X after the
        fit): corrected mode returns :meth:`evaluation_row_labels` (it keeps no training
        labels), paper mode the authors' ``labels_``.

        >>> import numpy as np
        >>> from dptaucc.baselines.nmf_dp import DPNMF
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> labels = DPNMF(n_clusters=2, epsilon=1.0, random_state=0).fit_predict(X)
        >>> model = DPNMF(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
        >>> bool(np.array_equal(labels, model.evaluation_row_labels(X)))
        True
        """
        self.fit(X)
        return self.labels_ if self.mode == "paper" else self.evaluation_row_labels(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = bool(self.secure) or self.random_state is None
        return tags
