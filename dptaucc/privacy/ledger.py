"""The privacy ledger: every mechanism call of one ``fit``, and what the fit really spent.

Neighbouring relation of the suite (paper §4.1): ``A' = A + e_u e_vᵀ`` (one cell of the count
matrix incremented by one); an estimator that proves its guarantee under another relation
(e.g. replacing one row, which covers a one-cell change) says so in its entries' notes.

Composition conventions of an entry:

* ``"sequential"`` — one release; its (ε, δ) adds to the total.
* ``"parallel"`` — one call of a mechanism applied independently to disjoint objects (e.g. one
  exponential mechanism per row); by parallel composition the family costs its per-object
  (ε, δ) once, and that is what the entry holds. It adds to the total too.
* ``"non-private"`` — a step that reads the private data outside any mechanism (a paper-mode
  quirk, or an initialisation a published method leaves unbudgeted). Its privacy loss is
  unbounded: :attr:`PrivacyLedger.epsilon_spent` is then ``inf``, so that no finite number
  understates what the fit spent, while :attr:`PrivacyLedger.epsilon_mechanisms` still says
  what the mechanisms themselves cost.

Evaluation-only steps (the paper's protocol of assigning rows to released prototypes) are not
part of a fit and are never charged here: they are methods the user calls on data they hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

__all__ = ["LedgerEntry", "PrivacyLedger", "BudgetExceededError", "COMPOSITIONS"]

COMPOSITIONS = ("sequential", "parallel", "non-private")


class BudgetExceededError(RuntimeError):
    """A strict ledger was asked to spend more than its budget.

    >>> ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    >>> ledger.charge("step", "laplace", epsilon=1.5)
    Traceback (most recent call last):
    ...
    dptaucc.privacy.ledger.BudgetExceededError: step 'step' would spend (ε=1.5, δ=0) of a ...)
    >>> len(ledger)  # refused before anything is recorded (check-then-spend)
    0
    """


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism call (or one named non-private step).

    ``noise_scale`` is the scale of the noise the call actually drew (Laplace/discrete Laplace
    b = Δ/ε, Gaussian σ, Gumbel β = Δ/ε of the exponential mechanism); NaN for steps that
    draw none.

    >>> entry = LedgerEntry("table", "discrete_laplace", 0.5, sensitivity=1.0, noise_scale=2.0)
    >>> entry.as_dict()["noise_scale"], entry.composition
    (2.0, 'sequential')
    """

    step: str
    mechanism: str
    epsilon: float
    delta: float = 0.0
    sensitivity: float = math.nan
    composition: str = "sequential"
    note: str = ""
    noise_scale: float = math.nan

    def as_dict(self) -> dict:
        # flat fields only: a plain comprehension, ~20x cheaper than dataclasses.asdict
        return {name: getattr(self, name) for name in _ENTRY_FIELDS}


_ENTRY_FIELDS = tuple(f.name for f in fields(LedgerEntry))


def _add_exactly(partials: list[float], x: float) -> None:
    """Add x to a list of non-overlapping partial sums whose exact total is kept (Shewchuk's
    algorithm, as ``math.fsum`` runs internally): ``math.fsum(partials)`` is then the correctly
    rounded total of every value added, the same double as ``math.fsum`` of the values."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


class _ExactTotals:
    """Running ``math.fsum`` of ε and δ over the mechanism entries of one ``entries`` list."""

    __slots__ = ("source", "count", "epsilons", "deltas", "finite")

    def __init__(self, source: list):
        self.source, self.count = source, 0
        self.epsilons: list[float] = []
        self.deltas: list[float] = []
        self.finite = True  # inf or NaN: the partials no longer hold; sum the values again

    def catch_up(self) -> None:
        for entry in self.source[self.count:]:
            if entry.composition != "non-private":
                if not (math.isfinite(entry.epsilon) and math.isfinite(entry.delta)):
                    self.finite = False
                if self.finite:
                    _add_exactly(self.epsilons, entry.epsilon)
                    _add_exactly(self.deltas, entry.delta)
        self.count = len(self.source)

    def _values(self, name: str):
        return (getattr(e, name) for e in self.source if e.composition != "non-private")

    def epsilon(self) -> float:
        return math.fsum(self.epsilons if self.finite else self._values("epsilon"))

    def delta(self) -> float:
        return math.fsum(self.deltas if self.finite else self._values("delta"))


@dataclass
class PrivacyLedger:
    """Per-fit record of every privacy-relevant step.

    ``budget_epsilon``/``budget_delta`` are what the caller asked for. With ``strict=True``
    a charge that would take the mechanisms beyond the budget (beyond a relative 1e-9 for
    float round-off) raises :class:`BudgetExceededError` *before* the mechanism runs
    (check-then-spend). Paper-mode estimators use ``strict=False`` because the published code
    overspends; the ledger then records the real spend.

    >>> ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    >>> _ = ledger.charge("rows", "exponential", 0.45, sensitivity=1.0, composition="parallel")
    >>> _ = ledger.charge("table", "discrete_laplace", 0.55, sensitivity=1.0, noise_scale=1 / 0.55)
    >>> ledger.epsilon_spent, ledger.end_to_end_dp, len(ledger)
    (1.0, True, 2)
    >>> [r["step"] for r in ledger.to_records()]
    ['rows', 'table']

    A step that reads the data outside any mechanism makes the fit's ε infinite, while the
    mechanisms' own cost stays visible:

    >>> _ = ledger.mark_non_private("init", "k-means++ seeding on the raw rows")
    >>> ledger.epsilon_spent, ledger.epsilon_mechanisms, ledger.non_private_steps
    (inf, 1.0, ['init'])
    """

    budget_epsilon: float = math.inf
    budget_delta: float = 0.0
    strict: bool = False
    entries: list[LedgerEntry] = field(default_factory=list)
    _totals: _ExactTotals | None = field(default=None, init=False, repr=False, compare=False)

    def charge(
        self,
        step: str,
        mechanism: str,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = math.nan,
        composition: str = "sequential",
        note: str = "",
        noise_scale: float = math.nan,
    ) -> LedgerEntry:
        """Record a mechanism call, checking the budget first when strict."""
        if composition not in COMPOSITIONS:
            raise ValueError(f"composition must be one of {COMPOSITIONS}, got {composition!r}")
        if composition != "non-private":
            if not (epsilon >= 0) or not (0 <= delta <= 1):
                raise ValueError(f"invalid charge epsilon={epsilon!r}, delta={delta!r}")
            if self.strict:
                eps_after = self.epsilon_mechanisms + epsilon
                delta_after = self.delta_spent + delta
                tol = 1e-9 * max(1.0, self.budget_epsilon)
                if eps_after > self.budget_epsilon + tol or delta_after > self.budget_delta + 1e-15:
                    raise BudgetExceededError(
                        f"step {step!r} would spend (ε={eps_after:.6g}, δ={delta_after:.3g}) "
                        f"of a budget (ε={self.budget_epsilon:.6g}, δ={self.budget_delta:.3g})"
                    )
        entry = LedgerEntry(step, mechanism, float(epsilon), float(delta), float(sensitivity),
                            composition, note, float(noise_scale))
        self.entries.append(entry)
        return entry

    def mark_non_private(self, step: str, note: str) -> LedgerEntry:
        """Name a step that reads the private data outside any mechanism (ε = ∞)."""
        return self.charge(step, "none", math.inf, 0.0, math.nan, "non-private", note)

    def _exact_totals(self) -> _ExactTotals:
        """The running exact sums of ε and δ, brought up to date with ``entries`` (rebuilt
        when the list was replaced or shortened)."""
        totals = self._totals
        if totals is None or totals.source is not self.entries or totals.count > len(self.entries):
            totals = self._totals = _ExactTotals(self.entries)
        totals.catch_up()
        return totals

    @property
    def epsilon_mechanisms(self) -> float:
        """Sequential (basic-composition) sum of ε over the mechanism calls (``math.fsum``:
        correctly rounded, kept as running exact partial sums, O(1) per new entry)."""
        return self._exact_totals().epsilon()

    @property
    def epsilon_spent(self) -> float:
        """What the fit really spent: the mechanisms' sum, or ``inf`` after a non-private step."""
        return math.inf if self.non_private_steps else self.epsilon_mechanisms

    @property
    def delta_spent(self) -> float:
        """Sum of δ over the mechanism calls (``math.fsum``, as :attr:`epsilon_mechanisms`)."""
        return self._exact_totals().delta()

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
