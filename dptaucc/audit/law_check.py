"""Do a call's released outputs follow the law its mechanism declared? (one side at a time)

A call-site audit draws many outputs of call k from one replayed fit on each side
(``redraw``). Where a method serves a mechanism through its own code (DPHD's Octave server:
the redraws are the answers Octave receives), an output replaced after the mechanism (the
best candidate instead of the sampled one, the exact value instead of the noisy one) is drawn
again on every redraw, while the call still declares its law and is charged for it. When D and
D' give the same replaced output, no comparison of the two sides sees it.

This check needs no second side. The declared law (:class:`~dptaucc.privacy.calibration.
Declaration` with its exact input, and the scale the sampler drew at) bounds the probability
of any single output: the largest is ``p_max``, the product over values (rows) of each one's
most likely value: ``tanh(1/(2b))`` for the discrete Laplace of scale b, ``1/Z(w)`` for the
bounded one (its mode is w), the largest ``softmax(u/β)`` of a row for the exponential
mechanism (over a grid: the largest exp(u/(2β)) over Σ L·exp(u/(2β)), L the runs' lengths).
The most frequent output of one half of the draws (chosen there) is counted in the other half;
if it is seen there far more often than ``p_max`` allows (one-sided binomial tail below
:data:`LAW_ALPHA`), the outputs do not follow the declared law: a violation. Laws that
are continuous (Gaussian, float Laplace) or not known here are not checked ("").

Where the outputs' labels are known (a law over a public grid, ``"exponential-grid"``, whose
outputs are the grid's points), the draws are also fitted to the declared law as a whole
(:func:`grid_fit_differs`): the most probable runs of the grid as cells of their own, the rest
pooled, and the L1 distance of the draws' frequencies from the declared probabilities against
the Bretagnolle-Huber-Carol bound P(L1 ≥ λ) ≤ 2^K·e^(−nλ²/2), which holds for every n (no
asymptotics to flake). This sees a law drawn with weights other than the declared ones (the
runs' lengths raised to another power, say) that concentrates on no single output.

A relabelling of the outputs (Octave's 1-based index) does not change how concentrated they
are, so it passes; an output replaced by a function of the data concentrates them. On a
library mechanism drawn directly the redraws are the mechanism's own draws, so there the check
re-tests the sampler in place.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_softmax, logsumexp
from scipy.stats import binom

from dptaucc.privacy.calibration import Calibration, StepUtility

from .pair_cost import _log_z

__all__ = ["LAW_ALPHA", "FIT_CELLS", "log_top_probability", "grid_fit_differs", "law_differs"]

#: the one-sided level of the check (each side of each audited call): far below the audit's
#: α, since a replaced output is seen at p-values of 10⁻¹⁰⁰ and below
LAW_ALPHA = 1e-9


def _scale(calib: Calibration, law: str) -> np.ndarray | None:
    """The one scale (or array of scales) every draw of ``law`` on this side was made at."""
    scales = [np.asarray(d.scale, dtype=float) for d in calib.draws if d.law == law]
    if not scales or any(s.shape != scales[0].shape or not np.array_equal(s, scales[0])
                         for s in scales[1:]):
        return None
    return scales[0]


def log_top_probability(calib: Calibration | None) -> float | None:
    """ln of the declared law's largest probability of one output (None: a law not checked).

    >>> from dptaucc.privacy.calibration import Declaration, NoiseDraw
    >>> laplace = Calibration((Declaration("discrete-laplace", 1.0, "l1", exact=np.array([3, 5])),),
    ...                       (NoiseDraw("discrete-laplace", "seeded", 1.0, 2),))
    >>> round(math.exp(log_top_probability(laplace)), 4)  # tanh(1/2)² per value
    0.2136
    >>> choice = Calibration((Declaration("exponential", 1.0, "range",
    ...                                   exact=np.array([[0.0, 0.0]])),),
    ...                      (NoiseDraw("choice", "seeded", 1.0, 1),))
    >>> round(math.exp(log_top_probability(choice)), 3)
    0.5
    """
    if calib is None or not calib.declarations:
        return None
    total = 0.0
    for d in calib.declarations:
        if d.exact is None:
            return None
        x = np.asarray(d.exact)
        if d.mechanism == "discrete-laplace":
            b = _scale(calib, "discrete-laplace")
            if b is None or np.any(~(b > 0)):
                return None
            per = np.log(np.tanh(0.5 / np.broadcast_to(b, x.shape)))
        elif d.mechanism == "exponential":
            beta = _scale(calib, "choice")
            if beta is None or beta.size != 1 or not float(beta) > 0 or x.ndim != 2:
                return None
            per = log_softmax(x.astype(float) / float(beta), axis=1).max(axis=1)
        elif d.mechanism == "exponential-grid":
            beta = _scale(calib, "choice")
            if beta is None or beta.size != 1 or not float(beta) > 0:
                return None
            if not isinstance(d.exact, StepUtility):
                return None
            la = d.exact.utility / (2.0 * float(beta))
            per = la.max() - logsumexp(la + np.log(d.exact.lengths.astype(float)))
        elif d.mechanism == "bounded-discrete-laplace":
            draws = [n for n in calib.draws if n.law == "bounded-discrete-laplace"]
            if len(draws) != 1 or "upper" not in draws[0].detail:
                return None
            s = np.asarray(draws[0].scale, dtype=float).ravel()
            m = np.asarray(draws[0].detail["upper"], dtype=float).ravel()
            shape = np.broadcast_shapes(x.shape, np.shape(d.detail.get("upper", m)))
            if int(np.prod(shape, dtype=np.int64)) != s.size or np.any(~(s > 0)):
                return None
            m = np.broadcast_to(m, s.shape) if m.size == 1 else m
            if m.shape != s.shape:
                return None
            w = np.clip(np.broadcast_to(x, shape).ravel(), 0, m)
            live = m > 0
            per = -_log_z(w[live].astype(float), m[live], 1.0 / s[live])
        else:
            return None
        total += float(np.sum(per))
    return total


#: cells of the grid law's goodness-of-fit test: the FIT_CELLS − 1 most probable runs, the
#: rest pooled in one
FIT_CELLS = 16


def grid_fit_differs(draws: np.ndarray, calib: Calibration | None, side: str = "D",
                     alpha: float = LAW_ALPHA) -> str:
    """"" when draws (one output a row) of a one-declaration ``"exponential-grid"`` call fit
    its declared law P(run i) ∝ L_i·exp(u_i/(2β)) within the Bretagnolle-Huber-Carol bound at
    level ``alpha`` (module docstring), else what was seen; "" for any other law.

    >>> from dptaucc.privacy.calibration import Declaration, NoiseDraw
    >>> u = StepUtility(np.array([0, 1, 100]), np.array([0.0, 0.0]))  # runs of 1 and 99 points
    >>> calib = Calibration((Declaration("exponential-grid", 1.0, "linf", exact=u,
    ...                                  detail={"grid": 0.5}),),
    ...                     (NoiseDraw("choice", "seeded", 1.0, 1),))
    >>> rng = np.random.default_rng(0)
    >>> grid_fit_differs(rng.integers(0, 100, (4000, 1)) * 0.5, calib)  # uniform on the grid
    ''
    >>> by_run = np.where(rng.random((4000, 1)) < 0.5, 0, rng.integers(1, 100, (4000, 1)))
    >>> grid_fit_differs(by_run * 0.5, calib)[:57]  # each run drawn alike, lengths ignored
    'the outputs on D do not fit the declared law: L1 distance'
    """
    if calib is None or len(calib.declarations) != 1:
        return ""
    d = calib.declarations[0]
    beta, grid = _scale(calib, "choice"), d.detail.get("grid")
    if (d.mechanism != "exponential-grid" or not isinstance(d.exact, StepUtility)
            or beta is None or beta.size != 1 or not float(beta) > 0 or not grid):
        return ""
    draws = np.asarray(draws, dtype=float)
    n = draws.shape[0]
    if n < 4 or draws.size != n:
        return ""
    edges = d.exact.edges
    logw = d.exact.utility / (2.0 * float(beta)) + np.log(d.exact.lengths.astype(float))
    p = np.exp(logw - logsumexp(logw))
    j = np.round(draws.ravel() / float(grid))
    outside = int(np.sum((j < edges[0]) | (j >= edges[-1]) | ~np.isfinite(j)))
    if outside:
        return (f"the outputs on {side} leave the declared grid: {outside} of {n} draws outside "
                f"its points: the outputs do not follow the law the call declared")
    run = np.searchsorted(edges, j.astype(np.int64), side="right") - 1
    k = min(p.size, FIT_CELLS)
    cell = np.full(p.size, k - 1)
    cell[np.argsort(-p, kind="stable")[:k - 1]] = np.arange(k - 1)
    declared = np.bincount(cell, weights=p, minlength=k)
    seen = np.bincount(cell[run], minlength=k) / n
    l1 = float(np.abs(seen - declared).sum())
    log_p = min(0.0, k * math.log(2.0) - n * l1 * l1 / 2.0)
    if log_p >= math.log(alpha):
        return ""
    return (f"the outputs on {side} do not fit the declared law: L1 distance {l1:.3g} between "
            f"the draws' frequencies and the declared probabilities over {k} cells of runs "
            f"(n = {n}; P(L1 ≥ that) ≤ e^{log_p:.3g} under the declared law): the outputs do "
            "not follow the law the call declared and was charged for")


def law_differs(draws: np.ndarray, calib: Calibration | None, side: str = "D",
                alpha: float = LAW_ALPHA) -> str:
    """"" when the draws (one output a row) are no more concentrated than the declared law
    allows, else what was seen (module docstring).

    >>> from dptaucc.privacy.calibration import Declaration, NoiseDraw
    >>> choice = Calibration((Declaration("exponential", 1.0, "range",
    ...                                   exact=np.array([[0.0, 0.0, 0.0, 0.0]])),),
    ...                      (NoiseDraw("choice", "seeded", 1.0, 1),))
    >>> fair = np.random.default_rng(0).integers(0, 4, (4000, 1))
    >>> law_differs(fair + 1, choice)  # relabelled: as concentrated as the declared law
    ''
    >>> law_differs(np.full((4000, 1), 3), choice)[:44]  # the same answer every time
    'the outputs on D concentrate on one value: 2'
    """
    fit = grid_fit_differs(draws, calib, side, alpha)
    if fit:
        return fit
    log_p = log_top_probability(calib)
    draws = np.asarray(draws)
    if log_p is None or draws.shape[0] < 4:
        return ""
    p_max = math.exp(log_p)
    if p_max >= 1.0 - 1e-12:
        return ""
    rows = np.ascontiguousarray(draws.reshape(draws.shape[0], -1))
    chosen, held = rows[0::2], rows[1::2]
    values, counts = np.unique(chosen, axis=0, return_counts=True)
    top = values[int(np.argmax(counts))]
    k = int(np.all(held == top, axis=1).sum())
    p_value = float(binom.sf(k - 1, held.shape[0], p_max)) if k else 1.0
    if p_value >= alpha:
        return ""
    return (f"the outputs on {side} concentrate on one value: {k} of {held.shape[0]} held-out "
            f"draws, where the declared law puts at most {p_max:.3g} of its mass on any one "
            f"(binomial tail {p_value:.2g}): the outputs do not follow the law the call "
            "declared and was charged for")
