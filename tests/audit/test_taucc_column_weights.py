"""DP-τCC's second column (row) assignment on a flat exact table: the setups that see weights
read from the data after a correct call (``dp_taucc.column_weights_from_exact_table``, and its
twin for the rows ``dp_taucc.row_weights_from_exact_table``).

Their history forces every input of the call (labels, released tables), so the call's exact law
on D and D' is read from the utilities and the scale the sampler was handed: the correct code
moves the changed object's choice only (at most its charge), weights read from the exact table
move every object's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptaucc import DPTauCC
from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.methods import call_site_setup
from dptaucc.audit.transcript import record, replay
from dptaucc.audit.workers import bug_context
from dptaucc.dp_taucc_audit import flat_table_and_empty_column
from dptaucc.objective import column_weights, contingency_table, row_weights
from dptaucc.privacy.checks import RecordingSampler

#: pair -> (the bug it is for, the audited call, its step)
SETUPS = {
    "flat_table_and_empty_column": ("dp_taucc.column_weights_from_exact_table", 4,
                                    "iter2/column-assignment"),
    "flat_table_and_empty_row": ("dp_taucc.row_weights_from_exact_table", 6,
                                 "iter2/row-assignment"),
}
both = pytest.mark.parametrize("name", sorted(SETUPS))


def _setup(name: str = "flat_table_and_empty_column"):
    return next(s for s in call_site_setup("dp_taucc") if s.pair.name == name)


def _law(setup, X, bug: str | None = None) -> tuple[np.ndarray, float]:
    """(every object's choice probabilities, the charged ε) of the audited call on X after the
    setup's crafted history."""
    params = dict(setup.params)
    _, k, step = SETUPS[setup.pair.name]
    with bug_context(bug):
        history = setup.craft(record(DPTauCC(**params, random_state=0), setup.pair.D))
        sampler = RecordingSampler(1)
        call = replay(DPTauCC(**params, random_state=sampler), X, history, k)
    assert call.step == step
    draw = sampler.of_kind("choose")[-1]
    u = np.asarray(draw.inputs) / draw.scale
    p = np.exp(u - u.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), call.epsilon


def _loss(p_d: np.ndarray, p_dp: np.ndarray) -> float:
    """The pure-ε privacy loss of the whole output (columns drawn independently)."""
    log_ratio = np.log(p_dp / p_d)
    return float(max(log_ratio.max(axis=1).sum(), (-log_ratio).max(axis=1).sum()))


@both
def test_the_pair_is_neighbouring_and_its_table_flat_under_the_forced_labels(name):
    setup = _setup(name)
    pair = setup.pair
    diff = (pair.D_prime - pair.D).tocoo()
    assert (diff.row.tolist(), diff.col.tolist(), diff.data.tolist()) == (
        [pair.u], [pair.v], [1])
    changed = pair.D[:, pair.v] if name.endswith("column") else pair.D[pair.u]
    assert changed.nnz == 0  # the changed column (row) has no counts in D
    K, L = dict(setup.params)["n_row_clusters"], dict(setup.params)["n_col_clusters"]
    history = setup.craft(record(DPTauCC(**dict(setup.params), random_state=0), pair.D))
    rows = next(c.output for c in history if c.step == "iter1/row-assignment")
    for step in ("init/column-assignment", "iter2/column-assignment"):  # the tables' labels
        cols = next(c.output for c in history if c.step == step)
        table = contingency_table(pair.D, rows, cols, K, L)
        assert np.unique(table).size == 1 and table[0, 0] > 0
        assert not np.any(column_weights(table)) and not np.any(row_weights(table))  # Δ = 0
        moved = contingency_table(pair.D_prime, rows, cols, K, L)
        assert np.any(column_weights(moved)) and np.any(row_weights(moved))
    with pytest.raises(ValueError, match="multiple of n_row_clusters"):
        flat_table_and_empty_column(3, 4, n_rows=4)


@both
def test_correct_code_moves_only_the_changed_object_by_at_most_its_charge(name):
    setup = _setup(name)
    (p_d, eps), (p_dp, _) = (_law(setup, X) for X in (setup.pair.D, setup.pair.D_prime))
    assert math.isclose(eps, 2.0)
    np.testing.assert_allclose(p_d[:-1], p_dp[:-1], rtol=1e-12)  # weights from T̃ (forced)
    share = _loss(p_d, p_dp) / eps
    assert 0.9 <= share <= 1.0 + 1e-9, share


@both
def test_weights_from_the_exact_table_move_every_object(name):
    setup = _setup(name)
    bug = SETUPS[name][0]
    (p_d, eps), (p_dp, _) = (_law(setup, X, bug) for X in (setup.pair.D, setup.pair.D_prime))
    np.testing.assert_allclose(p_d, 1.0 / p_d.shape[1])  # flat exact table: uniform on D
    moved = np.abs(np.log(p_dp / p_d)).max(axis=1)
    assert np.all(moved[p_d.shape[0] // 2:] > 0.5)  # not only the changed object's choice
    assert np.sum(moved > 0.5) >= p_d.shape[0] // 2
    assert _loss(p_d, p_dp) > 10 * eps


@pytest.mark.parametrize("name, planted", [(n, p) for n in sorted(SETUPS) for p in (False, True)])
def test_the_call_site_audit_tells_the_planted_bug_from_the_correct_code(name, planted):
    setup = _setup(name)
    bug, k, _ = SETUPS[name]
    bug, verdict = (bug, "violation") if planted else (None, "ok")

    def build(seed):
        return DPTauCC(**dict(setup.params), random_state=seed)

    result = audit_call_site(build, setup.pair.D, setup.pair.D_prime, k, n_fits=20_000,
                             alpha=0.05, bug=bug, craft=setup.craft,
                             n_histories=setup.n_histories)
    assert result.verdict == verdict, (result.epsilon_lower, result.event)
    if bug is None:
        assert result.epsilon_lower <= result.epsilon_claimed
    else:
        assert result.epsilon_lower > 2 * result.epsilon_claimed
