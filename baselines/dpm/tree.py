"""DPM step 2: recursive splitting with emptiness/centreness scores.

Each node's candidate splits are the centres of m equal bins per coordinate of the public box;
the score u = w_c·centreness + w_e·emptiness (paper Defs. 5–7) is released through the
exponential mechanism, sampled by the package's :func:`~dptaucc.privacy.exponential_mechanism`
(P ∝ exp(ε·s/R), R the *range* sensitivity of the scores s) from the fit's sampler. Nodes of one
level are disjoint, so each level is one parallel-composed charge; the children's noisy counts
of a level form one release of L1 sensitivity 1 (exact discrete Laplace in corrected mode).

Paper mode keeps the reference code: the non-monotone form exp(ε·u/(2Δu)) with
Δu = (w_c·slope + w_e)/ñ and ñ the shifted count of Def. 8 (scores u/Δu, range 2).

Corrected mode releases s = u·N with range sensitivity R = 2·w_c·slope + w_e
(:func:`score_range`), N = max(ĉ, 1) the node's released noisy count (public given the
history; the same on both sides). Proof, for one added row (removal is the negation, with the
same range): on each coordinate the row raises the rank #{z_j < p_b} of a candidate by 0 or 1,
so a = N/2 − |rank − N/2| moves by at most 1 either way (a < 0 when the rank exceeds N);
centreness (Def. 6) is continuous and piecewise linear in a, of slope at most slope/N on both
pieces and for a < 0 (slope = max(t/q, 2(1 − t)/(1 − 2q)), :meth:`TreeParams.slope`), so it
moves by at most slope/N either way. The bin count h of a candidate rises by 0 or 1, so the
emptiness clip(1 − h/N, 0, 1) (Def. 5) falls by at most 1/N and never rises. Hence every
candidate's u' − u lies in [−(w_c·slope + w_e)/N, +w_c·slope/N] (Def. 7), the range of
u' − u over a node's candidates is at most (2·w_c·slope + w_e)/N, and that of s' − s = N·(u' −
u) at most R: the range-sensitivity exponential mechanism (Dong, Durfee & Rogers 2020) is
ε-DP per node without the factor ½. At the defaults R = 12.2 against 2·(3.6 + 5) = 17.2 of the
non-monotone form at ñ = N (0.709 of its noise scale; less still when ñ < N). The shifted
count ñ is still computed for paper mode and its δ still charged in corrected mode
(``counts_level_#/shift``, the method's budget split, so a fit spends exactly its δ), but
corrected mode no longer reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dptaucc.privacy import (
    PrivacyLedger,
    Sampler,
    discrete_laplace_mechanism,
    exponential_mechanism,
    float_laplace_mechanism,
)

__all__ = ["TreeParams", "Split", "Tree", "centreness", "score_sensitivity", "score_range",
           "node_utilities", "release_counts", "shifted_count", "choose_splits", "grow_tree",
           "COUNT_SENSITIVITY", "SCALED_SCORE_RANGE"]

#: L1 sensitivity of the counts of disjoint row sets under add/remove one row
COUNT_SENSITIVITY = 1
#: paper mode: range sensitivity of the scores divided by their Δu (each moves by at most 1
#: either way); corrected mode uses :func:`score_range` instead
SCALED_SCORE_RANGE = 2.0


@dataclass(frozen=True)
class TreeParams:
    """Shape parameters of the score (reference-code defaults) and the public grid.

    >>> params = TreeParams(lo=-1.0, hi=1.0, n_bins=4)
    >>> params.width, round(params.slope(), 12)  # corrected: max(t/q, 2(1 − t)/(1 − 2q))
    (0.5, 3.6)
    >>> round(TreeParams(lo=-1.0, hi=1.0, n_bins=4, t=0.1, corrected=False).slope(), 12)
    1.2
    """

    lo: float
    hi: float
    n_bins: int
    max_depth: int = 7
    t: float = 0.3
    q: float = 1.0 / 12.0
    w_c: float = 1.0
    w_e: float = 5.0
    corrected: bool = True

    @property
    def width(self) -> float:
        return (self.hi - self.lo) / self.n_bins

    def slope(self) -> float:
        """Max slope of centreness per unit rank, times N (both pieces of Def. 6)."""
        outer = self.t / self.q
        if not self.corrected:
            return outer  # the reference code's bound; equal to the max for the defaults
        return max(outer, 2.0 * (1.0 - self.t) / (1.0 - 2.0 * self.q))


@dataclass(frozen=True)
class Split:
    """One released split of a node: coordinate ``dim`` at ``threshold`` (scaled units).

    >>> Split(level=0, dim=1, threshold=0.25).used
    True
    """

    level: int
    dim: int
    threshold: float  # in the scaled [lo, hi] coordinates
    used: bool = True  # False when a child's noisy count fell below the split limit


@dataclass
class Tree:
    """The leaves (exact members, noisy count) and splits of a grown tree.

    >>> import numpy as np
    >>> tree = Tree()
    >>> tree.leaves.append((np.array([0, 2]), 2.0))
    >>> len(tree.leaves), tree.splits, tree.depth
    (1, [], 0)
    """

    leaves: list[tuple[np.ndarray, float]] = field(default_factory=list)  # (row idx, noisy count)
    splits: list[Split] = field(default_factory=list)
    depth: int = 0


def centreness(a: np.ndarray, N: float, t: float, q: float) -> np.ndarray:
    """Paper Def. 6: 0 → t linearly over the outer q-fraction, t → 1 at the median.

    >>> import numpy as np
    >>> np.round(centreness(np.array([0.0, 25 / 3, 50.0]), 100, t=0.3, q=1 / 12), 12).tolist()
    [0.0, 0.3, 1.0]
    """
    a = np.asarray(a, dtype=float)
    outer = t * a / (q * N)
    inner = (t - 2.0 * q) / (1.0 - 2.0 * q) + a * (1.0 - t) / (N / 2.0 - q * N)
    return np.where(a <= q * N, outer, inner)


def score_sensitivity(n_tilde: float, params: TreeParams) -> float:
    """Paper mode's Δu = (w_c·slope + w_e)/ñ: one row moves a rank by 1 and a bin count by 1.

    >>> round(score_sensitivity(10.0, TreeParams(lo=-1.0, hi=1.0, n_bins=4)), 12)  # (3.6 + 5)/10
    0.86
    """
    return (params.w_c * params.slope() + params.w_e) / n_tilde


def score_range(params: TreeParams) -> float:
    """Corrected mode's range sensitivity R = 2·w_c·slope + w_e of the scores s = u·N.

    One added row moves each candidate's u by −(w_c·slope + w_e)/N to +w_c·slope/N (a rank up
    by 0 or 1: centreness ±slope/N; a bin count up by 0 or 1: emptiness −1/N to 0), so the
    range of s' − s over a node's candidates is at most R (module docstring).

    >>> round(score_range(TreeParams(lo=-1.0, hi=1.0, n_bins=4)), 12)  # 2·3.6 + 5
    12.2
    """
    return 2.0 * params.w_c * params.slope() + params.w_e


def node_utilities(Z: np.ndarray, N: float, params: TreeParams) -> np.ndarray:
    """Scores u_{j,b} of all p·m candidates of one node (row-major: j then b).

    Half-bin histogram: candidate b sits on half-bin edge 2b+1, so the rank #{z_j < p_b} is a
    cumulative half-bin count and the bin count h_{j,b} the sum of half-bins 2b and 2b+1.

    >>> import numpy as np
    >>> Z = np.array([[-0.9, 0.1], [-0.8, 0.2], [0.8, 0.3], [0.9, 0.4]])
    >>> u = node_utilities(Z, 4.0, TreeParams(lo=-1.0, hi=1.0, n_bins=4)).reshape(2, 4)
    >>> int(np.argmax(u[0])) in (1, 2), u.shape  # coordinate 0: split in the empty middle
    (True, (2, 4))
    >>> bool(u[0].max() > u[1].max())  # coordinate 1 has no empty bin in its centre
    True
    """
    n_S, p = Z.shape
    m = params.n_bins
    half = params.width / 2.0
    hb = np.clip(np.floor((Z - params.lo) / half).astype(np.int64), 0, 2 * m - 1)
    flat = hb + (np.arange(p) * 2 * m)[None, :]
    counts = np.bincount(flat.ravel(), minlength=p * 2 * m).reshape(p, 2 * m)
    h = counts[:, 0::2] + counts[:, 1::2]
    rank = np.cumsum(counts, axis=1)[:, 0::2]
    a = N / 2.0 - np.abs(rank - N / 2.0)
    cent = centreness(a, N, params.t, params.q)
    empt = np.clip(1.0 - h / N, 0.0, 1.0)
    return (params.w_c * cent + params.w_e * empt).ravel()


def release_counts(true_counts: np.ndarray, epsilon: float, delta_shift: float,
                   sampler: Sampler, ledger: PrivacyLedger, step: str, *, paper: bool,
                   note: str = "") -> np.ndarray:
    """Noisy counts of disjoint row sets: L1 sensitivity 1 (one added row joins one set).

    Corrected: the exact discrete Laplace of scale 1/ε, integer counts (their possible values
    do not depend on the data). Paper: the reference code's float Laplace. A second entry
    charges δ_shift (0, δ) for the shifted count of Def. 8 (see :func:`shifted_count`).

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> ledger = PrivacyLedger()
    >>> noisy = release_counts(np.array([3, 7]), 0.5, 1e-6, make_sampler(0), ledger, "level 1",
    ...                        paper=False)
    >>> noisy.dtype, [(e.step, e.epsilon, e.delta, e.noise_scale) for e in ledger.entries]
    (dtype('int64'), [('level 1', 0.5, 0.0, 2.0), ('level 1/shift', 0.0, 1e-06, nan)])
    """
    if paper:
        noisy = float_laplace_mechanism(true_counts, epsilon=epsilon,
                                        sensitivity=COUNT_SENSITIVITY, sampler=sampler,
                                        ledger=ledger,
                                        step=step, note=note)
    else:
        noisy = discrete_laplace_mechanism(np.asarray(true_counts, dtype=np.int64), epsilon=epsilon,
                                           sensitivity=COUNT_SENSITIVITY, sampler=sampler,
                                           ledger=ledger, step=step, note=note)
    ledger.charge(f"{step}/shift", "shifted count (tail bound)", 0.0, delta_shift, math.nan,
                  "sequential",
                  "delta of the shifted count n_tilde (Def. 8) falling above the true size; in "
                  "corrected mode the split scores are normalised by the released count itself "
                  "and n_tilde is not read (kept: the method's budget split)")
    return noisy


def shifted_count(c_hat: float, epsilon: float, delta: float, params: TreeParams) -> float:
    """ñ = max(1, ĉ + ln(2δ)/ε) (Def. 8), capped at N = max(ĉ, 1) in corrected mode.

    Paper mode's split choice divides the scores by Δu(ñ); corrected mode's no longer reads ñ
    (its δ is still charged, :func:`release_counts`).

    >>> import math
    >>> params = TreeParams(lo=-1.0, hi=1.0, n_bins=4)
    >>> round(shifted_count(50.0, 1.0, 1e-5, params), 4)  # 50 + ln(2e-5)
    39.1802
    >>> shifted_count(5.0, 1.0, 1e-5, params), shifted_count(50.0, math.inf, 1e-5, params)
    (1.0, 50.0)
    """
    N = max(c_hat, 1.0) if params.corrected else c_hat
    if math.isinf(epsilon):
        return float(N)
    n_tilde = max(1.0, c_hat + math.log(2.0 * delta) / epsilon)
    return float(min(n_tilde, N)) if params.corrected else float(n_tilde)


def choose_splits(utilities: np.ndarray, norms: np.ndarray, epsilon: float,
                  params: TreeParams, sampler: Sampler, ledger: PrivacyLedger,
                  step: str) -> np.ndarray:
    """One candidate per node (row of ``utilities``), ``norms`` the node's public size.

    Corrected mode: ``norms`` = N = max(ĉ, 1), the node's released count (the N the utilities
    were computed with); scores s = u·N, P ∝ exp(ε·s/R), R = :func:`score_range` (module
    docstring: the range of s' − s over candidates is at most R). Paper mode: ``norms`` = ñ
    (:func:`shifted_count`); the utilities are divided by each node's Δu =
    :func:`score_sensitivity` and drawn at range 2, the non-monotone exp(ε·u/(2Δu)) of the
    reference code. Nodes of a level are disjoint (one charge, parallel composition).

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> params, ledger = TreeParams(lo=-1.0, hi=1.0, n_bins=4), PrivacyLedger()
    >>> utilities = np.array([[1.0, 3.0, 2.0, 0.0], [0.0, 0.0, 0.0, 5.0]])
    >>> choose_splits(utilities, np.array([40.0, 40.0]), math.inf, params, make_sampler(0),
    ...               ledger, "level 0").tolist()  # ε = ∞: the best of each node
    [1, 3]
    >>> paper = TreeParams(lo=-1.0, hi=1.0, n_bins=4, corrected=False)
    >>> _ = choose_splits(utilities, np.array([40.0, 40.0]), 1.0, paper, make_sampler(0),
    ...                   ledger, "level 0")
    >>> [(round(e.sensitivity, 12), e.composition) for e in ledger.entries]
    [(12.2, 'parallel'), (2.0, 'parallel')]
    """
    norms = np.asarray(norms, dtype=float)
    if params.corrected:
        return exponential_mechanism(
            utilities * norms[:, None], epsilon=epsilon, sensitivity=score_range(params),
            sampler=sampler, ledger=ledger, step=step,
            note="exponential mechanism on s = u*N (N = max(c_hat, 1), the node's released "
            "count); range sensitivity 2*w_c*slope + w_e (one row moves u by "
            "-(w_c*slope + w_e)/N .. +w_c*slope/N); nodes of a level are disjoint")
    du = np.array([score_sensitivity(float(nt), params) for nt in norms])
    return exponential_mechanism(
        utilities / du[:, None], epsilon=epsilon, sensitivity=SCALED_SCORE_RANGE, sampler=sampler,
        ledger=ledger, step=step,
        note="non-monotone exponential mechanism exp(eps*u/(2*du)); utilities divided by each "
        "node's du = (w_c*slope + w_e)/n_tilde; nodes of a level are disjoint")


def grow_tree(Z: np.ndarray, root_count: float, eps_cnt: np.ndarray, eps_exp: np.ndarray,
              delta_cnt: float, params: TreeParams, sampler: Sampler,
              ledger: PrivacyLedger) -> Tree:
    """Breadth-first DPM splitting; returns the leaves (exact members, noisy counts) and splits.

    ``eps_cnt[ℓ]`` (ℓ = 0..L) prices the noisy counts of level ℓ (the root's is already
    released as ``root_count``), ``eps_exp[ℓ]`` (ℓ = 0..L−1) the split choice at level ℓ.
    Corrected mode charges the levels a tree that stops early never runs (their ε and the
    counts' δ, set aside, nothing drawn), so the fit spends exactly the budget it was given.

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> Z = np.array([[-0.9, 0.0]] * 8 + [[0.9, 0.0]] * 8)
    >>> params = TreeParams(lo=-1.0, hi=1.0, n_bins=4, max_depth=2)  # split limit 16/4
    >>> tree = grow_tree(Z, 16.0, np.full(3, math.inf), np.full(2, math.inf), 1e-6, params,
    ...                  make_sampler(0), PrivacyLedger())
    >>> sorted(sorted(idx.tolist()) for idx, _ in tree.leaves) == [list(range(8)),
    ...                                                            list(range(8, 16))]
    True
    >>> (tree.splits[0].dim, tree.splits[0].used), sorted(int(c) for _, c in tree.leaves)
    ((0, True), [8, 8])
    """
    L = params.max_depth
    s_lim = root_count / 2.0**L
    m = params.n_bins
    centres = params.lo + (np.arange(m) + 0.5) * params.width
    tree = Tree()
    nodes = [(np.arange(Z.shape[0]), root_count)]
    run = 0  # levels whose split and children's counts were released
    for level in range(L + 1):
        if not nodes:
            break
        tree.depth = level
        if level == L:
            tree.leaves.extend(nodes)
            break
        U = np.empty((len(nodes), Z.shape[1] * m))
        norms = np.empty(len(nodes))  # N (corrected) or ñ (paper) per node
        for i, (idx, c_hat) in enumerate(nodes):
            N = max(c_hat, 1.0) if params.corrected else c_hat
            U[i] = node_utilities(Z[idx], N, params)
            norms[i] = N if params.corrected else shifted_count(c_hat, eps_cnt[level],
                                                                delta_cnt, params)
        choice = choose_splits(U, norms, eps_exp[level], params, sampler, ledger,
                               f"split_level_{level}")
        true_counts = np.empty(2 * len(nodes), dtype=np.int64)
        parts = []
        for i, (idx, _) in enumerate(nodes):
            dim, b = divmod(int(choice[i]), m)
            thr = float(centres[b])
            tree.splits.append(Split(level, dim, thr))  # 'used' is settled below
            left = Z[idx, dim] <= thr
            parts.append((idx[left], idx[~left]))
            true_counts[2 * i] = left.sum()
            true_counts[2 * i + 1] = idx.size - true_counts[2 * i]
        noisy = release_counts(
            true_counts, eps_cnt[level + 1], delta_cnt, sampler, ledger,
            f"counts_level_{level + 1}", paper=not params.corrected,
            note="children's noisy counts of one level (disjoint nodes, L1 sensitivity 1)")
        next_nodes = []
        for i, (idx, c_hat) in enumerate(nodes):
            c_left, c_right = noisy[2 * i], noisy[2 * i + 1]
            if c_left <= s_lim or c_right <= s_lim:
                tree.leaves.append((idx, c_hat))
                k = len(tree.splits) - len(nodes) + i
                sp_ = tree.splits[k]
                tree.splits[k] = Split(sp_.level, sp_.dim, sp_.threshold, False)
            else:
                next_nodes.append((parts[i][0], c_left))
                next_nodes.append((parts[i][1], c_right))
        nodes = next_nodes
        run = level + 1
    if params.corrected and run < L:
        _charge_set_aside(ledger, run, L, eps_cnt, eps_exp, delta_cnt)
    return tree


def _charge_set_aside(ledger: PrivacyLedger, run: int, L: int, eps_cnt: np.ndarray,
                      eps_exp: np.ndarray, delta_cnt: float) -> None:
    """Charge the split and count budgets of levels ``run`` … ``L − 1`` that were not run."""
    unused = math.fsum([*np.asarray(eps_exp, float)[run:L],
                        *np.asarray(eps_cnt, float)[run + 1:L + 1]])
    ledger.charge(f"levels_{run}-{L - 1}_set_aside", "unused (set aside)", unused,
                  delta_cnt * (L - run), math.nan, "sequential",
                  "the tree stopped before max_depth: the budget of the splits and counts it "
                  "did not run is charged (nothing drawn), so the fit spends its whole budget")
