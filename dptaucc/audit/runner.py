"""The auditor: fit on D and D' many times, count events, bound ε from below.

See :func:`audit`. What it proves and what it does not:

* ``epsilon_lower`` is a **lower** bound: with probability at least 1 − α (over the audit's own
  randomness) the estimator's true privacy loss on this pair, for these events, is at least
  ``epsilon_lower``. A value above the claimed ε is evidence of a privacy bug. A value at or
  below the claim proves nothing about privacy: the audit sees only the pair and the events it
  was given, and ``n_fits`` caps what it can see (with n fits per side the largest possible
  bound is about ``log(n / log(4m/α))`` for m events, e.g. ≈ 4.9 for n = 1000, m = 10).
* Events are checked: one that raises stops the audit (:class:`~dptaucc.audit.events.
  AuditEventError`); one that fires in none (or all) of the fits on both sides is
  uninformative, and when every event is, ``epsilon_lower`` is NaN and ``verdict`` says
  "no evidence" — never 0 as if the audit had passed.
* Events must be fixed before the run and must be functions of the fitted model (and of public
  facts such as D, D' and the parameters). An event must not read the seed or the random
  state: the seed determines all the noise, and an event that replays it measures nothing
  about privacy.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from tqdm.auto import tqdm

from .events import Event, as_events, evaluate_events
from .stats import Candidate, epsilon_candidates, epsilon_lower_bound

__all__ = ["audit", "AuditResult", "FIT_RAISED", "fit_seed"]

#: name of the built-in event "the fit raised an exception" (always the first event)
FIT_RAISED = "fit raised"


def fit_seed(seed: int, index: int) -> int:
    """``random_state`` of fit ``index`` (2i on D, 2i + 1 on D' for pair i): the ``index``-th
    child of ``SeedSequence(seed)`` (as ``spawn`` makes it), as a 32-bit int so that any
    scikit-learn estimator accepts it.

    >>> import numpy as np
    >>> seeds = [fit_seed(7, i) for i in range(4)]
    >>> len(set(seeds)), seeds == [fit_seed(7, i) for i in range(4)]  # distinct, repeatable
    (4, True)
    >>> seeds[2] == int(np.random.SeedSequence(7).spawn(3)[2].generate_state(1)[0])  # spawn
    True
    """
    child = np.random.SeedSequence(seed, spawn_key=(index,))
    return int(child.generate_state(1, dtype=np.uint32)[0])


def _check_cell_neighbours(D, D_prime) -> tuple[int, int]:
    A = sp.csr_matrix(D, dtype=np.float64)
    B = sp.csr_matrix(D_prime, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"D and D' must have the same shape, got {A.shape} and {B.shape}")
    diff = (B - A).tocoo()
    diff.eliminate_zeros()
    if diff.nnz != 1 or diff.data[0] != 1.0:
        raise ValueError("D' must equal D plus one in exactly one cell (the cell-level "
                         "neighbouring relation); pass require_cell_neighbours=False for "
                         "another relation")
    return int(diff.row[0]), int(diff.col[0])


def _make_builder(estimator) -> Callable[[int], Any]:
    """``random_state -> unfitted estimator`` from an estimator instance or a factory."""
    if hasattr(estimator, "fit") and hasattr(estimator, "get_params"):
        if "random_state" not in estimator.get_params(deep=False):
            raise ValueError(f"{type(estimator).__name__} has no random_state parameter: the "
                             "audit needs fresh, seeded randomness per fit (pass a factory "
                             "random_state -> estimator instead)")
        proto = clone(estimator)
        return lambda rs: clone(proto).set_params(random_state=rs)
    if callable(estimator):
        return estimator
    raise TypeError("estimator must be a scikit-learn estimator with a random_state parameter "
                    f"or a callable random_state -> estimator, got {type(estimator).__name__}")


def _fit_and_observe(build, X, rs: int, events: Sequence[Event]) -> np.ndarray:
    """Outcome vector [fit raised, e_1..e_m] of one fit (an event that raises stops the
    audit with :class:`~dptaucc.audit.events.AuditEventError`)."""
    m = len(events)
    # built outside the warnings context: a first import may install its own filters
    # (diffprivlib does), which must not be undone when the context exits
    model = build(rs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. PrivacyLeakWarning on every paper-mode fit
        try:
            model.fit(X)
        except Exception:
            out = np.zeros(m + 1, dtype=bool)
            out[0] = True
            return out
        fired = evaluate_events(events, model)
    return np.concatenate([[False], fired])


def _run_pair(build, D, D_prime, events, seed: int, i: int):
    t0 = time.perf_counter()
    on_d = _fit_and_observe(build, D, fit_seed(seed, 2 * i), events)
    on_dp = _fit_and_observe(build, D_prime, fit_seed(seed, 2 * i + 1), events)
    return i, on_d, on_dp, time.perf_counter() - t0


@dataclass
class AuditResult:
    """Counts and the simultaneous lower bound of one audit (see :func:`audit`).

    >>> import numpy as np
    >>> class Constant:  # releases nothing about its input
    ...     def fit(self, X):
    ...         self.value_ = 1
    ...         return self
    >>> D = np.eye(3, dtype=int)
    >>> D_prime = D.copy(); D_prime[0, 1] += 1
    >>> result = audit(lambda random_state: Constant(), D, D_prime,
    ...                {"value is 1": lambda m: m.value_ == 1}, n_fits=20, progress=False)
    >>> result.verdict, result.uninformative, result.events[0]  # no event tells D from D'
    ('no evidence', ['fit raised', 'value is 1'], 'fit raised')
    """

    epsilon_lower: float
    best: Candidate | None  # the candidate that gave epsilon_lower (None when it is 0)
    events: list[str]  # event names; events[0] is "fit raised"
    counts_d: np.ndarray  # fits on D in which each event occurred
    counts_dp: np.ndarray  # fits on D'
    n_fits: int  # fits per side actually used
    n_requested: int
    alpha: float
    delta: float
    seed: int
    elapsed_s: float
    fit_time_s: float  # mean time of one fit and its events (both sides pooled)
    stopped_by_time: bool
    cell: tuple[int, int] | None = None

    @property
    def uninformative(self) -> list[str]:
        """Events that fired in none, or in all, of the fits on both sides."""
        total = self.counts_d + self.counts_dp
        return [e for e, t in zip(self.events, total, strict=True)
                if t == 0 or t == 2 * self.n_fits]

    @property
    def verdict(self) -> str:
        """"no evidence" (every event uninformative: ``epsilon_lower`` is NaN), else "bound"."""
        return "no evidence" if math.isnan(self.epsilon_lower) else "bound"

    @property
    def event(self) -> str | None:
        """Label of the event (and direction) that gave ``epsilon_lower``."""
        return None if self.best is None else self.best.label

    def candidates(self) -> list[Candidate]:
        return epsilon_candidates(self.events, self.counts_d, self.counts_dp, self.n_fits,
                                  self.n_fits, self.alpha, self.delta)

    def table(self) -> list[dict]:
        """One row per event: counts on each side and its best candidate's bound."""
        best: dict[str, float] = {}
        for c in self.candidates():
            best[c.event] = max(best.get(c.event, -math.inf), c.epsilon_lower)
        dull = set(self.uninformative)
        return [{"event": e, "count_D": int(self.counts_d[i]), "count_D'": int(self.counts_dp[i]),
                 "informative": e not in dull,
                 "epsilon_lower": max(0.0, best.get(e, 0.0))} for i, e in enumerate(self.events)]

    def __str__(self) -> str:
        if self.verdict == "no evidence":
            head = (f"no evidence: every event is uninformative ({self.n_fits} fits per side, "
                    f"{self.elapsed_s:.1f} s)")
        else:
            head = (f"ε_lower = {self.epsilon_lower:.3f} ({1 - self.alpha:.0%} simultaneous, "
                f"{self.n_fits} fits per side, {self.elapsed_s:.1f} s)"
                    + (f" from {self.event}" if self.best else ""))
        rows = []
        for r in self.table():
            on_d, on_dp = r["count_D"], r["count_D'"]
            rows.append(f"  {r['event']}: D {on_d}/{self.n_fits}, D' {on_dp}/{self.n_fits}"
                        + ("" if r["informative"] else " (uninformative)"))
        return "\n".join([head, *rows])


def audit(
    estimator,
    D,
    D_prime,
    events: Mapping[str, Callable] | Sequence[Event],
    *,
    n_fits: int = 1000,
    time_limit: float | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float = 0.0,
    n_jobs: int | None = 1,
    progress: bool = True,
    require_cell_neighbours: bool = True,
    description: str | None = None,
) -> AuditResult:
    """Empirical lower bound on the privacy loss of ``estimator`` for the pair (D, D').

    Parameters
    ----------
    estimator : an unfitted scikit-learn estimator with a ``random_state`` parameter (it is
        cloned and given a fresh seed per fit), or a callable ``random_state -> estimator``.
    D, D_prime : neighbouring count matrices (dense or sparse), ``D' = D + e_u e_vᵀ``.
    events : ``{name: function(model) -> bool}`` or a list of :class:`Event`, fixed before the
        run. An event that raises (e.g. on an absent attribute) stops the audit with
        :class:`~dptaucc.audit.events.AuditEventError`. The event "fit raised" is always added
        first: a fit that raises is an observable outcome (all other events are then False),
        not a crash of the audit.
    n_fits : fits per side (pairs of fits, interleaved D, D', D, D', ...).
    time_limit : seconds; when reached, the audit stops after the pair being collected and
        uses the pairs completed so far (the same number on both sides).
    seed : the audit's own randomness: fit i gets ``fit_seed(seed, i)``, so the counts depend
        only on (seed, number of pairs), never on ``n_jobs`` or scheduling.
    alpha : 1 − confidence of the simultaneous bound (Bonferroni over 4 candidates per event:
        the event and its complement, both directions; :mod:`dptaucc.audit.stats`).
    delta : the δ the estimator claims; the bound is then on ε of (ε, δ)-DP.
    n_jobs : joblib workers (``-1``: all cores).
    require_cell_neighbours : check that D' − D is one cell incremented by one.

    Limits: a lower bound, only as strong as its events and its number of fits (module doc).

    Examples
    --------
    An estimator that releases one cell of its input as is: the audit sees it.

    >>> import numpy as np
    >>> from dptaucc.audit import audit
    >>> class Leaky:
    ...     def fit(self, X):
    ...         self.cell_ = int(X[0, 1])
    ...         return self
    >>> D = 3 * np.eye(4, dtype=int)
    >>> D_prime = D.copy(); D_prime[0, 1] += 1
    >>> leak = audit(lambda random_state: Leaky(), D, D_prime,
    ...              {"cell is 0": lambda model: model.cell_ == 0}, n_fits=100, progress=False)
    >>> round(leak.epsilon_lower, 2), leak.event
    (2.96, "not (cell is 0) [D'/D]")

    DP-τCC at ε = 1, with an event on its released row labels, stays below its claim:

    >>> from dptaucc import DPTauCC
    >>> same_cluster = {"rows 0 and 1 together": lambda m: m.row_labels_[0] == m.row_labels_[1]}
    >>> result = audit(DPTauCC(2, 2, epsilon=1.0), D, D_prime, same_cluster, n_fits=50,
    ...                progress=False)
    >>> result.n_fits, result.epsilon_lower <= 1.0
    (50, True)
    """
    if isinstance(n_fits, bool) or not isinstance(n_fits, (int, np.integer)) or n_fits < 1:
        raise ValueError(f"n_fits must be an int >= 1, got {n_fits!r}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be None or > 0 seconds, got {time_limit!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    cell = _check_cell_neighbours(D, D_prime) if require_cell_neighbours else None
    evs = as_events(events)
    names = [FIT_RAISED, *(e.name for e in evs)]
    if len(set(names)) != len(names):
        raise ValueError(f"event names must be distinct (and not {FIT_RAISED!r}): {names[1:]}")
    build = _make_builder(estimator)
    seed = int(seed)

    m = len(names)
    counts = np.zeros((2, m), dtype=np.int64)
    done, fit_time, stopped = 0, 0.0, False
    t0 = time.perf_counter()
    tasks = (delayed(_run_pair)(build, D, D_prime, evs, seed, i) for i in range(int(n_fits)))
    bar = tqdm(total=int(n_fits), unit="pair", desc=description or "audit", disable=not progress,
               leave=False)
    gen = Parallel(n_jobs=n_jobs, return_as="generator", batch_size="auto")(tasks)
    try:
        for i, out_d, out_p, dt in gen:
            assert i == done  # the ordered generator yields pairs in index order
            counts[0] += out_d
            counts[1] += out_p
            done += 1
            fit_time += dt
            bar.update()
            if time_limit is not None and time.perf_counter() - t0 >= time_limit \
                    and done < n_fits:
                stopped = True
                break
    finally:
        bar.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib: "tasks executed but not used"
            gen.close()
    total = counts[0] + counts[1]
    if np.all((total == 0) | (total == 2 * done)):
        eps, best = math.nan, None  # no event tells anything: no evidence, not a pass
    else:
        eps, best = epsilon_lower_bound(names, counts[0], counts[1], done, done, alpha, delta)
    return AuditResult(
        epsilon_lower=eps, best=best, events=names, counts_d=counts[0], counts_dp=counts[1],
        n_fits=done, n_requested=int(n_fits),
        alpha=alpha, delta=delta, seed=seed, elapsed_s=time.perf_counter() - t0,
        fit_time_s=fit_time / max(1, 2 * done), stopped_by_time=stopped, cell=cell)
