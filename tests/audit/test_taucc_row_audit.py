"""The audit of DP-τCC's row variant puts its calls at their worst: under the crafted history
every table of a fit on ``row_moves_column`` moves by its full L1 sensitivity 2B, and the
second column assignment's utilities move by the call's whole sensitivity 2B·Δ(W) — on
``row_changes_label`` nearly all of it in one column."""

from __future__ import annotations

import numpy as np
import pytest

from dptaucc import DPTauCCRow
from dptaucc.audit.transcript import record, replay
from dptaucc.dp_taucc_row_audit import (
    LABEL_BOUND,
    ROW_BOUND,
    label_flip_history,
    row_changes_label,
    row_moves_between_columns,
    row_moves_column,
    split_columns_history,
)
from dptaucc.privacy.checks import RecordingSampler, ScaledSampler

STEPS = ["init/column-assignment", "iter1/table-before-rows", "iter1/table-after-rows",
         "iter2/column-assignment", "iter2/table-before-rows", "iter2/table-after-rows"]


def _noiseless(seed):
    """No noise at all (every scale times 0): a call's output is its exact input."""
    return RecordingSampler(ScaledSampler(seed, 0.0))


def _build(sampler, bound=ROW_BOUND):
    return DPTauCCRow(2, 2, epsilon=8.0, n_iterations=2, h=0.5, row_bound=bound,
                      random_state=sampler)


@pytest.fixture(scope="module")
def history():
    pair = row_moves_column()
    for seed in range(100):  # a noisy history whose columns put u's two columns together
        recorded = record(_build(seed), pair.D)
        if all(c.output[0] == c.output[4] for c in recorded if c.mechanism == "exponential"):
            break
    else:
        pytest.fail("no recorded history keeps columns 0 and 4 together in 100 seeds")
    crafted = split_columns_history()(recorded)
    assert [c.step for c in crafted] == STEPS
    return pair, crafted  # one recorded history, crafted


@pytest.mark.parametrize("k", [1, 2, 4, 5])
def test_every_table_moves_by_2B(history, k):
    pair, crafted = history
    on_d = replay(_build(_noiseless(1)), pair.D, crafted, k).output
    on_dp = replay(_build(_noiseless(1)), pair.D_prime, crafted, k).output
    assert np.abs(on_d - on_dp).sum() == 2 * ROW_BOUND


def test_second_column_assignment_moves_by_its_whole_sensitivity(history):
    pair, crafted = history
    scores = []
    for X in (pair.D, pair.D_prime):
        sampler = _noiseless(1)
        replay(_build(sampler), X, crafted, 3)
        scores.append(sampler.of_kind("choose")[-1].inputs)
    change = scores[1] - scores[0]
    ranges = change.max(axis=1) - change.min(axis=1)
    # weights of the diagonal table: Δ(W) = 1; two columns carry B·Δ(W) each
    assert sorted(ranges[ranges > 0].tolist()) == [ROW_BOUND, ROW_BOUND]
    assert ranges.sum() == pytest.approx(2 * ROW_BOUND * 1.0)


def test_one_count_flips_the_label_and_one_column_carries_the_charge():
    """On ``row_changes_label`` under ``label_flip_history`` (the second column assignment's
    setup) row u's one count in the other half flips its internal label: column 0's profile
    loses B in row cluster 0 and gains B − 1 in cluster 1, a utility range of (2B − 1)·Δ(W)
    (Δ(W) = 1), column 2 moves by 1·Δ(W): 2B in total, the call's whole sensitivity."""
    pair = row_changes_label()
    crafted = label_flip_history()(record(_build(0, LABEL_BOUND), pair.D))
    assert [c.step for c in crafted] == STEPS
    scores = []
    for X in (pair.D, pair.D_prime):
        sampler = _noiseless(1)
        replay(_build(sampler, LABEL_BOUND), X, crafted, 3)
        scores.append(sampler.of_kind("choose")[-1].inputs)
    change = scores[1] - scores[0]
    ranges = change.max(axis=1) - change.min(axis=1)
    assert ranges.tolist() == [2 * LABEL_BOUND - 1, 0, 1, 0]


def test_first_column_assignment_moves_two_columns_by_half_the_charge_each():
    """On ``row_moves_between_columns`` (the first column assignment's setup) the blind
    weights of row u span Δ(W) = 1 and both columns' utilities move by B·Δ(W): the call's
    whole sensitivity 2B·Δ(W), half in each column; and some blind matrix puts the label D
    favours in both columns at logit −2.5 (B − 1 counts of eight rows outside u's block)."""
    pair = row_moves_between_columns()
    logits = set()
    for seed in range(40):
        scores = []
        for X in (pair.D, pair.D_prime):
            sampler = _noiseless(seed)
            replay(_build(sampler), X, [], 0)
            scores.append(sampler.of_kind("choose")[-1].inputs / ROW_BOUND)  # β = B
        change = scores[1] - scores[0]
        ranges = change.max(axis=1) - change.min(axis=1)
        assert ranges.tolist() == [1.0, 1.0]
        d = scores[0][:, 0] - scores[0][:, 1]  # log odds of label 0 on D, per column
        assert d[0] == pytest.approx(-d[1])
        logits.add(round(float(-abs(d[0])), 3))
    assert -2.5 in logits
