"""Events derived from the outputs themselves: thresholds and values chosen on one part of the
fits, counted on the other.

The outputs of many fits on D and on D' (one array per fit, same shape, flattened to rows of
``A`` and ``B``) give candidate events, each a function of one fit's output:

* ``x[j] <= t`` and ``x[j] == t`` for every coordinate j and every value t seen (up to
  :data:`MAX_THRESHOLDS` quantiles per coordinate) — a released cell, a label;
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

__all__ = ["DerivedEvent", "as_matrix", "select", "select_tails", "bound", "MAX_THRESHOLDS"]

MAX_THRESHOLDS = 32
#: tail thresholds per side of a coordinate in :func:`select_tails` (geometric ranks)
TAIL_RANKS = 24


@dataclass(frozen=True)
class DerivedEvent:
    """``kind`` "le" (x[j] <= t), "eq" (x[j] == t), "proj" (w·x <= t) or "shape".

    >>> import numpy as np
    >>> X, shapes = np.array([[0.5, 3.0], [2.0, 1.0]]), np.array([7, 8])
    >>> DerivedEvent("le", 0, 1.0).fires(X, shapes).tolist()
    [True, False]
    >>> DerivedEvent("proj", -1, 2.0, w=np.array([1.0, -1.0])).fires(X, shapes).tolist()
    [True, True]
    >>> DerivedEvent("shape", 8, float("nan")).fires(X, shapes).tolist()
    [False, True]
    """

    kind: str
    j: int
    t: float
    w: np.ndarray | None = None
    label: str = ""

    def fires(self, X: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        if self.kind == "shape":
            return shapes == self.j
        with np.errstate(invalid="ignore"):
            if self.kind == "le":
                return X[:, self.j] <= self.t
            if self.kind == "eq":
                return X[:, self.j] == self.t
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


def _thresholds(values: np.ndarray) -> np.ndarray:
    v = np.unique(values[np.isfinite(values)])
    if v.size > MAX_THRESHOLDS:
        v = np.unique(np.quantile(values[np.isfinite(values)],
                                  np.linspace(0, 1, MAX_THRESHOLDS)))
    return v


def select(A: np.ndarray, B: np.ndarray, shapes_a: np.ndarray, shapes_b: np.ndarray,
           name: str = "x", n_events: int = 3, alpha: float = 0.05) -> list[DerivedEvent]:
    """The ``n_events`` candidates with the largest lower bound on the selection fits
    (A on D, B on D').

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
    if not cands:
        return []
    score = _scores(ka, kb, n_a, n_b, alpha)
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


def select_tails(A: np.ndarray, B: np.ndarray, name: str = "x", n_events: int = 3,
                 alpha: float = 0.05, delta: float = 0.0) -> list[DerivedEvent]:
    """:func:`select` for many draws of one mechanism call (rows of A on D, of B on D'):
    ``x[j] <= t`` at thresholds reaching into both tails (:func:`_tail_thresholds`),
    ``x[j] == t`` for coordinates with at most :data:`MAX_THRESHOLDS` values (a choice), and
    ``w·x <= t`` along w = (mean_D' − mean_D)/variance (the likelihood-ratio direction of
    additive noise), scored with the claim's δ.

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
    if A.shape[1] > 1:
        var = 0.5 * (A.var(axis=0) + B.var(axis=0)) + 1e-300
        w = (B.mean(axis=0) - A.mean(axis=0)) / var
        if np.any(w != 0):
            w = w / np.abs(w).max()
            pa, pb = np.sort(A @ w), np.sort(B @ w)
            add("proj", -1, _tail_thresholds(np.concatenate([pa, pb])), pa, pb, w,
                f"projection of {name} <= {{t:.6g}}")
    if not cands:
        return []
    score = _scores(np.concatenate(ka), np.concatenate(kb), n_a, n_b, alpha, delta)
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
    n_a, n_b = A.shape[0], B.shape[0]
    informative = ((k_a + k_b) > 0) & ((k_a + k_b) < n_a + n_b)
    if not informative.any():
        return math.nan, None, k_a, k_b
    eps, best = epsilon_lower_bound([e.label for e in events], k_a, k_b, n_a, n_b, alpha, delta)
    return eps, best, k_a, k_b
