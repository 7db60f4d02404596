"""The two layers of the audit: call sites (transcript, replay) and end-to-end derived events.

Each layer must fail on a planted bug and pass on the correct code (evidence that can fail).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from dptaucc import DPTauCC
from dptaucc.audit import events as ev
from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.endtoend import audit_release, release_views
from dptaucc.audit.events import AuditEventError
from dptaucc.audit.experiment import _construct, violations
from dptaucc.audit.pairs import all_zero_matrix, all_zero_row
from dptaucc.audit.transcript import HistoryDiverged, record, replay
from dptaucc.privacy.hook import MECHANISM_HOOK

PAIR = all_zero_row()
TAUCC = functools.partial(_construct, {"name": "dp_taucc", "_target_": "dptaucc.DPTauCC"}, {
    "n_row_clusters": 2, "n_col_clusters": 2, "epsilon": 4.0, "n_iterations": 1, "h": 0.5,
    "mode": "corrected"})


def test_transcript_reads_the_ledger_and_replay_forces_the_history():
    model = TAUCC(1)
    calls = record(model, PAIR.D)
    assert MECHANISM_HOOK.get() is None
    assert [c.step for c in calls] == [e.step for e in model.privacy_ledger_.entries]
    assert [c.epsilon for c in calls] == [e.epsilon for e in model.privacy_ledger_.entries]
    assert np.array_equal(np.maximum(calls[-1].output, 0), model.contingency_)
    call = replay(TAUCC(2), PAIR.D_prime, calls, 2)
    assert call.step == calls[2].step and call.epsilon == pytest.approx(1.0)
    with pytest.raises(HistoryDiverged):
        replay(TAUCC(2), PAIR.D, calls, 10)


def test_the_ledger_not_the_argument_is_the_claim():
    from dptaucc.audit.catalogue import CATALOGUE

    with CATALOGUE["dp_taucc.table_epsilon_doubled"].applied():
        calls = record(TAUCC(1), PAIR.D)
    assert calls[1].epsilon == pytest.approx(1.0)  # the mechanism drew at 2


@pytest.mark.parametrize("bug,violates", [(None, False),
                                          ("dp_taucc.table_sensitivity_halved", True)])
def test_call_site_audit_sees_a_halved_sensitivity(bug, violates):
    res = audit_call_site(TAUCC, PAIR.D, PAIR.D_prime, 3, n_fits=40_000, alpha=0.05, bug=bug,
                          n_histories=2, n_pilot=1000, looks=1)
    assert res.step == "iter1/table-after-rows" and res.epsilon_claimed == pytest.approx(1.0)
    assert (res.verdict == "violation") is violates, res


def _zero_matrix_build():
    return functools.partial(_construct, {"name": "dp_taucc", "_target_": "dptaucc.DPTauCC"}, {
        "n_row_clusters": 2, "n_col_clusters": 2, "epsilon": 1.0, "n_iterations": 1,
        "h": 0.1, "mode": "corrected"})


@pytest.mark.parametrize("bug,violates", [(None, False), ("dp_taucc.zero_cells_unnoised", True)])
def test_end_to_end_derived_events_see_unnoised_zero_cells(bug, violates):
    z = all_zero_matrix()
    res = audit_release(_zero_matrix_build(), z.D, z.D_prime, (), n_fits=600, alpha=0.05,
                        claim=1.0, bug=bug, looks=1)
    assert (res.epsilon_lower > 1.0) is violates, res


def test_release_views_cover_declared_numeric_releases():
    views = release_views(DPTauCC(2, 2, random_state=0).fit(PAIR.D))
    assert {"contingency_", "row_labels_", "column_labels_", "tau_rc_"} <= set(views)
    assert "privacy_ledger_" not in views and "contingency_ sorted row sums" in views


def test_a_typo_in_an_event_stops_the_end_to_end_audit():
    typo = ev.Event("labels of row u", lambda m: m.labels_[PAIR.u] == 0)
    with pytest.raises(AuditEventError, match="attribute 'labels_'"):
        audit_release(TAUCC, PAIR.D, PAIR.D_prime, [typo], n_fits=8, alpha=0.05, looks=1)


def test_the_gate_counts_corrected_violations_only():
    recs = [{"mode": "paper", "verdict": "violation"}, {"mode": "corrected", "verdict": "ok"},
            {"mode": "corrected", "verdict": "no evidence"},
            {"mode": "corrected", "verdict": "violation"}]
    assert violations(recs) == [recs[3]]


def test_derived_events_are_chosen_on_one_half_and_find_a_shifted_coordinate():
    from dptaucc.audit import derived

    rng = np.random.default_rng(0)
    A = rng.integers(0, 3, size=(400, 3)).astype(float)
    B = A.copy()
    B[:, 1] += 5  # coordinate 1 never overlaps
    ids = np.zeros(400, dtype=np.int64)
    events = derived.select(A[::2], B[::2], ids[::2], ids[::2], n_events=1)
    assert events[0].j == 1 and events[0].kind in ("le", "proj")
    eps, best, k_a, k_b = derived.bound(events, A[1::2], B[1::2], ids[1::2], ids[1::2], 0.05)
    assert eps > 3.0 and best is not None


def test_an_audit_whose_events_never_fire_gives_no_evidence():
    from dptaucc.audit import derived

    A = np.zeros((50, 2))
    ids = np.zeros(50, dtype=np.int64)
    never = derived.DerivedEvent("le", 0, -1.0, label="x[0] <= -1")
    eps, best, _, _ = derived.bound([never], A, A, ids, ids, 0.05)
    assert np.isnan(eps) and best is None


def test_power_section_and_figure_from_a_stored_table(tmp_path):
    import pandas as pd

    from dptaucc.audit.power import POWER_COLUMNS, draw_power_figure, power_section

    rows = [["(correct code)", "dp_taucc", "", False, 0.7, 0.7, 1.0, "call-site", "#3", 9.0, 4],
            ["dp_taucc.x", "dp_taucc", "sensitivity off by 2", True, 1.4, 1.4, 1.0,
             "call-site", "#3", 5.0, 2],
            ["dp_taucc.y", "dp_taucc", "attribute from raw data", False, float("nan"),
             float("nan"), float("nan"), "", "", 5.0, 2]]
    path = tmp_path / "audit_power.parquet"
    pd.DataFrame(rows, columns=POWER_COLUMNS).to_parquet(path)
    text = "\n".join(power_section(path))
    assert "**1 of 2** catalogue bugs" in text and "**0 of 1** methods" in text
    assert all(p.stat().st_size for p in draw_power_figure(path, tmp_path / "figures"))
