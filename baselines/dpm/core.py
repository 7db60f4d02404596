"""DPM on rows already inside a public box: steps 0–3 of the method (no transform, no k).

:func:`dpm_release` is what :class:`dptaucc.baselines.dpm.DPM` runs after its per-record
embedding; it also runs DPM on any continuous data with public per-coordinate bounds (e.g. the
paper's Synth-10D in ±100), with every mechanism charged at the add/remove level (ε', δ') given.

Mechanisms, all drawing from the fit's :class:`~dptaucc.privacy.Sampler`:

0. root count: n + noise, L1 sensitivity 1 (:func:`.tree.release_counts`);
1. interval size: Smith's quantile of the coordinate gaps on a public output grid
   (:func:`.interval.smith_quantile`), only the matched σ of a public table is kept;
2. splits and children's counts level by level (:func:`.tree.grow_tree`);
3. leaf sums: the analytic Gaussian mechanism (L2 sensitivity = the public row bound),
   snapped to a σ-relative grid (:func:`release_leaf_sums`); centre = sum ÷ max(count, 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dptaucc.privacy import PrivacyLedger, Sampler, as_sampler, gaussian_mechanism

from .gaussian import analytic_sigma
from .interval import (
    GAP_QUANTILE,
    averaged_gaps,
    choose_sigma,
    pooled_gaps,
    simulated_gap_scale,
    smith_quantile,
)
from .tree import Tree, TreeParams, grow_tree, release_counts

__all__ = ["SCALE", "DEFAULT_FRACTIONS", "DPMRelease", "dpm_release", "release_leaf_sums",
           "interval_sensitivity"]

SCALE = 100.0  # the public box is mapped to [−SCALE, SCALE] for the σ grid
DEFAULT_FRACTIONS = (0.04, 0.18, 0.18, 0.60)  # f_int, f_cnt, f_exp, f_avg


@dataclass
class DPMRelease:
    """What :func:`dpm_release` releases: the centres, the leaves' noisy sums and counts, the
    tree and the chosen interval σ.

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> rng = np.random.default_rng(0)
    >>> Y = np.vstack([rng.normal(-0.5, 0.05, (40, 2)), rng.normal(0.5, 0.05, (40, 2))])
    >>> release = dpm_release(Y, -1.0, 1.0, math.sqrt(2), math.inf, 1e-5, make_sampler(0),
    ...                       PrivacyLedger(), max_depth=2)
    >>> release.counts.tolist(), np.round(release.centres, 1).tolist()  # ε = ∞: exact
    ([40, 40], [[-0.5, -0.5], [0.5, 0.5]])
    >>> bool(np.allclose(release.centres, release.sums / release.counts[:, None]))
    True
    """

    centres: np.ndarray  # k × p, in the input units
    sums: np.ndarray  # the leaves' noisy sums (k × p, on the Gaussian's grid)
    counts: np.ndarray  # the leaves' noisy counts (int64 in corrected mode)
    tree: Tree  # split thresholds in the scaled [−SCALE, SCALE] units
    sigma: float  # the chosen grid σ (interval size σ/2, scaled units)
    n_bins: int


def interval_sensitivity(p: int, corrected: bool) -> float:
    """Utility sensitivity of the interval step: max(q, 2 − q)·p for the pooled gaps (one
    added row raises the pooled count #{gap ≤ o} by 0 to 2p and never lowers it, while the
    target rank qM rises by qp: see :mod:`.interval`); the authors' 2 for their averaged gaps
    (true for p = 1 only).

    >>> round(interval_sensitivity(4, corrected=True), 12), interval_sensitivity(4, corrected=False)
    (5.4, 2.0)
    """
    return max(GAP_QUANTILE, 2.0 - GAP_QUANTILE) * p if corrected else 2.0


def release_leaf_sums(sums: np.ndarray, epsilon: float, delta: float, l2_bound: float,
                      sampler: Sampler, ledger: PrivacyLedger, note: str = "") -> np.ndarray:
    """Noisy leaf sums: analytic Gaussian (Balle & Wang) for L2 sensitivity ``l2_bound``.

    One added row (‖y‖₂ ≤ l2_bound) changes one leaf's sum by y: the k×p matrix has L2
    sensitivity l2_bound, one sequential (ε, δ) release; snapped to a σ-relative grid.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> from dptaucc.baselines.dpm.gaussian import analytic_sigma
    >>> ledger = PrivacyLedger()
    >>> noisy = release_leaf_sums(np.zeros((3, 2)), 1.0, 1e-5, 1.0, make_sampler(0), ledger)
    >>> noisy.shape, ledger.entries[0].noise_scale == analytic_sigma(1.0, 1e-5, 1.0)
    ((3, 2), True)
    >>> release_leaf_sums(np.zeros((3, 2)), 1.0, 0.0, 1.0, make_sampler(0), ledger)
    Traceback (most recent call last):
    ...
    ValueError: the Gaussian mechanism needs delta > 0 for a finite epsilon
    """
    if not (delta > 0 or math.isinf(epsilon)):
        raise ValueError("the Gaussian mechanism needs delta > 0 for a finite epsilon")
    sigma = analytic_sigma(epsilon, delta, l2_bound)
    return gaussian_mechanism(sums, sigma=sigma, epsilon=epsilon, delta=delta,
                              sensitivity=l2_bound, sampler=sampler, ledger=ledger,
                              step="leaf_sums", note=note)


def dpm_release(Y: np.ndarray, lo: float, hi: float, l2_bound: float, eps_row: float,
                delta_row: float, sampler: Sampler | np.random.Generator,
                ledger: PrivacyLedger, *, corrected: bool = True, max_depth: int = 7,
                fractions=DEFAULT_FRACTIONS, t: float = 0.3, q: float = 1.0 / 12.0,
                w_c: float = 1.0, w_e: float = 5.0) -> DPMRelease:
    """Run DPM on dense rows ``Y`` in the public box [lo, hi]^p with ‖y‖₂ ≤ ``l2_bound``.

    Charges ``ledger`` with (ε', δ') = (``eps_row``, ``delta_row``) in total when the tree
    reaches ``max_depth`` (less otherwise). ``corrected`` selects the pooled-gap interval step,
    the guarded counts and exact discrete-Laplace counts; ``False`` is the reference code's
    averaged-gap step (a named non-private step for p > 1) and float Laplace counts.

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> rng = np.random.default_rng(0)
    >>> Y = np.vstack([rng.normal(-0.5, 0.05, (40, 2)), rng.normal(0.5, 0.05, (40, 2))])
    >>> ledger = PrivacyLedger()
    >>> release = dpm_release(Y, -1.0, 1.0, math.sqrt(2), 1.0, 1e-5, make_sampler(0), ledger,
    ...                       max_depth=3)
    >>> release.counts.dtype, ledger.end_to_end_dp, ledger.epsilon_spent <= 1.0  # at most (ε', δ')
    (dtype('int64'), True, True)
    >>> ledger = PrivacyLedger()
    >>> _ = dpm_release(Y, -1.0, 1.0, math.sqrt(2), 1.0, 1e-5, make_sampler(0), ledger,
    ...                 corrected=False, max_depth=3)
    >>> ledger.non_private_steps  # the reference's averaged gaps in two coordinates
    ['interval_size_sensitivity']
    """
    sampler = as_sampler(sampler)
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
    root = release_counts(np.array([n]), eps_cnt[0], delta_cnt, sampler, ledger,
                          "counts_level_0", paper=not corrected,
                          note="noisy root count; sets the split limit c_root/2^L")[0]

    # Step 1: DP interval size.
    sens = interval_sensitivity(p, corrected)
    if corrected:
        gaps = pooled_gaps(Z)
        note = "Smith quantile of the pooled per-coordinate gaps; sensitivity max(q,2-q)*p"
    else:
        gaps = averaged_gaps(Z)
        note = "Smith quantile of the coordinate-averaged gaps; the authors' sensitivity 2"
        if p > 1:
            ledger.mark_non_private(
                "interval_size_sensitivity",
                "reference code: the averaged-gap rank utility does not have sensitivity 2 for "
                "more than one coordinate (one row shifts ranks differently per coordinate), "
                "so the interval step is not DP as claimed")
    released = smith_quantile(gaps, GAP_QUANTILE, 0.0, 2.0 * SCALE, eps_row * f_int, sens,
                              sampler, ledger, "interval_size", note)
    sigma = choose_sigma(released, simulated_gap_scale(math.floor(root), sampler.rng))
    n_bins = max(2, math.floor(2.0 * SCALE / (sigma / 2.0)))

    # Step 2: recursive splitting.
    params = TreeParams(lo=-SCALE, hi=SCALE, n_bins=n_bins, max_depth=L, t=t, q=q, w_c=w_c,
                        w_e=w_e, corrected=corrected)
    tree = grow_tree(Z, root, eps_cnt, eps_exp, delta_cnt, params, sampler, ledger)

    # Step 3: averaging (noisy leaf sums ÷ noisy leaf counts).
    sums = np.vstack([Y[idx].sum(axis=0) for idx, _ in tree.leaves])
    counts = np.array([c for _, c in tree.leaves])
    noisy = release_leaf_sums(
        sums, eps_row * f_avg, delta_avg, l2_bound, sampler, ledger,
        f"noisy leaf sums; leaves are disjoint; L2 sensitivity = public row bound {l2_bound:.6g}")
    centres = noisy / np.maximum(counts, 1)[:, None]
    return DPMRelease(centres, noisy, counts, tree, sigma, n_bins)
