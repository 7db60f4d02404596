"""DP-τCC for one row replaced: co-clustering private for whole rows (documents).

The neighbouring relation is the one of DP-KMeans, DPHD and DPNMF: two count matrices are
neighbours when one row is replaced by any other row (which covers the one-cell change of
:class:`~dptaucc.DPTauCC`). Every row is first brought into the public L1 ball of radius
``row_bound`` = B (:mod:`dptaucc.row_bound`, ``row_scaling`` "scale" or "clip"), so the two
versions of the replaced row are at L1 distance at most 2B. The algorithm is DP-τCC's
(paper Alg. 1) with three changes, each proved in docs/privacy.md ("DP-τCC for one row
replaced"):

* **Row assignments are internal and not released**: each row goes to its best prototype of the
  last noisy table, argmax_k Σ_l (Ã C)_il β_kl (eq. 4.9), a function of that row and of
  earlier releases only. They spend no budget, keep K0 row clusters (no relabelling, no forced
  diversity: either would make one row's label move the others'), and no row label leaves the
  fit: rows are scored by the evaluation protocol (:meth:`DPTauCCRow.evaluation_row_labels`,
  not private), like every baseline.
* **Column assignments are one joint release**: replacing a row moves the utilities of every
  column, by at most 2B times the range sensitivity of the weights (eq. 4.10) in total
  (:func:`~dptaucc.privacy.joint_linear_exponential_mechanism`, composition ``sequential``).
* **Tables have L1 sensitivity 2B** (eq. 4.11 for a whole row): the replaced row's mass B leaves
  one cell row and (at most) B arrives in another; exact discrete Laplace, clipped at 0.

Budget: ε/I per iteration; its column assignment gets h·ε/I and each of its two tables
(1−h)·ε/(2I): I assignments + 2I tables = ε. The tables get DP-τCC's share; the assignments
get DP-τCC's row-assignment share on top. Corrected mode only: the authors' code has no such
variant, so there is no paper mode to reproduce.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from dptaucc._common import force_diversity, indicator_rows
from dptaucc.base import EPSILON, RANDOM_STATE, SECURE, CoClustererMixin, PrivateEstimator
from dptaucc.dp_taucc import SENSITIVITY_FLOOR, prototype_row_labels
from dptaucc.init import blind_block_init
from dptaucc.methods import COUNTS, MethodInfo
from dptaucc.objective import (
    aggregate_columns_and_table,
    aggregate_rows,
    column_weights,
    group_sum,
    row_weights,
)
from dptaucc.privacy import (
    DP,
    LEDGER_ATTRIBUTES,
    POST_PROCESSING,
    PUBLIC,
    PrivacyLedger,
    Sampler,
    discrete_laplace_mechanism,
    joint_linear_exponential_mechanism,
)
from dptaucc.row_bound import ROW_SCALINGS, bound_rows
from dptaucc.validation import check_n_clusters, freeze_count_matrix, matrix_fact

__all__ = ["DPTauCCRow", "DEFAULT_ROW_BOUND"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dp_taucc_row", estimator="dptaucc.DPTauCCRow",
    label="DP-τCC (row)", color="tab:cyan", linestyle="-", marker="*", family="co-clustering",
    neighbours="one row replaced (covers one cell)",
    modes=("corrected",),
    role="variant",
    coclusters=True,
    row_level=True,
    audit="dptaucc.dp_taucc_row_audit",
    domain=COUNTS,  # as DP-τCC: whole counts, bounded per row to whole counts
)

#: Default B. With ``row_scaling="scale"`` every non-empty row has mass B, so B sets only the
#: resolution of a row's shares (thousandths): the tables' signal (n·B) and their noise (2B/ε)
#: grow together, and so do the column utilities and their sensitivity. A public constant,
#: never read from the data.
DEFAULT_ROW_BOUND = 1000


def _noisy_table(exact: np.ndarray, epsilon: float, sensitivity: int, sampler: Sampler,
                 ledger: PrivacyLedger, step: str) -> np.ndarray:
    """T̃ = max(0, T + discrete Laplace(2B/ε)): L1 sensitivity 2B for one replaced row of mass
    at most B (eq. 4.11 for a whole row); int64."""
    noisy = discrete_laplace_mechanism(np.rint(exact), epsilon=epsilon, sensitivity=sensitivity,
                                       sampler=sampler, ledger=ledger, step=step,
                                       note="one row replaced: L1 sensitivity 2B")
    return np.maximum(noisy, 0)


def _assign_columns(profiles, weights: np.ndarray, epsilon: float, row_distance: int,
                    sampler: Sampler, ledger: PrivacyLedger, step: str) -> np.ndarray:
    """Every column's cluster in one joint exponential mechanism: the profiles move by at most
    2B in total (one replaced row), so Δ = 2B·Δ(W) (eqs. 4.9-4.10)."""
    return joint_linear_exponential_mechanism(
        profiles, weights=weights, epsilon=epsilon, profile_l1=row_distance, sampler=sampler,
        ledger=ledger, step=step, sensitivity_floor=SENSITIVITY_FLOOR,
        note="one row replaced: Δ = 2B × range of the weights, all columns together")


def internal_row_labels(AC: np.ndarray, table: np.ndarray) -> np.ndarray:
    """NOT RELEASED: each row to its best prototype of the released ``table``,
    argmax_k Σ_l (A C)_il β_kl (eq. 4.9, guarded weights; ties to the smaller k). Row i's label
    depends on row i and the table only."""
    return np.argmax(AC @ row_weights(table, guard=True).T, axis=1).astype(np.intp)


class DPTauCCRow(CoClustererMixin, PrivateEstimator):
    """ε-DP co-clustering by τ̂ for neighbours that differ in one whole row.

    Parameters
    ----------
    n_row_clusters, n_col_clusters : int
        K0 (kept: the released table has K0 rows) and L0 (column clusters that empty are
        removed).
    epsilon : float
        Total privacy budget ε (> 0, finite), for one row replaced.
    n_iterations : int
        I, the number of (column assignment, table, row assignment, table) iterations.
    h : float in (0, 1)
        Share of each iteration's budget ε/I spent on its column assignment (the rest goes to
        its two tables).
    row_bound : int, default 1000
        B, the public L1 bound of a row (see :data:`DEFAULT_ROW_BOUND`).
    row_scaling : {"scale", "clip"}, default "scale"
        "scale": every non-empty row rescaled to mass B (the most signal for the sensitivity
        2B); "clip": only rows heavier than B rescaled (then choose B from public knowledge
        of your rows' lengths). Whole counts either way (:func:`dptaucc.row_bound.bound_rows`).
    mode : {"corrected"}
        The only mode (there is no published code to reproduce).
    random_state : None, int or numpy Generator
        Seeds the one Generator all randomness of a fit is drawn from (seeded path).
    secure : bool, default False
        Draw every mechanism's noise from OpenDP's exact samplers with the operating system's
        randomness (``random_state`` must be None).

    Attributes
    ----------
    column_labels_ : DP column partition (the last joint assignment).
    contingency_ : the last released noisy table T̃ (K0×L, int64, clipped at 0).
    tau_rc_, tau_cr_, tau_hat_rc_, tau_hat_cr_ : τ statistics of T̃ (post-processing).
    n_col_clusters_, columns_ : from the DP column labels.
    privacy_ledger_, epsilon_spent_, delta_spent_ (= 0), n_iter_, n_features_in_.

    No row labels are released: ``evaluation_row_labels(X)`` (NOT PRIVATE) assigns rows to the
    released prototypes, the protocol every baseline is scored by.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc import DPTauCCRow
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))   # two blocks of counts
    >>> model = DPTauCCRow(2, 2, epsilon=30.0, random_state=0).fit(X)
    >>> model.contingency_.shape, model.epsilon_spent_, hasattr(model, "row_labels_")
    ((2, 2), 30.0, False)
    >>> [e.sensitivity for e in model.privacy_ledger_.entries][1:3]  # tables: 2B
    [2000.0, 2000.0]
    """

    _parameter_constraints = {
        "n_row_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_col_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "n_iterations": [Interval(Integral, 1, None, closed="left")],
        "h": [Interval(Real, 0, 1, closed="neither")],
        "row_bound": [Interval(Integral, 1, 2**31, closed="both")],
        "row_scaling": [StrOptions(set(ROW_SCALINGS))],
        "mode": [StrOptions({"corrected"})],
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _whole_counts = True

    _domain = METHOD.domain

    _release_kinds = {
        "column_labels_": DP, "contingency_": DP,
        "n_iter_": PUBLIC, "n_features_in_": PUBLIC,
        "tau_rc_": POST_PROCESSING, "tau_cr_": POST_PROCESSING,
        "tau_hat_rc_": POST_PROCESSING, "tau_hat_cr_": POST_PROCESSING,
        "n_col_clusters_": POST_PROCESSING, "columns_": POST_PROCESSING,
        **LEDGER_ATTRIBUTES,
    }

    def __init__(self, n_row_clusters=2, n_col_clusters=2, epsilon=1.0, n_iterations=4, h=0.9,
                 row_bound=DEFAULT_ROW_BOUND, row_scaling="scale", mode="corrected",
                 random_state=None, secure=False):
        self.n_row_clusters = n_row_clusters
        self.n_col_clusters = n_col_clusters
        self.epsilon = epsilon
        self.n_iterations = n_iterations
        self.h = h
        self.row_bound = row_bound
        self.row_scaling = row_scaling
        self.mode = mode
        self.random_state = random_state
        self.secure = secure

    def fit(self, X, y=None):
        """Co-cluster the count matrix X (dense or scipy.sparse, whole non-negative counts)."""
        X = self._check_fit(X)
        epsilon, n_iter, h = float(self.epsilon), int(self.n_iterations), float(self.h)
        n, m = X.shape
        K0 = check_n_clusters(self.n_row_clusters, n, "n_row_clusters", "rows")
        L0 = check_n_clusters(self.n_col_clusters, m, "n_col_clusters", "columns")
        bound = int(self.row_bound)
        distance = 2 * bound  # L1 distance of two rows in the ball
        # a per-row rule (no privacy cost), computed once per frozen matrix of a sweep
        A = matrix_fact(X, f"bound_rows({bound}, {self.row_scaling})",
                        lambda: freeze_count_matrix(bound_rows(X, bound, self.row_scaling)))
        sampler = self._sampler()
        rng = sampler.rng  # data-independent draws and post-processing
        ledger = PrivacyLedger(budget_epsilon=epsilon, strict=True)
        eps_assign = h * epsilon / n_iter
        eps_table = (1.0 - h) * epsilon / (2 * n_iter)

        def columns(profiles, weights, n_choices, step):
            labels = _assign_columns(profiles, weights, eps_assign, distance, sampler, ledger,
                                     step)
            return force_diversity(labels, n_choices, L0, rng)  # post-processing

        def table_of(exact, step):
            return _noisy_table(exact, eps_table, distance, sampler, ledger, step)

        # Alg. 1 lines 4-6: blind init (data-independent), C⁽¹⁾ from Ãᵀ and S0's weights γ0
        init = blind_block_init(n, m, K0, L0, rng)
        c, L = columns(A.T, row_weights(init.S0.T, guard=True), L0, "init/column-assignment")
        r = init.row_labels  # R⁽⁰⁾: K0 blocks, data-independent
        table = np.zeros((K0, L))
        for t in range(1, n_iter + 1):
            if t > 1:  # C from Ãᵀ R (profiles m×K0) and T̃ (weights L×K0), jointly
                c, L = columns(aggregate_rows(A, r, K0).T, column_weights(table, guard=True).T,
                               table.shape[1], f"iter{t}/column-assignment")
            AC, exact = aggregate_columns_and_table(A, c, L, r, K0)
            table = table_of(exact, f"iter{t}/table-before-rows")
            r = internal_row_labels(AC, table)  # not released, no budget
            table = table_of(group_sum(r, AC, K0), f"iter{t}/table-after-rows")

        self._set_ledger(ledger)
        self._set_table(table)
        self.column_labels_ = c
        self.n_col_clusters_ = L
        self.columns_ = indicator_rows(c, L)
        self.n_iter_ = n_iter
        self.n_features_in_ = m
        self._warn_if_fewer_clusters()
        return self

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY — NOT PRIVATE: the paper's protocol, reads the raw rows of X.

        Each row of X goes to its best released prototype (row of ``contingency_``) under the
        released ``column_labels_``, argmax of eq. (4.9) with the guarded weights: the rule
        :class:`~dptaucc.DPTauCC` is scored by (the argmax does not change when a row is
        rescaled, so the raw rows are read as they are). Never release its output as DP.
        """
        X = self._check_fitted_input(X, "contingency_")
        return prototype_row_labels(X, self.column_labels_, self.contingency_)
