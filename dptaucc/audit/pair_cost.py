"""What a call really costs on the audited pair: its law, evaluated exactly on D's and D''s inputs.

A call-site audit opens call k on D and on D' under the same forced history
(:mod:`dptaucc.audit.callsite`). Each mechanism tells the audit, with its calibration, the exact
input its law reads (:attr:`~dptaucc.privacy.calibration.Declaration.exact`: the values it
noises, the utilities it chooses from) and the scale its sampler drew at. From the two inputs
and the law, the privacy loss of *this pair* is computed exactly, without sampling:

* discrete (or float) Laplace of scale b: ``‖x_D − x_D'‖₁ / b``;
* exponential mechanism, P(k) ∝ exp(u_k/β) in each row: per row
  ``max_k |(u_k − u'_k)/β − (LSE(u/β) − LSE(u'/β))|``, summed over the rows (independent
  choices: the largest joint ratio is the product of the rows' largest);
* exponential mechanism over a public grid (``"exponential-grid"``, DPM's interval quantile),
  P(o) ∝ exp(u(o)/(2β)) with u a step function of the grid index
  (:class:`~dptaucc.privacy.calibration.StepUtility`): both sides' breakpoints merged, u and u'
  are constant on each merged run of L points, the log-normaliser is
  ``LSE(u/(2β) + ln L)`` over the runs, and the loss is the largest
  ``|(u − u')/(2β) − (ln Z − ln Z')|`` over the runs (exact over all ~2^30 outputs; an output
  set that differs between the sides costs ∞);
* Gaussian of scale σ (or per-coordinate σ_j, or a covariance Σ): μ = ‖Δ‖ whitened
  (``‖Δ‖₂/σ``, ``√Σ(Δ_j/σ_j)²``, ``√ΣΔ_rᵀΣ⁻¹Δ_r``), and the ε of the Gaussian's exact (ε, δ)
  curve at the δ the call charged (:func:`~dptaucc.audit.privacy_map.gaussian_epsilon`);
* bounded discrete Laplace on {0, …, M} at scale s, P_w(y) = q^|y−w|/Z(w): the loss between w
  and w' is (|y − w'| − |y − w|)/s + ln Z(w')/Z(w), monotone in y between w and w' and constant
  outside, so its largest size is at y = 0 or y = M (with a scale read from the data, s on D
  and s' on D', at y = 0, M, w or w'); summed over the values.

A scale that differs between the sides (read from the data) is part of the pair's law: the
exponential mechanism's and the bounded mechanism's losses are computed with each side's own
scale; a Laplace's is infinite (its tails part without bound); a Gaussian's is not computed.
Declarations of one call add up. This is the pair's loss *under the declared law*: trusting
that the sampler draws that law (which the primitives audit checks), it is the exact ceiling of
any sampled bound at that call and history. It does not trust the mechanism's declared
sensitivity: a charge below it means the pair moved the input further than the call was
calibrated for (a sensitivity, a count of changed values or a composition mis-stated), a
violation (:data:`PAIR_TOLERANCE` for float rounding). Where the two sides' calibrations
differ in shape or in a Gaussian's σ, or a law has no exact input, the cost is NaN ("no exact
cost").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw, StepUtility

from .privacy_map import gaussian_epsilon

__all__ = ["PairCost", "pair_cost", "PAIR_TOLERANCE", "exceeds", "declared_move_exceeded",
           "merged_runs"]

#: relative slack for float rounding between a pair's exact cost and the charge (as the
#: ledger check's)
PAIR_TOLERANCE = 1e-6

_LAWS = {"discrete-laplace": "discrete-laplace", "laplace-float": "laplace-float",
         "exponential": "choice", "exponential-grid": "choice", "gaussian": "gaussian",
         "bounded-discrete-laplace": "bounded-discrete-laplace"}


@dataclass(frozen=True)
class PairCost:
    """The pair's exact ε at call k (NaN: no exact cost) and how it was computed.

    >>> PairCost(1.5, "l1 3 / b 2").epsilon
    1.5
    """

    epsilon: float
    how: str


def exceeds(cost: float, claimed: float) -> bool:
    """Whether an exact pair cost is above the charge beyond float rounding.

    >>> exceeds(1.0 + 1e-9, 1.0), exceeds(1.01, 1.0), exceeds(float("nan"), 1.0)
    (False, True, False)
    """
    return bool(cost > claimed * (1.0 + PAIR_TOLERANCE))


class _NoCost(Exception):
    """This declaration's pair cost cannot be computed exactly (the reason)."""


def _draws(calib: Calibration, law: str) -> list[NoiseDraw]:
    return [d for d in calib.draws if d.law == law]


def _side_scale(calib: Calibration, law: str) -> float:
    """The one scale one side drew ``law`` at."""
    scales = {float(d.min_scale) for d in _draws(calib, law)}
    if len(scales) != 1:
        raise _NoCost(f"{law} drawn at {len(scales)} scales on one side")
    return scales.pop()


def _scale(a: Calibration, b: Calibration, law: str) -> float | None:
    """The scale both sides drew ``law`` at; None when it differs between them (a scale read
    from the data)."""
    sa, sb = _side_scale(a, law), _side_scale(b, law)
    return sa if sa == sb else None


def _inputs(da: Declaration, db: Declaration) -> tuple[np.ndarray, np.ndarray]:
    if da.exact is None or db.exact is None:
        raise _NoCost(f"{da.mechanism} did not tell its exact input")
    xa, xb = np.asarray(da.exact), np.asarray(db.exact)
    if xa.shape != xb.shape:
        raise _NoCost(f"inputs of shapes {xa.shape} and {xb.shape}")
    return xa, xb


def _laplace(da, db, a, b) -> tuple[float, str]:
    xa, xb = _inputs(da, db)
    law = _LAWS[da.mechanism]
    scale = _scale(a, b, law)
    if scale is None:  # e^(−|y − x|/b) against e^(−|y − x'|/b'): the tails part without bound
        return math.inf, (f"noise scale {_side_scale(a, law):.6g} on D, "
                          f"{_side_scale(b, law):.6g} on D': read from the data")
    if xa.dtype.kind in "iu" and xb.dtype.kind in "iu":
        moved = float(np.abs(xa.astype(np.int64) - xb.astype(np.int64)).sum())
    else:
        moved = math.fsum(np.abs(xa.astype(float) - xb.astype(float)).ravel().tolist())
    if moved == 0:
        return 0.0, "input unchanged"
    eps = math.inf if scale == 0 else moved / scale
    return eps, f"L1 move {moved:.6g} / b {scale:.6g}"


def _exponential(da, db, a, b) -> tuple[float, str]:
    ua, ub = _inputs(da, db)
    beta_a, beta_b = _side_scale(a, "choice"), _side_scale(b, "choice")
    if ua.ndim != 2:
        raise _NoCost(f"utilities of {ua.ndim} dimensions")
    ua, ub = ua.astype(float), ub.astype(float)
    if beta_a == beta_b:
        changed = np.flatnonzero(np.any(ua != ub, axis=1))
    else:  # a temperature read from the data: every row's law may move
        changed = np.arange(ua.shape[0])
    if changed.size == 0:
        return 0.0, "utilities unchanged"
    if beta_a == 0 or beta_b == 0:
        return math.inf, f"{changed.size} row(s) moved, β = 0"
    beta = beta_a if beta_a == beta_b else math.nan
    la, lb = ua[changed] / beta_a, ub[changed] / beta_b
    log_ratio = (la - logsumexp(la, axis=1, keepdims=True)) - (
        lb - logsumexp(lb, axis=1, keepdims=True))
    per_row = np.abs(log_ratio).max(axis=1)
    eps = math.fsum(per_row.tolist())
    at = f"β {beta:.6g}" if beta == beta else f"β {beta_a:.6g} on D, {beta_b:.6g} on D'"
    return eps, f"{changed.size} row(s) moved, largest row loss {float(per_row.max()):.6g} at {at}"


def _steps(da: Declaration, db: Declaration) -> tuple[StepUtility, StepUtility]:
    sa, sb = da.exact, db.exact
    if not (isinstance(sa, StepUtility) and isinstance(sb, StepUtility)):
        raise _NoCost(f"{da.mechanism} did not tell its utility as a step function")
    return sa, sb


def merged_runs(sa: StepUtility, sb: StepUtility) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(run lengths, u on D, u on D') over the runs of grid indices on which both step
    functions are constant (their breakpoints merged), for two utilities on the same outputs.

    >>> a = StepUtility(np.array([0, 4, 10]), np.array([0.0, -1.0]))
    >>> b = StepUtility(np.array([0, 2, 10]), np.array([-1.0, 0.0]))
    >>> [x.tolist() for x in merged_runs(a, b)]
    [[2, 2, 6], [0.0, 0.0, -1.0], [-1.0, 0.0, 0.0]]
    """
    if sa.edges[0] != sb.edges[0] or sa.edges[-1] != sb.edges[-1]:
        raise ValueError("the two step functions cover different outputs")
    starts = np.union1d(sa.edges[:-1], sb.edges[:-1])
    lengths = np.diff(np.append(starts, sa.edges[-1]))
    return lengths, sa.at(starts), sb.at(starts)


def _grid(da, db, a, b) -> tuple[float, str]:
    sa, sb = _steps(da, db)
    beta_a, beta_b = _side_scale(a, "choice"), _side_scale(b, "choice")
    try:
        lengths, ua, ub = merged_runs(sa, sb)
    except ValueError:
        return math.inf, "the output grids differ between D and D'"
    if beta_a == beta_b and np.array_equal(ua, ub):
        return 0.0, "utilities unchanged"
    if beta_a == 0 or beta_b == 0:
        return math.inf, "utilities moved, β = 0"
    log_len = np.log(lengths.astype(float))
    la, lb = ua / (2.0 * beta_a), ub / (2.0 * beta_b)
    loss = np.abs((la - logsumexp(la + log_len)) - (lb - logsumexp(lb + log_len)))
    at = (f"β {beta_a:.6g}" if beta_a == beta_b
          else f"β {beta_a:.6g} on D, {beta_b:.6g} on D'")
    where = int(np.argmax(loss))
    return float(loss[where]), (f"{lengths.size} merged runs of the grid, largest loss on a "
                                f"run of {int(lengths[where])} points at {at}")


def _whitened(da, db, a, b, delta) -> tuple[float, str]:
    xa, xb = _inputs(da, db)
    diff = xa.astype(float) - xb.astype(float)
    draws = [d for c in (a, b) for d in _draws(c, "gaussian")]
    if not draws:
        raise _NoCost("no gaussian draw")
    cov = draws[0].detail.get("covariance")
    if cov is not None:
        cov = np.asarray(cov, dtype=float)
        if any(d.detail.get("covariance") is None
               or not np.array_equal(np.asarray(d.detail["covariance"]), cov) for d in draws):
            raise _NoCost("the two sides' covariances differ")
        rows = diff.reshape(-1, cov.shape[0])
        mu2 = float(np.einsum("ij,ij->", rows, np.linalg.solve(cov, rows.T).T))
        how = "whitened by the covariance"
    else:
        sds = np.asarray(draws[0].scale, dtype=float)
        if any(not np.array_equal(np.asarray(d.scale, dtype=float), sds) for d in draws):
            raise _NoCost("the two sides' σ differ")
        moved = diff != 0
        if np.any(moved & ~(np.broadcast_to(sds, diff.shape) > 0)):
            return math.inf, "a coordinate without noise moved"
        with np.errstate(divide="ignore", invalid="ignore"):
            mu2 = float(np.sum(np.where(moved, diff / sds, 0.0) ** 2))
        how = f"σ {float(sds.min()):.6g}" if sds.size == 1 else "per-coordinate σ"
    mu = math.sqrt(max(mu2, 0.0))
    if mu == 0:
        return 0.0, "input unchanged"
    return gaussian_epsilon(mu, delta), f"μ {mu:.6g} ({how}) at δ {delta:.3g}"


def _log_z(w: np.ndarray, m: np.ndarray, h: np.ndarray) -> np.ndarray:
    """ln Z(w) = ln Σ_{y=0}^{M} q^|y−w|, q = e^(−h)."""
    low = -np.expm1(-(w + 1.0) * h)                 # Σ_{y ≤ w} q^(w−y) · (1 − q)
    high = -np.exp(-h) * np.expm1(-(m - w) * h)     # Σ_{y > w} q^(y−w) · (1 − q)
    return np.log(low + high) - np.log(-np.expm1(-h))


def _bounded(da, db, a, b) -> tuple[float, str]:
    xa, xb = _inputs(da, db)
    noted = [_draws(c, "bounded-discrete-laplace") for c in (a, b)]
    if len(noted[0]) != 1 or len(noted[1]) != 1:
        raise _NoCost("not one bounded draw a side")
    (na,), (nb,) = noted
    s, m = np.asarray(na.scale, dtype=float), np.asarray(na.detail["upper"], dtype=float)
    sb = np.asarray(nb.scale, dtype=float)
    if s.shape != sb.shape or not np.array_equal(m, np.asarray(nb.detail["upper"], dtype=float)):
        raise _NoCost("the two sides' ranges differ")
    upper_a = np.asarray(da.detail.get("upper", m))
    shape = np.broadcast_shapes(xa.shape, upper_a.shape)
    if int(np.prod(shape, dtype=np.int64)) != s.size:
        raise _NoCost(f"{s.size} scales for inputs of shape {shape}")
    m_int = m.astype(np.int64)
    wa = np.clip(np.broadcast_to(xa, shape).ravel(), 0, m_int)
    wb = np.clip(np.broadcast_to(xb, shape).ravel(), 0, m_int)
    moved = np.flatnonzero((wa != wb) | (s != sb))
    if moved.size == 0:
        return 0.0, "clipped input unchanged"
    mv = m[moved]
    live = mv > 0  # a range of one value releases it whatever the input
    moved, mv = moved[live], mv[live]
    if moved.size == 0:
        return 0.0, "only one-value ranges moved"
    if np.any(~(s[moved] > 0)) or np.any(~(sb[moved] > 0)):
        return math.inf, "a value without noise moved"
    ha, hb = 1.0 / s[moved], 1.0 / sb[moved]
    wa_f, wb_f = wa[moved].astype(float), wb[moved].astype(float)
    z = _log_z(wb_f, mv, hb) - _log_z(wa_f, mv, ha)
    # L(y) = |y − w'|/s' − |y − w|/s + ln Z'(w')/Z(w): linear between its breaks at w and w'
    # and beyond them, so its largest size is at y = 0, M, w or w'
    per_value = np.zeros(moved.size)
    for y in (np.zeros_like(mv), mv, wa_f, wb_f):
        loss = np.abs(np.abs(y - wb_f) * hb - np.abs(y - wa_f) * ha + z)
        per_value = np.maximum(per_value, loss)
    eps = math.fsum(per_value.tolist())
    return eps, (f"{moved.size} value(s) moved, largest {float(per_value.max()):.6g} "
                 f"(scale {float(s[moved].min()):.6g})")


def pair_cost(a: Calibration | None, b: Calibration | None, delta: float = 0.0) -> PairCost:
    """The exact ε of call k between D (calibration ``a``) and D' (``b``) under its declared
    law (module docstring), δ ``delta`` split evenly among its Gaussian declarations.

    >>> from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw, StepUtility
    >>> def laplace(x):
    ...     return Calibration((Declaration("discrete-laplace", 1.0, "l1", exact=np.array(x)),),
    ...                        (NoiseDraw("discrete-laplace", "seeded", 2.0, len(x)),))
    >>> pair_cost(laplace([3, 0, 1]), laplace([3, 2, 0])).epsilon  # moved 3 at b = 2
    1.5
    >>> pair_cost(laplace([3, 0, 1]), laplace([3, 0])).epsilon  # shapes differ: no exact cost
    nan
    """
    if a is None or b is None:
        return PairCost(math.nan, "no calibration told")
    if [d.mechanism for d in a.declarations] != [d.mechanism for d in b.declarations]:
        return PairCost(math.nan, "the two sides declared different mechanisms")
    if not a.declarations:
        return PairCost(math.nan, "nothing declared")
    gaussians = sum(d.mechanism == "gaussian" for d in a.declarations)
    share = delta / gaussians if gaussians else 0.0
    total, parts = [], []
    for da, db in zip(a.declarations, b.declarations, strict=True):
        try:
            if da.mechanism in ("discrete-laplace", "laplace-float"):
                eps, how = _laplace(da, db, a, b)
            elif da.mechanism == "exponential":
                eps, how = _exponential(da, db, a, b)
            elif da.mechanism == "exponential-grid":
                eps, how = _grid(da, db, a, b)
            elif da.mechanism == "gaussian":
                eps, how = _whitened(da, db, a, b, share)
            elif da.mechanism == "bounded-discrete-laplace":
                eps, how = _bounded(da, db, a, b)
            else:
                raise _NoCost(f"no exact law for {da.mechanism!r}")
        except _NoCost as why:
            return PairCost(math.nan, f"{da.mechanism}: {why}")
        total.append(eps)
        parts.append(f"{da.mechanism}: {how}")
    eps = math.fsum(total) if all(math.isfinite(e) for e in total) else math.inf
    return PairCost(eps, "; ".join(parts))


def _over(moved: float, bound: float) -> bool:
    return bool(moved > bound * (1.0 + PAIR_TOLERANCE) + 1e-12)


def _declared_move(d: Declaration, xa: np.ndarray, xb: np.ndarray) -> str:
    """How this pair's move breaks what ``d`` declares, or ""."""
    diff = xa.astype(float) - xb.astype(float)
    if d.norm == "l1":
        moved = math.fsum(np.abs(diff).ravel().tolist())
        return f"L1 move {moved:.6g} > sensitivity {d.sensitivity:.6g}" if _over(
            moved, d.sensitivity) else ""
    if d.norm == "l2":
        moved = float(np.sqrt(np.sum(diff ** 2)))
        return f"L2 move {moved:.6g} > sensitivity {d.sensitivity:.6g}" if _over(
            moved, d.sensitivity) else ""
    if d.norm == "range" and diff.ndim == 2:
        # each row's range of change; together at most n_changed·Δ (one row at Δ under
        # parallel composition, the rows' sum under sequential: the declaration covers both)
        per_row = diff.max(axis=1) - diff.min(axis=1)
        total = math.fsum(per_row.tolist())
        return (f"the rows' utilities moved by a total range of {total:.6g} > "
                f"{d.n_changed} × {d.sensitivity:.6g}") if _over(
                    total, d.n_changed * d.sensitivity) else ""
    if d.norm == "per-value":
        per_value = np.abs(diff).ravel()
        values = int(np.count_nonzero(per_value))
        if _over(float(per_value.max(initial=0.0)), d.sensitivity):
            return f"a value moved by {float(per_value.max()):.6g} > {d.sensitivity:.6g}"
        return f"{values} values moved, {d.n_changed} declared" if values > d.n_changed else ""
    return ""  # l2-blocks and other norms: the pair cost covers them


def _step_move(d: Declaration, sa: StepUtility, sb: StepUtility) -> str:
    """How a step-function utility's move breaks ``d`` (norm ``"linf"``: max_o |u − u'| ≤ Δ),
    or ""."""
    try:
        _, ua, ub = merged_runs(sa, sb)
    except ValueError:
        return "the output grids differ between D and D'"
    moved = float(np.abs(ua - ub).max())
    if d.norm == "linf" and _over(moved, d.sensitivity):
        return f"the utility moved by {moved:.6g} at an output > sensitivity {d.sensitivity:.6g}"
    return ""


def declared_move_exceeded(a: Calibration | None, b: Calibration | None) -> str:
    """Whether D's and D''s exact inputs of one call move further than its declarations say
    (the L1 or L2 move over the sensitivity; the rows' utility ranges summed over
    ``n_changed`` × Δ; one value over Δ, or more values moving than ``n_changed``), described,
    or "". Stricter than the pair cost against the charge: a call charged for n values at Δ
    that moves one value by 2Δ and leaves the rest still costs less than its charge on this
    pair, but not on the pair that moves all n. Calls without exact inputs on both sides, or
    of other shapes, are not judged.

    >>> from dptaucc.privacy.calibration import Calibration, Declaration
    >>> def bounded(x):
    ...     return Calibration((Declaration("bounded-discrete-laplace", 5.0, "per-value",
    ...                                     n_changed=4, exact=np.array(x)),))
    >>> declared_move_exceeded(bounded([10, 0, 0, 0]), bounded([2, 0, 0, 0]))
    'bounded-discrete-laplace: a value moved by 8 > 5'
    >>> declared_move_exceeded(bounded([10, 0, 3, 0]), bounded([5, 0, 0, 0]))
    ''
    """
    if a is None or b is None or len(a.declarations) != len(b.declarations):
        return ""
    for da, db in zip(a.declarations, b.declarations, strict=True):
        if da.exact is None or db.exact is None or da.mechanism != db.mechanism:
            continue
        if isinstance(da.exact, StepUtility) and isinstance(db.exact, StepUtility):
            why = _step_move(da, da.exact, db.exact)
            if why:
                return f"{da.mechanism}: {why}"
            continue
        xa, xb = np.asarray(da.exact), np.asarray(db.exact)
        if xa.shape != xb.shape or xa.dtype.kind not in "iufb" or xb.dtype.kind not in "iufb":
            continue
        why = _declared_move(da, xa, xb)
        if why:
            return f"{da.mechanism}: {why}"
    return ""
