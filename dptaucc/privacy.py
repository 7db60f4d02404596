"""Privacy accounting and the two mechanisms DP-τCC is built from.

Every mechanism call is charged to a :class:`PrivacyLedger` owned by one ``fit``.
Neighbouring relation (paper §4.1): ``A' = A + e_u e_vᵀ`` (one cell incremented by one).

Composition conventions of an entry:

* ``"sequential"`` — one release; its (ε, δ) adds to the total.
* ``"parallel"`` — one call of a mechanism applied independently to disjoint objects
  (e.g. one exponential mechanism per row); by parallel composition the family costs its
  per-object (ε, δ) once, and that is what the entry holds. It adds to the total too.
* ``"non-private"`` — a step that reads the private data outside any mechanism (for example a
  paper-mode quirk, or an initialisation a published method leaves unbudgeted). It spends an
  unbounded budget: it is listed in :attr:`PrivacyLedger.non_private_steps` and makes
  :attr:`PrivacyLedger.end_to_end_dp` false, but it is not added to the ε sum, so that the sum
  still says what the mechanisms themselves cost.

Evaluation-only steps (the paper's protocol of assigning rows to released prototypes) are not
part of a fit and are never charged here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = [
    "LedgerEntry",
    "PrivacyLedger",
    "BudgetExceededError",
    "exponential_mechanism",
    "laplace_mechanism",
    "check_epsilon",
]

COMPOSITIONS = ("sequential", "parallel", "non-private")


class BudgetExceededError(RuntimeError):
    """A strict ledger was asked to spend more than its budget."""


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism call (or one named non-private step)."""

    step: str
    mechanism: str
    epsilon: float
    delta: float = 0.0
    sensitivity: float = math.nan
    composition: str = "sequential"
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class PrivacyLedger:
    """Per-fit record of every privacy-relevant step.

    ``budget_epsilon``/``budget_delta`` are what the caller asked for. With ``strict=True``
    a charge that would exceed the budget (beyond a relative 1e-9 for float round-off)
    raises :class:`BudgetExceededError` *before* the mechanism runs (check-then-spend).
    Paper-mode estimators use ``strict=False`` because the published code overspends; the
    ledger then records the real spend.
    """

    budget_epsilon: float = math.inf
    budget_delta: float = 0.0
    strict: bool = False
    entries: list[LedgerEntry] = field(default_factory=list)

    def charge(
        self,
        step: str,
        mechanism: str,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = math.nan,
        composition: str = "sequential",
        note: str = "",
    ) -> LedgerEntry:
        """Record a mechanism call, checking the budget first when strict."""
        if composition not in COMPOSITIONS:
            raise ValueError(f"composition must be one of {COMPOSITIONS}, got {composition!r}")
        if composition != "non-private":
            if not (epsilon >= 0) or (delta < 0) or not (delta <= 1):
                raise ValueError(f"invalid charge epsilon={epsilon!r}, delta={delta!r}")
            if self.strict:
                eps_after = self.epsilon_spent + epsilon
                delta_after = self.delta_spent + delta
                tol = 1e-9 * max(1.0, self.budget_epsilon)
                if eps_after > self.budget_epsilon + tol or delta_after > self.budget_delta + 1e-15:
                    raise BudgetExceededError(
                        f"step {step!r} would spend (ε={eps_after:.6g}, δ={delta_after:.3g}) "
                        f"of a budget (ε={self.budget_epsilon:.6g}, δ={self.budget_delta:.3g})"
                    )
        entry = LedgerEntry(step, mechanism, float(epsilon), float(delta), float(sensitivity),
                            composition, note)
        self.entries.append(entry)
        return entry

    def mark_non_private(self, step: str, note: str) -> LedgerEntry:
        """Name a step that reads the private data outside any mechanism."""
        return self.charge(step, "none", math.inf, 0.0, math.nan, "non-private", note)

    @property
    def epsilon_spent(self) -> float:
        """Sequential (basic-composition) sum of ε over the mechanism calls."""
        return math.fsum(e.epsilon for e in self.entries if e.composition != "non-private")

    @property
    def delta_spent(self) -> float:
        return math.fsum(e.delta for e in self.entries if e.composition != "non-private")

    @property
    def non_private_steps(self) -> list[str]:
        return [e.step for e in self.entries if e.composition == "non-private"]

    @property
    def end_to_end_dp(self) -> bool:
        return not self.non_private_steps

    def to_records(self) -> list[dict]:
        return [e.as_dict() for e in self.entries]

    def __len__(self) -> int:
        return len(self.entries)


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite or infinite real number > 0."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a positive number, got {type(epsilon).__name__}")
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"{name} must be > 0, got {epsilon}")
    return epsilon


def exponential_mechanism(
    utilities: np.ndarray,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
) -> np.ndarray:
    """Sample one choice per row of ``utilities`` with P(k) ∝ exp(ε·u_k/Δ).

    ``sensitivity`` is the *range* sensitivity of the utility (paper eq. 4.10, Dong–Durfee–
    Rogers), for which weights exp(ε·u/Δ) without the factor ½ are ε-DP. Rows are disjoint
    objects, so the whole call is one parallel-composed ε charge. Sampling is exact for any
    utility scale: Gumbel-max on the logits, which never exponentiates.
    """
    utilities = np.asarray(utilities, dtype=float)
    if utilities.ndim != 2 or utilities.shape[1] == 0:
        raise ValueError("utilities must be a 2-D array with at least one choice per row")
    if not np.all(np.isfinite(utilities)):
        raise ValueError("utilities must be finite")
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    ledger.charge(step, "exponential", epsilon, 0.0, sensitivity, "parallel", note)
    if math.isinf(epsilon):
        # ε = ∞: the argmax (ties broken uniformly at random).
        best = utilities == utilities.max(axis=1, keepdims=True)
        noise = rng.random(utilities.shape)
        return np.argmax(np.where(best, noise, -1.0), axis=1)
    logits = (epsilon / sensitivity) * utilities
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)


def laplace_mechanism(
    values: np.ndarray,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
) -> np.ndarray:
    """Release ``values + Laplace(0, Δ/ε)`` (Δ: L1 sensitivity of the whole array)."""
    values = np.asarray(values, dtype=float)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    ledger.charge(step, "laplace", epsilon, 0.0, sensitivity, "sequential", note)
    if math.isinf(epsilon):
        return values.copy()
    return values + rng.laplace(0.0, sensitivity / epsilon, size=values.shape)
