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


def test_running_totals_are_math_fsum_of_the_entries():
    """The ledger keeps running exact partial sums: after every charge its ε and δ are the
    doubles math.fsum gives over the entries (also across non-private steps, an infinite ε
    and a replaced entries list)."""
    import random

    from dptaucc.privacy.ledger import LedgerEntry

    rnd = random.Random(0)
    for _ in range(200):
        ledger, charged = PrivacyLedger(), []
        for _ in range(rnd.randint(1, 40)):
            if rnd.random() < 0.1:
                ledger.mark_non_private("s", "raw data")
                continue
            eps = rnd.choice([0.1, 1 / 3, 1e-16, 2.0**-60,
                              rnd.random() * 10 ** rnd.uniform(-20, 5)])
            delta = rnd.choice([0.0, 1e-9, rnd.random() * 1e-5])
            ledger.charge("s", "m", eps, delta, 1.0, rnd.choice(["sequential", "parallel"]))
            charged.append((eps, delta))
            assert ledger.epsilon_mechanisms == math.fsum(e for e, _ in charged)
            assert ledger.delta_spent == math.fsum(d for _, d in charged)
    ledger.charge("inf", "m", math.inf)
    assert ledger.epsilon_mechanisms == math.inf
    ledger.entries = [LedgerEntry("x", "m", 0.25), LedgerEntry("y", "m", 0.5)]
    assert ledger.epsilon_mechanisms == 0.75
    ledger.entries.pop()
    assert ledger.epsilon_mechanisms == 0.25


@pytest.mark.parametrize("delta", [-0.1, 1.5, 2.0])
def test_a_charge_with_delta_outside_zero_one_is_refused(delta):
    from dptaucc.privacy.ledger import PrivacyLedger

    with pytest.raises(ValueError, match="invalid charge"):
        PrivacyLedger().charge("step", "gaussian", 1.0, delta)
