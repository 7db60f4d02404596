"""DP-τCC: differentially private associative co-clustering (paper Algorithms 1-3).

Budget (paper §4, supplement B.2): ε' = ε/(2I) per half iteration; the exponential-mechanism
assignment gets h·ε' (utility eq. 4.9, range sensitivity eq. 4.10), the noisy table (1−h)·ε'
with L1 sensitivity 1 (eq. 4.11); negatives are clipped to 0 (post-processing).
Calls: one initial column assignment + (I−1) column assignments, I row assignments and 2I
tables, i.e. I·h·ε'·2 + 2I·(1−h)·ε' = ε. Every call is charged to ``privacy_ledger_``.

Neighbouring relation: one cell of A incremented by 1 (event-level privacy, paper §4.1).

Per iteration the cost is O(nnz + (n+m)·K·L): ``A C`` and ``Rᵀ A`` are scatter-adds of the
CSR non-zeros by label; no dense n×m array is built (the blind init builds n×L0 directly).

Modes:

* ``"corrected"`` (default, ε-DP end to end): the first table uses the blind row partition
  R⁽⁰⁾ (paper Alg. 1 line 12); every table is the integer count table plus exact discrete
  Laplace noise, clipped at 0 (so released and internal tables are integers, whose possible
  values do not depend on the data); zero marginals are guarded in utility *and* sensitivity
  (see :mod:`dptaucc.objective`), so Δ is always finite and computed by the mechanism from the
  weights themselves; the last DP row partition is released as ``row_labels_``.
  ``secure=True`` draws all noise from OpenDP's exact samplers with OS randomness.
* ``"paper"``: the authors' code where it changes results: (Q1) the first table is built from
  an all-zero row incidence (pure clipped noise, still charged); (Q4) an unguarded NaN
  sensitivity makes the whole assignment uniform (still charged); tables carry textbook float
  Laplace noise; (Q7) ``row_labels_`` come from a final *non-private* argmax on the raw data,
  rows whose best utility is <= 0 getting label 0 (ledger ``mark_non_private``, so
  ``epsilon_spent_`` is inf; ``row_labels_private_ = False``).

Both modes keep the reference's forced diversity (post-processing of DP labels with fresh
randomness): if an assignment puts every object in one cluster, ``c`` random objects get labels
0..c−1; if one cluster is left after relabelling, ⌊n/100⌋ (at least 1) random objects move to
cluster 1. It is skipped when only one cluster was requested.
Known deviation in both modes: the choices are sampled exactly (see
:mod:`dptaucc.privacy.samplers`), not with the
reference's shift-to-100 softmax, whose overflow handling differs when ε·u/Δ exceeds ~709.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from dptaucc._common import force_diversity, indicator_rows
from dptaucc.base import EPSILON, MODE, RANDOM_STATE, SECURE, CoClustererMixin, PrivateEstimator
from dptaucc.init import blind_block_init
from dptaucc.methods import COUNTS, MethodInfo
from dptaucc.objective import (
    aggregate_columns,
    aggregate_columns_and_table,
    aggregate_rows,
    column_weights,
    group_sum,
    relabel,
    row_weights,
)
from dptaucc.privacy import (
    DP,
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    POST_PROCESSING,
    PUBLIC,
    PrivacyLedger,
    Sampler,
    discrete_laplace_mechanism,
    exponential_mechanism,
    float_laplace_mechanism,
    linear_exponential_mechanism,
    linear_range_sensitivity,
)
from dptaucc.validation import check_n_clusters, matrix_token

__all__ = ["DPTauCC"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dp_taucc", estimator="dptaucc.DPTauCC",
    label="DP-τCC", color="tab:blue", linestyle="-", marker="o", family="co-clustering",
    neighbours="one cell +1",
    # its tables are integer counts of X plus integer noise: a fractional count would be
    # released with its fractional part exact, so X must hold whole counts
    domain=COUNTS,
    role="paper",
    coclusters=True,
    audit="dptaucc.dp_taucc_audit",
)

# Corrected mode: smallest sensitivity used. Raising Δ keeps it an upper bound (more privacy);
# it stops floating-point round-off in the utilities (~1e-16 relative) from being amplified
# by ε/Δ when a released table has nearly identical rows or columns.
SENSITIVITY_FLOOR = 1e-9


def _assign_corrected(profiles, weights, epsilon, sampler, ledger, step,
                      scratch=None) -> np.ndarray:
    """Alg. 3: exponential mechanism on u = P Wᵀ, Δ from W (eq. 4.9-4.10)."""
    return linear_exponential_mechanism(profiles, weights=weights, epsilon=epsilon,
                                        sampler=sampler, ledger=ledger, step=step,
                                        sensitivity_floor=SENSITIVITY_FLOOR, scratch=scratch)


def _assign_paper(profiles, weights, raw_weights, epsilon, sampler, ledger, step) -> np.ndarray:
    """The authors' assignment: utilities from guarded weights, Δ from the unguarded ones.

    A NaN Δ (a zero marginal, Q4) or a zero one samples uniformly; charged in every case.
    """
    utilities = np.asarray(profiles @ weights.T, dtype=float)
    delta = linear_range_sensitivity(raw_weights)
    if math.isfinite(delta) and delta > 0:
        return exponential_mechanism(utilities, epsilon=epsilon, sensitivity=delta,
                                     sampler=sampler, ledger=ledger, step=step)
    why = ("NaN sensitivity (paper Q4): uniform assignment" if math.isnan(delta)
           else "zero sensitivity: utilities equal across choices, uniform assignment")
    return exponential_mechanism(np.zeros_like(utilities), epsilon=epsilon, sensitivity=1.0,
                                 sampler=sampler, ledger=ledger, step=step,
                                 note=why)


def _flat_memory(array: np.ndarray, size: int) -> np.ndarray:
    """A flat float64 view of ``array``'s memory (contiguous, in either order) when it holds
    at least ``size`` values, else a new array: scratch memory the caller will overwrite."""
    if array.dtype == np.float64 and array.size >= size and array.flags.writeable:
        for view in (array, array.T):
            if view.flags.c_contiguous:
                return view.reshape(-1)
    return np.empty(size)


def _noisy_table(exact: np.ndarray, epsilon: float, sampler: Sampler, ledger: PrivacyLedger,
                 step: str, paper: bool, note: str = "") -> np.ndarray:
    """Alg. 2: T̃ = max(0, T + noise), L1 sensitivity 1 (eq. 4.11).

    Corrected: exact discrete Laplace on the integer table (int64 result). Paper: the
    authors' float Laplace.
    """
    if paper:
        noisy = float_laplace_mechanism(exact, epsilon=epsilon, sensitivity=1.0, sampler=sampler,
                                        ledger=ledger, step=step, note=note)
        return np.maximum(noisy, 0.0)
    noisy = discrete_laplace_mechanism(np.rint(exact), epsilon=epsilon, sensitivity=1,
                                       sampler=sampler, ledger=ledger, step=step, note=note)
    return np.maximum(noisy, 0)


def paper_final_row_labels(
    X: sp.csr_matrix, col_labels: np.ndarray, table: np.ndarray, rng: np.random.Generator,
) -> np.ndarray:
    """NOT PRIVATE (paper mode Q7, reads the raw data): the authors' final row assignment.

    r_i = argmax_k Σ_l (A C)_il β_kl with unguarded β (a zero column of T̃ makes every utility
    NaN); rows whose best utility is not > 0 get label 0; ties go to the last cluster; then
    relabel, and if one cluster is left 1 % of the rows (random) move to cluster 1.
    """
    K, L = table.shape
    AC = aggregate_columns(X, col_labels, L)
    with np.errstate(invalid="ignore"):
        util = AC @ row_weights(table, guard=False).T
        best = util.max(axis=1)
        choice = (K - 1) - np.argmax(util[:, ::-1], axis=1)
        labels = np.where(best > 0, choice, 0)
    labels, k = relabel(labels)
    if k == 1 and labels.size > 1:
        labels[rng.integers(0, labels.size, size=max(1, labels.size // 100))] = 1
    return relabel(labels)[0]


def prototype_row_labels(
    X: sp.csr_matrix, col_labels: np.ndarray, table: np.ndarray,
) -> np.ndarray:
    """NOT PRIVATE (evaluation only): each row of X to its best prototype of ``table``.

    argmax_k σ(a_i, t̃_k) = Σ_l (A C)_il β_kl (eq. 4.9) with the guarded weights.
    """
    AC = aggregate_columns(X, col_labels, table.shape[1])
    return np.argmax(AC @ row_weights(table, guard=True).T, axis=1).astype(np.intp)


class DPTauCC(CoClustererMixin, PrivateEstimator):
    """ε-differentially private co-clustering by the de-normalised Goodman–Kruskal τ̂.

    Parameters
    ----------
    n_row_clusters, n_col_clusters : int
        Initial K0, L0 (clusters that empty are removed, so the final counts can be smaller).
    epsilon : float
        Total privacy budget ε (> 0; ``inf``, the noiseless argmax algorithm, in paper mode
        only: corrected mode refuses it).
    n_iterations : int
        I, the number of (column, table, row, table) iterations.
    h : float in (0, 1)
        Share of each half-iteration budget ε' = ε/(2I) spent on the assignment.
    mode : {"corrected", "paper"}
        See the module docstring.
    random_state : None, int or numpy Generator
        Seeds the one Generator all randomness of a fit is drawn from (seeded path).
    secure : bool, default False
        Draw every mechanism's noise from OpenDP's exact samplers with the operating system's
        randomness (needs the ``secure`` extra; ``random_state`` must be None; corrected mode
        only). Use it for a release you publish; the seeded default is for reproducible
        research. Same ledger, same distributions, slower (one OpenDP call per object and
        assignment).

    Attributes
    ----------
    row_labels_ : DP row labels (corrected) or the non-private final labels (paper, Q7).
    row_labels_private_ : bool, True iff ``row_labels_`` is a DP output.
    dp_row_labels_ : the last DP row partition (both modes; rows of ``contingency_``).
    column_labels_ : last DP column partition.
    contingency_ : the last released noisy table T̃ (K×L, clipped at 0; int64 in corrected
        mode, float in paper mode).
    tau_rc_, tau_cr_ : normalised Goodman–Kruskal τ_{R|C}, τ_{C|R} of T̃ (as in every
        co-clusterer of the suite).
    tau_hat_rc_, tau_hat_cr_ : de-normalised τ̂_{R|C}, τ̂_{C|R} (eq. 3.2) of T̃, the quantity
        the paper's Fig. 3 plots.
    privacy_ledger_, epsilon_spent_ (inf in paper mode), delta_spent_ (= 0) : the fit's
        privacy accounting.
    n_row_clusters_, n_col_clusters_, rows_, columns_, n_iter_ (= I), n_features_in_.

    The kind of every fitted attribute (DP output, post-processing, public, non-private) is
    declared in ``release_kinds()``.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))   # two blocks of counts
    >>> model = DPTauCC(2, 2, epsilon=30.0, random_state=0).fit(X)
    >>> model.contingency_.dtype, model.epsilon_spent_, model.row_labels_private_
    (dtype('int64'), 30.0, True)
    >>> len(model.privacy_ledger_.entries)
    16
    """

    _parameter_constraints = {
        "n_row_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_col_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "n_iterations": [Interval(Integral, 1, None, closed="left")],
        "h": [Interval(Real, 0, 1, closed="neither")],
        "mode": MODE,
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _domain = METHOD.domain

    _release_kinds = {
        "row_labels_": DP, "dp_row_labels_": DP, "column_labels_": DP, "contingency_": DP,
        "row_labels_private_": PUBLIC, "n_iter_": PUBLIC, "n_features_in_": PUBLIC,
        "tau_rc_": POST_PROCESSING, "tau_cr_": POST_PROCESSING,
        "tau_hat_rc_": POST_PROCESSING, "tau_hat_cr_": POST_PROCESSING,
        "n_row_clusters_": POST_PROCESSING, "n_col_clusters_": POST_PROCESSING,
        "rows_": POST_PROCESSING, "columns_": POST_PROCESSING,
        **LEDGER_ATTRIBUTES,
    }
    # Q7: the final labels read the raw rows
    _paper_release_kinds = {"row_labels_": NON_PRIVATE, "rows_": NON_PRIVATE,
                            "n_row_clusters_": NON_PRIVATE}

    def __init__(self, n_row_clusters=2, n_col_clusters=2, epsilon=1.0, n_iterations=4, h=0.9,
                 mode="corrected", random_state=None, secure=False):
        self.n_row_clusters = n_row_clusters
        self.n_col_clusters = n_col_clusters
        self.epsilon = epsilon
        self.n_iterations = n_iterations
        self.h = h
        self.mode = mode
        self.random_state = random_state
        self.secure = secure

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None):
        """Co-cluster the count matrix X (dense or scipy.sparse, whole non-negative counts)."""
        X = self._check_fit(X)
        epsilon, n_iter, h = float(self.epsilon), int(self.n_iterations), float(self.h)
        n, m = X.shape
        K0 = check_n_clusters(self.n_row_clusters, n, "n_row_clusters", "rows")
        L0 = check_n_clusters(self.n_col_clusters, m, "n_col_clusters", "columns")
        sampler = self._sampler()
        rng = sampler.rng  # data-independent draws and post-processing
        paper = self.mode == "paper"

        ledger = PrivacyLedger(budget_epsilon=epsilon, strict=True)
        eps_half = epsilon / (2 * n_iter)
        eps_assign = h * eps_half
        eps_table = (1.0 - h) * eps_half

        def assign(profiles, table_weights, raw_weights, n_choices, n_requested, step,
                   scratch=None):
            if paper:
                labels = _assign_paper(profiles, table_weights, raw_weights, eps_assign,
                                       sampler, ledger, step)
            else:
                labels = _assign_corrected(profiles, table_weights, eps_assign, sampler,
                                           ledger, step, scratch)
            return force_diversity(labels, n_choices, n_requested, rng)

        def raw(weights_of, table, transpose=False):
            """The unguarded weights, which only paper mode reads (Q4)."""
            if not paper:
                return None
            weights = weights_of(table, guard=False)
            return weights.T if transpose else weights

        def table_of(exact, step, note=""):
            return _noisy_table(exact, eps_table, sampler, ledger, step, paper, note)

        # Alg. 1 lines 4-6: blind init, then C⁽¹⁾ from Aᵀ and the synthetic rows of S0
        # (profiles: the columns of A over the n rows; weights γ0 of S0, one row per choice).
        # γ0ᵀ = row_weights(S0ᵀ), the same numbers as column_weights(S0).T bit for bit (S0 holds
        # whole numbers, so its sums are exact in any order), read from S0's contiguous
        # transpose and laid out L0×n: the range sensitivity then reads contiguous memory.
        init = blind_block_init(n, m, K0, L0, rng)
        gamma0 = row_weights(init.S0.T, guard=True)
        c, L = assign(X.T, gamma0, raw(row_weights, init.S0.T), L0, L0,
                      "init/column-assignment")
        if paper:
            r, K = None, K0
        else:  # every synthetic row block is non-empty: already labelled 0..K0−1
            r, K = init.row_labels, K0
        table = np.zeros((K, L))  # replaced at t = 1 before any use
        # A C and the row utilities of every iteration (L <= L0, K <= K0) in memory the
        # initialisation no longer needs (S0 and γ0, n·L0 values each): a fresh n×L array is
        # cleared page by page by the operating system, about 8 ms at n·L = 5e6
        ac_memory = _flat_memory(init.S0, n * L0)
        utility_memory = _flat_memory(gamma0, n * K0)

        for t in range(1, n_iter + 1):
            if t > 1:  # Alg. 1 line 10: C from Aᵀ R (profiles m×K) and T̃ (weights L×K)
                AR = aggregate_rows(X, r, K)
                c, L = assign(AR.T, column_weights(table, guard=True).T,
                              raw(column_weights, table, transpose=True), table.shape[1], L0,
                              f"iter{t}/column-assignment")
            ac_out = ac_memory[:n * L].reshape(n, L)
            if r is None:  # paper Q1: all-zero row incidence, a data-independent table
                AC = aggregate_columns(X, c, L, out=ac_out)
                table = table_of(np.zeros((K0, L)), f"iter{t}/table-before-rows",
                                 "paper Q1: all-zero row incidence (pure noise)")
            else:  # A C and the exact table Rᵀ A C under the previous rows, in one pass
                AC, exact = aggregate_columns_and_table(X, c, L, r, K, out=ac_out)
                table = table_of(exact, f"iter{t}/table-before-rows")
            r, K = assign(AC, row_weights(table, guard=True), raw(row_weights, table),
                          table.shape[0], K0, f"iter{t}/row-assignment", utility_memory)
            table = table_of(group_sum(r, AC, K), f"iter{t}/table-after-rows")

        self._set_ledger(ledger)
        self._set_table(table)
        self.column_labels_ = c
        self.dp_row_labels_ = r
        self.n_col_clusters_ = L
        self.n_iter_ = n_iter
        self.n_features_in_ = m
        if paper:
            # Q7: seed drawn in the fit, so evaluation_row_labels(X_fit) == row_labels_.
            self._final_seed = int(rng.integers(2**63 - 1))
            ledger.mark_non_private(
                "final/row-assignment",
                "paper Q7: argmax of the raw rows against T̃ (label 0 if best utility <= 0)")
            self.epsilon_spent_ = ledger.epsilon_spent
            self.row_labels_ = paper_final_row_labels(X, c, table,
                                                      np.random.default_rng(self._final_seed))
            # a frozen matrix's name: evaluating on that matrix returns these labels as they are
            self._fit_matrix_token = matrix_token(X)
            self.row_labels_private_ = False
        else:
            self.row_labels_ = r
            self.row_labels_private_ = True
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1
        self.rows_ = indicator_rows(self.row_labels_, self.n_row_clusters_)
        self.columns_ = indicator_rows(c, L)
        self._warn_if_fewer_clusters()
        return self

    # ------------------------------------------------------- evaluation only
    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY — NOT PRIVATE: the paper's protocol, reads the raw rows of X.

        Assigns each row of X to its best released prototype (row of ``contingency_``) under
        the released ``column_labels_``. In paper mode this is the authors' final step (Q7) and
        returns ``row_labels_`` for the training matrix; in corrected mode it is the plain
        argmax of eq. (4.9) with the guarded weights. Never release its output as DP.
        """
        X = self._check_fitted_input(X, "contingency_")
        if self.mode == "paper":
            token = getattr(self, "_fit_matrix_token", None)
            if token is not None and matrix_token(X) == token:  # the fitted (frozen) matrix
                return self.row_labels_.copy()
            return paper_final_row_labels(X, self.column_labels_, self.contingency_,
                                          np.random.default_rng(self._final_seed))
        return prototype_row_labels(X, self.column_labels_, self.contingency_)
