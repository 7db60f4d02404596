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

__all__ = ["LAW_ALPHA", "log_top_probability", "law_differs"]

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
