"""Statistical checks of the mechanisms as DP-τCC uses them, and an empirical privacy test."""

import math

import numpy as np
import pytest
from scipy import stats

import dptaucc.dp_taucc as dp_mod
from dptaucc import DPTauCC
from dptaucc.objective import aggregate_columns, row_range_sensitivity, row_weights
from dptaucc.privacy import PrivacyLedger, exponential_mechanism


@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_exponential_mechanism_frequencies_chi_square(scale):
    """Sample frequencies match exp(ε·u/Δ)/Z, also with huge utility scales (log-space)."""
    u = np.array([0.0, 0.4, 1.0, -0.7, 0.9]) * scale
    eps, delta, N = 1.3, 0.5 * scale, 40_000
    rng = np.random.default_rng(2024)
    labels = exponential_mechanism(np.tile(u, (N, 1)), eps, delta, rng, PrivacyLedger(), "s")
    logits = eps * u / delta
    p = np.exp(logits - logits.max())
    p /= p.sum()
    observed = np.bincount(labels, minlength=u.size)
    _, pvalue = stats.chisquare(observed, N * p)
    assert pvalue > 1e-3


def test_exponential_mechanism_does_not_overflow():
    u = np.array([[1e300, -1e300, 0.0]])
    labels = exponential_mechanism(u, 1.0, 1e-3, np.random.default_rng(0), PrivacyLedger(), "s")
    assert labels.tolist() == [0]


def _ratio_bound_holds(counts_a, counts_b, eps, alpha):
    """No outcome is *significantly* more than e^ε times likelier under one input.

    Slack: for every outcome with enough mass, the one-sided Clopper–Pearson lower bound of
    p_a must not exceed e^ε times the upper bound of p_b (and vice versa), each at level
    alpha / (2·#outcomes) (Bonferroni), so a correct mechanism fails with prob. < alpha.
    """
    na, nb = counts_a.sum(), counts_b.sum()
    level = alpha / (2 * counts_a.size)
    worst = 0.0
    for ca, cb in zip(counts_a, counts_b, strict=True):
        lo_a = stats.beta.ppf(level, ca, na - ca + 1) if ca > 0 else 0.0
        hi_b = stats.beta.ppf(1 - level, cb + 1, nb - cb) if cb < nb else 1.0
        lo_b = stats.beta.ppf(level, cb, nb - cb + 1) if cb > 0 else 0.0
        hi_a = stats.beta.ppf(1 - level, ca + 1, na - ca) if ca < na else 1.0
        worst = max(worst, lo_a / hi_b, lo_b / hi_a)
    return worst <= math.exp(eps), worst


def _one_assignment(A, c, table, eps, rng, sens=None):
    """One row assignment of DP-τCC (Alg. 3) given released C and T̃."""
    beta = row_weights(table, guard=True)
    delta = row_range_sensitivity(beta) if sens is None else sens
    util = aggregate_columns(A, c, table.shape[1]) @ beta.T
    return dp_mod._private_assignment(util, delta, eps, rng, PrivacyLedger(), "s")


def _neighbour_counts(row, eps, N, seed, sens=None):
    """Labels of row u = 0 under A and A' (a_uv + 1 with v = 3) over N independent runs."""
    import scipy.sparse as sp

    c = np.array([0, 1, 0, 1])
    table = np.array([[9.0, 1.0], [1.0, 6.0], [3.0, 3.0]])  # released, public
    row2 = np.array(row, dtype=float)
    row2[3] += 1
    counts = []
    for k, r in enumerate((np.array(row, dtype=float), row2)):
        rep = sp.csr_matrix(np.tile(r, (N, 1)))  # N replicates = N independent runs
        labels = _one_assignment(rep, c, table, eps, np.random.default_rng(seed + k), sens)
        counts.append(np.bincount(labels, minlength=3))
    return counts


def test_row_assignment_is_eps_dp_on_neighbours():
    """P[label_u = k] under A and A' differ by at most e^ε; this pair's true loss is 0.94ε."""
    ca, cb = _neighbour_counts([5, 0, 1, 0], 1.0, 60_000, 1)
    ok, worst = _ratio_bound_holds(ca, cb, 1.0, alpha=1e-3)
    assert ok, worst
    assert worst > 1.5  # the loss is real and measured close to the bound


def test_empirical_privacy_test_detects_a_broken_mechanism():
    """Power check: spending 3ε under the ε label (true loss 1.8 > 1) is caught."""
    table = np.array([[9.0, 1.0], [1.0, 6.0], [3.0, 3.0]])
    delta = row_range_sensitivity(row_weights(table))
    ca, cb = _neighbour_counts([1, 0, 0, 0], 3.0, 20_000, 5, sens=delta)
    ok, worst = _ratio_bound_holds(ca, cb, 1.0, alpha=1e-3)
    assert not ok, worst


def test_whole_fit_released_outputs_are_eps_dp_empirically():
    """Full DPTauCC fits on a tiny A and its neighbour A' (one entry +1), ε = 1, many seeds.

    Released outputs checked: the column label of the changed column v (relative to column 0,
    a label-permutation-invariant event) and one cell of T̃ binned in 6 bins. Slack as in
    :func:`_ratio_bound_holds` (Clopper–Pearson, Bonferroni, alpha = 1e-3).
    """
    A = np.array([[3, 0, 2, 0, 1], [0, 2, 0, 3, 0], [2, 0, 3, 0, 1], [0, 3, 0, 2, 1]],
                 dtype=float)
    A2 = A.copy()
    A2[1, 4] += 1
    eps, runs = 1.0, 1500

    def outcomes(X, seed0):
        same, cells = [], []
        for s in range(runs):
            model = DPTauCC(2, 2, epsilon=eps, n_iterations=1, random_state=seed0 + s).fit(X)
            same.append(int(model.column_labels_[4] == model.column_labels_[0]))
            T = model.contingency_
            cells.append(T[0, 0] if T.shape == (2, 2) else -1.0)
        return np.array(same), np.array(cells)

    sa, ta = outcomes(A, 0)
    sb, tb = outcomes(A2, 10_000)
    ok, worst = _ratio_bound_holds(np.bincount(sa, minlength=2), np.bincount(sb, minlength=2),
                                   eps, alpha=1e-3)
    assert ok, worst
    edges = np.array([-np.inf, -0.5, 1e-9, 10, 30, 60, np.inf])
    ha = np.histogram(ta, bins=edges)[0]
    hb = np.histogram(tb, bins=edges)[0]
    ok, worst = _ratio_bound_holds(ha, hb, eps, alpha=1e-3)
    assert ok, worst


def test_dp_row_assignment_frequencies_follow_eq_4_9_and_4_10():
    """Chi-square: DP-τCC's row assignment samples ∝ exp(ε σ(a_i, t_k)/Δ) with σ, Δ written
    out by hand from eqs. (4.9)/(4.10)."""
    import scipy.sparse as sp

    table = np.array([[7.0, 2.0, 0.5], [1.0, 5.0, 3.0], [2.0, 2.0, 2.0], [0.0, 1.0, 6.0]])
    row = np.array([2.0, 0.0, 1.0, 3.0, 0.0, 1.0])
    c = np.array([0, 1, 2, 0, 1, 2])
    K, L = table.shape
    t, t_k, t_l = table.sum(), table.sum(axis=1), table.sum(axis=0)
    beta = [[table[k, l] / t_l[l] - t_k[k] / t for l in range(L)] for k in range(K)]
    a_l = [sum(row[j] for j in range(6) if c[j] == l) for l in range(L)]
    sigma = np.array([sum(a_l[l] * beta[k][l] for l in range(L)) for k in range(K)])
    delta = max(max(beta[k][l] for k in range(K)) - min(beta[k][l] for k in range(K))
                for l in range(L))
    eps, N = 0.8, 30_000
    p = np.exp(eps * sigma / delta)
    p /= p.sum()
    rep = sp.csr_matrix(np.tile(row, (N, 1)))
    labels = _one_assignment(rep, c, table, eps, np.random.default_rng(9))
    _, pvalue = stats.chisquare(np.bincount(labels, minlength=K), N * p)
    assert pvalue > 1e-3
