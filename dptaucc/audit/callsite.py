"""Call-site audits: each mechanism call of a fit, given its history, against what it charged.

A fit is a sequence of mechanism calls, each charging the ledger before it draws. Given the
outputs of calls ``0..k-1`` (the *history*), call ``k`` is one mechanism applied to the data: by
adaptive composition its privacy loss between D and D' is at most the (ε, δ) its ledger entries
recorded. So the audit forces a history (:func:`dptaucc.audit.transcript.open_call`), replays
the fit up to call ``k`` once on D and once on D' (the same fit seed on both sides: randomness
that does not depend on the data is conditioned on), and draws call ``k`` many times from that
one fit through the mechanism's own ``redraw`` (:mod:`dptaucc.privacy.hook`: same exact input,
calibration, sampler and code path). Events chosen on half of the draws and counted on the other
half (:func:`dptaucc.audit.derived.select_tails`: thresholds into both tails, values of a choice,
the projection on the mean difference) bound its privacy loss from below, with the δ the call
charged: ``ε_lower(k) > ε_charged(k)`` is a violation *at that call site*. Hundreds of
thousands of draws cost seconds, so a Gaussian call's (ε, δ) and the tail of a sum of many
noisy values are within reach; a 2x error in one mechanism of a fit that splits ε over many
calls shows here, where no end-to-end audit can see it.

Which history: a few candidate histories are recorded on D (pilot seeds) — or built by the
method's setup (``craft``: a history that puts the call's input at its worst, e.g. centres that
make a row at the bound change cluster); each is tried with a few thousand pilot draws per side
and the one whose call separates D from D' most is kept. Pilot draws are not reused, so the
choice does not bias the bound. Sequential looks (``looks`` growing draw counts, α split evenly
over the looks) stop as soon as a violation is certain.

Streamed held-out draws (``n_held`` > 0, a setup's ``held_out``): where a call's charge is
reached only on an event of small probability on both sides (several values of a vector release
at the edges of their ranges at once), the held-out counts, not the choice of event, limit the
bound, and keeping every draw would exceed the memory cap (:data:`MAX_VALUES`). Then the events
are chosen on all the kept draws and counted on ``n_held`` further draws per side, drawn batch
by batch and never kept, in one look: the bound's level is the same (the counted draws are
fresh, independent of the choice).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import derived
from .law_check import law_differs
from .pair_cost import exceeds, pair_cost
from .runner import fit_seed
from .transcript import Call, HistoryDiverged, open_call, record
from .workers import bug_context, in_chunks

__all__ = ["path_event", "CallSiteResult", "call_sites", "audit_call_site", "history_seeds"]

#: draws per ``redraw`` call (memory stays bounded for large outputs)
BATCH = 20_000
#: at most this many values (draws × output size) are kept per side
MAX_VALUES = 30_000_000
#: streamed held-out draws are drawn and counted this many values (draws × output size) at a
#: time
STREAM_VALUES = 2_000_000


def history_seeds(k: int, r: int) -> tuple[int, int]:
    """The offsets (of the audit seed, :func:`~dptaucc.audit.runner.fit_seed`) of call ``k``'s
    ``r``-th candidate history: the fit that records it on D, and the fit that replays it on
    both sides.

    >>> history_seeds(2, 0)
    (7200000, 7201000)
    """
    base = 7_000_000 + 100_000 * k
    return base + r, base + 1000 + r


@dataclass
class CallSiteResult:
    """One call site's audit: its claim, the lower bound on its privacy loss and the verdict
    ("violation" when the bound exceeds the claim).

    ``epsilon_pair``: the pair's exact cost at this call under its declared law
    (:mod:`dptaucc.audit.pair_cost`; NaN: not computable); above the charge it is a violation
    whatever the draws showed.

    >>> result = CallSiteResult(3, "table", "discrete-laplace", 1.25, 0.0, 2.2, "x <= 19", 2000,
    ...                         0.2)
    >>> result.verdict, CallSiteResult(3, "table", "discrete-laplace", 1.25, 0.0, float("nan"),
    ...                                "", 0, 0.0).verdict
    ('violation', 'no evidence')
    >>> CallSiteResult(3, "table", "discrete-laplace", 1.25, 0.0, 0.9, "x <= 19", 2000, 0.2,
    ...                epsilon_pair=2.5).verdict  # the pair moved the input twice as far
    'violation'
    >>> CallSiteResult(3, "table", "discrete-laplace", 1.25, 0.0, float("nan"), "", 0, 0.0,
    ...                path_differs="call 2: step 'b' where the history has 'a'").verdict
    'violation'
    """

    index: int
    step: str
    mechanism: str
    epsilon_claimed: float
    delta: float
    epsilon_lower: float  # NaN: no evidence (no informative event)
    event: str
    n_fits: int  # draws of the call per side
    elapsed_s: float
    counts: dict = field(default_factory=dict)
    epsilon_pair: float = math.nan
    pair_how: str = ""
    path_differs: str = ""
    law_differs: str = ""

    @property
    def flagged(self) -> str:
        """What an exact check of this call found ("" if nothing): the fit's path differs
        between D and D' with every mechanism output forced equal (``path_differs``: a history
        that replays on D diverged on D' under the same seed, so something other than a
        release steers the fit by the data), or the call's outputs on one side are more
        concentrated than its declared law allows (``law_differs``,
        :mod:`dptaucc.audit.law_check`: an output replaced after its mechanism)."""
        return self.path_differs or self.law_differs

    @property
    def pair_exceeds(self) -> bool:
        """The pair's exact cost is above the charge (beyond float rounding), or
        :attr:`flagged`."""
        return bool(self.flagged) or exceeds(self.epsilon_pair, self.epsilon_claimed)

    @property
    def verdict(self) -> str:
        if self.pair_exceeds:
            return "violation"
        if math.isnan(self.epsilon_lower):
            return "no evidence"
        return "violation" if self.epsilon_lower > self.epsilon_claimed * (1 + 1e-9) else "ok"


def _record_task(build, X, seed):
    return record(build(seed), X)


def transcript_of(build: Callable, X, seed: int, bug: str | None = None) -> list[Call]:
    """The transcript of one fit on X (bug planted in this process)."""
    return in_chunks(_record_task, (build, X), [seed], bug=bug)[0]


def call_sites(build: Callable, X, bug: str | None = None, seed: int = 0) -> list[Call]:
    """The calls of one fit on X: what the call-site audit walks through.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> def build(seed):
    ...     return DPTauCC(2, 2, epsilon=100.0, random_state=seed)
    >>> calls = call_sites(build, pair.D)
    >>> len(calls), calls[3].step, calls[3].mechanism
    (16, 'iter1/table-after-rows', 'discrete-laplace')
    """
    return transcript_of(build, X, fit_seed(seed, 10**6), bug)


class _Side:
    """Call k of one replayed fit on one side, and its draws so far."""

    def __init__(self, build, X, history, k, seed):
        self.call, self.redraw = open_call(build(seed), X, history, k)
        self.rows: list[np.ndarray] = []
        self.n = 0

    def draw(self, n: int) -> np.ndarray:
        out = []
        while n > 0:
            b = min(n, BATCH)
            out.append(np.asarray(self.redraw(b), dtype=float).reshape(b, -1))
            n -= b
        return np.concatenate(out) if out else np.empty((0, self.call.output.size))

    def count(self, events: list, n: int) -> np.ndarray:
        """How many of ``n`` fresh draws (drawn in chunks, never kept) each event fires on."""
        k = np.zeros(len(events), dtype=np.int64)
        chunk = max(BATCH, STREAM_VALUES // max(1, self.call.output.size))
        while n > 0:
            b = min(n, chunk)
            X = self.draw(b)
            shapes = np.zeros(b, dtype=np.int64)
            k += np.array([e.fires(X, shapes).sum() for e in events], dtype=np.int64)
            n -= b
        return k

    def extend(self, n: int) -> np.ndarray:
        if n > 0:
            self.rows.append(self.draw(n))
            self.n += n
        return np.concatenate(self.rows)


def _open(build, D, D_prime, history, k, seed) -> tuple[tuple | None, str]:
    """Both sides opened at call k under ``history`` (None if either diverged), and the
    divergence on D' when the history replays on D (the same seed on both sides: forced
    outputs equal, the fit's path still differs), else ""."""
    try:
        side_a = _Side(build, D, history, k, seed)
    except HistoryDiverged:
        return None, ""
    try:
        return (side_a, _Side(build, D_prime, history, k, seed)), ""
    except HistoryDiverged as why:
        return None, str(why)


def path_event(why: str) -> str:
    """The event a one-sided divergence is reported with.

    >>> path_event("call 2: step 'b'")[:47]
    "the forced history replays on D, diverges on D'"
    """
    return (f"the forced history replays on D, diverges on D' ({why}): with every mechanism "
            "output equal, the data steers the fit's path")


def _separation(A, B, delta) -> float:
    evs = derived.select_tails(A, B, n_events=1, delta=delta)
    if not evs:
        return -math.inf
    shapes = np.zeros(A.shape[0], dtype=np.int64)
    k_a, k_b = evs[0].fires(A, shapes).sum(), evs[0].fires(B, shapes).sum()
    return float(derived._scores([k_a], [k_b], A.shape[0], B.shape[0], 0.05, delta)[0])


def audit_call_site(build: Callable, D, D_prime, k: int, *, n_fits: int, alpha: float,
                    seed: int = 0, bug: str | None = None, n_jobs: int = 1,
                    n_histories: int = 3, n_pilot: int = 4000, looks: int = 3,
                    n_events: int = 3,
                    craft: Callable[[list[Call]], list[Call]] | None = None,
                    n_held: int = 0) -> CallSiteResult:
    """Audit call ``k`` (see the module docstring): ``n_fits`` draws of the call per side at
    most, a simultaneous (1 − α) lower bound on its privacy loss given the chosen history.
    ``craft`` turns each recorded history into the one to force (a method's worst case).
    ``n_held`` > 0: events chosen on all ``n_fits`` kept draws, counted on ``n_held`` more
    per side streamed (one look; the result's ``n_fits`` counts both). ``n_jobs`` is accepted
    for a uniform interface; the draws run in this process.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> def build(seed):
    ...     return DPTauCC(2, 2, epsilon=100.0, random_state=seed)
    >>> honest = audit_call_site(build, pair.D, pair.D_prime, 3, n_fits=2000, alpha=0.05,
    ...                          n_pilot=500)
    >>> honest.verdict, honest.epsilon_lower <= honest.epsilon_claimed
    ('ok', True)
    >>> broken = audit_call_site(build, pair.D, pair.D_prime, 3, n_fits=2000, alpha=0.05,
    ...                          n_pilot=500, bug="dp_taucc.table_sensitivity_halved")
    >>> broken.verdict  # the table's noise drawn for half its sensitivity
    'violation'
    >>> streamed = audit_call_site(build, pair.D, pair.D_prime, 3, n_fits=1000, alpha=0.05,
    ...                            n_pilot=500, n_held=3000)
    >>> streamed.verdict, streamed.n_fits  # chosen on 1,000 kept draws, counted on 3,000 more
    ('ok', 4000)
    """
    del n_jobs
    t0 = time.perf_counter()
    with bug_context(bug):
        histories = [record(build(fit_seed(seed, history_seeds(k, r)[0])), D)
                     for r in range(n_histories)]
        histories = [h for h in histories if len(h) > k]
        if craft is not None:
            histories = [craft(h) for h in histories]
        if not histories:
            raise HistoryDiverged(f"no fit on D reaches call {k}")
        best, best_sep, differs = None, -math.inf, ""
        for r, h in enumerate(histories):
            sides, why = _open(build, D, D_prime, h, k, fit_seed(seed, history_seeds(k, r)[1]))
            differs = differs or why
            if sides is None:
                continue  # this history cannot be replayed on D or on D'
            if len(histories) > 1:
                a, b = sides
                delta = max(a.call.delta, b.call.delta)
                sep = _separation(a.draw(n_pilot), b.draw(n_pilot), delta)
            else:
                sep = 0.0
            if best is None or sep > best_sep:
                best, best_sep = sides, sep
        if best is None:
            call = histories[0][k]
            return CallSiteResult(k, call.step, call.mechanism, call.epsilon, call.delta,
                                  math.nan, path_event(differs) if differs else
                                  "no recorded history replays on both D and D'", 0,
                                  time.perf_counter() - t0, path_differs=differs)
        side_a, side_b = best
        call = side_a.call
        step, mech = call.step, call.mechanism
        eps_claim = max(call.epsilon, side_b.call.epsilon)
        delta = max(call.delta, side_b.call.delta)
        exact = pair_cost(call.calibration, side_b.call.calibration, delta)
        n_max = max(4, min(int(n_fits), MAX_VALUES // max(1, call.output.size)))
        n_held = max(0, int(n_held))
        if n_held:
            looks = 1  # the streamed draws are counted once, for the events chosen on all kept
        sizes = [max(4, int(round(n_max * (i + 1) / looks))) for i in range(looks)]
        result = None
        for size in sizes:
            A, B = side_a.extend(size - side_a.n), side_b.extend(size - side_b.n)
            shapes = np.zeros(size, dtype=np.int64)
            sel, held = (slice(None), None) if n_held else (slice(0, None, 2), slice(1, None, 2))
            events = derived.select_tails(A[sel], B[sel], name=step, n_events=n_events,
                                          alpha=alpha / looks / (4 * n_events), delta=delta)
            if n_held:
                eps, cand, k_a, k_b = derived.bound_counts(
                    events, side_a.count(events, n_held), side_b.count(events, n_held),
                    n_held, n_held, alpha, delta)
            else:
                eps, cand, k_a, k_b = derived.bound(events, A[held], B[held], shapes[held],
                                                    shapes[held], alpha / looks, delta)
            result = CallSiteResult(
                k, step, mech, eps_claim, delta, eps, "" if cand is None else cand.label,
                size + n_held, time.perf_counter() - t0,
                {e.label: [int(a), int(b)] for e, a, b in zip(events, k_a, k_b, strict=True)},
                exact.epsilon, exact.how, differs,
                law_differs(A, call.calibration, "D")
                or law_differs(B, side_b.call.calibration, "D'"))
            if result.verdict == "violation":
                break
    assert result is not None
    result.elapsed_s = time.perf_counter() - t0
    return result
