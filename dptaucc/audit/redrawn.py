"""Call-site audits that sample one call many times from one replayed fit (``redraw``).

The mechanism hook (:mod:`dptaucc.privacy.hook`) hands the audit, with each call, ``redraw(n)``:
``n`` fresh outputs of the *same* call (same exact input, calibration, sampler and code path).
So instead of refitting thousands of times, :func:`sample_call` replays a fit to call ``k``
under a recorded history (:func:`dptaucc.audit.transcript.replay`'s forcing), draws ``n``
outputs of call ``k`` there and stops the fit; done on D and on D', the two samples bound call
``k``'s privacy loss with events chosen on one half and counted on the other
(:mod:`dptaucc.audit.derived`), against the ε its ledger entries charged.

Which history: a few recorded on D (pilot seeds); each is sampled briefly on both sides and the
one whose call ``k`` separates D from D' most is kept. The pilot samples are not reused, so the
choice does not bias the bound. With ``n_held`` > 0 the events are chosen on all the kept
samples and counted on ``n_held`` further draws per side, streamed from one replay a side and
never kept (as :func:`dptaucc.audit.callsite.audit_call_site` does): a choice whose largest
ratio sits on rare outputs needs more held-out draws than memory holds.

Redrawing is what makes the call sites of slow fits (DPHD, whose fits run in Octave)
auditable at all: two replays per side, not thousands of fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from joblib import Parallel, delayed

from . import derived
from .callsite import CallSiteResult, _Side, path_event
from .law_check import law_differs
from .pair_cost import pair_cost
from .runner import fit_seed
from .transcript import Call, HistoryDiverged, open_call, record
from .workers import bug_context

__all__ = ["sample_call", "audit_call_site_redrawn"]

#: offset (from call k's base) of the fit seed that streams held-out draws: apart from the
#: recorded histories (base + r), their pilots (base + 1000 + 100 r) and the kept shards
HELD_OUT_OFFSET = 90_000


def sample_call(model, X, history: list[Call], k: int, n: int) -> tuple[Call, np.ndarray]:
    """Fit ``model`` on X with calls ``0..k-1`` forced to ``history``; return call ``k`` and
    ``n`` fresh outputs of it (stacked on axis 0); the fit stops right after it.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> from dptaucc.audit.transcript import record
    >>> pair = make_pair("moving_row")
    >>> history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    >>> call, draws = sample_call(DPTauCC(2, 2, epsilon=1.0, random_state=1), pair.D, history, 3,
    ...                           50)
    >>> call.step, draws.shape  # 50 noisy 2×2 tables of the same call
    ('iter1/table-after-rows', (50, 2, 2))
    """
    call, redraw = open_call(model, X, history, k)
    return call, np.asarray(redraw(n))


def _sample_task(build, X, history, k, n, seed, bug):
    with bug_context(bug):
        try:
            call, draws = sample_call(build(seed), X, history, k, n)
        except HistoryDiverged as why:
            return str(why)
    return call.epsilon, call.delta, draws.reshape(n, -1).astype(float), call.calibration


def _record_task(build, X, seed, bug):
    with bug_context(bug):
        return record(build(seed), X)


def _both_sides(build, D, D_prime, history, k, n, seeds, bug, n_jobs):
    """Samples of call k on D and on D' (``n`` each, split over ``len(seeds) // 2`` replays
    per side), the charge, the two sides' first replays' calibrations and their draws (a
    replay's own law: the shards' fit seeds may differ in randomness that is not a
    mechanism's); None if a replay on D diverged; the divergence (a str) if only replays on D'
    did (the same seeds a side)."""
    per = len(seeds) // 2
    sizes = [n // per + (i < n % per) for i in range(per)]
    tasks = [(X, size, s) for X, off in ((D, 0), (D_prime, per))
             for size, s in zip(sizes, seeds[off:off + per], strict=True)]
    if n_jobs > 1:
        out = Parallel(n_jobs=n_jobs)(delayed(_sample_task)(build, X, history, k, size, s, bug)
                                      for X, size, s in tasks)
    else:
        out = [_sample_task(build, X, history, k, size, s, bug) for X, size, s in tasks]
    if any(isinstance(r, str) for r in out[:per]):
        return None
    if any(isinstance(r, str) for r in out[per:]):
        return next(r for r in out[per:] if isinstance(r, str))
    A, B = np.vstack([r[2] for r in out[:per]]), np.vstack([r[2] for r in out[per:]])
    return (A, B, max(r[0] for r in out), max(r[1] for r in out),
            (out[0][3], out[per][3]), (out[0][2], out[per][2]))


def audit_call_site_redrawn(build: Callable, D, D_prime, k: int, *, n_samples: int,
                            alpha: float, seed: int = 0, bug: str | None = None,
                            n_jobs: int = 1, n_histories: int = 3, n_pilot: int = 4000,
                            n_events: int = 3,
                            craft: Callable[[list[Call]], list[Call]] | None = None,
                            n_held: int = 0) -> CallSiteResult:
    """Audit call ``k`` from ``n_samples`` redrawn outputs per side (module docstring): a
    (1 − α) lower bound on its privacy loss given the chosen history. ``craft`` turns each
    recorded history into the one to force (a method's worst case), as in
    :func:`~dptaucc.audit.callsite.audit_call_site`.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> def build(seed):
    ...     return DPTauCC(2, 2, epsilon=100.0, random_state=seed)
    >>> honest = audit_call_site_redrawn(build, pair.D, pair.D_prime, 3, n_samples=2000,
    ...                                  alpha=0.05, n_pilot=500)
    >>> honest.verdict, honest.n_fits
    ('ok', 2000)
    >>> audit_call_site_redrawn(build, pair.D, pair.D_prime, 3, n_samples=2000, alpha=0.05,
    ...                         n_pilot=500, bug="dp_taucc.table_sensitivity_halved").verdict
    'violation'
    >>> streamed = audit_call_site_redrawn(build, pair.D, pair.D_prime, 3, n_samples=1000,
    ...                                    alpha=0.05, n_pilot=500, n_held=3000)
    >>> streamed.verdict, streamed.n_fits  # chosen on 1,000 kept draws, counted on 3,000 more
    ('ok', 4000)
    """
    t0 = time.perf_counter()
    base = 9_000_000 + 100_000 * k
    histories = [_record_task(build, D, fit_seed(seed, base + r), bug) for r in range(n_histories)]
    histories = [h for h in histories if len(h) > k]
    if craft is not None:
        histories = [craft(h) for h in histories]
    if not histories:
        raise HistoryDiverged(f"no fit on D reaches call {k}")
    shards = max(1, n_jobs)
    best, best_sep, differs = None, -math.inf, ""
    for r, h in enumerate(histories):
        seeds = [fit_seed(seed, base + 1000 + 100 * r)] * 2  # the same fit seed on D and D'
        pilot = _both_sides(build, D, D_prime, h, k, n_pilot, seeds, bug, 1)
        if isinstance(pilot, str):
            differs = differs or pilot
        if pilot is None or isinstance(pilot, str):
            continue
        A, B = pilot[0], pilot[1]
        evs = derived.select(A, B, np.zeros(len(A)), np.zeros(len(B)), n_events=1)
        # a history whose pilot separates nothing is still sampled if no other replays (its
        # outputs are checked against the declared law, which needs no separation)
        sep = -math.inf if not evs else float(derived._scores(
            [evs[0].fires(A, np.zeros(len(A))).sum()], [evs[0].fires(B, np.zeros(len(B))).sum()],
            len(A), len(B), 0.05)[0])
        if best is None or sep > best_sep:
            best, best_sep = h, sep
    call = (best or histories[0])[k]
    if best is None:
        return CallSiteResult(k, call.step, call.mechanism, call.epsilon, call.delta, math.nan,
                              path_event(differs) if differs else
                              "no recorded history replays on both D and D'", 0,
                              time.perf_counter() - t0, path_differs=differs)
    # the same fit seeds on D and D': randomness that is not a mechanism's (a random start) is
    # data-independent, so conditioning both sides on it is legitimate, while different seeds
    # would let it differ between the sides and be counted as privacy loss (a false alarm)
    side = [fit_seed(seed, 2 * i) for i in range(shards)]
    seeds = side + side
    got = _both_sides(build, D, D_prime, best, k, n_samples, seeds, bug, n_jobs)
    if got is None or isinstance(got, str):
        differs = differs or (got or "")
        return CallSiteResult(k, call.step, call.mechanism, call.epsilon, call.delta, math.nan,
                              path_event(differs) if differs else
                              "the history diverged on a replay", 0, time.perf_counter() - t0,
                              path_differs=differs)
    A, B, eps_claim, delta, (calib_a, calib_b), (first_a, first_b) = got
    eps_claim, delta = max(eps_claim, call.epsilon), max(delta, call.delta)
    exact = pair_cost(calib_a, calib_b, delta)  # the first replays: the same seed a side
    sa, sb = np.zeros(len(A), dtype=np.int64), np.zeros(len(B), dtype=np.int64)
    n_held = max(0, int(n_held))
    sel, held = (slice(None), None) if n_held else (slice(0, None, 2), slice(1, None, 2))
    events = derived.select(A[sel], B[sel], sa[sel], sb[sel], name=call.step, n_events=n_events,
                            delta=delta)
    if n_held:
        # fresh draws of the same call, one replay a side, from a fit seed of their own (a
        # kept shard's seed would replay its draws: the held-out count would start with the
        # very draws that chose the events)
        held_seed = fit_seed(seed, base + HELD_OUT_OFFSET)
        with bug_context(bug):
            k_a, k_b = (_Side(build, X, best, k, held_seed).count(events, n_held)
                        for X in (D, D_prime))
        eps, cand, k_a, k_b = derived.bound_counts(events, k_a, k_b, n_held, n_held, alpha,
                                                   delta)
    else:
        eps, cand, k_a, k_b = derived.bound(events, A[held], B[held], sa[held], sb[held],
                                            alpha, delta)
    return CallSiteResult(
        k, call.step, call.mechanism, eps_claim, delta, eps, "" if cand is None else cand.label,
        len(A) + n_held, time.perf_counter() - t0,
        {e.label: [int(a), int(b)] for e, a, b in zip(events, k_a, k_b, strict=True)},
        exact.epsilon, exact.how, differs,
        law_differs(first_a, calib_a, "D") or law_differs(first_b, calib_b, "D'"))
