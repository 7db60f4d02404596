"""DPM step 1: the DP interval (bandwidth) size (spec §1.3, step 1).

The 65th percentile of consecutive order-statistic gaps is released with Smith's (2011)
exponential-mechanism quantile and matched against a *public* simulated table of the same
statistic for N(0, σ²) samples, σ ∈ {0.5, 1.0, …, 29.5}.

Two gap statistics:

* ``"averaged"`` (the reference code, ``mode="paper"``): g_r = mean_j(x_(r+1),j − x_(r),j), one
  value per rank. The code asserts a rank-utility sensitivity of 2 and halves ε. That holds for
  d = 1 only: with d > 1 one added row shifts the ranks of different coordinates at different
  places, so every averaged gap can change (see the unit test), and the step is not DP as
  claimed.
* ``"pooled"`` (``mode="corrected"``): the multiset of all d·(n−1) per-coordinate gaps. One
  added row removes one gap and adds two in each coordinate, so #{g ≤ o} moves by at most 2d
  in one direction and d in the other while the target rank q·M moves by q·d: the utility
  −|#{g ≤ o} − qM| has sensitivity ≤ max(1 + q, 2 − q)·d (= 1.65·d for q = 0.65). This is
  also the statistic the 1-D simulated table describes.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "GAP_QUANTILE",
    "SIGMA_GRID",
    "pooled_gaps",
    "averaged_gaps",
    "rank_utility",
    "smith_quantile",
    "simulated_gap_scale",
    "choose_sigma",
]

GAP_QUANTILE = 0.65
SIGMA_GRID = np.arange(1, 60) * 0.5  # 0.5, 1.0, ..., 29.5 (59 values)


def pooled_gaps(Z: np.ndarray) -> np.ndarray:
    """All per-coordinate gaps between consecutive order statistics (d·(n−1) values)."""
    S = np.sort(Z, axis=0)
    return np.diff(S, axis=0).ravel()


def averaged_gaps(Z: np.ndarray) -> np.ndarray:
    """The reference code's gap per rank, averaged over the coordinates (n−1 values)."""
    S = np.sort(Z, axis=0)
    return np.diff(S, axis=0).mean(axis=1)


def rank_utility(values: np.ndarray, outputs: np.ndarray, q: float = GAP_QUANTILE) -> np.ndarray:
    """u(o) = −|#{v ≤ o} − q·M| of the quantile mechanism, at each output o (for tests)."""
    v = np.sort(np.asarray(values, dtype=float))
    counts = np.searchsorted(v, np.asarray(outputs, dtype=float), side="right")
    return -np.abs(counts - q * v.size)


def smith_quantile(values: np.ndarray, q: float, lower: float, upper: float, epsilon: float,
                   sensitivity: float, rng: np.random.Generator) -> float:
    """Smith's exponential-mechanism quantile on [lower, upper] (ε-DP for utility sensitivity Δ).

    The output density is ∝ exp(ε·u(o)/(2Δ)) with u(o) = −|#{v ≤ o} − qM|, piecewise constant
    between sorted values: pick interval i with weight width_i·exp(ε u_i/(2Δ)) (Gumbel-max on
    the logs), then a uniform point inside it.
    """
    v = np.clip(np.sort(np.asarray(values, dtype=float)), lower, upper)
    M = v.size
    if math.isinf(epsilon):
        return float(np.quantile(v, q)) if M else 0.5 * (lower + upper)
    edges = np.concatenate(([lower], v, [upper]))
    widths = np.diff(edges)
    util = -np.abs(np.arange(M + 1) - q * M)
    with np.errstate(divide="ignore"):
        logw = np.log(widths) + (epsilon / (2.0 * sensitivity)) * util
    if not np.any(np.isfinite(logw)):
        return float(lower)
    i = int(np.argmax(logw + rng.gumbel(size=logw.shape)))
    return float(edges[i] + rng.random() * widths[i])


def simulated_gap_scale(n_samples: int, rng: np.random.Generator, reps: int = 30,
                        q: float = GAP_QUANTILE) -> float:
    """Mean over ``reps`` of the q-quantile of consecutive gaps of n sorted N(0, 1) draws.

    Public (no data). Gaps of N(0, σ²) samples are σ times those of N(0, 1) samples, so the
    reference code's 59-row table is σ × this value; we simulate once and scale.
    """
    n = int(min(max(n_samples, 2), 200_000))
    draws = np.sort(rng.standard_normal((reps, n)), axis=1)
    return float(np.quantile(np.diff(draws, axis=1), q, axis=1).mean())


def choose_sigma(released_gap: float, unit_gap: float) -> float:
    """The grid σ whose simulated gap σ·unit_gap is closest to the released gap."""
    return float(SIGMA_GRID[int(np.argmin(np.abs(SIGMA_GRID * unit_gap - released_gap)))])
