"""The blind block initialisation (CreateMatrix semantics, S0 built without an n×m matrix)."""

import tracemalloc

import numpy as np
import pytest

from dptaucc.init import blind_block_init, block_sizes, pattern_matrix


@pytest.mark.parametrize("N,G,expected", [
    (475, 4, [119, 118, 119, 119]),
    (3891, 3, [1297, 1297, 1297]),
    (878, 10, [88, 87, 88, 87, 88, 87, 88, 87, 88, 90]),
    (10, 3, [3, 3, 4]),
])
def test_block_sizes_reference_examples(N, G, expected):
    np.testing.assert_array_equal(block_sizes(N, G), expected)


def test_block_sizes_always_positive_and_sum():
    for N in range(1, 60):
        for G in range(1, N + 1):
            s = block_sizes(N, G)
            assert s.sum() == N and s.min() >= 1


def test_pattern_identity_and_rectangular():
    np.testing.assert_array_equal(pattern_matrix(4, 4), np.eye(4))
    P = pattern_matrix(3, 5)
    expected_cols = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 0, 1)]
    assert [tuple(col) for col in P.T] == expected_cols
    np.testing.assert_array_equal(pattern_matrix(5, 3), P.T)


def _dense_reference(n, m, K, L, rng):
    """The authors' CreateMatrix + shuffles, materialised (small sizes only)."""
    x = np.repeat(np.arange(K), block_sizes(n, K))
    y = np.repeat(np.arange(L), block_sizes(m, L))
    M = pattern_matrix(K, L)[x][:, y].astype(int)
    flat = rng.choice(n * m, size=round(0.01 * n * m), replace=False)
    M.flat[flat] ^= 1
    return M @ np.eye(L)[y]


def test_s0_structure_and_exact_flip_count():
    n, m, K, L = 203, 157, 3, 4
    init = blind_block_init(n, m, K, L, np.random.default_rng(0))
    x, y = init.row_labels, init.col_labels
    assert sorted(np.bincount(x)) == sorted(block_sizes(n, K))
    assert sorted(np.bincount(y)) == sorted(block_sizes(m, L))
    base = pattern_matrix(K, L)[x] * np.bincount(y, minlength=L)[None, :]
    flips = np.abs(init.S0 - base)
    assert init.n_flips == round(0.01 * n * m)
    assert flips.sum() == init.n_flips
    assert np.all(init.S0 >= 0) and np.all(init.S0 <= np.bincount(y, minlength=L))


def test_s0_distribution_matches_dense_create_matrix():
    """Mean number of ones per (row block, column block) agrees with the dense reference."""
    n, m, K, L, reps = 30, 40, 2, 2, 400
    rng = np.random.default_rng(5)

    def block_means(S0, x):
        return np.array([S0[x == k].mean(axis=0) for k in range(K)])

    ours = np.zeros((K, L))
    ref = np.zeros((K, L))
    x_ref = np.repeat(np.arange(K), block_sizes(n, K))
    for _ in range(reps):
        init = blind_block_init(n, m, K, L, rng)
        ours += block_means(init.S0, init.row_labels)
        ref += block_means(_dense_reference(n, m, K, L, rng), x_ref)
    # 12 flips per matrix: expectation of a block mean moves by ~0.1; sampling sd ≈ 0.01
    np.testing.assert_allclose(ours / reps, ref / reps, atol=0.05)


def test_init_never_allocates_n_times_m():
    n, m = 20_000, 49_999  # ~1e9 cells: an n×m int64 array would need 8 GB
    tracemalloc.start()
    init = blind_block_init(n, m, 5, 5, np.random.default_rng(1))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert init.n_flips == round(0.01 * n * m)
    assert peak < 30e6, f"peak traced memory {peak / 1e6:.1f} MB"


def test_large_matrix_fallback_flips_cells_independently(monkeypatch):
    """Above numpy's hypergeometric limit every cell flips with probability 1 %, drawn per
    (row, column block) group: the flips counted in S0 are the ones reported, and their
    number is Binomial(n·m, 0.01)."""
    import dptaucc.init as init_mod

    monkeypatch.setattr(init_mod, "MARGINALS_LIMIT", 0)
    n, m = 400, 300
    totals = []
    for seed in range(200):
        init = blind_block_init(n, m, 3, 2, np.random.default_rng(seed))
        base = pattern_matrix(3, 2)[init.row_labels] * np.bincount(init.col_labels)[None, :]
        assert np.abs(init.S0 - base).sum() == init.n_flips
        totals.append(init.n_flips)
    mean, sd = 0.01 * n * m, (0.01 * 0.99 * n * m) ** 0.5
    assert abs(np.mean(totals) - mean) < 4 * sd / np.sqrt(200)
    assert np.std(totals) == pytest.approx(sd, rel=0.2)


def test_init_at_1e10_cells_is_per_block_not_per_cell():
    """n·m = 1e10 (5e5 × 2e4): time and memory grow with n·L, not with the cells."""
    n, m = 500_000, 20_000
    tracemalloc.start()
    init = blind_block_init(n, m, 4, 4, np.random.default_rng(4))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert init.S0.shape == (n, 4)
    assert abs(init.n_flips - 0.01 * n * m) < 6 * (0.01 * n * m) ** 0.5
    assert peak < 40 * n * 4 * 8, f"peak traced memory {peak / 1e6:.1f} MB"


def test_init_is_data_independent_and_seeded():
    a = blind_block_init(50, 60, 3, 3, np.random.default_rng(7))
    b = blind_block_init(50, 60, 3, 3, np.random.default_rng(7))
    np.testing.assert_array_equal(a.S0, b.S0)
    np.testing.assert_array_equal(a.row_labels, b.row_labels)


@pytest.mark.parametrize("trials, p", [(1, 0.3), (7, 0.5), (2000, 0.01), (100_000, 0.01),
                                       (3, 0.999), (50, 1e-6)])
def test_binomial_cdf_matches_scipy(trials, p):
    from scipy import stats

    from dptaucc.init import binomial_cdf

    ref = stats.binom.cdf(np.arange(trials + 1), trials, p)
    np.testing.assert_allclose(binomial_cdf(trials, p), ref, rtol=0, atol=1e-13)


def test_binomial_by_inversion_is_the_inverse_cdf_and_has_the_binomial_law():
    """The guide table returns exactly the inverse CDF (on bucket edges too), and the
    draws pass a chi-square test against the Binomial(2000, 0.01) law."""
    from scipy import stats

    from dptaucc.init import GUIDE_BUCKETS, binomial_by_inversion, binomial_cdf

    rng = np.random.default_rng(12)
    trials, p = 2000, 0.01
    u = np.concatenate([rng.random(200_000), np.arange(GUIDE_BUCKETS) / GUIDE_BUCKETS,
                        binomial_cdf(trials, p)[:60], [1 - 2.0**-53]])
    draws = binomial_by_inversion(trials, p, u)
    inverse = np.minimum(np.searchsorted(binomial_cdf(trials, p), u, side="right"), trials)
    np.testing.assert_array_equal(draws, inverse)
    counts = np.bincount(draws[:200_000].astype(int), minlength=trials + 1)
    expected = stats.binom.pmf(np.arange(trials + 1), trials, p) * 200_000
    keep = expected > 20
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > 1e-3
    assert binomial_by_inversion(5, 0.0, u[:3]).tolist() == [0.0] * 3
    assert binomial_by_inversion(5, 1.0, u[:3]).tolist() == [5.0] * 3


def _per_column_reference(n, m, K, L, rng, noise=0.01):
    """The blind init written out plainly: the flip counts of one draw of (n, L) uniforms
    inverted column by column (or the hypergeometric counts), S0 = base + sign·flips for
    every row, then S0[row_perm]: what the blocked tables must reproduce bit for bit."""
    import dptaucc.init as init_mod

    x = np.repeat(np.arange(K), block_sizes(n, K))
    y = np.repeat(np.arange(L), block_sizes(m, L))
    P, sizes = pattern_matrix(K, L), np.bincount(y, minlength=L)
    if n * m < init_mod.MARGINALS_LIMIT:
        total = round(noise * n * m)
        flips = (np.zeros((n, L)) if total == 0 else rng.multivariate_hypergeometric(
            np.tile(sizes, n), total, method="marginals").reshape(n, L).astype(float))
    else:
        uniforms = rng.random((n, L))
        flips = np.column_stack([init_mod.binomial_by_inversion(int(sizes[l]), noise,
                                                                uniforms[:, l].copy())
                                 for l in range(L)])
    S0 = flips * (1.0 - 2.0 * P)[x] + (P * sizes)[x]
    row_perm, col_perm = rng.permutation(n), rng.permutation(m)
    return S0[row_perm], x[row_perm], y[col_perm], int(flips.sum()), flips


@pytest.mark.parametrize("binomial", [False, True])
@pytest.mark.parametrize("rows_per_draw", [7, 1 << 13])
@pytest.mark.parametrize("n,m,K,L,noise", [
    (203, 157, 3, 4, 0.01), (300, 50, 5, 1, 0.01), (120, 500, 1, 4, 0.01),
    (1000, 999, 7, 3, 0.01), (40, 60, 4, 6, 0.3), (25, 5, 25, 5, 0.2),
    (90, 80, 3, 3, 0.0), (90, 80, 3, 3, 1.0), (12, 70_000, 3, 2, 0.01),
])
def test_blocked_tables_match_the_per_column_reference_bit_for_bit(
        monkeypatch, binomial, rows_per_draw, n, m, K, L, noise):
    """Both branches, blocks of rows that straddle row blocks or not: the same S0 values
    (float64, bit for bit), labels and flip total, and the generator left in the same state."""
    import dptaucc.init as init_mod

    if binomial:
        monkeypatch.setattr(init_mod, "MARGINALS_LIMIT", 0)
    monkeypatch.setattr(init_mod, "ROWS_PER_DRAW", rows_per_draw)
    ours_rng, ref_rng = np.random.default_rng(3), np.random.default_rng(3)
    init = blind_block_init(n, m, K, L, ours_rng, noise=noise)
    S0, x, y, n_flips, flips = _per_column_reference(n, m, K, L, ref_rng, noise=noise)
    assert init.S0.dtype == np.float64 and init.S0.tobytes() == S0.tobytes()
    np.testing.assert_array_equal(init.row_labels, x)
    np.testing.assert_array_equal(init.col_labels, y)
    assert init.n_flips == n_flips and type(init.n_flips) is int
    assert ours_rng.random() == ref_rng.random()
    y0 = np.repeat(np.arange(L), block_sizes(m, L))
    counted = init_mod.flip_counts(n, m, y0, L, noise, np.random.default_rng(3))
    assert counted.tobytes() == flips.tobytes() and counted.shape == (n, L)
    if binomial and 0 < noise < 1:  # the tables' unsettled buckets were exercised
        guides = [init_mod._BinomialInversion(int(size), noise).guide
                  for size in np.unique(np.bincount(y0))]
        assert any((g < 0).any() for g in guides)


def test_init_column_weights_from_the_transpose_are_the_same_bits():
    """DP-τCC's γ0ᵀ = row_weights(S0ᵀ) equals column_weights(S0)ᵀ bit for bit (whole-number
    sums are exact in any order), guarded and raw, and is laid out L0×n contiguous."""
    from dptaucc.objective import column_weights, row_weights

    for n, m, K, L in [(2000, 700, 5, 4), (300, 40, 3, 1), (64, 8, 64, 8)]:
        init = blind_block_init(n, m, K, L, np.random.default_rng(n), noise=0.05)
        S0 = np.ascontiguousarray(init.S0)
        S0[::7] = 0.0  # rows without any one: zero marginals, NaN in the raw weights
        for guard in (True, False):
            ours = row_weights(np.ascontiguousarray(S0.T), guard=guard)
            ref = np.ascontiguousarray(column_weights(S0, guard=guard).T)
            assert ours.flags.c_contiguous and ours.tobytes() == ref.tobytes()
    assert init.S0.T.flags.c_contiguous


@pytest.mark.parametrize("n,K", [(10, 10), (11, 10), (203, 3), (5, 1)])
def test_init_row_labels_are_already_relabelled(n, K):
    """DP-τCC takes the synthetic row labels as they are: every row block is non-empty, so
    relabelling them would change nothing (values and dtype)."""
    from dptaucc.objective import relabel

    labels = blind_block_init(n, 7, K, 2, np.random.default_rng(n)).row_labels
    relabelled, k = relabel(labels)
    assert k == K and labels.dtype == relabelled.dtype
    np.testing.assert_array_equal(labels, relabelled)
