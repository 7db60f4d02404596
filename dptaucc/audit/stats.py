"""Clopper–Pearson bounds and the simultaneous ε lower bound of an audit.

For an event E observed in ``k`` of ``n`` independent fits on D and ``k'`` of ``n'`` on D', an
(ε, δ)-DP mechanism satisfies ``P_D(E) <= e^ε · P_D'(E) + δ`` for every event and both orders
of the pair. With a lower confidence bound ``l`` on ``P_D(E)`` and an upper bound ``u'`` on
``P_D'(E)``, ``log((l − δ)/u')`` is a lower bound on ε whenever both bounds hold.

Candidates: every event E and its complement, in both directions (D over D' and D' over D):
4 per event. Each candidate reads two one-sided statements, "P_s(E) >= l_s(E)" and
"P_s(E) <= u_s(E)" for a side s (the complement's bounds are ``1 − u`` and ``1 − l`` of the
same statements), so m events make 4m distinct one-sided statements. Each is a one-sided
Clopper–Pearson interval at level ``α/(4m)`` (Bonferroni): with probability at least 1 − α all
of them hold at once, and then every candidate, hence their maximum ``ε_lower``, is below the
true ε. Clopper–Pearson intervals are exact (conservative) for any n, including k = 0 or n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

__all__ = ["cp_lower", "cp_upper", "Candidate", "epsilon_candidates", "epsilon_lower_bound"]


def cp_lower(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound: P(p >= bound) >= 1 − α for k ~ Bin(n, p).

    >>> round(float(cp_lower(50, 100, 0.05)), 3), float(cp_lower(0, 100, 0.05))
    (0.414, 0.0)
    """
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    with np.errstate(invalid="ignore"):
        out = beta.ppf(alpha, k, n - k + 1.0)
    return np.where(k <= 0, 0.0, out)


def cp_upper(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound: P(p <= bound) >= 1 − α for k ~ Bin(n, p).

    >>> round(float(cp_upper(0, 10, 0.05)), 4)  # 1 − 0.05^(1/10)
    0.2589
    >>> float(cp_upper(10, 10, 0.05)), bool(cp_upper(3, 10, 0.05) > 0.3)
    (1.0, True)
    """
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    with np.errstate(invalid="ignore"):
        out = beta.ppf(1.0 - alpha, k + 1.0, n - k)
    return np.where(k >= n, 1.0, out)


@dataclass(frozen=True)
class Candidate:
    """One (event, complement, direction) lower bound on ε.

    >>> Candidate("row 0 alone", True, "D'/D", 0.7, 40, 10).label
    "not (row 0 alone) [D'/D]"
    """

    event: str
    complement: bool  # True: the bound is for "not event"
    direction: str  # "D/D'" bounds log P_D(E)/P_D'(E); "D'/D" the reverse
    epsilon_lower: float  # -inf when the bounds say nothing (l − δ <= 0)
    count_num: int  # fits in which the (possibly complemented) event occurred, numerator side
    count_den: int  # same, denominator side

    @property
    def label(self) -> str:
        name = f"not ({self.event})" if self.complement else self.event
        return f"{name} [{self.direction}]"


def _log_ratio(lower: np.ndarray, upper: np.ndarray, delta: float) -> np.ndarray:
    num = lower - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(num) - np.log(upper)
    return np.where(num > 0, out, -np.inf)


def epsilon_candidates(
    names: list[str], k_d, k_dp, n_d: int, n_dp: int, alpha: float = 0.05, delta: float = 0.0,
) -> list[Candidate]:
    """All 4m candidates for m events with counts ``k_d`` (on D) and ``k_dp`` (on D').

    >>> candidates = epsilon_candidates(["e"], [900], [100], 1000, 1000)
    >>> [(c.label, round(c.epsilon_lower, 2)) for c in candidates]
    [("e [D/D']", 1.96), ("e [D'/D]", -2.45), ("not (e) [D/D']", -2.45), ("not (e) [D'/D]", 1.96)]
    >>> epsilon_candidates(["e"], [900, 1], [100], 1000, 1000)
    Traceback (most recent call last):
    ...
    ValueError: one count per event and side is needed
    """
    k_d = np.asarray(k_d, dtype=np.int64)
    k_dp = np.asarray(k_dp, dtype=np.int64)
    m = len(names)
    if k_d.shape != (m,) or k_dp.shape != (m,):
        raise ValueError("one count per event and side is needed")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    if m == 0 or n_d <= 0 or n_dp <= 0:
        return []
    a = alpha / (4 * m)
    lo_d, up_d = cp_lower(k_d, n_d, a), cp_upper(k_d, n_d, a)
    lo_p, up_p = cp_lower(k_dp, n_dp, a), cp_upper(k_dp, n_dp, a)
    out: list[Candidate] = []
    rows = (
        (False, "D/D'", lo_d, up_p, k_d, k_dp),
        (False, "D'/D", lo_p, up_d, k_dp, k_d),
        (True, "D/D'", 1.0 - up_d, 1.0 - lo_p, n_d - k_d, n_dp - k_dp),
        (True, "D'/D", 1.0 - up_p, 1.0 - lo_d, n_dp - k_dp, n_d - k_d),
    )
    for complement, direction, lower, upper, c_num, c_den in rows:
        eps = _log_ratio(lower, upper, delta)
        out += [Candidate(names[i], complement, direction, float(eps[i]), int(c_num[i]),
                          int(c_den[i])) for i in range(m)]
    return out


def epsilon_lower_bound(
    names: list[str], k_d, k_dp, n_d: int, n_dp: int, alpha: float = 0.05, delta: float = 0.0,
) -> tuple[float, Candidate | None]:
    """The simultaneous (1 − α) lower bound ``max(0, max candidate)`` and the candidate giving
    it (None when no candidate is above 0).

    An event seen in all 100 fits on D and in none on D':

    >>> eps, best = epsilon_lower_bound(["e"], [100], [0], 100, 100)
    >>> round(eps, 2), best.label
    (3.11, "not (e) [D'/D]")
    """
    cands = epsilon_candidates(names, k_d, k_dp, n_d, n_dp, alpha, delta)
    best = max(cands, key=lambda c: c.epsilon_lower, default=None)
    if best is None or not best.epsilon_lower > 0 or math.isnan(best.epsilon_lower):
        return 0.0, None
    return best.epsilon_lower, best
