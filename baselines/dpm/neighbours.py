"""The neighbouring-relation adapter: group privacy over two add/remove steps.

DP-τCC's neighbours differ in **one cell by one unit**. DPM and the colored-noise mechanism are
defined for **add/remove one row**. A one-cell change is "remove the row, add the modified
row", so by group privacy a mechanism that is (ε', δ')-DP under add/remove is
(2ε', (1 + e^{ε'})δ')-DP under a one-cell change (P[M(D)∈S] ≤ e^{ε'}(e^{ε'}P[M(D'')∈S] + δ')
+ δ'). Running at ε' = ε/2, δ' = δ/(1 + e^{ε/2}) therefore gives (ε, δ) at cell level.

In the ledger the add/remove mechanisms are charged at (ε', δ') and one extra entry of
(ε', e^{ε'}·δ') records the conversion, so that ``epsilon_spent``/``delta_spent`` are the
cell-level totals.
"""

from __future__ import annotations

import math

from scipy.special import expit

from dptaucc.privacy import PrivacyLedger

__all__ = ["row_level_budget", "charge_cell_level_conversion", "charge_capped_rest",
           "CONVERSION_STEP", "MAX_ROW_EPSILON"]

CONVERSION_STEP = "cell_level_group_privacy"
MAX_ROW_EPSILON = 200.0


def row_level_budget(epsilon: float, delta: float) -> tuple[float, float]:
    """(ε/2, δ/(1+e^{ε/2})): the add/remove budget whose 2-group is (ε, δ) at cell level.

    For finite ε > 2·MAX_ROW_EPSILON (= 400) ε' is capped at 200, because δ/(1+e^{ε/2}) would
    underflow to 0 and a Gaussian release needs δ' > 0; the fit then spends (400, δ) ≤ (ε, δ).
    ε = ∞ gives (∞, 0): no noise at all.

    >>> import math
    >>> eps_row, delta_row = row_level_budget(2.0, 1e-5)
    >>> eps_row, math.isclose(delta_row, 1e-5 / (1 + math.e))
    (1.0, True)
    >>> row_level_budget(1000.0, 1e-5)[0], row_level_budget(math.inf, 1e-5)
    (200.0, (inf, 0.0))
    """
    eps_row = epsilon / 2.0 if math.isinf(epsilon) else min(epsilon / 2.0, MAX_ROW_EPSILON)
    return eps_row, float(delta * expit(-eps_row))


def charge_cell_level_conversion(ledger: PrivacyLedger, epsilon_row: float,
                                 delta_row: float) -> None:
    """Add the group-privacy entry that turns add/remove totals into one-cell totals.

    >>> import math
    >>> from dptaucc.privacy import PrivacyLedger
    >>> eps_row, delta_row = row_level_budget(2.0, 1e-5)
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.charge("release", "gaussian", eps_row, delta_row)  # the add/remove mechanism
    >>> charge_cell_level_conversion(ledger, eps_row, delta_row)
    >>> ledger.epsilon_spent, math.isclose(ledger.delta_spent, 1e-5)  # the cell-level (ε, δ)
    (2.0, True)
    """
    extra_delta = 0.0 if delta_row == 0 else delta_row * math.exp(min(epsilon_row, 700.0))
    extra_delta = min(extra_delta, 1.0 - delta_row)  # a total δ ≥ 1 is vacuous; keep it ≤ 1
    ledger.charge(
        CONVERSION_STEP,
        "group privacy (k=2)",
        epsilon_row,
        extra_delta,
        math.nan,
        "sequential",
        f"entries above are add/remove-one-row DP with total (eps'={epsilon_row:.6g}, "
        f"delta'={delta_row:.6g}); a one-cell change = remove + add a row, so the fit is "
        f"(2eps', (1+e^eps')delta')-DP at the paper's cell level; this entry adds "
        f"(eps', e^eps' delta')",
    )


def charge_capped_rest(ledger: PrivacyLedger, epsilon: float) -> None:
    """For ε > 2·MAX_ROW_EPSILON, charge the ε − 400 the capped row budget leaves unspent
    (nothing drawn; computed from ε alone, never from the ledger), so that the fit's ledger
    spends exactly the ε it was given.

    >>> import math
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.charge("release", "gaussian", 200.0, 1e-90)
    >>> charge_cell_level_conversion(ledger, 200.0, 1e-90)
    >>> charge_capped_rest(ledger, 1000.0)
    >>> ledger.epsilon_spent
    1000.0
    >>> charge_capped_rest(PrivacyLedger(), 2.0)  # no cap below ε = 400: nothing charged
    """
    if math.isfinite(epsilon) and epsilon > 2.0 * MAX_ROW_EPSILON:
        ledger.charge("row_budget_cap_set_aside", "unused (set aside)",
                      epsilon - 2.0 * MAX_ROW_EPSILON, 0.0, math.nan, "sequential",
                      f"ε' is capped at {MAX_ROW_EPSILON:g} (δ' would underflow): the rest of "
                      "ε is charged, nothing drawn")
