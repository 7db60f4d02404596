"""DP-τCC's audit scenarios (``METHOD.audit``): worst-case pairs, events and known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``all_zero_matrix``, I = 1, h = 0.1: D's tables are pure noise, so any cell
released without noise, or any exact value, is seen at once; the last table carries nearly half
the budget. ``moving_row``, I = 1, h = 0.5: one count decides the cluster of a balanced row
(labels read from the data flip). ``all_zero_row``, I = 1, h = 0.1 (and h = 0.02 with one fixed
event, the power scenario): the one count lands in one released cell.

Call sites: ``all_zero_row`` / ``all_zero_column`` at ε = 4·I, h = 0.5, every call charged 1;
the zero row (column) makes its choice hinge on one count, and the released table's cell moves
by the full sensitivity 1.
"""

from __future__ import annotations

import numpy as np

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import (
    Bug,
    UnderChargingLedger,
    after_fit,
    double_epsilon_unlogged,
    scale_argument,
)
from dptaucc.audit.pairs import all_zero_column, all_zero_matrix, all_zero_row, moving_row
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios"]


def _events(p) -> tuple[ev.Event, ...]:
    return (ev.table_cell_reachable(p), ev.contingency_equals_exact(p.D), *label_events(p))


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


def _call_sites() -> tuple[CallSiteSetup, ...]:
    taucc = (("epsilon", 8.0), ("n_iterations", 2), ("h", 0.5))
    return (CallSiteSetup(all_zero_row(), taucc),
            CallSiteSetup(all_zero_column(), taucc, max_calls=5))


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
)


def scenarios() -> AuditScenarios:
    """DP-τCC's audit (module docstring).

    >>> s = scenarios()
    >>> [x.pair.name for x in s.end_to_end]
    ['all_zero_row', 'all_zero_matrix', 'moving_row', 'all_zero_row']
    >>> [c.pair.name for c in s.call_sites]
    ['all_zero_row', 'all_zero_column']
    """
    return AuditScenarios(_end_to_end(), _call_sites(), BUGS,
                          paper_leaks="non-private final labels")
