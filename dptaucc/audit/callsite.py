"""Call-site audits: each mechanism call of a fit, given its history, against what it charged.

A fit is a sequence of mechanism calls, each charging the ledger before it draws. Given the
outputs of calls ``0..k-1`` (the *history*), call ``k`` is one mechanism applied to the data: by
adaptive composition its privacy loss between D and D' is at most the (ε, δ) its ledger entries
recorded. So the audit forces a recorded history (:func:`dptaucc.audit.transcript.replay`),
samples call ``k`` many times on D and on D', and bounds its privacy loss from below with
events derived from its outputs (:mod:`dptaucc.audit.derived`): ``ε_lower(k) > ε_charged(k)``
is a violation *at that call site*. This sees a 2x error in one mechanism of a fit that splits
ε over many calls, which no end-to-end audit can.

Which history: a few candidate histories are recorded on D (pilot seeds), each tried with a
few pilot fits per side, and the one whose call ``k`` separates D from D' most is kept; the
pilot fits are not reused, so the choice does not bias the bound. Sequential looks (``looks``
growing fit counts, α split evenly over the looks) stop as soon as a violation is certain.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import derived
from .runner import fit_seed
from .transcript import Call, HistoryDiverged, record, replay
from .workers import in_chunks

__all__ = ["CallSiteResult", "call_sites", "audit_call_site", "transcript_of"]


@dataclass
class CallSiteResult:
    index: int
    step: str
    mechanism: str
    epsilon_claimed: float
    delta: float
    epsilon_lower: float  # NaN: no evidence (no informative event)
    event: str
    n_fits: int
    elapsed_s: float
    counts: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        if math.isnan(self.epsilon_lower):
            return "no evidence"
        return "violation" if self.epsilon_lower > self.epsilon_claimed * (1 + 1e-9) else "ok"


def _record_task(build, X, seed):
    return record(build(seed), X)


def _replay_task(build, X, history, k, seed):
    try:
        call = replay(build(seed), X, history, k)
    except HistoryDiverged:
        return None
    return call.output, call.epsilon, call.delta, call.step


def transcript_of(build: Callable, X, seed: int, bug: str | None = None) -> list[Call]:
    """The transcript of one fit on X (bug planted in this process)."""
    return in_chunks(_record_task, (build, X), [seed], bug=bug)[0]


def call_sites(build: Callable, X, bug: str | None = None, seed: int = 0) -> list[Call]:
    """The calls of one fit on X: what the call-site audit walks through."""
    return transcript_of(build, X, fit_seed(seed, 10**6), bug)


def _side(build, X, history, k, seeds, bug, n_jobs):
    """Replays of call k on X under ``history``; None if any replay diverged (then the
    history is not used at all: dropping only some fits would bias the comparison)."""
    res = in_chunks(_replay_task, (build, X, history, k), seeds, bug=bug, n_jobs=n_jobs)
    if any(r is None for r in res):
        return None
    eps = max(r[1] for r in res)
    delta = max(r[2] for r in res)
    return [r[0] for r in res], eps, delta, res[0][3]


def _separation(A, B, sa, sb) -> float:
    evs = derived.select(A, B, sa, sb, n_events=1)
    if not evs:
        return -math.inf
    k_a, k_b = evs[0].fires(A, sa).sum(), evs[0].fires(B, sb).sum()
    return float(derived._scores([k_a], [k_b], A.shape[0], B.shape[0], 0.05)[0])


def audit_call_site(build: Callable, D, D_prime, k: int, *, n_fits: int, alpha: float,
                    seed: int = 0, bug: str | None = None, n_jobs: int = 1,
                    n_histories: int = 4, n_pilot: int = 100, looks: int = 3,
                    n_events: int = 3) -> CallSiteResult:
    """Audit call ``k`` (see the module docstring): ``n_fits`` replays per side at most,
    a simultaneous (1 − α) lower bound on its privacy loss given the chosen history."""
    t0 = time.perf_counter()
    base = 7_000_000 + 100_000 * k
    histories = [transcript_of(build, D, fit_seed(seed, base + r), bug)
                 for r in range(n_histories)]
    histories = [h for h in histories if len(h) > k]
    if not histories:
        raise HistoryDiverged(f"no fit on D reaches call {k}")
    best, best_sep = None, -math.inf
    for r, h in enumerate(histories):
        pa = _side(build, D, h, k, [fit_seed(seed, base + 1000 + 2 * i + 20_000 * r)
                                    for i in range(n_pilot)], bug, n_jobs)
        pb = _side(build, D_prime, h, k, [fit_seed(seed, base + 1001 + 2 * i + 20_000 * r)
                                          for i in range(n_pilot)], bug, n_jobs)
        if pa is None or pb is None:
            continue  # this history cannot be replayed on D or on D'
        if best is None:
            best = h
        if len(histories) > 1:
            A, sa, shape = derived.as_matrix(pa[0])
            B, sb, _ = derived.as_matrix(pb[0], shape)
            sep = _separation(A, B, sa, sb)
            if sep > best_sep:
                best, best_sep = h, sep
    if best is None:
        call = histories[0][k]
        return CallSiteResult(k, call.step, call.mechanism, call.epsilon, call.delta, math.nan,
                              "no recorded history replays on both D and D'", 0,
                              time.perf_counter() - t0)
    step, mech = best[k].step, best[k].mechanism
    outs_a: list = []
    outs_b: list = []
    eps_claim, delta = best[k].epsilon, best[k].delta
    sizes = [max(2, int(round(n_fits * (i + 1) / looks))) for i in range(looks)]
    result = None
    for size in sizes:
        new = range(len(outs_a), size)
        ra = _side(build, D, best, k, [fit_seed(seed, 2 * i) for i in new], bug, n_jobs)
        rb = _side(build, D_prime, best, k, [fit_seed(seed, 2 * i + 1) for i in new], bug,
                   n_jobs)
        if ra is None or rb is None:  # diverged on some seed: no evidence from this site
            return CallSiteResult(k, step, mech, eps_claim, delta, math.nan,
                                  "the history diverged on some fits", len(outs_a),
                                  time.perf_counter() - t0)
        outs_a += ra[0]
        outs_b += rb[0]
        eps_claim = max(eps_claim, ra[1], rb[1])
        delta = max(delta, ra[2], rb[2])
        A, sa, shape = derived.as_matrix(outs_a)
        B, sb, _ = derived.as_matrix(outs_b, shape)
        sel, held = slice(0, None, 2), slice(1, None, 2)
        events = derived.select(A[sel], B[sel], sa[sel], sb[sel], name=step, n_events=n_events)
        eps, cand, k_a, k_b = derived.bound(events, A[held], B[held], sa[held], sb[held],
                                            alpha / looks, delta)
        result = CallSiteResult(
            k, step, mech, eps_claim, delta, eps, "" if cand is None else cand.label,
            len(outs_a), time.perf_counter() - t0,
            {e.label: [int(a), int(b)] for e, a, b in zip(events, k_a, k_b, strict=True)})
        if result.verdict == "violation":
            break
    assert result is not None
    result.elapsed_s = time.perf_counter() - t0
    return result
