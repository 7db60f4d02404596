"""DPM step 2: recursive splitting with emptiness/centreness scores.

Each node's candidate splits are the centres of m equal bins per coordinate of the public box;
the score u = w_c·centreness + w_e·emptiness (paper Defs. 5–7) is released through the
non-monotone exponential mechanism exp(ε·u/(2Δu)), with Δu from the shifted noisy count
(Def. 8), sampled by the package's exponential mechanism from the fit's sampler. Nodes of one
level are disjoint, so each level is one parallel-composed charge; the children's noisy counts
of a level form one release of L1 sensitivity 1 (exact discrete Laplace in corrected mode).
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

__all__ = ["TreeParams", "Split", "Tree", "centreness", "score_sensitivity", "node_utilities",
           "release_counts", "shifted_count", "choose_splits", "grow_tree",
           "COUNT_SENSITIVITY", "SCALED_SCORE_RANGE"]

#: L1 sensitivity of the counts of disjoint row sets under add/remove one row
COUNT_SENSITIVITY = 1
#: range sensitivity of the scores divided by their Δu (each moves by at most 1 either way)
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
    """Δu = (w_c·slope + w_e)/ñ: one row moves a rank by 1 and a bin count by 1.

    >>> round(score_sensitivity(10.0, TreeParams(lo=-1.0, hi=1.0, n_bins=4)), 12)  # (3.6 + 5)/10
    0.86
    """
    return (params.w_c * params.slope() + params.w_e) / n_tilde


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
                  "corrected mode the scores are normalised by the released count itself, so "
                  "the guarantee does not rest on it (kept: the method's budget split)")
    return noisy


def shifted_count(c_hat: float, epsilon: float, delta: float, params: TreeParams) -> float:
    """ñ = max(1, ĉ + ln(2δ)/ε) (Def. 8), capped at N = max(ĉ, 1) in corrected mode.

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


def choose_splits(utilities: np.ndarray, n_tildes: np.ndarray, epsilon: float,
                  params: TreeParams, sampler: Sampler, ledger: PrivacyLedger,
                  step: str) -> np.ndarray:
    """One candidate per node (row of ``utilities``) with P ∝ exp(ε·u/(2Δu)), Δu from ñ.

    The utilities are divided by each node's Δu = :func:`score_sensitivity`, so every scaled
    score moves by at most 1 either way over neighbours: range sensitivity 2, and the package's
    exponential mechanism with Δ = 2 is the non-monotone form exp(ε·u/(2Δu)) of the method.
    Nodes of a level are disjoint (one charge, parallel composition).

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> params, ledger = TreeParams(lo=-1.0, hi=1.0, n_bins=4), PrivacyLedger()
    >>> utilities = np.array([[1.0, 3.0, 2.0, 0.0], [0.0, 0.0, 0.0, 5.0]])
    >>> choose_splits(utilities, np.array([40.0, 40.0]), math.inf, params, make_sampler(0),
    ...               ledger, "level 0").tolist()  # ε = ∞: the best of each node
    [1, 3]
    >>> [(e.sensitivity, e.composition) for e in ledger.entries]
    [(2.0, 'parallel')]
    """
    du = np.array([score_sensitivity(float(nt), params) for nt in n_tildes])
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
        n_tildes = np.empty(len(nodes))
        for i, (idx, c_hat) in enumerate(nodes):
            N = max(c_hat, 1.0) if params.corrected else c_hat
            U[i] = node_utilities(Z[idx], N, params)
            n_tildes[i] = shifted_count(c_hat, eps_cnt[level], delta_cnt, params)
        choice = choose_splits(U, n_tildes, eps_exp[level], params, sampler, ledger,
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
