"""The ledger: what a fit spent, check-then-spend, and ε = ∞ after a non-private step."""

import math

import pytest

from dptaucc.privacy import BudgetExceededError, PrivacyLedger


def test_mechanism_sum_and_non_private_steps():
    ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    ledger.charge("a", "exponential", 0.25, composition="parallel", noise_scale=2.0)
    ledger.charge("b", "discrete-laplace", 0.75, sensitivity=1.0)
    assert ledger.epsilon_spent == pytest.approx(1.0) and ledger.end_to_end_dp
    ledger.mark_non_private("final", "reads the raw rows")
    assert ledger.epsilon_spent == math.inf
    assert ledger.epsilon_mechanisms == pytest.approx(1.0)
    assert ledger.non_private_steps == ["final"] and not ledger.end_to_end_dp
    assert [r["noise_scale"] for r in ledger.to_records()][0] == 2.0


def test_strict_ledger_refuses_before_the_mechanism_runs():
    ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    ledger.charge("a", "x", 0.6)
    with pytest.raises(BudgetExceededError, match="'b'"):
        ledger.charge("b", "x", 0.6)
    assert len(ledger) == 1


def test_bad_charges():
    with pytest.raises(ValueError, match="composition"):
        PrivacyLedger().charge("a", "x", 1.0, composition="other")
    with pytest.raises(ValueError, match="invalid charge"):
        PrivacyLedger().charge("a", "x", -1.0)
