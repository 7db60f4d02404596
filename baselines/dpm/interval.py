"""DPM step 1: the DP interval (bandwidth) size.

The 65th percentile of consecutive order-statistic gaps is released with Smith's (2011)
exponential-mechanism quantile (on a public output grid, drawn by the package's exponential
mechanism from the fit's sampler) and matched against a *public* simulated table of the same
statistic for N(0, σ²) samples, σ ∈ {0.5, 1.0, …, 29.5}; only the matched σ leaves the fit.

Two gap statistics:

* ``"averaged"`` (the reference code, ``mode="paper"``): g_r = mean_j(x_(r+1),j − x_(r),j), one
  value per rank. The code asserts a rank-utility sensitivity of 2 and halves ε. That holds for
  d = 1 only: with d > 1 one added row shifts the ranks of different coordinates at different
  places, so every averaged gap can change (see the unit test), and the step is not DP as
  claimed.
* ``"pooled"`` (``mode="corrected"``): the multiset of all d·(n−1) per-coordinate gaps. In
  each coordinate one added row at value v either splits a gap g into g₁ + g₂ = g (v inside
  the range; g₁ = 0 on a tie), which changes #{gap ≤ o} by [g₁ ≤ o] + [g₂ ≤ o] − [g ≤ o] ∈
  {0, 1, 2} because g₁, g₂ ≤ g, or adds one gap (v outside the range: 0 or 1). So the pooled
  count c(o) = #{g ≤ o} rises by some K ∈ [0, 2d] and never falls, while the target rank qM
  rises by q·d (M = d·(n−1) → d·n; nothing moves for n = 0): with x = c − qM, the utility
  −|x| moves by |x + K − qd| − |x|, at most |K − qd| ≤ max(q, 2 − q)·d in absolute value
  (= 1.35·d for q = 0.65; removing a row is the same pair read backwards). This is also the
  statistic the 1-D simulated table describes.
"""

from __future__ import annotations

import math

import numpy as np

from dptaucc.privacy import PrivacyLedger, Sampler, as_sampler, exponential_mechanism
from dptaucc.privacy.calibration import Declaration, StepUtility, draws_only, first_draw
from dptaucc.privacy.hook import MECHANISM_HOOK, watch

__all__ = [
    "GAP_QUANTILE",
    "SIGMA_GRID",
    "pooled_gaps",
    "averaged_gaps",
    "rank_utility",
    "public_grid",
    "step_utility",
    "smith_quantile",
    "simulated_gap_scale",
    "choose_sigma",
]

GAP_QUANTILE = 0.65
SIGMA_GRID = np.arange(1, 60) * 0.5  # 0.5, 1.0, ..., 29.5 (59 values)
OUTPUT_GRID_BITS = 30  # the quantile's output grid has about 2^30 points
REDRAW_BATCH = 20_000  # an audit's redraws of one call are drawn this many rows at a time


def pooled_gaps(Z: np.ndarray) -> np.ndarray:
    """All per-coordinate gaps between consecutive order statistics (d·(n−1) values).

    >>> import numpy as np
    >>> sorted(pooled_gaps(np.array([[0.0, 5.0], [3.0, 1.0], [1.0, 2.0]])).tolist())
    [1.0, 1.0, 2.0, 3.0]
    """
    S = np.sort(Z, axis=0)
    return np.diff(S, axis=0).ravel()


def averaged_gaps(Z: np.ndarray) -> np.ndarray:
    """The reference code's gap per rank, averaged over the coordinates (n−1 values).

    >>> import numpy as np
    >>> averaged_gaps(np.array([[0.0, 5.0], [3.0, 1.0], [1.0, 2.0]])).tolist()  # (1+1)/2, (2+3)/2
    [1.0, 2.5]
    """
    S = np.sort(Z, axis=0)
    return np.diff(S, axis=0).mean(axis=1)


def rank_utility(values: np.ndarray, outputs: np.ndarray, q: float = GAP_QUANTILE) -> np.ndarray:
    """u(o) = −|#{v ≤ o} − q·M| of the quantile mechanism, at each output o (for tests).

    >>> rank_utility([1, 2, 3, 4], [0.0, 2.5, 10.0], q=0.5).tolist()  # best at the median
    [-2.0, -0.0, -2.0]
    """
    v = np.sort(np.asarray(values, dtype=float))
    counts = np.searchsorted(v, np.asarray(outputs, dtype=float), side="right")
    return -np.abs(counts - q * v.size)


def public_grid(lower: float, upper: float, bits: int = OUTPUT_GRID_BITS) -> float:
    """Spacing g = 2^(⌊log₂(upper − lower)⌋ − bits) of the quantile's output grid {j·g}.

    A power of two fixed by the public range only: about 2^bits points cover [lower, upper].

    >>> public_grid(0.0, 10.0, bits=2), public_grid(0.0, 10.0) == 2.0**-27
    (2.0, True)
    >>> public_grid(1.0, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: need finite lower < upper, got [1.0, 1.0]
    """
    if not (math.isfinite(lower) and math.isfinite(upper) and upper > lower):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    return math.ldexp(1.0, math.frexp(upper - lower)[1] - 1 - bits)


def _runs(values, q: float, lower: float, upper: float, bits: int):
    """(g, bounds, counts, keep, u): the grid spacing, interval i = grid indices
    [bounds[i], bounds[i + 1]) between the sorted values (count_i points), the non-empty
    ones, and their utilities u = −|i − qM|."""
    g = public_grid(lower, upper, bits)
    v = np.clip(np.sort(np.asarray(values, dtype=float)), lower, upper)
    M = v.size
    # first grid index at or after each edge; the last interval is closed at ``upper``
    first = np.ceil(np.concatenate(([lower], v)) / g).astype(np.int64)
    bounds = np.concatenate((first, [math.floor(upper / g) + 1]))
    counts = np.diff(bounds)
    keep = np.flatnonzero(counts > 0)
    util = -np.abs(np.arange(M + 1) - q * M)[keep]
    return g, bounds, counts, keep, util


def step_utility(values, q: float, lower: float, upper: float,
                 bits: int = OUTPUT_GRID_BITS) -> StepUtility:
    """u(o) = −|#{v ≤ o} − qM| of :func:`smith_quantile` as a step function of the grid index
    j (o = j·g, :func:`public_grid`): what the call tells the audit as its exact input.

    >>> u = step_utility([1.0, 3.0], 0.5, 0.0, 4.0, bits=2)  # g = 1: grid 0, 1, …, 4
    >>> u.edges.tolist(), u.utility.tolist()
    ([0, 1, 3, 5], [-1.0, -0.0, -1.0])
    >>> bool(np.array_equal(u.at(np.arange(5)), rank_utility([1.0, 3.0], np.arange(5.0), 0.5)))
    True
    """
    _, bounds, _, keep, util = _runs(values, q, lower, upper, bits)
    return StepUtility(np.append(bounds[keep], bounds[keep[-1] + 1]), util)


def smith_quantile(values: np.ndarray, q: float, lower: float, upper: float, epsilon: float,
                   sensitivity: float, sampler: Sampler, ledger: PrivacyLedger,
                   step: str = "interval_size", note: str = "") -> float:
    """Smith's (2011) exponential-mechanism quantile on a public grid of [lower, upper].

    Output set: the grid points o = j·g in [lower, upper] (:func:`public_grid`), the same for
    every input. Each is drawn with probability ∝ exp(ε·u(o)/(2Δ)), u(o) = −|#{v ≤ o} − qM|:
    the exponential mechanism over a finite, data-independent set, ε-DP when ``sensitivity`` Δ
    bounds |u(o) − u'(o)| over neighbours at every o. u is constant between consecutive sorted
    values, so the sampler picks the interval i (the grid points in [v_(i), v_(i+1))) with
    weight count_i·exp(ε·u_i/(2Δ)) — the package's exponential mechanism on the scores
    u_i/2 + (Δ/ε)·ln count_i with Δ, whose range sensitivity is at most Δ (each u/2 moves by
    ≤ Δ/2) — then one of its count_i points uniformly. The grid is ~2^30 points, far finer
    than any σ cell the result is matched against, so this is Smith's continuous mechanism up
    to a shift below 2^-23 of the range; unlike a float drawn inside [v_(i), v_(i+1)), its
    possible values do not depend on the data. Under the audit hook the call declares this
    law over the grid (mechanism ``"exponential-grid"``: u as a step function of the grid
    index, Δ in the ``"linf"`` norm), so the audit can compute the exact cost of a pair and
    check the move of u against Δ (:mod:`dptaucc.audit.pair_cost`).

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> values, ledger = np.arange(100.0), PrivacyLedger()
    >>> exact = smith_quantile(values, 0.65, 0.0, 100.0, math.inf, 1.0, make_sampler(0), ledger)
    >>> 64.0 <= exact < 65.0, (exact / public_grid(0.0, 100.0)).is_integer()  # on the grid
    (True, True)
    >>> noisy = smith_quantile(values, 0.65, 0.0, 100.0, 2.0, 1.0, make_sampler(0), ledger)
    >>> 0.0 <= noisy <= 100.0, [(e.mechanism, e.epsilon) for e in ledger.entries][-1]
    (True, ('exponential', 2.0))
    """
    g, bounds, counts, keep, util = _runs(values, q, lower, upper, OUTPUT_GRID_BITS)
    weight = 0.0 if math.isinf(epsilon) else sensitivity / epsilon
    scores = util / 2.0 + weight * np.log(counts[keep])

    def pick(charged_to: PrivacyLedger) -> float:
        i = keep[int(exponential_mechanism(scores[None, :], epsilon=epsilon,
                                           sensitivity=sensitivity, sampler=sampler,
                                           ledger=charged_to, step=step, note=note)[0])]
        offset = as_sampler(sampler).integers(int(counts[i]))  # the mechanism's own randomness
        return float((bounds[i] + offset) * g)

    seen = watch(ledger)
    if seen is None:
        return pick(ledger)
    # audited: the release the hook sees (and a replay forces) is the grid point, whose set
    # does not depend on the data, not the index of an interval, which does; the choice inside
    # does not report itself (one call, not two) and the call declares the grid law
    def quiet(charged_to: PrivacyLedger) -> float:
        token = MECHANISM_HOOK.set(None)
        try:
            return pick(charged_to)
        finally:
            MECHANISM_HOOK.reset(token)

    # the law of the whole, over the public grid: P(o) ∝ exp(ε·u(o)/(2Δ)), u constant on each
    # run [bounds[i], bounds[i + 1]) of grid indices (a data-independent representation the
    # audit can compare between D and D'); the inner choice's draws pass, its declaration
    # (over the data-dependent intervals) is replaced by this one
    steps = StepUtility(np.append(bounds[keep], bounds[keep[-1] + 1]), util)  # step_utility
    law = Declaration("exponential-grid", float(sensitivity), "linf", exact=steps,
                      detail={"grid": g})
    value = first_draw(seen, lambda: draws_only(lambda: quiet(ledger)), law)

    def redraw(n: int) -> np.ndarray:
        """n fresh grid points of this call, from the same sampler functions in batches of
        rows (one exponential-mechanism row per draw, then each one's uniform point)."""
        token = MECHANISM_HOOK.set(None)
        try:
            out = np.empty((n, 1))
            for start in range(0, n, REDRAW_BATCH):
                rows = min(REDRAW_BATCH, n - start)
                picks = exponential_mechanism(
                    np.broadcast_to(scores, (rows, scores.size)), epsilon=epsilon,
                    sensitivity=sensitivity, sampler=sampler, ledger=PrivacyLedger(),
                    step=step, note=note)
                runs = keep[np.asarray(picks, dtype=np.int64)]
                inner = as_sampler(sampler)
                offsets = np.array([inner.integers(int(counts[i])) for i in runs])
                out[start:start + rows, 0] = (bounds[runs] + offsets) * g
            return out
        finally:
            MECHANISM_HOOK.reset(token)

    out = seen.released(step, "exponential", np.array([value]), redraw)
    return float(np.asarray(out, dtype=float).ravel()[0])


def simulated_gap_scale(n_samples: int, rng: np.random.Generator, reps: int = 30,
                        q: float = GAP_QUANTILE) -> float:
    """Mean over ``reps`` of the q-quantile of consecutive gaps of n sorted N(0, 1) draws.

    Public (no data). Gaps of N(0, σ²) samples are σ times those of N(0, 1) samples, so the
    reference code's 59-row table is σ × this value; we simulate once and scale.

    >>> import numpy as np
    >>> unit = simulated_gap_scale(100, np.random.default_rng(0))
    >>> rng = np.random.default_rng(1)  # 3·N(0, 1) samples have gaps three times as large
    >>> gaps = [np.quantile(np.diff(np.sort(3 * rng.standard_normal(100))), 0.65)
    ...         for _ in range(30)]
    >>> bool(abs(np.mean(gaps) / unit - 3.0) < 0.3)
    True
    """
    n = int(min(max(n_samples, 2), 200_000))
    draws = np.sort(rng.standard_normal((reps, n)), axis=1)
    return float(np.quantile(np.diff(draws, axis=1), q, axis=1).mean())


def choose_sigma(released_gap: float, unit_gap: float) -> float:
    """The grid σ whose simulated gap σ·unit_gap is closest to the released gap.

    >>> choose_sigma(0.31, 0.1), choose_sigma(1e6, 0.1), choose_sigma(0.0, 0.1)  # clamped
    (3.0, 29.5, 0.5)
    """
    return float(SIGMA_GRID[int(np.argmin(np.abs(SIGMA_GRID * unit_gap - released_gap)))])
