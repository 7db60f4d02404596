"""The ledger checked against the noise: every charge against what its draw really costs.

:func:`check_fit` fits an estimator once with a hook (:mod:`dptaucc.privacy.hook`) that is
told each mechanism call's calibration (:mod:`dptaucc.privacy.calibration`: the scales the
sampler really drew at, the sensitivity the mechanism declared) and the ledger entries the
call appended. For every call the independent privacy map (:mod:`dptaucc.audit.privacy_map`)
recomputes the ε that noise costs at the δ charged; then the fit's totals are compared with
the budget it was given. The fit fails the check (:attr:`LedgerCheck.verdict` "violation",
the gate's exit 3) when:

1. a call is charged less than its noise costs (beyond :data:`RTOL`), or draws noise that no
   mechanism declared a calibration for;
2. the ledger's ε spent (or δ spent) differs from the ε (δ) the fit was given, in either
   direction, beyond :data:`RTOL` relative (the fit also reports ``epsilon_spent_``; it must
   be the ledger's), or the entries do not add up to the ledger's total;
3. an entry records noise (a finite noise scale) that no observed mechanism call drew, or a
   corrected-mode call draws textbook float Laplace noise;
4. a secure fit (an exact sampler) draws mechanism randomness from anything but the OS
   (a seeded or numpy-generator source).

Tolerance :data:`RTOL` = 10⁻⁶ relative (plus 10⁻¹² absolute on ε, 10⁻¹⁵ on δ): it covers the
float rounding of the calibrations (the bisections keep a relative margin of 10⁻¹²), OpenDP's
rounding of its maps upward, and the 2⁻²⁷ of a grid-snapped Gaussian; an error of a few per
cent, let alone a factor 2, is far above it. Paper-mode fits are checked the same way and
reported; the gate counts corrected mode only (:func:`dptaucc.audit.experiment.violations`).

It is cheap (two fits per side, the map costs microseconds per call), so every audit job runs
it on the pairs of its scenarios, as given and with every cell filled so that the dense paths
run too (:func:`ledger_record`), and tests run it on every estimator.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dptaucc.privacy.calibration import Calibration
from dptaucc.privacy.hook import MECHANISM_HOOK

from .privacy_map import call_cost

__all__ = ["CallCheck", "LedgerCheck", "check_fit", "observing", "mapped", "ledger_record",
           "filled", "ledger_section", "RTOL"]

RTOL = 1e-6
ATOL_EPSILON = 1e-12
ATOL_DELTA = 1e-15


@dataclass(frozen=True)
class CallCheck:
    """One mechanism call: its charge, what its noise costs, and whether the charge covers it.

    >>> CallCheck(0, "table", "discrete-laplace", 0.5, 0.0, 0.5, "opendp").ok
    True
    >>> CallCheck(0, "table", "discrete-laplace", 0.5, 0.0, 1.0, "opendp").ok  # under-charged
    False
    """

    index: int
    step: str
    mechanism: str
    epsilon_charged: float
    delta_charged: float
    epsilon_cost: float
    how: str
    sources: tuple[str, ...] = ()
    laws: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        if self.epsilon_cost == 0:
            return True
        return self.epsilon_cost <= self.epsilon_charged * (1 + RTOL) + ATOL_EPSILON


@dataclass
class LedgerCheck:
    """The check of one fit (module docstring): its calls and the problems found.

    >>> check = LedgerCheck("DPTauCC", "corrected", False, 1.0, 0.0, 1.0, 0.0)
    >>> check.verdict
    'ok'
    >>> check.problems.append("ε spent 0.5 differs from the ε 1 the fit was given")
    >>> check.verdict
    'violation'
    """

    estimator: str
    mode: str
    secure: bool
    epsilon_given: float
    delta_given: float
    epsilon_spent: float
    delta_spent: float
    calls: list[CallCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    epsilon_unobserved: float = 0.0  # entries no call drew: set-aside budgets, conversions

    @property
    def verdict(self) -> str:
        return "violation" if self.problems else "ok"

    @property
    def epsilon_cost(self) -> float:
        """What the drawn noise costs, summed over the calls (the ledger's other entries —
        set-aside budgets, δ-only terms, group-privacy conversions — are not recomputed)."""
        return math.fsum(c.epsilon_cost for c in self.calls)

    @property
    def epsilon_recomputed(self) -> float:
        """The fit's ε as the map recomputes it: the calls' costs plus the entries no call
        drew (taken as charged). Equal to ε spent on a correct ledger; above it when the
        ledger under-reports."""
        return math.fsum([self.epsilon_cost, self.epsilon_unobserved])

    def raise_for_problems(self) -> None:
        """AssertionError listing every problem (a test helper)."""
        if self.problems:
            raise AssertionError(f"{self.estimator} ({self.mode}): " + "; ".join(self.problems))

    def summary(self) -> str:
        bad = [c for c in self.calls if not c.ok]
        head = (f"{len(self.calls)} calls, {len(bad)} under-charged; ledger ε "
                f"{self.epsilon_spent:.6g} for ε {self.epsilon_given:.6g}")
        return head if not self.problems else head + ": " + "; ".join(self.problems[:3])


class _Checker:
    """The hook: keeps each call's step, entries and calibration; releases as drawn."""

    def __init__(self):
        self.calls: list[tuple[str, str, list, Calibration]] = []

    def calibrated(self, step, mechanism, entries, calibration):
        self.calls.append((str(step), str(mechanism), list(entries), calibration))

    def released(self, step, mechanism, entries, output, redraw=None):
        return output


def _charged(entries) -> tuple[float, float]:
    live = [e for e in entries if e.composition != "non-private"]
    return math.fsum(e.epsilon for e in live), math.fsum(e.delta for e in live)


def _given(model, ledger) -> tuple[float, float]:
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    eps = float(params.get("epsilon", ledger.budget_epsilon))
    delta = params.get("delta", None)
    delta = float(ledger.budget_delta if delta is None else delta)
    return eps, delta


def _is_secure(model) -> bool:
    sampler = getattr(model, "random_state", None)
    return bool(getattr(model, "secure", False) or getattr(sampler, "exact", False))


def _close(a: float, b: float, atol: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + atol


@contextmanager
def observing() -> Iterator[list]:
    """Within the block, every mechanism call's ``(step, mechanism, entries, calibration)`` is
    appended to the yielded list (the outputs are released as drawn).

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, discrete_laplace_mechanism
    >>> with observing() as calls:
    ...     _ = discrete_laplace_mechanism(np.zeros(3, int), epsilon=1.0, sensitivity=1,
    ...                                    sampler=np.random.default_rng(0),
    ...                                    ledger=PrivacyLedger(), step="t")
    >>> [check.epsilon_cost for check in mapped(calls)]
    [1.0]
    """
    checker = _Checker()
    token = MECHANISM_HOOK.set(checker)
    try:
        yield checker.calls
    finally:
        MECHANISM_HOOK.reset(token)


def mapped(calls: list) -> list[CallCheck]:
    """:class:`CallCheck` of each observed call that charged or drew something.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, discrete_laplace_mechanism
    >>> with observing() as calls:
    ...     _ = discrete_laplace_mechanism(np.zeros(3, int), epsilon=0.5, sensitivity=2,
    ...                                    sampler=np.random.default_rng(0),
    ...                                    ledger=PrivacyLedger(), step="t")
    >>> [(c.step, c.epsilon_charged, c.epsilon_cost, c.sources, c.ok) for c in mapped(calls)]
    [('t', 0.5, 0.5, ('seeded',), True)]
    """
    out = []
    for i, (step, mech, entries, calib) in enumerate(calls):
        if not entries and calib.empty:
            continue  # a public release (e.g. DPHD's seeds): no charge, no noise
        eps_c, delta_c = _charged(entries)
        cost = call_cost(calib, delta_c)
        out.append(CallCheck(i, step, mech, eps_c, delta_c, cost.epsilon, cost.how,
                             tuple(calib.sources()), tuple(calib.laws())))
    return out


def check_fit(model, X) -> LedgerCheck:
    """Fit ``model`` on X with the checking hook set and check its ledger (module docstring).

    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> X = np.random.default_rng(0).poisson(2.0, size=(12, 8))
    >>> check = check_fit(DPTauCC(2, 2, epsilon=1.0, random_state=0), X)
    >>> check.verdict, len(check.calls), round(check.epsilon_spent, 6)
    ('ok', 16, 1.0)
    """
    with observing() as calls, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    ledger = model.privacy_ledger_
    mode = str(getattr(model, "mode", "corrected"))
    eps_given, delta_given = _given(model, ledger)
    secure = _is_secure(model)
    check = LedgerCheck(type(model).__name__, mode, secure, eps_given, delta_given,
                        float(ledger.epsilon_spent), float(ledger.delta_spent))
    problems = check.problems
    observed = {id(e) for _, _, entries, _ in calls for e in entries}
    check.calls = mapped(calls)
    for call in check.calls:
        i, step = call.index, call.step
        if not call.ok:
            problems.append(f"call {i} ({step}, {call.mechanism}) charged ε "
                            f"{call.epsilon_charged:.6g} (δ {call.delta_charged:.3g}) but its "
                            f"noise costs ε {call.epsilon_cost:.6g} [{call.how}]")
        if mode == "corrected" and "laplace-float" in call.laws:
            problems.append(f"call {i} ({step}) draws textbook float Laplace noise in "
                            "corrected mode (its output set depends on the input)")
        if secure and set(call.sources) - {"secure"}:
            problems.append(f"call {i} ({step}) of a secure fit draws from "
                            f"{sorted(set(call.sources) - {'secure'})}: mechanism randomness "
                            "a seed can reproduce")
    check.epsilon_unobserved = _charged([e for e in ledger.entries if id(e) not in observed])[0]
    for e in ledger.entries:
        if id(e) not in observed and math.isfinite(e.noise_scale) and e.noise_scale > 0 \
                and e.composition != "non-private":
            problems.append(f"entry {e.step!r} ({e.mechanism}) records noise of scale "
                            f"{e.noise_scale:.6g} that no observed mechanism call drew")
    entries_eps, entries_delta = _charged(ledger.entries)
    if ledger.non_private_steps:
        problems.append(f"non-private steps {ledger.non_private_steps}: ε spent is ∞")
    else:
        if not _close(entries_eps, check.epsilon_spent, ATOL_EPSILON):
            problems.append(f"the ledger reports ε spent {check.epsilon_spent:.9g} but its "
                            f"entries add up to {entries_eps:.9g}")
        if not _close(check.epsilon_spent, eps_given, ATOL_EPSILON):
            problems.append(f"ε spent {check.epsilon_spent:.9g} differs from the ε "
                            f"{eps_given:.9g} the fit was given")
        if not _close(entries_delta, check.delta_spent, ATOL_DELTA) or \
                not _close(check.delta_spent, delta_given, ATOL_DELTA):
            problems.append(f"δ spent {check.delta_spent:.6g} (entries {entries_delta:.6g}) "
                            f"differs from the δ {delta_given:.6g} the fit was given")
    reported = getattr(model, "epsilon_spent_", None)
    if reported is not None and not _close(float(reported), check.epsilon_spent, ATOL_EPSILON):
        problems.append(f"epsilon_spent_ = {float(reported):.9g} but the ledger's ε spent is "
                        f"{check.epsilon_spent:.9g}")
    return check


def filled(X):
    """X with one more count in every cell (a CSR matrix): every cell non-zero, so the dense
    paths of the methods (``dense_counts``, DPM's dense embedding) run, whatever X's density.

    >>> import numpy as np
    >>> filled(np.eye(2, dtype=int)).toarray().tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """
    import numpy as np

    from .pairs import fill

    return fill(X).astype(np.float64)


def ledger_record(build, D, D_prime, *, seed: int, bug: str | None = None) -> dict:
    """One audit record (scope "ledger") from :func:`check_fit` on D and on D' (fits seeded
    ``seed`` and ``seed + 1``, the catalogue ``bug`` planted): the worst side's verdict; as
    ``epsilon_lower`` the fit's ε recomputed by the map (not a statistical bound: the exact
    cost of what was drawn, plus the entries no call drew), as ``epsilon_claimed`` the ε the
    ledger reports (a ratio above 1: the ledger under-reports); the problems as ``event``.
    D and D' are also checked :func:`filled` (every cell + 1), which takes the methods' dense
    paths where the pair itself is sparse. A fit that raises is named in the event and left
    out (the end-to-end layer counts "fit raised"); when none finishes the verdict is "no
    evidence".

    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> D = np.random.default_rng(0).poisson(2.0, size=(12, 8))
    >>> D_prime = D.copy()
    >>> D_prime[0, 0] += 1
    >>> def build(seed):
    ...     return DPTauCC(2, 2, epsilon=1.0, random_state=seed)
    >>> record = ledger_record(build, D, D_prime, seed=0)
    >>> record["verdict"], round(record["epsilon_lower"], 6), record["n_fits"]
    ('ok', 1.0, 4)
    >>> bad = ledger_record(build, D, D_prime, seed=0, bug="dp_taucc.table_epsilon_doubled")
    >>> bad["verdict"], bad["epsilon_lower"] > bad["epsilon_claimed"]
    ('violation', True)
    """
    from .workers import bug_context

    checks, raised = [], []
    with bug_context(bug):
        for k, (name, X) in enumerate((("D", D), ("D'", D_prime), ("D filled", filled(D)),
                                       ("D' filled", filled(D_prime)))):
            try:
                checks.append(check_fit(build(seed + k), X))
            except Exception as error:  # a fit that refuses an input leaves no ledger to check
                raised.append(f"the fit on {name} raised {type(error).__name__}: {error}")
    if not checks:
        return {"scope": "ledger", "epsilon": math.nan, "delta": math.nan,
                "epsilon_spent": math.nan, "end_to_end_dp": False, "epsilon_claimed": math.nan,
                "epsilon_lower": math.nan, "verdict": "no evidence", "step": "no fit finished",
                "event": "; ".join(raised), "n_fits": 0, "epsilon_lower_max": math.nan,
                "events": "", "time_s": 0.0}

    def excess(c: LedgerCheck) -> float:
        spent = c.epsilon_spent
        return c.epsilon_recomputed / spent if 0 < spent < math.inf else math.inf

    worst = max(checks, key=lambda c: (c.verdict == "violation", excess(c)))
    problems = [p for c in checks for p in c.problems]
    return {"scope": "ledger", "epsilon": worst.epsilon_given, "delta": worst.delta_given,
            "epsilon_spent": worst.epsilon_spent, "end_to_end_dp": not any(
                "non-private" in p for p in problems),
            "epsilon_claimed": worst.epsilon_spent, "epsilon_lower": worst.epsilon_recomputed,
            "verdict": "violation" if problems else "ok",
            "step": f"{sum(len(c.calls) for c in checks)} calls on D, D' (sparse and filled)",
            "event": "; ".join(dict.fromkeys(problems + raised)) or worst.summary(),
            "n_fits": len(checks), "epsilon_lower_max": math.nan, "events": "", "time_s": 0.0}


def ledger_section(df) -> list[str]:
    """REPORT lines for the ledger records of an audit table (scope "ledger"): one row per
    method and mode.

    >>> import pandas as pd
    >>> rows = pd.DataFrame([{"scope": "ledger", "method": "dpm", "mode": "corrected",
    ...                       "pair": "added_row", "epsilon": 1.0, "epsilon_spent": 1.0,
    ...                       "epsilon_lower": 1.0 + 3e-8, "epsilon_claimed": 1.0,
    ...                       "verdict": "ok", "event": "", "step": "20 calls on D, D'"}])
    >>> ledger_section(rows)[-2]
    '| dpm | corrected | 1 | added_row | 20 | 3e-08 | ok |'
    """
    rows = df[df["scope"] == "ledger"] if "scope" in df.columns else df.iloc[0:0]
    if rows.empty:
        return []
    lines = ["### The ledger against the noise", "",
             "Each scenario's estimator fitted on D and D', as given and with every cell filled "
             "(the dense branches), with every mechanism call reporting its real calibration "
             "(sampler, scale drawn, declared sensitivity); an independent privacy map "
             "(OpenDP's measurement maps, ours for the bounded discrete Laplace and the colored "
             "Gaussian) recomputes each call's cost (docs/audit.md). A violation is a charge "
             "below its cost, or a ledger total other than the ε (δ) the fit was given; "
             "\"deviation\" is the largest |ε recomputed / ε spent − 1| over the fits.", "",
             "| method | mode | scenarios | pairs | calls | deviation | verdict |",
             "|---|---|---|---|---|---|---|"]
    for (method, mode), d in rows.groupby(["method", "mode"], sort=False):
        calls = sum(int(str(step).split()[0]) for step in d["step"]
                    if str(step).split()[:1] and str(step).split()[0].isdigit())
        finite = d[(d["epsilon_claimed"] > 0) & (d["epsilon_claimed"] < float("inf"))]
        dev = (finite["epsilon_lower"] / finite["epsilon_claimed"] - 1).abs().max()
        bad = d[d["verdict"] == "violation"]
        verdict = "ok" if bad.empty else (f"**{len(bad)} violation(s)**: "
                                         + str(bad.iloc[0]["event"]).replace("|", "/"))
        pairs = ", ".join(dict.fromkeys(d["pair"]))
        lines.append(f"| {method} | {mode} | {len(d)} | {pairs} | {calls} | "
                     f"{'–' if finite.empty else f'{dev:.2g}'} | {verdict} |")
    return [*lines, ""]
