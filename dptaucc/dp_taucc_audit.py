"""DP-τCC's audit scenarios (``METHOD.audit``): worst-case pairs, events and known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``all_zero_matrix``, I = 1, h = 0.1: D's tables are pure noise, so any cell
released without noise, or any exact value, is seen at once; the last table carries nearly half
the budget. ``moving_row``, I = 1, h = 0.5: one count decides the cluster of a balanced row
(labels read from the data flip). ``all_zero_row``, I = 1, h = 0.1 (and h = 0.02 with one fixed
event, the power scenario): the one count lands in one released cell.

Call sites: ``all_zero_row`` / ``all_zero_column`` at ε = 16, I = 2, h = 0.5, every call
charged 2; the zero row (column) makes its choice hinge on one count, and the released table's
cell moves by the full sensitivity 1. The first column assignment, whose weights come from the
blind initialisation: :func:`one_per_row_but_the_first` with one blind block per row. The
second column assignment once more on :func:`flat_table_and_empty_column`, history
:func:`flat_history`: the exact table after rows is flat, so weights read from it (not from the
released table) are zero on D and turned by the one count of D' for every column at once; its
twin ``flat_table_and_empty_row`` does the same for the second row assignment.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import (
    Bug,
    UnderChargingLedger,
    after_fit,
    double_epsilon_unlogged,
    scale_argument,
    totals_without,
)
from dptaucc.audit.pairs import (
    NeighbouringPair,
    all_zero_column,
    all_zero_matrix,
    all_zero_row,
    moving_row,
)
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events
from dptaucc.audit.transcript import Call

__all__ = ["scenarios", "worst_table", "one_per_row_but_the_first",
           "flat_table_and_empty_column", "flat_history"]


def _events(p) -> tuple[ev.Event, ...]:
    """Float cells, and every release recomputed the non-private way from D: the table, its
    τ statistics, the labels."""
    return (ev.table_cell_reachable(p), ev.contingency_equals_exact(p.D),
            ev.tau_equals_exact(p.D), *label_events(p))


def _end_to_end() -> tuple[Scenario, ...]:
    p, z, mv = all_zero_row(), all_zero_matrix(), moving_row()
    return (
        Scenario(p, (ev.table_cell_above(p, 0.5), *_events(p)),
                 "a row with no counts: float Laplace cells, paper mode's raw final "
                 "assignment (Q7); I = 1, h = 0.1: the last table carries the budget",
                 share=0.4, params=(("n_iterations", 1), ("h", 0.1))),
        Scenario(z, _events(z), "D has no counts: its tables are pure noise, exact values show",
                 share=0.3, params=(("n_iterations", 1), ("h", 0.1))),
        Scenario(mv, _events(mv), "one count decides a balanced row's cluster",
                 share=0.3, params=(("n_iterations", 1), ("h", 0.5))),
        Scenario(all_zero_row(), (ev.table_cell_above(all_zero_row(), 0.5),),
                 "the released cell of the changed count, I = 1, h = 0.02: that table "
                 "carries 0.49·ε; one fixed event, many cheap fits (the power scenario)",
                 share=10.0, params=(("n_iterations", 1), ("h", 0.02)), derive=False))


#: clusters of the call-site setups: a choice among many, one of them pushed down by Δ, is
#: the exponential mechanism's worst case (P_D/P_D' = 1/K + (1 − 1/K)·e^ε, 0.97 ε at K = 16)
MANY = 16
#: every call of a call-site fit is charged ε/(4I)·... = 2 (I = 2, h = 1/2: ε/8 a call)
CALL_EPSILON = 16.0


def _relabelled(output: np.ndarray, first: int) -> np.ndarray:
    """Labels ``i mod k`` (k = the recorded output's number of clusters, object ``first``
    in cluster 0): every cluster kept, so the later shapes of the history stay valid."""
    k = int(np.max(output)) + 1
    labels = (np.arange(output.size) - first) % k
    return labels.astype(np.asarray(output).dtype)


def worst_table(shape: tuple[int, int], a: int = 10, transpose: bool = False) -> np.ndarray:
    """A released table that makes the next row assignment's worst case (``transpose``: the
    next column assignment's): equal row sums, column 0 holding ``a`` in every row but the
    last, which holds 0 there (and 2a in column 1). Its weights β_k0 (eq. 4.9) are then one
    minimum and K − 1 equal maxima whose gap is the largest column range, Δ (eq. 4.10): a
    row with no counts (uniform utilities) that gets one count in a column of cluster 0 moves
    its utilities by exactly Δ against one choice.

    >>> worst_table((3, 2)).tolist()
    [[10, 10], [10, 10], [0, 20]]
    >>> worst_table((2, 3), transpose=True).tolist()  # the columns' case, for row 0
    [[10, 10, 0], [10, 10, 20]]
    """
    if transpose:
        return worst_table(shape[::-1], a).T
    K, L = shape
    T = np.full((K, L), a, dtype=np.int64)
    T[-1, 0] = 0
    if L > 1:
        T[-1, 1] = 2 * a
    return T


def _rows_history(history: list[Call]) -> list[Call]:
    """The row assignments' worst case for :func:`all_zero_row`: column labels ``j mod L``
    (the changed column 0 in cluster 0) and every table before rows :func:`worst_table`."""
    out = []
    for c in history:
        forced = c.output
        if c.step.endswith("column-assignment"):
            forced = _relabelled(c.output, 0)
        elif c.step.endswith("table-before-rows"):
            forced = worst_table(np.shape(c.output))
        out.append(Call(c.index, c.step, c.mechanism, c.epsilon, c.delta, forced))
    return out


def _columns_history(history: list[Call]) -> list[Call]:
    """The column assignments' worst case for :func:`all_zero_column` (its count in row 0):
    row labels ``i mod K`` (row 0 in cluster 0) and every table after rows the transposed
    :func:`worst_table`, whose row 0 gives the new column's utilities one minimum."""
    out = []
    for c in history:
        forced = c.output
        if c.step.endswith("row-assignment"):
            forced = _relabelled(c.output, 0)
        elif c.step.endswith("table-after-rows"):
            forced = worst_table(np.shape(c.output), transpose=True)
        out.append(Call(c.index, c.step, c.mechanism, c.epsilon, c.delta, forced))
    return out


def one_per_row_but_the_first(n_rows: int = MANY, n_cols: int = 2 * MANY) -> NeighbouringPair:
    """Column 0 holds one count in every row but row 0 in D, and in row 0 too in D' (the
    other columns are empty): the first column assignment's worst case with K0 = L0 = n
    (:func:`_call_sites`).

    With one blind row block per row, row i's synthetic weights have one maximum (its own
    block's column cluster) and equal minima, whatever the blind permutation. Column 0's
    utilities on D are then equal for every cluster but row 0's, which sits one count
    below; the new count lifts it by the call's whole sensitivity: P_D'/P_D of that cluster
    is 0.92–0.95 of e^ε (ε = 2), unless a noise flip of the blind matrix hits row 0.

    >>> pair = one_per_row_but_the_first(n_rows=3, n_cols=4)
    >>> pair.D.toarray()[:, 0].tolist(), pair.D_prime.toarray()[:, 0].tolist(), pair.cell
    ([0, 1, 1], [1, 1, 1], (0, 0))
    """
    X = np.zeros((n_rows, n_cols), dtype=np.int64)
    X[1:, 0] = 1
    D = sp.csr_matrix(X)
    D.eliminate_zeros()
    return NeighbouringPair("one_per_row_but_the_first", D, (0, 0), n_rows,
                            "column 0 has one count in every row but row 0; D' fills row 0")


def flat_table_and_empty_column(n_row_clusters: int = 2, n_col_clusters: int = MANY,
                                value: int = 2, n_rows: int = 4,
                                transpose: bool = False) -> NeighbouringPair:
    """K·L columns with ``value`` counts each, column j in row (j // L) mod ``n_rows``, and a
    last column with no counts in D and one (row 0) in D' (``transpose``: the same for the
    rows, ``flat_table_and_empty_row``: K·L rows, row i in column (i // K) mod ``n_rows``,
    and a last row with one count in column 0 in D').

    Under the row labels ``i mod K`` and column labels ``j mod L`` (:func:`flat_history`)
    the exact table is flat, every cell ``value``: its weights (eq. 4.9) are all zero (Δ = 0,
    a uniform choice). D''s count puts one more in cell (0, 0) and gives every column's
    weights a direction of range Δ' ≈ 1/(K·L·value): each column's utilities then differ by
    about ``value``·Δ', so an assignment whose weights were read from this exact table would
    tilt every column's choice by about ``value``·ε, where the released table moves only the
    last column's. The worst case for weights computed from data after a correct call
    (docs/audit.md, second-order leak).

    >>> from dptaucc.objective import column_weights, contingency_table
    >>> pair = flat_table_and_empty_column(2, 3, value=1, n_rows=2)
    >>> pair.D.toarray().tolist(), pair.cell
    ([[1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 0]], (0, 6))
    >>> rows, cols = np.arange(2) % 2, np.arange(7) % 3
    >>> flat = contingency_table(pair.D, rows, cols, 2, 3)
    >>> flat.tolist(), float(np.abs(column_weights(flat)).max())
    ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], 0.0)
    >>> contingency_table(pair.D_prime, rows, cols, 2, 3).tolist()
    [[2.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    >>> twin = flat_table_and_empty_column(3, 2, value=1, n_rows=2, transpose=True)
    >>> twin.name, twin.D.shape, twin.cell
    ('flat_table_and_empty_row', (7, 2), (6, 0))
    >>> contingency_table(twin.D, np.arange(7) % 3, np.arange(2) % 2, 3, 2).tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    if transpose:
        pair = flat_table_and_empty_column(n_col_clusters, n_row_clusters, value, n_rows)
        return NeighbouringPair("flat_table_and_empty_row", sp.csr_matrix(pair.D.T),
                                pair.cell[::-1], int(n_row_clusters),
                                "a table flat under the forced labels; a row with no counts in "
                                "D gets one count in D'")
    K, L = int(n_row_clusters), int(n_col_clusters)
    if n_rows % K:
        raise ValueError(f"n_rows ({n_rows}) must be a multiple of n_row_clusters ({K}): "
                         "row i is in cluster i mod K")
    X = np.zeros((n_rows, K * L + 1), dtype=np.int64)
    j = np.arange(K * L)
    X[(j // L) % n_rows, j] = value
    D = sp.csr_matrix(X)
    D.eliminate_zeros()
    return NeighbouringPair("flat_table_and_empty_column", D, (0, K * L), K,
                            "a table flat under the forced labels; a column with no counts in "
                            "D gets one count in D'")


def flat_history(n_row_clusters: int, n_col_clusters: int,
                 history: list[Call]) -> list[Call]:
    """The history of :func:`flat_table_and_empty_column`: column labels ``j mod L``, row
    labels ``i mod K`` (every cluster present, so the exact table after rows is flat), every
    table before rows :func:`worst_table` and after rows its transpose (the released table
    that puts the changed column's choice at its worst, as :func:`_columns_history`).

    >>> recorded = [Call(0, "init/column-assignment", "exponential", 2.0, 0.0, np.zeros(5)),
    ...             Call(1, "iter1/table-before-rows", "discrete-laplace", 2.0, 0.0,
    ...                  np.zeros((2, 1))),
    ...             Call(2, "iter1/row-assignment", "exponential", 2.0, 0.0, np.zeros(4))]
    >>> [c.output.tolist() for c in flat_history(2, 2, recorded)]
    [[0, 1, 0, 1, 0], [[10, 10], [0, 20]], [0, 1, 0, 1]]
    """
    K, L = int(n_row_clusters), int(n_col_clusters)
    out = []
    for c in history:
        forced = c.output
        if c.step.endswith("column-assignment"):
            forced = np.arange(np.size(c.output)) % L
        elif c.step.endswith("row-assignment"):
            forced = np.arange(np.size(c.output)) % K
        elif c.step.endswith("table-before-rows"):
            forced = worst_table((K, L))
        elif c.step.endswith("table-after-rows"):
            forced = worst_table((K, L), transpose=True)
        out.append(Call(c.index, c.step, c.mechanism, c.epsilon, c.delta, forced))
    return out


#: blind matrices tried for the first column assignment: about half put a noise flip where it
#: lowers the call's worst case (0.6 of the charge instead of 0.9–0.95)
INIT_HISTORIES = 12


def _call_sites() -> tuple[CallSiteSetup, ...]:
    """Every call charged 2 (ε = 16, I = 2, h = 1/2). Rows: a zero row gets one count, with
    K = 16 row clusters and the crafted tables of :func:`_rows_history` (tables and row
    assignments at their worst). Columns: a zero column gets one count, L = 16 and
    :func:`_columns_history` (the second iteration's column assignment at its worst). The
    first column assignment, whose weights come from the blind initialisation (no history
    can force them): :func:`one_per_row_but_the_first` with K0 = L0 = n = 16. The second
    column assignment again on :func:`flat_table_and_empty_column` (K = 2, L = 16, history
    :func:`flat_history`): the same worst case for the changed column, and an exact table after
    rows that is flat, so weights read from it instead of the released table move every
    column's choice (one forced history: every input of the call is forced). Its twin for the
    second row assignment: ``flat_table_and_empty_row`` (K = 16, L = 2), the exact table
    before rows flat."""
    taucc = (("epsilon", CALL_EPSILON), ("n_iterations", 2), ("h", 0.5))
    rows = all_zero_row(n_per_cluster=10)
    cols = all_zero_column(n_cols=2 * MANY)
    return (CallSiteSetup(rows, (*taucc, ("n_row_clusters", MANY), ("n_col_clusters", 2)),
                          craft=_rows_history, skip=("init/", "iter2/column")),
            CallSiteSetup(cols, (*taucc, ("n_row_clusters", 2), ("n_col_clusters", MANY)),
                          max_calls=5, craft=_columns_history, skip=("init/", "iter1/")),
            CallSiteSetup(one_per_row_but_the_first(),
                          (*taucc, ("n_row_clusters", MANY), ("n_col_clusters", MANY)),
                          max_calls=1, n_histories=INIT_HISTORIES),
            CallSiteSetup(flat_table_and_empty_column(2, MANY),
                          (*taucc, ("n_row_clusters", 2), ("n_col_clusters", MANY)),
                          max_calls=5, craft=partial(flat_history, 2, MANY),
                          skip=("init/", "iter1/"), n_histories=1),
            CallSiteSetup(flat_table_and_empty_column(MANY, 2, transpose=True),
                          (*taucc, ("n_row_clusters", MANY), ("n_col_clusters", 2)),
                          first=6, max_calls=1, craft=partial(flat_history, MANY, 2),
                          n_histories=1))


# ------------------------------------------------------------------ known bugs
def _zero_cells_unnoised(original):
    def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
        noisy = original(exact, epsilon, sampler, ledger, step, paper, note)
        if not paper:  # "keep the table sparse": cells that are 0 stay 0
            noisy = np.where(np.rint(np.asarray(exact)) == 0, 0, noisy)
        return noisy
    return buggy


def _float_noise_table(original):
    def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
        if paper:
            return original(exact, epsilon, sampler, ledger, step, paper, note)
        from dptaucc.privacy import as_sampler
        ledger.charge(step, "discrete-laplace", epsilon, 0.0, 1.0, "sequential", note,
                      1.0 / epsilon)
        noisy = np.asarray(exact, float) + as_sampler(sampler).rng.laplace(
            0.0, 1.0 / epsilon, np.shape(exact))
        return np.maximum(noisy, 0.0)
    return buggy


def _column_epsilon_doubled(original):
    """The column assignments spend 2ε while the ledger records ε (rows stay correct)."""
    def buggy(profiles, *, epsilon, ledger, step, **kwargs):
        if "column" in str(step):
            epsilon, ledger = 2 * epsilon, UnderChargingLedger(ledger)
        return original(profiles, epsilon=epsilon, ledger=ledger, step=step, **kwargs)
    return buggy


def _exact_table(model, X) -> None:
    from dptaucc.objective import contingency_table
    K, L = model.contingency_.shape
    model.contingency_ = contingency_table(X, model.dp_row_labels_, model.column_labels_, K, L)


def _raw_row_labels(model, X) -> None:
    from dptaucc.dp_taucc import prototype_row_labels
    from dptaucc.validation import check_count_matrix
    model.row_labels_ = prototype_row_labels(check_count_matrix(X, integer=True),
                                             model.column_labels_, model.contingency_)


def _exact_column_weights():
    """From iteration 2 the column weights come from the exact table after rows (the
    mechanism is called correctly; its input is read from the data): two patches sharing
    the last exact table."""
    seen: dict = {}

    def remember(original):
        def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
            if str(step).endswith("table-after-rows"):
                seen["exact"] = np.asarray(exact, dtype=float)
            return original(exact, epsilon, sampler, ledger, step, paper, note)
        return buggy

    def weights(original):
        def buggy(T, guard=True):
            exact = seen.get("exact")
            return original(T if exact is None or exact.shape != np.shape(T) else exact, guard)
        return buggy
    return ((_TAUCC, "_noisy_table", remember), (_TAUCC, "column_weights", weights))


def _exact_row_weights():
    """From iteration 2 the row weights come from the exact table before rows (the twin of
    :func:`_exact_column_weights`): the exact table is kept from that table's call to the
    next row assignment, which uses it once."""
    seen: dict = {}

    def remember(original):
        def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
            if str(step).endswith("table-before-rows") and not str(step).startswith("iter1/"):
                seen["exact"] = np.asarray(exact, dtype=float)
            return original(exact, epsilon, sampler, ledger, step, paper, note)
        return buggy

    def weights(original):
        def buggy(T, guard=True):
            exact = seen.pop("exact", None)
            return original(T if exact is None or exact.shape != np.shape(T) else exact, guard)
        return buggy
    return ((_TAUCC, "_noisy_table", remember), (_TAUCC, "row_weights", weights))


def _obvious_rows_by_argmax(original):
    def buggy(profiles, weights, epsilon, sampler, ledger, step, scratch=None):
        labels = original(profiles, weights, epsilon, sampler, ledger, step, scratch)
        P = np.asarray(profiles.toarray() if hasattr(profiles, "toarray") else profiles)
        obvious = (P > 0).sum(axis=1) == 1  # "one cluster of counts: no need to sample"
        return np.where(obvious, np.argmax(P @ np.asarray(weights).T, axis=1), labels)
    return buggy


_TAUCC = "dptaucc.dp_taucc"

BUGS = (
    Bug("dp_taucc.table_sensitivity_halved", "dp_taucc", "sensitivity off by 2",
        "every noisy table drawn for L1 sensitivity 1/2 instead of 1 (eq. 4.11); ledger "
        "charges the claimed ε", ((_TAUCC, "discrete_laplace_mechanism",
                                   scale_argument("sensitivity", 0.5)),)),
    Bug("dp_taucc.assignment_sensitivity_halved", "dp_taucc", "sensitivity off by 2",
        "the exponential mechanism's range sensitivity (eq. 4.10) computed half its value",
        (("dptaucc.privacy.mechanisms", "linear_range_sensitivity",
          lambda original: lambda weights: original(weights) / 2),)),
    Bug("dp_taucc.table_epsilon_doubled", "dp_taucc", "ε split spends 2ε, ledger unchanged",
        "each table spends 2·(1−h)·ε/(2I) while the ledger records (1−h)·ε/(2I)",
        ((_TAUCC, "discrete_laplace_mechanism", double_epsilon_unlogged()),)),
    Bug("dp_taucc.zero_cells_unnoised", "dp_taucc", "entries released without noise",
        "cells of the table whose exact count is 0 are released as 0 (to keep it sparse)",
        ((_TAUCC, "_noisy_table", _zero_cells_unnoised),)),
    Bug("dp_taucc.exact_table_released", "dp_taucc", "attribute from raw data",
        "contingency_ is the exact table of the data under the released partitions",
        ((_TAUCC + ":DPTauCC", "fit", after_fit(_exact_table)),)),
    Bug("dp_taucc.row_labels_from_data", "dp_taucc", "attribute from raw data",
        "row_labels_ re-assigned by reading the raw rows (the evaluation protocol) while "
        "row_labels_private_ stays True", ((_TAUCC + ":DPTauCC", "fit",
                                           after_fit(_raw_row_labels)),)),
    Bug("dp_taucc.float_noise_on_table", "dp_taucc", "float noise on a count",
        "tables get textbook float Laplace noise (charged as the discrete mechanism)",
        ((_TAUCC, "_noisy_table", _float_noise_table),)),
    Bug("dp_taucc.column_assignment_epsilon_doubled", "dp_taucc",
        "ε split spends 2ε, ledger unchanged",
        "the column assignments' exponential mechanism run at 2ε while the ledger records ε",
        ((_TAUCC, "linear_exponential_mechanism", _column_epsilon_doubled),)),
    # written for issue 33 after the audit's power work, to check it (kinds: an exact
    # quantity after a correct call, a privacy-map slip of 15 %, a raw-data shortcut)
    Bug("dp_taucc.column_weights_from_exact_table", "dp_taucc", "exact input after a call",
        "from iteration 2 the column assignment's weights are read from the exact table after "
        "rows, not from the released one", _exact_column_weights()),
    # its twin for the rows (written with the setup that sees both, flat_table_and_empty_*)
    Bug("dp_taucc.row_weights_from_exact_table", "dp_taucc", "exact input after a call",
        "from iteration 2 the row assignment's weights are read from the exact table before "
        "rows, not from the released one", _exact_row_weights()),
    Bug("dp_taucc.table_sensitivity_slip", "dp_taucc", "privacy map slip",
        "the tables' noise drawn for sensitivity 0.87 (a loss 15 % above the charge)",
        ((_TAUCC, "discrete_laplace_mechanism", scale_argument("sensitivity", 0.87)),)),
    Bug("dp_taucc.obvious_rows_by_argmax", "dp_taucc", "raw-data shortcut",
        "objects whose counts fall in one cluster are given the argmax of their utilities "
        "after the mechanism call instead of its sample",
        ((_TAUCC, "_assign_corrected", _obvious_rows_by_argmax),)),
    # a ledger that under-reports the noise it drew (issue 33, the ledger layer)
    Bug("dp_taucc.totals_drop_exponential", "dp_taucc", "ledger under-reports its noise",
        "the ledger's total leaves out the exponential mechanism's entries (every call is "
        "charged; ε_spent_ reads the tables only)",
        (("dptaucc.privacy.ledger:PrivacyLedger", "epsilon_mechanisms",
          totals_without("exponential")),)),
)


def scenarios() -> AuditScenarios:
    """DP-τCC's audit (module docstring).

    >>> s = scenarios()
    >>> [x.pair.name for x in s.end_to_end]
    ['all_zero_row', 'all_zero_matrix', 'moving_row', 'all_zero_row']
    >>> [c.pair.name for c in s.call_sites][:3]
    ['all_zero_row', 'all_zero_column', 'one_per_row_but_the_first']
    >>> [c.pair.name for c in s.call_sites][3:]
    ['flat_table_and_empty_column', 'flat_table_and_empty_row']
    """
    return AuditScenarios(_end_to_end(), _call_sites(), BUGS,
                          paper_leaks="non-private final labels")
