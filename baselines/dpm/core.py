"""DPM on rows already inside a public box: steps 0–3 of spec §1.3 (no transform, no k).

:func:`dpm_release` is what :class:`dptaucc.baselines.dpm.DPM` runs after its per-record
embedding; it also runs DPM on any continuous data with public per-coordinate bounds (e.g. the
paper's Synth-10D in ±100), with every mechanism charged at the add/remove level (ε', δ') given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dptaucc.privacy import PrivacyLedger

from .gaussian import gaussian_mechanism
from .interval import (
    GAP_QUANTILE,
    averaged_gaps,
    choose_sigma,
    pooled_gaps,
    simulated_gap_scale,
    smith_quantile,
)
from .tree import Tree, TreeParams, grow_tree

__all__ = ["SCALE", "DEFAULT_FRACTIONS", "DPMRelease", "dpm_release"]

SCALE = 100.0  # the public box is mapped to [−SCALE, SCALE] for the σ grid (§1.9)
DEFAULT_FRACTIONS = (0.04, 0.18, 0.18, 0.60)  # f_int, f_cnt, f_exp, f_avg (§1.2)


@dataclass
class DPMRelease:
    centres: np.ndarray  # k × p, in the input units
    counts: np.ndarray  # the leaves' noisy counts
    tree: Tree  # split thresholds in the scaled [−SCALE, SCALE] units
    sigma: float  # the chosen grid σ (interval size σ/2, scaled units)
    n_bins: int


def dpm_release(Y: np.ndarray, lo: float, hi: float, l2_bound: float, eps_row: float,
                delta_row: float, rng: np.random.Generator, ledger: PrivacyLedger, *,
                corrected: bool = True, max_depth: int = 7,
                fractions=DEFAULT_FRACTIONS, t: float = 0.3, q: float = 1.0 / 12.0,
                w_c: float = 1.0, w_e: float = 5.0) -> DPMRelease:
    """Run DPM on dense rows ``Y`` in the public box [lo, hi]^p with ‖y‖₂ ≤ ``l2_bound``.

    Charges ``ledger`` with (ε', δ') = (``eps_row``, ``delta_row``) in total when the tree
    reaches ``max_depth`` (less otherwise). ``corrected`` selects the pooled-gap interval step
    and the guarded counts; ``False`` is the reference code's averaged-gap step, recorded as a
    non-private step for p > 1.
    """
    Y = np.clip(np.asarray(Y, dtype=float), lo, hi)
    n, p = Y.shape
    f_int, f_cnt, f_exp, f_avg = fractions
    Z = (Y - lo) * (2.0 * SCALE / (hi - lo)) - SCALE
    L = int(max_depth)
    w = np.sqrt(2.0 ** np.arange(L + 1))
    eps_cnt = eps_row * f_cnt * w / w.sum()
    eps_exp = eps_row * f_exp * w[:L] / w[:L].sum()
    delta_cnt = 0.2 * delta_row / (L + 1)
    delta_avg = 0.8 * delta_row

    # Step 0: root count.
    ledger.charge("counts_level_0", "laplace (shifted count)", eps_cnt[0], delta_cnt, 1.0,
                  "sequential", "noisy root count; sets the split limit c_root/2^L")
    root = float(n) if math.isinf(eps_cnt[0]) else n + rng.laplace(0.0, 1.0 / eps_cnt[0])

    # Step 1: DP interval size.
    eps_int = eps_row * f_int
    if corrected:
        gaps = pooled_gaps(Z)
        sens = max(1.0 + GAP_QUANTILE, 2.0 - GAP_QUANTILE) * p
        note = "Smith quantile of the pooled per-coordinate gaps; sensitivity max(1+q,2-q)*p"
    else:
        gaps, sens = averaged_gaps(Z), 2.0
        note = "Smith quantile of the coordinate-averaged gaps; the authors' sensitivity 2"
    ledger.charge("interval_size", "exponential (Smith quantile)", eps_int, 0.0, sens,
                  "sequential", note)
    if not corrected and p > 1:
        ledger.mark_non_private(
            "interval_size_sensitivity",
            "reference code: the averaged-gap rank utility does not have sensitivity 2 for more "
            "than one coordinate (one row shifts ranks differently per coordinate), so the "
            "interval step is not DP as claimed")
    released = smith_quantile(gaps, GAP_QUANTILE, 0.0, 2.0 * SCALE, eps_int, sens, rng)
    sigma = choose_sigma(released, simulated_gap_scale(math.floor(root), rng))
    n_bins = max(2, math.floor(2.0 * SCALE / (sigma / 2.0)))

    # Step 2: recursive splitting.
    params = TreeParams(lo=-SCALE, hi=SCALE, n_bins=n_bins, max_depth=L, t=t, q=q, w_c=w_c,
                        w_e=w_e, corrected=corrected)
    tree = grow_tree(Z, root, eps_cnt, eps_exp, delta_cnt, params, rng, ledger)

    # Step 3: averaging (noisy leaf sums ÷ noisy leaf counts).
    sums = np.vstack([Y[idx].sum(axis=0) for idx, _ in tree.leaves])
    counts = np.array([c for _, c in tree.leaves])
    noisy = gaussian_mechanism(
        sums, eps_row * f_avg, delta_avg, l2_bound, rng, ledger, "leaf_sums", "parallel",
        f"noisy leaf sums; leaves are disjoint; L2 sensitivity = public row bound {l2_bound:.6g}")
    centres = noisy / np.maximum(counts, 1.0)[:, None]
    return DPMRelease(centres, counts, tree, sigma, n_bins)
