"""Contingency tables, τ̂ (eq. 3.2 vs the prototype forms 3.4/3.6), utilities and Δ (4.9, 4.10)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dptaucc.kernels import sum_by_column_label, sum_by_row_label
from dptaucc.objective import (
    aggregate_columns,
    aggregate_rows,
    column_range_sensitivity,
    column_weights,
    contingency_table,
    goodman_kruskal_tau,
    group_sum,
    relabel,
    row_range_sensitivity,
    row_weights,
    tau_hat,
    tau_hat_prototype,
)


def _random_problem(seed, n=40, m=30, K=4, L=3, density=0.3):
    rng = np.random.default_rng(seed)
    A = sp.random(n, m, density=density, random_state=seed, format="csr",
                  data_rvs=lambda s: rng.integers(1, 9, size=s)).astype(float)
    r = rng.integers(0, K, size=n)
    c = rng.integers(0, L, size=m)
    return A, r, c


def _incidence(labels, k):
    return np.eye(k)[labels]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("K,L", [(4, 3), (20, 15)])  # dense-incidence and scatter-add paths
def test_aggregations_match_dense_products(seed, K, L):
    A, r, c = _random_problem(seed, K=K, L=L)
    R, C, D = _incidence(r, K), _incidence(c, L), A.toarray()
    np.testing.assert_allclose(aggregate_columns(A, c, L), D @ C)
    np.testing.assert_allclose(aggregate_rows(A, r, K), R.T @ D)
    np.testing.assert_allclose(contingency_table(A, r, c, K, L), R.T @ D @ C)
    np.testing.assert_allclose(group_sum(r, D @ C, K), R.T @ D @ C)


@pytest.mark.parametrize("K,L", [(3, 2), (16, 16), (17, 40)])
def test_a_full_matrix_aggregates_by_one_hot_products_with_the_kernels_sums(K, L):
    """Every cell stored: the BLAS path (up to DENSE_MAX_LABELS labels) gives exactly the
    scatter-add's sums for whole counts, also at wide and tall shapes."""
    for n, m in [(50, 70), (70, 3)]:
        A, r, c = _random_problem(K + L, n=n, m=m, K=K, L=L, density=1.0)
        assert A.nnz == n * m
        np.testing.assert_array_equal(aggregate_columns(A, c, L), sum_by_column_label(A, c, L))
        np.testing.assert_array_equal(aggregate_rows(A, r, K), sum_by_row_label(A, r, K))
        np.testing.assert_array_equal(aggregate_columns(A, c, L), A.toarray() @ _incidence(c, L))


def test_tau_hat_by_hand():
    T = np.array([[10.0, 1.0], [1.0, 14.0]])  # paper Fig. 1
    t = T.sum()
    rc = sum(T[k, l] ** 2 / (t * T[:, l].sum()) for k in range(2) for l in range(2)) \
        - sum((T[k].sum() / t) ** 2 for k in range(2))
    cr = sum(T[k, l] ** 2 / (t * T[k].sum()) for k in range(2) for l in range(2)) \
        - sum((T[:, l].sum() / t) ** 2 for l in range(2))
    assert tau_hat(T) == pytest.approx((rc, cr), rel=1e-12)
    gk = goodman_kruskal_tau(T)
    assert gk[0] == pytest.approx(rc / (1 - sum((T[k].sum() / t) ** 2 for k in range(2))))
    assert 0 < gk[0] <= 1


@pytest.mark.parametrize("seed", range(8))
def test_tau_eq_3_2_equals_prototype_form(seed):
    A, r, c = _random_problem(seed, K=5, L=4)
    r, K = relabel(r)
    c, L = relabel(c)
    T = contingency_table(A, r, c, K, L)
    assert tau_hat_prototype(A, r, c, K, L) == pytest.approx(tau_hat(T)[0], rel=1e-10, abs=1e-14)
    # τ̂_{C|R} is τ̂_{R|C} of the transposed problem
    At = sp.csr_matrix(A.T)
    assert tau_hat_prototype(At, c, r, L, K) == pytest.approx(tau_hat(T)[1], rel=1e-10, abs=1e-14)


def test_single_cluster_tau_is_zero():
    T = np.array([[3.0, 4.0, 5.0]])
    assert tau_hat(T)[0] == pytest.approx(0.0, abs=1e-15)
    assert goodman_kruskal_tau(T)[0] == 0.0
    assert tau_hat(np.zeros((2, 2))) == (0.0, 0.0)


def test_utilities_sum_to_zero_over_clusters():
    rng = np.random.default_rng(1)
    T = rng.uniform(0.5, 5, size=(4, 3))
    beta = row_weights(T)
    np.testing.assert_allclose(beta.sum(axis=0), 0, atol=1e-12)
    gamma = column_weights(T)
    np.testing.assert_allclose(gamma.sum(axis=1), 0, atol=1e-12)
    AC = rng.integers(0, 9, size=(10, 3)).astype(float)
    np.testing.assert_allclose((AC @ beta.T).sum(axis=1), 0, atol=1e-10)


def _brute_row_sensitivity(T, guard):
    """Max over (u, v) of the range over k of σ(a'_u, t_k) − σ(a_u, t_k) (a'_uv = a_uv + 1)."""
    rng = np.random.default_rng(0)
    L = T.shape[1]
    m = 3 * L
    c = np.concatenate([np.arange(L), rng.integers(0, L, size=m - L)])
    a = rng.integers(0, 5, size=m).astype(float)
    beta = row_weights(T, guard=guard)
    def util(row):
        return np.bincount(c, weights=row, minlength=L) @ beta.T
    best = 0.0
    for v in range(m):
        a2 = a.copy()
        a2[v] += 1
        d = util(a2) - util(a)
        best = max(best, d.max() - d.min())
    return best


@pytest.mark.parametrize("zero_col", [False, True])
def test_row_sensitivity_is_tight_range_bound(zero_col):
    rng = np.random.default_rng(3)
    T = rng.uniform(0, 10, size=(4, 5))
    if zero_col:
        T[:, 2] = 0.0
    delta = row_range_sensitivity(row_weights(T, guard=True))
    assert np.isfinite(delta) and 0 <= delta <= 2
    assert _brute_row_sensitivity(T, guard=True) == pytest.approx(delta, rel=1e-12)
    unguarded = row_range_sensitivity(row_weights(T, guard=False))
    assert np.isnan(unguarded) if zero_col else unguarded == pytest.approx(delta)


def test_column_sensitivity_matches_transposed_row_case():
    rng = np.random.default_rng(4)
    T = rng.uniform(0, 10, size=(3, 6))
    T[1] = 0.0  # zero row marginal: guarded in the column case
    gamma = column_weights(T, guard=True)
    assert np.all(np.isfinite(gamma))
    assert column_range_sensitivity(gamma) == pytest.approx(
        row_range_sensitivity(row_weights(T.T, guard=True)))
    assert np.isnan(column_range_sensitivity(column_weights(T, guard=False)))


def test_relabel_drops_empty_clusters_keeping_order():
    labels, k = relabel(np.array([5, 2, 2, 9, 5]))
    assert k == 3
    np.testing.assert_array_equal(labels, [1, 0, 0, 2, 1])
