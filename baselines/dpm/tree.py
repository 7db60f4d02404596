"""DPM step 2: recursive splitting with emptiness/centreness scores (spec §1.3, step 2).

Each node's candidate splits are the centres of m equal bins per coordinate of the public box;
the score u = w_c·centreness + w_e·emptiness (paper Defs. 5–7) is released through the
non-monotone exponential mechanism exp(ε·u/(2Δu)), with Δu from the shifted noisy count
(Def. 8). Nodes of one level are disjoint, so each level is one parallel-composed charge; the
children's noisy counts of a level form one Laplace release of L1 sensitivity 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dptaucc.privacy import PrivacyLedger, exponential_mechanism

__all__ = ["TreeParams", "Split", "Tree", "centreness", "score_sensitivity", "node_utilities",
           "grow_tree"]


@dataclass(frozen=True)
class TreeParams:
    """Shape parameters of the score (reference-code defaults) and the public grid."""

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
        """Max slope of centreness per unit rank, times N (spec §1.4)."""
        outer = self.t / self.q
        if not self.corrected:
            return outer  # the reference code's bound; equal to the max for the defaults
        return max(outer, 2.0 * (1.0 - self.t) / (1.0 - 2.0 * self.q))


@dataclass(frozen=True)
class Split:
    level: int
    dim: int
    threshold: float  # in the scaled [lo, hi] coordinates
    used: bool = True  # False when a child's noisy count fell below the split limit


@dataclass
class Tree:
    leaves: list[tuple[np.ndarray, float]] = field(default_factory=list)  # (row idx, noisy count)
    splits: list[Split] = field(default_factory=list)
    depth: int = 0


def centreness(a: np.ndarray, N: float, t: float, q: float) -> np.ndarray:
    """Paper Def. 6: 0 → t linearly over the outer q-fraction, t → 1 at the median."""
    a = np.asarray(a, dtype=float)
    outer = t * a / (q * N)
    inner = (t - 2.0 * q) / (1.0 - 2.0 * q) + a * (1.0 - t) / (N / 2.0 - q * N)
    return np.where(a <= q * N, outer, inner)


def score_sensitivity(n_tilde: float, params: TreeParams) -> float:
    """Δu = (w_c·slope + w_e)/ñ: one row moves a rank by 1 and a bin count by 1."""
    return (params.w_c * params.slope() + params.w_e) / n_tilde


def node_utilities(Z: np.ndarray, N: float, params: TreeParams) -> np.ndarray:
    """Scores u_{j,b} of all p·m candidates of one node (row-major: j then b).

    Half-bin histogram: candidate b sits on half-bin edge 2b+1, so the rank #{z_j < p_b} is a
    cumulative half-bin count and the bin count h_{j,b} the sum of half-bins 2b and 2b+1.
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


def grow_tree(Z: np.ndarray, root_count: float, eps_cnt: np.ndarray, eps_exp: np.ndarray,
              delta_cnt: float, params: TreeParams, rng: np.random.Generator,
              ledger: PrivacyLedger) -> Tree:
    """Breadth-first DPM splitting; returns the leaves (exact members, noisy counts) and splits.

    ``eps_cnt[ℓ]`` (ℓ = 0..L) prices the noisy counts of level ℓ (the root's is already
    released as ``root_count``), ``eps_exp[ℓ]`` (ℓ = 0..L−1) the split choice at level ℓ.
    """
    L = params.max_depth
    s_lim = root_count / 2.0**L
    m = params.n_bins
    centres = params.lo + (np.arange(m) + 0.5) * params.width
    tree = Tree()
    nodes = [(np.arange(Z.shape[0]), float(root_count))]
    for level in range(L + 1):
        if not nodes:
            break
        tree.depth = level
        if level == L:
            tree.leaves.extend(nodes)
            break
        U = np.empty((len(nodes), Z.shape[1] * m))
        for i, (idx, c_hat) in enumerate(nodes):
            N = max(c_hat, 1.0) if params.corrected else c_hat
            if math.isinf(eps_cnt[level]):
                n_tilde = N
            else:
                n_tilde = max(1.0, c_hat + math.log(2.0 * delta_cnt) / eps_cnt[level])
                if params.corrected:
                    n_tilde = min(n_tilde, N)
            U[i] = node_utilities(Z[idx], N, params) / score_sensitivity(n_tilde, params)
        # utilities are in units of Δu, so exp(ε·u/(2Δu)) = exp(ε·(u/Δu)/2): sensitivity 2.
        choice = exponential_mechanism(
            U, eps_exp[level], 2.0, rng, ledger, f"split_level_{level}",
            "non-monotone exponential mechanism exp(eps*u/(2*du)); utilities pre-divided by "
            "each node's du = (w_c*slope + w_e)/n_tilde; nodes of a level are disjoint",
        )
        true_counts = np.empty(2 * len(nodes))
        parts = []
        for i, (idx, _) in enumerate(nodes):
            dim, b = divmod(int(choice[i]), m)
            thr = float(centres[b])
            tree.splits.append(Split(level, dim, thr))  # 'used' is settled below
            left = Z[idx, dim] <= thr
            parts.append((idx[left], idx[~left]))
            true_counts[2 * i] = left.sum()
            true_counts[2 * i + 1] = idx.size - true_counts[2 * i]
        ledger.charge(
            f"counts_level_{level + 1}", "laplace (shifted count)", eps_cnt[level + 1], delta_cnt,
            1.0, "parallel",
            "children's noisy counts of one level (disjoint nodes, L1 sensitivity 1); delta "
            "pays for the shifted count over-estimating |S| (Def. 8)",
        )
        noisy = true_counts if math.isinf(eps_cnt[level + 1]) else \
            true_counts + rng.laplace(0.0, 1.0 / eps_cnt[level + 1], size=true_counts.shape)
        next_nodes = []
        for i, (idx, c_hat) in enumerate(nodes):
            c_left, c_right = float(noisy[2 * i]), float(noisy[2 * i + 1])
            if c_left <= s_lim or c_right <= s_lim:
                tree.leaves.append((idx, c_hat))
                k = len(tree.splits) - len(nodes) + i
                sp_ = tree.splits[k]
                tree.splits[k] = Split(sp_.level, sp_.dim, sp_.threshold, False)
            else:
                next_nodes.append((parts[i][0], c_left))
                next_nodes.append((parts[i][1], c_right))
        nodes = next_nodes
    return tree
