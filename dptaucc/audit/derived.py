"""Events derived from the outputs themselves: thresholds and values chosen on one part of the
fits, counted on the other.

The outputs of many fits on D and on D' (one array per fit, same shape, flattened to rows of
``A`` and ``B``) give candidate events, each a function of one fit's output:

* ``x[j] <= t`` and ``x[j] == t`` for every coordinate j and every value t seen (up to
  :data:`MAX_THRESHOLDS` quantiles per coordinate) — a released cell, a label;
* ``x[j] ∈ S`` for a choice (a coordinate with few values): S the values whose estimated
  ratio P_D/P_D' is largest (:func:`ratio_ordered_unions`) — the most likely event at a
  choice's largest ratio when several outputs share it (the same set offered twice);
* ``w·x <= t`` for the direction w = (mean_D' − mean_D)/pooled spread — the outputs that move
  together (a whole moved row, a table);
* ``shape == s`` when the outputs' shapes differ between fits.

:func:`select` scores every candidate on the *selection* fits and keeps the best few;
:func:`bound` counts those on the *held-out* fits and returns the simultaneous lower bound of
:mod:`dptaucc.audit.stats`. The choice never sees the held-out fits, so the bound keeps its
level (as in one-run and canary auditing, where thresholds are fixed on a separate part).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from .stats import Candidate, epsilon_lower_bound

__all__ = ["DerivedEvent", "as_matrix", "select", "select_tails", "bound", "bound_counts",
           "ratio_ordered_unions", "MAX_THRESHOLDS"]

MAX_THRESHOLDS = 32
#: tail thresholds per side of a coordinate in :func:`select_tails` (geometric ranks)
TAIL_RANKS = 24


@dataclass(frozen=True)
class DerivedEvent:
    """``kind`` "le" (x[j] <= t), "eq" (x[j] == t), "in" (x[j] one of the values ``ts``),
    "proj" (w·x <= t), "shape", "and" (every
    ``sg[i]·x[js[i]] <= sg[i]·ts[i]``: an orthant, the level set of the largest privacy loss
    of additive noise moving several values) or "llr" (``score(x) <= t`` for an estimated
    log-likelihood ratio :class:`LogRatio`).

    >>> import numpy as np
    >>> X, shapes = np.array([[0.5, 3.0], [2.0, 1.0]]), np.array([7, 8])
    >>> DerivedEvent("le", 0, 1.0).fires(X, shapes).tolist()
    [True, False]
    >>> DerivedEvent("proj", -1, 2.0, w=np.array([1.0, -1.0])).fires(X, shapes).tolist()
    [True, True]
    >>> DerivedEvent("shape", 8, float("nan")).fires(X, shapes).tolist()
    [False, True]
    >>> DerivedEvent("in", 1, float("nan"), ts=np.array([1.0, 2.0])).fires(X, shapes).tolist()
    [False, True]
    """

    kind: str
    j: int
    t: float
    w: np.ndarray | None = None
    label: str = ""
    js: np.ndarray | None = None  # "and": coordinates, thresholds and orientations
    ts: np.ndarray | None = None
    sg: np.ndarray | None = None
    score: LogRatio | None = None  # "llr"

    def fires(self, X: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        if self.kind == "shape":
            return shapes == self.j
        with np.errstate(invalid="ignore"):
            if self.kind == "le":
                return X[:, self.j] <= self.t
            if self.kind == "eq":
                return X[:, self.j] == self.t
            if self.kind == "in":
                return np.isin(X[:, self.j], self.ts)
            if self.kind == "and":
                return np.all(X[:, self.js] * self.sg <= self.ts * self.sg, axis=1)
            if self.kind == "llr":
                return self.score(X) <= self.t
            return np.nan_to_num(X, nan=np.inf) @ self.w <= self.t


def as_matrix(outputs: list, modal_shape: tuple | None = None
              ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(rows, shape ids, modal shape): outputs of the modal shape flattened to float rows,
    others NaN (no coordinate event fires on them); shape ids index the distinct shapes in
    order of first appearance in ``outputs`` (the modal one is given, or the most common).

    >>> import numpy as np
    >>> X, ids, modal = as_matrix([np.array([1, 2]), np.array([3, 4]), np.array([5])])
    >>> X.tolist(), modal, bool(ids[0] == ids[1] != ids[2])
    ([[1.0, 2.0], [3.0, 4.0], [nan, nan]], (2,), True)
    """
    shapes = [np.shape(o) for o in outputs]
    if modal_shape is None:
        distinct, counts = np.unique(np.array([str(s) for s in shapes]), return_counts=True)
        modal_str = distinct[np.argmax(counts)]
        modal_shape = next(s for s in shapes if str(s) == modal_str)
    p = int(np.prod(modal_shape)) if modal_shape else 1
    X = np.full((len(outputs), p), np.nan)
    ids = np.array([hash(s) & 0x7FFFFFFF for s in shapes], dtype=np.int64)
    for i, o in enumerate(outputs):
        if shapes[i] == modal_shape:
            X[i] = np.asarray(o, dtype=float).ravel()
    return X, ids, modal_shape


def _scores(k_a, k_b, n_a: int, n_b: int, alpha: float, delta: float = 0.0) -> np.ndarray:
    """The best of the 4 CP candidates (event/complement × direction) per event:
    log((l − δ)/u), with the δ of an (ε, δ) claim (0 for pure ε)."""
    k_a, k_b = np.asarray(k_a, float), np.asarray(k_b, float)
    best = np.full(k_a.shape, -np.inf)
    for kn, nn, kd, nd in ((k_a, n_a, k_b, n_b), (k_b, n_b, k_a, n_a),
                           (n_a - k_a, n_a, n_b - k_b, n_b), (n_b - k_b, n_b, n_a - k_a, n_a)):
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.where(kn > 0, beta.ppf(alpha, np.maximum(kn, 1e-9), nn - kn + 1), 0.0)
            up = np.where(kd < nd, beta.ppf(1 - alpha, kd + 1, np.maximum(nd - kd, 1e-9)), 1.0)
            best = np.maximum(best, np.where(lo > delta, np.log(lo - delta) - np.log(up),
                                             -np.inf))
    return best


def ratio_ordered_unions(values: np.ndarray, sa: np.ndarray, sb: np.ndarray, j: int,
                         name: str) -> tuple[list[DerivedEvent], np.ndarray, np.ndarray]:
    """Events ``x[j] ∈ S`` of a choice: its ``values`` ordered by the estimated log ratio
    log P_D(v)/P_D'(v) (counts in the sorted samples ``sa`` of D and ``sb`` of D', half a
    count added), S each prefix of 2 to V − 2 values of that order (one value is an "eq"
    event, V − 1 values its complement; a prefix's complement is the other end's prefix and
    the bound tries both). Where several outputs share a choice's largest ratio (a set
    offered twice), their union has that ratio at a multiple of one output's probability,
    so its bound is tighter at the same draws. Returns (events, counts on D, counts on D').

    >>> import numpy as np
    >>> sa = np.sort(np.repeat([0.0, 1.0, 2.0, 3.0], [50, 50, 10, 10]))
    >>> sb = np.sort(np.repeat([0.0, 1.0, 2.0, 3.0], [10, 10, 50, 50]))
    >>> events, ka, kb = ratio_ordered_unions(np.array([0.0, 1, 2, 3]), sa, sb, 0, "x")
    >>> [e.label for e in events], ka.tolist(), kb.tolist()
    (['x[0] ∈ {0, 1}'], [100], [20])
    """
    ca = np.searchsorted(sa, values, "right") - np.searchsorted(sa, values, "left")
    cb = np.searchsorted(sb, values, "right") - np.searchsorted(sb, values, "left")
    if values.size < 4:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64)
    ratio = np.log((ca + 0.5) / (sa.size + 0.5)) - np.log((cb + 0.5) / (sb.size + 0.5))
    order = np.argsort(-ratio, kind="stable")
    sizes = np.arange(2, values.size - 1)
    events = []
    for r in sizes:
        chosen = np.sort(values[order[:r]])
        events.append(DerivedEvent(
            "in", j, math.nan, ts=chosen,
            label=f"{name}[{j}] ∈ {{{', '.join(f'{v:g}' for v in chosen)}}}"))
    return events, np.cumsum(ca[order])[sizes - 1], np.cumsum(cb[order])[sizes - 1]


def _thresholds(values: np.ndarray) -> np.ndarray:
    v = np.unique(values[np.isfinite(values)])
    if v.size > MAX_THRESHOLDS:
        v = np.unique(np.quantile(values[np.isfinite(values)],
                                  np.linspace(0, 1, MAX_THRESHOLDS)))
    return v


def select(A: np.ndarray, B: np.ndarray, shapes_a: np.ndarray, shapes_b: np.ndarray,
           name: str = "x", n_events: int = 3, alpha: float = 0.05,
           joint: bool = True, delta: float = 0.0) -> list[DerivedEvent]:
    """The ``n_events`` candidates with the largest lower bound on the selection fits
    (A on D, B on D'), scored at ``alpha`` over the number of candidates with the claim's
    ``delta`` (an event rarer than δ can never bound ε); with ``joint`` also the events on
    several coordinates of :func:`_joint_candidates`.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.laplace(0, 1, (400, 1)), rng.laplace(3, 1, (400, 1))  # D' shifted by 3
    >>> shapes = np.zeros(400, dtype=np.int64)
    >>> events = select(A, B, shapes, shapes, n_events=2)
    >>> [(e.kind, e.j, bool(0.0 < e.t < 3.0)) for e in events]  # thresholds between the two
    [('le', 0, True), ('le', 0, True)]
    """
    n_a, n_b = A.shape[0], B.shape[0]
    cands: list[DerivedEvent] = []
    ka: list[float] = []
    kb: list[float] = []
    for s in np.unique(np.concatenate([shapes_a, shapes_b])):
        if np.unique(np.concatenate([shapes_a, shapes_b])).size > 1:
            cands.append(DerivedEvent("shape", int(s), math.nan, label=f"shape of {name} #{s}"))
            ka.append(float(np.sum(shapes_a == s)))
            kb.append(float(np.sum(shapes_b == s)))
    for j in range(A.shape[1]):
        a, b = A[:, j], B[:, j]
        ts = _thresholds(np.concatenate([a, b]))
        if ts.size < 2 and np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
            continue  # a constant coordinate: no event on it can tell D from D'
        sa, sb = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
        le_a, le_b = np.searchsorted(sa, ts, "right"), np.searchsorted(sb, ts, "right")
        eq_a = le_a - np.searchsorted(sa, ts, "left")
        eq_b = le_b - np.searchsorted(sb, ts, "left")
        for i, t in enumerate(ts):
            cands.append(DerivedEvent("le", j, float(t), label=f"{name}[{j}] <= {t:g}"))
            ka.append(le_a[i])
            kb.append(le_b[i])
            cands.append(DerivedEvent("eq", j, float(t), label=f"{name}[{j}] == {t:g}"))
            ka.append(eq_a[i])
            kb.append(eq_b[i])
        values = np.unique(np.concatenate([sa, sb]))
        if values.size <= MAX_THRESHOLDS:  # a choice: its ratio-ordered unions too
            unions, ua, ub = ratio_ordered_unions(values, sa, sb, j, name)
            cands += unions
            ka += ua.tolist()
            kb += ub.tolist()
    ok_a, ok_b = np.isfinite(A).all(axis=1), np.isfinite(B).all(axis=1)
    if A.shape[1] > 1 and ok_a.sum() > 1 and ok_b.sum() > 1:
        spread = np.sqrt(0.5 * (A[ok_a].var(axis=0) + B[ok_b].var(axis=0))) + 1e-12
        w = (B[ok_b].mean(axis=0) - A[ok_a].mean(axis=0)) / spread**2
        if np.any(w != 0):
            pa, pb = A[ok_a] @ w, B[ok_b] @ w
            for t in _thresholds(np.concatenate([pa, pb])):
                cands.append(DerivedEvent("proj", -1, float(t), w,
                                          label=f"projection of {name} <= {t:.4g}"))
                ka.append(float(np.sum(pa <= t)))
                kb.append(float(np.sum(pb <= t)))
    if joint and A.shape[1] > 1:
        events, ja, jb = _joint_candidates(A, B, name)
        cands += events
        ka += ja
        kb += jb
    if not cands:
        return []
    score = _scores(ka, kb, n_a, n_b, alpha / len(cands), delta)  # winner's curse
    order = np.argsort(-score, kind="stable")
    return [cands[i] for i in order[:n_events] if np.isfinite(score[i])] or [cands[order[0]]]


def _tail_thresholds(pooled: np.ndarray) -> np.ndarray:
    """Values at geometric ranks 1, 2, 4, … from both ends of the pooled sample, and a few
    quantiles between: the far tails, where a mechanism's worst likelihood ratio lives."""
    v = np.sort(pooled[np.isfinite(pooled)])
    if v.size == 0:
        return v
    ranks = np.unique(np.geomspace(1, max(1, v.size // 2), TAIL_RANKS).astype(np.int64)) - 1
    mid = np.quantile(v, np.linspace(0.0, 1.0, 17))
    return np.unique(np.concatenate([v[ranks], v[v.size - 1 - ranks], mid]))


#: at most this many coordinates enter an orthant or a log-likelihood ratio (the ones whose
#: means differ most between D and D', each significant at |z| > :data:`SIGNAL_Z`)
MAX_JOINT = 8
SIGNAL_Z = 2.0
#: rows per side the discriminant's covariance is estimated from (a subsample)
COV_ROWS = 20_000
#: per-coordinate tail levels of the orthants (probability on the favoured side)
ORTHANT_LEVELS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7,
                  0.8, 0.9)


@dataclass(frozen=True)
class LogRatio:
    """An estimated log-likelihood ratio log p_D(x)/p_D'(x) of a release whose coordinates
    ``js`` are (taken as) independent: Σ_i table_i[bin of x[js[i]]], each coordinate's bins
    cut at ``edges[i]`` (fine in both tails) and its log ratio smoothed by half a count. For
    additive noise on independent values it is the exact likelihood ratio up to binning, so
    its level sets are the events with the most power (Neyman–Pearson).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.laplace(0, 1, (4000, 2)), rng.laplace(1, 1, (4000, 2))
    >>> lr = LogRatio.fit(A, B, np.array([0, 1]))
    >>> s = lr(np.array([[-3.0, -3.0], [0.5, 0.5], [4.0, 4.0]]))
    >>> bool(s[0] > 1.2 and abs(s[1]) < 0.6 and s[2] < -1.2)  # ≈ 2·(±1) in the tails
    True
    """

    js: np.ndarray
    edges: tuple[np.ndarray, ...]
    tables: tuple[np.ndarray, ...]

    @classmethod
    def fit(cls, A: np.ndarray, B: np.ndarray, js: np.ndarray) -> LogRatio:
        edges, tables = [], []
        for j in js:
            e = _bin_edges(np.concatenate([A[:, j], B[:, j]]))
            n_bins = e.size + 1
            ca = np.bincount(np.searchsorted(e, A[:, j], "left"), minlength=n_bins)
            cb = np.bincount(np.searchsorted(e, B[:, j], "left"), minlength=n_bins)
            tables.append(np.log((ca + 0.5) / (A.shape[0] + 0.5 * n_bins))
                          - np.log((cb + 0.5) / (B.shape[0] + 0.5 * n_bins)))
            edges.append(e)
        return cls(np.asarray(js), tuple(edges), tuple(tables))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The score of each row (+inf where a coordinate is not finite: no event fires)."""
        out = np.zeros(X.shape[0])
        for j, e, table in zip(self.js, self.edges, self.tables, strict=True):
            x = X[:, j]
            out += np.where(np.isfinite(x), table[np.searchsorted(e, x, "left")], np.inf)
        return out


def _bin_edges(pooled: np.ndarray, min_count: int = 40, n_middle: int = 16) -> np.ndarray:
    """Bin edges for an estimated log ratio: every value when there are few (a choice, a
    small count), else quantiles at geometric ranks from each end starting at ``min_count``
    values (fine in the tails, yet each bin holds enough draws) and ``n_middle`` between."""
    v = np.sort(pooled[np.isfinite(pooled)])
    values = np.unique(v)
    if values.size <= 4 * MAX_THRESHOLDS:
        return values
    start = max(1, min(min_count, v.size // 8))
    ranks = np.unique(np.geomspace(start, max(start, v.size // 2), 12).astype(np.int64)) - 1
    mid = np.quantile(v, np.linspace(0.0, 1.0, n_middle + 1))
    return np.unique(np.concatenate([v[ranks], v[v.size - 1 - ranks], mid]))


def signal_coordinates(A: np.ndarray, B: np.ndarray, max_joint: int = MAX_JOINT,
                       z: float = SIGNAL_Z) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates, signs): those whose means differ between A (D) and B (D') by more than
    ``z`` standard errors, the largest first (at most ``max_joint``), and the sign of
    mean_D' − mean_D of each.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.normal(0, 1, (500, 4)), rng.normal(0, 1, (500, 4))
    >>> B[:, 2] += 1.0; B[:, 0] -= 0.5
    >>> js, sg = signal_coordinates(A, B)
    >>> js.tolist(), sg.tolist()
    ([2, 0], [1.0, -1.0])
    """
    ok_a, ok_b = np.isfinite(A).all(axis=1), np.isfinite(B).all(axis=1)
    A, B = A[ok_a], B[ok_b]
    if min(A.shape[0], B.shape[0]) < 2:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    diff = B.mean(axis=0) - A.mean(axis=0)
    se = np.sqrt(A.var(axis=0) / A.shape[0] + B.var(axis=0) / B.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(se > 0, np.abs(diff) / se, np.where(diff != 0, np.inf, 0.0))
    order = np.argsort(-score, kind="stable")
    js = order[score[order] > z][:max_joint]
    return js.astype(np.intp), np.sign(diff[js])


def _orthants(A, B, js, sg, name, levels=ORTHANT_LEVELS):
    """Orthant events on the coordinates ``js`` (every prefix of them), toward D's side
    (``sg·x <= sg·t`` with t at level u of D's sample) and toward D''s: per coordinate the
    same tail level u. Returns (events, counts on A, counts on B)."""
    events, ka, kb = [], [], []
    for toward, S in ((-1.0, A), (1.0, B)):  # -1: the region D favours; +1: D' favours
        o = -toward * sg  # orientation: fires when o·x <= o·t
        for u in levels:
            q = np.where(o > 0, u, 1.0 - u)
            ts = np.array([np.quantile(S[:, j], qi) for j, qi in zip(js, q, strict=True)])
            fa, fb = np.ones(A.shape[0], bool), np.ones(B.shape[0], bool)
            for i, j in enumerate(js):
                fa &= A[:, j] * o[i] <= ts[i] * o[i]
                fb &= B[:, j] * o[i] <= ts[i] * o[i]
                events.append(DerivedEvent(
                    "and", -1, float(u), js=js[:i + 1].copy(), ts=ts[:i + 1].copy(),
                    sg=o[:i + 1].copy(), label=f"orthant of {name} {js[:i + 1].tolist()} at "
                    f"{u:g} toward {'D' if toward < 0 else chr(68) + chr(39)}"))
                ka.append(int(fa.sum()))
                kb.append(int(fb.sum()))
    return events, ka, kb


def _joint_candidates(A, B, name):
    """Events on several coordinates at once, for vector releases whose neighbours move
    several values (a moved row's two cluster counts, two clusters' sums, a whole block):
    orthants and the estimated log-likelihood ratio (fitted on one half of the selection
    draws, thresholds from the other) of the coordinates whose means differ, and the
    projection on Σ⁻¹(mean_D' − mean_D) (the likelihood ratio of correlated Gaussian
    noise). Rows with non-finite values are left out. Returns (events, counts A, counts B)."""
    ok_a, ok_b = np.isfinite(A).all(axis=1), np.isfinite(B).all(axis=1)
    if ok_a.sum() < 8 or ok_b.sum() < 8:
        return [], [], []
    Af, Bf = A[ok_a], B[ok_b]
    js, sg = signal_coordinates(Af, Bf)
    events, ka, kb = [], [], []
    if js.size:
        e, a, b = _orthants(Af, Bf, js, sg, name)
        events += e; ka += a; kb += b  # noqa: E702
        for size in sorted({1, 2, 4, js.size} & set(range(1, js.size + 1))):
            # fitted on one half of the selection draws, scored on the other (counts scaled
            # to the whole): a ratio fitted and scored on the same draws overrates its tails
            lr = LogRatio.fit(Af[0::2], Bf[0::2], js[:size])
            sa, sb = np.sort(lr(Af[1::2])), np.sort(lr(Bf[1::2]))
            fa, fb = Af.shape[0] / max(1, sa.size), Bf.shape[0] / max(1, sb.size)
            for t in _tail_thresholds(np.concatenate([sa, sb])):
                events.append(DerivedEvent("llr", -1, float(t), score=lr,
                                           label=f"log-ratio of {name} {js[:size].tolist()} "
                                                 f"<= {t:.4g}"))
                ka.append(int(round(fa * np.searchsorted(sa, t, "right"))))
                kb.append(int(round(fb * np.searchsorted(sb, t, "right"))))
    p = A.shape[1]
    if 1 < p <= 300:
        diff = Bf.mean(axis=0) - Af.mean(axis=0)
        sub = max(1, Af.shape[0] // COV_ROWS), max(1, Bf.shape[0] // COV_ROWS)
        cov = 0.5 * (np.cov(Af[::sub[0]], rowvar=False) + np.cov(Bf[::sub[1]], rowvar=False))
        ridge = 1e-6 * max(float(np.trace(cov)) / p, 1e-300)
        try:
            w = np.linalg.solve(cov + ridge * np.eye(p), diff)
        except np.linalg.LinAlgError:
            w = None
        if w is not None and np.all(np.isfinite(w)) and np.any(w != 0):
            w = w / np.abs(w).max()
            pa, pb = np.sort(A[ok_a] @ w), np.sort(B[ok_b] @ w)
            for t in _tail_thresholds(np.concatenate([pa, pb])):
                events.append(DerivedEvent("proj", -1, float(t), w,
                                           f"discriminant of {name} <= {t:.6g}"))
                ka.append(int(np.searchsorted(pa, t, "right")))
                kb.append(int(np.searchsorted(pb, t, "right")))
    # counts over all selection rows (a row with a non-finite value fires no event)
    return events, ka, kb


def select_tails(A: np.ndarray, B: np.ndarray, name: str = "x", n_events: int = 3,
                 alpha: float = 0.05, delta: float = 0.0,
                 joint: bool = True) -> list[DerivedEvent]:
    """:func:`select` for many draws of one mechanism call (rows of A on D, of B on D'):
    ``x[j] <= t`` at thresholds reaching into both tails (:func:`_tail_thresholds`),
    ``x[j] == t`` for coordinates with at most :data:`MAX_THRESHOLDS` values (a choice), and
    ``w·x <= t`` along w = (mean_D' − mean_D)/variance (the likelihood-ratio direction of
    additive noise) and, with ``joint``, the events on several coordinates at once of
    :func:`_joint_candidates` (orthants, an estimated log-likelihood ratio, the discriminant
    of correlated noise), scored with the claim's δ.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.laplace(0, 1, (400, 2)), rng.laplace(0, 1, (400, 2))
    >>> B[:, 1] += 3.0  # only coordinate 1 differs
    >>> sorted({e.j for e in select_tails(A, B, n_events=3)} - {-1})  # -1: a projection
    [1]
    """
    n_a, n_b = A.shape[0], B.shape[0]
    cands: list[DerivedEvent] = []
    ka: list[np.ndarray] = []
    kb: list[np.ndarray] = []

    def add(kind, j, ts, sa, sb, w=None, label=""):
        le_a, le_b = np.searchsorted(sa, ts, "right"), np.searchsorted(sb, ts, "right")
        if kind == "eq":
            le_a = le_a - np.searchsorted(sa, ts, "left")
            le_b = le_b - np.searchsorted(sb, ts, "left")
        cands.extend(DerivedEvent(kind, j, float(t), w, label.format(t=t)) for t in ts)
        ka.append(le_a)
        kb.append(le_b)

    for j in range(A.shape[1]):
        sa, sb = np.sort(A[:, j]), np.sort(B[:, j])
        if sa[0] == sa[-1] == sb[0] == sb[-1]:
            continue  # a constant coordinate tells nothing
        pooled = np.concatenate([sa, sb])
        add("le", j, _tail_thresholds(pooled), sa, sb, label=f"{name}[{j}] <= {{t:g}}")
        values = np.unique(pooled)
        if values.size <= MAX_THRESHOLDS:
            add("eq", j, values, sa, sb, label=f"{name}[{j}] == {{t:g}}")
            unions, ua, ub = ratio_ordered_unions(values[np.isfinite(values)], sa, sb, j, name)
            cands.extend(unions)
            ka.append(ua)
            kb.append(ub)
    if A.shape[1] > 1:
        var = 0.5 * (A.var(axis=0) + B.var(axis=0)) + 1e-300
        w = (B.mean(axis=0) - A.mean(axis=0)) / var
        if np.any(w != 0):
            w = w / np.abs(w).max()
            pa, pb = np.sort(A @ w), np.sort(B @ w)
            add("proj", -1, _tail_thresholds(np.concatenate([pa, pb])), pa, pb, w,
                f"projection of {name} <= {{t:.6g}}")
    if joint:
        events, ja, jb = _joint_candidates(A, B, name)
        cands += events
        ka.append(np.asarray(ja, dtype=np.int64))
        kb.append(np.asarray(jb, dtype=np.int64))
    if not cands:
        return []
    # scored at the level the held-out bound will use, divided by the number of candidates:
    # the best of many scores on one sample flatters events seen in few draws (the winner's
    # curse), and this level makes their selection pay for it as the held-out bound would
    k_a, k_b = np.concatenate(ka), np.concatenate(kb)
    score = _scores(k_a, k_b, n_a, n_b, alpha / max(1, k_a.size), delta)
    order = np.argsort(-score, kind="stable")
    return [cands[i] for i in order[:n_events] if np.isfinite(score[i])] or [cands[order[0]]]


def bound(events: list[DerivedEvent], A: np.ndarray, B: np.ndarray, shapes_a: np.ndarray,
          shapes_b: np.ndarray, alpha: float, delta: float = 0.0
          ) -> tuple[float, Candidate | None, np.ndarray, np.ndarray]:
    """(ε lower bound, its candidate, counts on D, counts on D') of ``events`` on held-out
    fits; NaN when every event fired in none or all of the fits on both sides.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> shapes = np.zeros(400, dtype=np.int64)
    >>> events = [DerivedEvent("le", 0, 1.5, label="x[0] <= 1.5")]
    >>> A, B = rng.laplace(0, 1, (400, 1)), rng.laplace(3, 1, (400, 1))  # fresh fits
    >>> eps, best, k_a, k_b = bound(events, A, B, shapes, shapes, alpha=0.05)
    >>> bool(1.0 < eps < 3.0), best.label  # Laplace(1) shifted by 3: ε ≥ 3 is the truth
    (True, "x[0] <= 1.5 [D/D']")
    >>> bound(events, A + 100, B + 100, shapes, shapes, alpha=0.05)[0]  # fires nowhere
    nan
    """
    k_a = np.array([e.fires(A, shapes_a).sum() for e in events], dtype=np.int64)
    k_b = np.array([e.fires(B, shapes_b).sum() for e in events], dtype=np.int64)
    return bound_counts(events, k_a, k_b, A.shape[0], B.shape[0], alpha, delta)


def bound_counts(events: list[DerivedEvent], k_a, k_b, n_a: int, n_b: int, alpha: float,
                 delta: float = 0.0) -> tuple[float, Candidate | None, np.ndarray, np.ndarray]:
    """:func:`bound` from the events' counts on held-out fits (``k_a`` of ``n_a`` on D,
    ``k_b`` of ``n_b`` on D'), e.g. counted batch by batch on draws never kept.

    >>> events = [DerivedEvent("le", 0, 1.5, label="x[0] <= 1.5")]
    >>> eps, best, _, _ = bound_counts(events, [370], [45], 400, 400, alpha=0.05)
    >>> round(eps, 2), best.label  # 30 of 400 outside the event on D, 355 on D'
    (2.04, "not (x[0] <= 1.5) [D'/D]")
    """
    k_a, k_b = np.asarray(k_a, dtype=np.int64), np.asarray(k_b, dtype=np.int64)
    informative = ((k_a + k_b) > 0) & ((k_a + k_b) < n_a + n_b)
    if not informative.any():
        return math.nan, None, k_a, k_b
    eps, best = epsilon_lower_bound([e.label for e in events], k_a, k_b, n_a, n_b, alpha, delta)
    return eps, best, k_a, k_b
