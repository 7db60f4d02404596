"""DP-KMeans: paper mode reproduces diffprivlib 0.6.4 + the authors' change; corrected mode is
ε-DP end to end.

Expected scales are derived here from the method's mathematics (diffprivlib's iteration rule,
Su et al.'s split, L1 sensitivity 2 for the counts, B per coordinate sum, the bounded discrete
Laplace's privacy map), never read back from the code under test.
"""

import math
import warnings

import dptaucc.baselines.dp_kmeans as dpk
import numpy as np
import pytest
import scipy.sparse as sp
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.models import KMeans as DplKMeans
from diffprivlib.utils import PrivacyLeakWarning
from diffprivlib.validation import check_bounds
from dptaucc.baselines.dp_kmeans import (
    DEFAULT_BOUNDS_MAX,
    DPKMeans,
    calc_iters,
    corrected_statistics,
    feature_bounds,
    paper_update_centers,
    su_split,
    sum_grid,
    widen_bounds,
)
from scipy import optimize, stats
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.utils.estimator_checks import parametrize_with_checks

from dptaucc.privacy import PrivacyLedger, SeededSampler
from dptaucc.privacy.checks import (
    RecordingSampler,
    ScaledSampler,
    neighbour_log_ratio_bounds,
)

GRID = 2.0**-10  # the documented grid of corrected mode at every ε used here


def blobs(seed=0, n=300, k=3, d=24):
    """Poisson counts: cluster j is dense on its own 3 columns, background rate 2 elsewhere."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n // k)
    lam = np.full((k, d), 2.0)
    for j in range(k):
        lam[j, 3 * j:3 * j + 3] = 9.0
    return rng.poisson(lam[y]).astype(float), y


def fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return DPKMeans(**kw).fit(X)


def seeded(seed):
    return SeededSampler(np.random.default_rng(seed))


# ------------------------------------------------------------------ diffprivlib's rules
@pytest.mark.parametrize("eps,k,n,d", [(1.0, 3, 3891, 4303), (3.0, 4, 475, 1000),
                                       (0.1, 5, 4069, 18483), (1e4, 3, 300, 24),
                                       (50.0, 3, 1000, 10)])
def test_iteration_rule_matches_diffprivlib(eps, k, n, d):
    ref = DplKMeans(n_clusters=k, epsilon=eps, accountant=BudgetAccountant())._calc_iters(d, n)
    assert calc_iters(eps, k, n, d) == ref


def test_iters_is_two_on_paper_datasets():
    for n, d, k in [(3891, 4303, 3), (475, 1000, 4), (4069, 18483, 5), (414, 6429, 9)]:
        assert all(calc_iters(e, k, n, d) == 2 for e in (0.1, 0.5, 0.99999, 3.0))


@pytest.mark.parametrize("d,iters", [(1000, 2), (4303, 2), (10, 7)])
def test_paper_split_is_diffprivlibs_swapped_unpack(d, iters):
    """diffprivlib's _split_epsilon returns (N, c·N) and the caller reads (ε_count, ε_coord)."""
    eps = 1.0
    dpl_first, dpl_second = DplKMeans(epsilon=eps, accountant=BudgetAccountant()) \
        ._split_epsilon(d, iters)
    count, coord = su_split(eps, d, iters)
    c = np.cbrt(4 * d * 0.225**2)
    assert count == pytest.approx(c * coord)
    # our paper mode uses exactly what diffprivlib's caller unpacks: count = N, coord = c·N
    assert (dpl_first, dpl_second) == pytest.approx((coord, count))


def test_split_values_on_cstr_shape():
    count, coord = su_split(1.0, 1000, 2)
    assert coord == pytest.approx(4.97e-4, rel=2e-3)       # ε_count of paper mode for cstr
    assert count == pytest.approx(2.92e-3, rel=2e-3)       # ε_coord of paper mode = c·N


def test_bounds_are_diffprivlibs_min_max_and_check_bounds():
    """One pass over the non-zeros and vectorised widening give diffprivlib's exact bounds:
    all-zero, constant, fully dense and ordinary columns, and near-equal float bounds."""
    rng = np.random.default_rng(0)
    X = rng.poisson(0.7, size=(50, 12)).astype(float)
    X[:, 0] = 0.0                      # all zero: widened around 0
    X[:, 1] = 3.0                      # constant, no zero: widened around 3
    X[:, 2] = rng.integers(1, 6, 50)   # fully dense: min > 0
    X[:, 3] = rng.random(50) * 1e-6 + 2.0  # closer than the separation
    lo, hi = feature_bounds(sp.csr_matrix(X))
    np.testing.assert_array_equal(lo, X.min(axis=0))
    np.testing.assert_array_equal(hi, X.max(axis=0))
    ref = check_bounds((X.min(axis=0), X.max(axis=0)), X.shape[1], min_separation=1e-5)
    ours = widen_bounds(lo, hi)
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(ours[1], ref[1])
    with pytest.raises(ValueError, match="lower bound"):
        widen_bounds(np.array([2.0]), np.array([1.0]))


@pytest.mark.slow
def test_vectorised_update_matches_diffprivlib_update():
    """One paper-mode centre update: ours (vectorised) vs diffprivlib's own ``_update_centers``,
    same bounds, split (as diffprivlib unpacks it) and upstream sensitivity (u − l)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(40, 2)).astype(float)
    labels = np.arange(40) % 2
    lower, upper = np.zeros(2), np.full(2, 6.0)
    dpl = DplKMeans(n_clusters=2, epsilon=1.0, bounds=(lower, upper),
                    accountant=BudgetAccountant())
    dpl.bounds = (lower, upper)
    eps_count, eps_coord = dpl._split_epsilon(2, 2)
    rs = np.random.RandomState(1)
    ref = np.array([dpl._update_centers(X, np.zeros((2, 2)), labels, 2, 2, rs)
                    for _ in range(800)])
    Xs = sp.csr_matrix(X)
    ours = np.array([paper_update_centers(Xs, np.zeros((2, 2)), labels, lower, upper,
                                          eps_count, eps_coord, upper - lower, rng)
                     for _ in range(800)])
    for c in range(2):
        for j in range(2):
            assert stats.ks_2samp(ref[:, c, j], ours[:, c, j]).pvalue > 1e-3


def test_paper_update_keeps_the_centre_of_an_empty_cluster():
    """diffprivlib skips clusters with no rows: paper mode keeps that (non-private) quirk."""
    X = sp.csr_matrix(np.ones((6, 2)))
    start = np.array([[1.0, 1.0], [0.123, 0.456]])
    out = paper_update_centers(X, start, np.zeros(6, dtype=int), np.zeros(2), np.full(2, 2.0),
                               1.0, 1.0, np.full(2, 1.0), np.random.default_rng(0))
    np.testing.assert_array_equal(out[1], start[1])


# ------------------------------------------------------------------ paper mode
def test_paper_mode_ledger_records_true_spend():
    X, _ = blobs()
    n, d = X.shape
    with pytest.warns(PrivacyLeakWarning):
        m = DPKMeans(3, 1.0, mode="paper", random_state=0).fit(X)
    iters = m.n_iter_
    c = np.cbrt(4 * d * 0.225**2)
    N = 1.0 / (iters * (d + c))
    assert m.epsilon_count_ == pytest.approx(N)
    assert m.epsilon_coord_ == pytest.approx(c * N)
    assert m.privacy_ledger_.epsilon_mechanisms == pytest.approx((1 + d * c) * N * iters)
    assert m.epsilon_spent_ == float("inf")   # mechanisms alone ≈ c·ε
    assert m.privacy_ledger_.epsilon_mechanisms > 1.0
    assert m.delta_spent_ == 0.0
    assert m.privacy_ledger_.non_private_steps == ["bounds", "final assignment"]
    assert not m.privacy_ledger_.end_to_end_dp
    assert len([e for e in m.privacy_ledger_.entries if e.composition != "non-private"]) \
        == 2 * iters
    lo, hi = m.bounds_
    np.testing.assert_array_equal(lo, X.min(axis=0))     # bounds read from the data
    np.testing.assert_array_equal(hi, X.max(axis=0))


@pytest.mark.parametrize("n_iter", [1, 3])
def test_paper_mode_runs_the_iterations_it_is_given(n_iter):
    """``n_iter`` replaces diffprivlib's rule in paper mode too: the swapped split over
    ``n_iter`` iterations, two mechanism entries each."""
    X, _ = blobs()
    d = X.shape[1]
    with pytest.warns(PrivacyLeakWarning):
        m = DPKMeans(3, 1.0, mode="paper", n_iter=n_iter, random_state=0).fit(X)
    c = np.cbrt(4 * d * 0.225**2)
    assert m.n_iter_ == n_iter
    assert m.epsilon_count_ == pytest.approx(1.0 / (n_iter * (d + c)))
    assert len([e for e in m.privacy_ledger_.entries if e.composition != "non-private"]) \
        == 2 * n_iter


def test_paper_mode_keeps_the_authors_labels_and_inertia():
    X, _ = blobs()
    m = fit(X, n_clusters=3, epsilon=3.0, mode="paper", random_state=2)
    raw = m.predict(X)
    np.testing.assert_array_equal(np.unique(raw, return_inverse=True)[1], m.row_labels_)
    assert m.labels_ is m.row_labels_ and m.n_row_clusters_ == len(np.unique(raw))
    sse = ((X - m.cluster_centers_[raw]) ** 2).sum()
    assert m.inertia_ == pytest.approx(sse, rel=1e-10) == pytest.approx(-m.score(X))
    kinds = m.release_kinds()
    assert all(kinds[a] == "non-private" for a in ("row_labels_", "labels_", "inertia_",
                                                   "bounds_", "cluster_centers_"))


# ------------------------------------------------------------------ corrected mode
@pytest.mark.parametrize("eps", [0.1, 1.0, 7.5])
def test_corrected_mode_spends_exactly_epsilon(eps):
    X, _ = blobs()
    m = fit(X, n_clusters=3, epsilon=eps, random_state=1)
    assert m.epsilon_spent_ == pytest.approx(eps, rel=1e-12)
    assert m.delta_spent_ == 0.0
    assert m.privacy_ledger_.end_to_end_dp
    assert m.privacy_ledger_.strict
    c = np.cbrt(4 * X.shape[1] * 0.225**2)
    assert m.epsilon_count_ / m.epsilon_coord_ == pytest.approx(c)
    assert m.row_labels_private_ is False


def test_corrected_fit_holds_no_training_row_labels_nor_inertia():
    """Audit findings: ``inertia_`` was the exact SSE of the raw rows, ``labels_`` their
    nearest-centre assignment, both set by fit. Now methods on data you pass."""
    X, _ = blobs()
    m = fit(X, n_clusters=3, epsilon=2.0, random_state=4)
    for attr in ("inertia_", "labels_", "row_labels_", "n_row_clusters_"):
        assert not hasattr(m, attr)
    Xc = np.minimum(X, DEFAULT_BOUNDS_MAX)
    dist = ((Xc[:, None, :] - m.cluster_centers_[None]) ** 2).sum(axis=2)
    assert m.score(X) == pytest.approx(-dist.min(axis=1).sum(), rel=1e-10)
    np.testing.assert_array_equal(m.fit_predict(X), m.predict(X))
    assert not hasattr(m, "labels_")


def _expected_bounded_scale(eps, sensitivity, upper):
    """The scale s of the bounded discrete Laplace on {0..M} at which its privacy map,
    min(Δ, M)/s + ln(Z(a)/Z(0)), equals ε: Z(w) = Σ_y q^|y − w| = (1 − q^(w+1))/(1 − q) +
    q(1 − q^(M−w))/(1 − q), q = e^(−1/s), a = min(Δ, M/2) (the worst neighbour of w = 0)."""
    a = min(sensitivity, upper / 2)

    def loss(s):
        q = math.exp(-1.0 / s)
        z0 = (1 - q ** (upper + 1)) / (1 - q)
        z_a = (1 - q ** (a + 1)) / (1 - q) + q * (1 - q ** (upper - a)) / (1 - q)
        return min(sensitivity, upper) / s + math.log(z_a / z0) - eps
    reach = min(sensitivity, upper)
    return optimize.brentq(loss, reach / eps, 2 * reach / eps, xtol=1e-14, rtol=1e-13)


def _spy(monkeypatch):
    """Record every corrected_statistics call (its inputs and outputs) and the initial
    centres of a fit."""
    calls, inits = [], []
    original_stats = dpk.corrected_statistics
    original_init = dpk._init_centers

    def stats_spy(X_grid, labels, k, *args, **kwargs):
        out = original_stats(X_grid, labels, k, *args, **kwargs)
        calls.append((X_grid, labels.copy(), out))
        return out

    def init_spy(*args):
        inits.append(original_init(*args))
        return inits[-1]

    monkeypatch.setattr(dpk, "corrected_statistics", stats_spy)
    monkeypatch.setattr(dpk, "_init_centers", init_spy)
    return calls, inits


@pytest.mark.parametrize("eps,bmax,k,n_iter", [(1.0, 5.0, 3, None), (40.0, 3.0, 4, None),
                                                (300.0, 12.0, 3, None), (2.0, 5.0, 3, 1),
                                                (3.0, 4.0, 2, 9)])
def test_every_mechanism_call_draws_at_the_scale_the_method_prescribes(monkeypatch, eps, bmax,
                                                                      k, n_iter):
    X, _ = blobs(seed=5, n=240, d=12)
    n, d = X.shape
    calls, inits = _spy(monkeypatch)
    rec = RecordingSampler(seeded(7))
    m = DPKMeans(k, eps, bounds_max=bmax, random_state=rec, n_iter=n_iter).fit(X)
    iters = n_iter or DplKMeans(n_clusters=k, epsilon=eps,
                                accountant=BudgetAccountant())._calc_iters(d, n)
    assert m.n_iter_ == iters
    c = np.cbrt(4 * d * 0.225**2)
    N = eps / (iters * (d + c))
    eps_count, eps_coord = c * N / 2, N / 2
    bound_steps = round(bmax / GRID)
    clipped = np.floor(np.minimum(X, bmax) / GRID)  # the rows in grid steps
    assert len(calls) == iters
    draws = iter(rec.of_kind("discrete_laplace"))
    centers = inits[0]
    for X_grid, labels, (sizes, sums) in calls:
        grid_rows = X_grid.toarray() if sp.issparse(X_grid) else X_grid  # dense blobs: dense
        np.testing.assert_array_equal(grid_rows / GRID, clipped)
        dist = ((clipped[:, None, :] * GRID - centers[None]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(labels, dist.argmin(axis=1))  # labels from releases only
        count_draw = next(draws)
        assert count_draw.scale == pytest.approx(1 / eps_count, rel=1e-12)  # L1 sens. 2
        noisy = np.bincount(labels, minlength=k) + count_draw.output
        np.testing.assert_array_equal(sizes, np.where(noisy < 1, 1 - noisy, noisy))
        # one draw per distinct scale (d values per cluster); cluster j's range is B·ñ_j
        drawn = []
        while len(drawn) < k:
            draw = next(draws)
            assert draw.output.size % d == 0
            drawn += [draw.scale] * (draw.output.size // d)
        want = [_expected_bounded_scale(eps_coord, bound_steps, bound_steps * size)
                for size in sizes]
        assert sorted(drawn) == pytest.approx(sorted(want), rel=1e-9)
        exact = np.stack([clipped[labels == j].sum(axis=0) for j in range(k)])
        assert np.all((sums >= 0) & (sums <= bound_steps * sizes[:, None]))
        assert sums.dtype == np.int64 and exact.shape == sums.shape
        centers = sums * GRID / sizes[:, None]
    assert next(draws, None) is None
    np.testing.assert_array_equal(m.cluster_centers_, centers)
    np.testing.assert_array_equal(m.cluster_sizes_, calls[-1][2][0])
    entries = m.privacy_ledger_.entries
    assert [(e.mechanism, e.sensitivity) for e in entries] == \
        [("discrete-laplace", 2.0), ("bounded-discrete-laplace", bound_steps * GRID)] * iters
    assert [e.epsilon for e in entries] == pytest.approx([2 * eps_count, 2 * d * eps_coord]
                                                         * iters, rel=1e-12)


def test_released_counts_are_integers_and_centres_lie_on_a_data_independent_set():
    """Each centre coordinate is (whole number of grid steps)/(noisy integer count): a set
    fixed by the released count, whatever the data."""
    X, _ = blobs()
    for seed in range(5):
        m = fit(X, n_clusters=3, epsilon=3.0, random_state=seed)
        assert m.cluster_sizes_.dtype == np.int64 and m.cluster_sizes_.min() >= 1
        steps = m.cluster_centers_ * m.cluster_sizes_[:, None] / GRID
        np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)


@pytest.mark.slow
def test_every_cluster_is_released_every_iteration_even_when_empty(monkeypatch):
    """Audit finding: only clusters with a non-zero TRUE count were updated, so an empty
    cluster kept its public initial centre (ε lower bound 4.9 at claimed 1). Now all k
    clusters get noisy counts and sums at every iteration, and no released centre is its
    initial one."""
    X = np.zeros((30, 4))
    X[:3, 0] = 1.0
    saw_empty = 0
    for seed in range(30):
        calls, inits = _spy(monkeypatch)
        rec = RecordingSampler(seeded(seed))
        m = DPKMeans(3, 2.0, random_state=rec).fit(X)
        for _, labels, (sizes, sums) in calls:
            saw_empty += int(np.any(np.bincount(labels, minlength=3) == 0))
            assert sizes.shape == (3,) and sums.shape == (3, 4)
        assert not np.any(np.all(m.cluster_centers_ == inits[0], axis=1))
        monkeypatch.undo()
    assert saw_empty >= 30  # at least one empty cluster in most iterations


def _step(X_grid, labels, k, bound_steps, eps_count, eps_coord, source):
    return corrected_statistics(sp.csr_matrix(X_grid), labels, k, bound_steps, GRID, eps_count,
                                eps_coord, source, PrivacyLedger(), "t")


def _count_neighbours(copies, seed, broken):
    """D: row u (value 2) is nearest centre 0; D': its cell + 1 (value 3) moves it to centre 5.
    Counts (21, 19) against (20, 20); event {ñ₀ ≥ 21, ñ₁ ≤ 19}. ``copies`` independent copies
    of the two clusters are released in one step (each pair's counts are independent draws)."""
    hits = []
    for j, u in enumerate((2.0, 3.0)):
        X = np.concatenate([np.zeros(20), [u], np.full(19, 5.0)])[:, None]
        pair = np.argmin(np.abs(X - np.array([[0.0, 5.0]])), axis=1)
        assert pair[20] == j  # the cell + 1 moves row u across
        labels = (pair[None, :] + 2 * np.arange(copies)[:, None]).ravel()
        source = ScaledSampler(seed + j) if broken else seeded(seed + j)
        sizes, _ = _step(np.tile(X, (copies, 1)), labels, 2 * copies, round(5 / GRID), 0.5,
                         math.inf, source)
        hits.append(int(np.sum((sizes[0::2] >= 21) & (sizes[1::2] <= 19))))
    return hits


def _sum_neighbours(copies, seed, broken):
    """One grid step as the bound (B = g): a cluster's sum of its coordinate is 0 in D and one
    step in D' (row u stays in the cluster); event {its noisy sum = 0}, over ``copies``
    independent clusters released in one step."""
    hits = []
    for j in range(2):
        X = np.zeros((20 * copies, 1))
        X[::20, 0] = GRID * j
        labels = np.repeat(np.arange(copies), 20)
        source = ScaledSampler(seed + j) if broken else seeded(seed + j)
        _, sums = _step(X, labels, copies, 1, math.inf, 1.0, source)
        hits.append(int(np.sum(sums[:, 0] == 0)))
    return hits


@pytest.mark.parametrize("neighbours", [_count_neighbours, _sum_neighbours])
def test_step_neighbours_at_each_mechanisms_own_epsilon(neighbours):
    """Counts at 2·ε_count = 1 (a moved row: L1 2) and one sum at ε_coord = 1, each on its
    worst-case neighbours, where the log ratio of the event is exactly 1 (near 2 with half the
    noise)."""
    copies = 20_000
    ha, hb = neighbours(copies, 100, broken=False)
    lower, upper = neighbour_log_ratio_bounds(ha, copies, hb, copies)
    assert lower <= 1.0 <= upper < 1.3


@pytest.mark.parametrize("neighbours", [_count_neighbours, _sum_neighbours])
def test_step_neighbour_tests_have_power_against_half_the_noise(neighbours):
    copies = 20_000
    ha, hb = neighbours(copies, 10_000, broken=True)
    lower, _ = neighbour_log_ratio_bounds(ha, copies, hb, copies)
    assert lower > 1.0


def test_grid_is_2_to_the_minus_10_and_coarsens_only_for_tiny_epsilon():
    assert sum_grid(1e-3, 5.0) == GRID
    assert sum_grid(math.inf, 5.0) == GRID
    g = sum_grid(1e-12, 5.0)
    assert GRID < g <= 1.0 and 2 * (5.0 / g + 1) / 1e-12 <= 2.0**45
    with pytest.raises(ValueError, match="too small"):
        sum_grid(1e-15, 5.0)
    X, _ = blobs()
    with pytest.raises(ValueError, match="too small"):
        DPKMeans(3, epsilon=1e-12).fit(X)


def test_secure_path_fits_with_the_same_ledger():
    X, _ = blobs()
    a = DPKMeans(3, 2.0, random_state=0).fit(X)
    b = DPKMeans(3, 2.0, secure=True).fit(X)
    strip = [(e.step, e.mechanism, e.epsilon, e.sensitivity) for e in
             a.privacy_ledger_.entries]
    assert [(e.step, e.mechanism, e.epsilon, e.sensitivity)
            for e in b.privacy_ledger_.entries] == strip
    assert b.cluster_sizes_.dtype == np.int64
    with pytest.raises(ValueError, match="random_state"):
        DPKMeans(3, secure=True, random_state=0).fit(X)
    with pytest.raises(ValueError, match="corrected mode"):
        DPKMeans(3, secure=True, mode="paper").fit(X)


# ------------------------------------------------------------------ both modes
@pytest.mark.parametrize("mode", ["paper", "corrected"])
@pytest.mark.slow
def test_large_epsilon_recovers_tiny_does_not(mode):
    X, y = blobs()
    big = [nmi(y, fit(X, n_clusters=3, epsilon=1e4, mode=mode, bounds_max=12,
                      random_state=s).evaluation_row_labels(X)) for s in range(6)]
    tiny = [nmi(y, fit(X, n_clusters=3, epsilon=1e-3, mode=mode, bounds_max=12,
                       random_state=s).evaluation_row_labels(X)) for s in range(6)]
    assert np.mean(big) > 0.75
    assert np.mean(tiny) < np.mean(big) - 0.3


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_same_seed_same_result_sparse_equals_dense(mode):
    X, _ = blobs()
    a = fit(X, n_clusters=3, epsilon=2.0, mode=mode, random_state=42)
    b = fit(sp.csr_matrix(X), n_clusters=3, epsilon=2.0, mode=mode, random_state=42)
    c = fit(X, n_clusters=3, epsilon=2.0, mode=mode, random_state=43)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert not np.array_equal(a.cluster_centers_, c.cluster_centers_)


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_all_zero_matrix_is_accepted(mode):
    m = fit(np.zeros((12, 5)), n_clusters=3, epsilon=1.0, mode=mode, random_state=0)
    assert m.cluster_centers_.shape == (3, 5) and np.all(np.isfinite(m.cluster_centers_))
    assert m.predict(np.zeros((2, 5))).shape == (2,)


def test_corrected_clips_to_public_bound():
    X, _ = blobs()
    a = fit(X, n_clusters=3, epsilon=5.0, bounds_max=4, random_state=3)
    b = fit(np.minimum(X, 4), n_clusters=3, epsilon=5.0, bounds_max=4, random_state=3)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert np.all(a.bounds_[1] == 4.0)
    assert fit(X, n_clusters=3, random_state=0).bounds_[1][0] == DEFAULT_BOUNDS_MAX


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_evaluation_labels_are_the_nearest_centre_of_the_clipped_rows(mode):
    """On new rows the clip matters, and in paper mode a dense feature has a lower bound > 0
    (implicit zeros are raised to it without densifying)."""
    X, _ = blobs()
    X[:, 5] += 1.0  # no zero in feature 5: paper mode's lower bound there is > 0
    m = fit(X, n_clusters=3, epsilon=3.0, mode=mode, bounds_max=12, random_state=0)
    new = np.random.default_rng(9).poisson(4.0, size=(50, X.shape[1])).astype(float)
    new[:5] = 0.0
    new[5:10] = 40.0
    lower, upper = m.bounds_
    if mode == "paper":
        assert lower[5] > 0
    clipped = np.clip(new, lower, upper)
    dist = ((clipped[:, None, :] - m.cluster_centers_[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(m.evaluation_row_labels(sp.csr_matrix(new)),
                                  dist.argmin(axis=1))
    np.testing.assert_array_equal(m.predict(new), dist.argmin(axis=1))
    assert m.score(new) == pytest.approx(-dist.min(axis=1).sum(), rel=1e-10)
    with pytest.raises(ValueError, match="features"):
        m.evaluation_row_labels(X[:, :5])


def test_bad_input():
    X, _ = blobs()
    with pytest.raises(ValueError, match="Negative values in data"):
        DPKMeans(3).fit(-X)
    with pytest.raises(ValueError, match="larger than the number of rows"):
        DPKMeans(301).fit(X)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="epsilon"):
            DPKMeans(3, epsilon=bad).fit(X)
    with pytest.raises(TypeError, match="epsilon"):
        DPKMeans(3, epsilon=True).fit(X)
    with pytest.raises(ValueError, match="mode"):
        DPKMeans(3, mode="faithful").fit(X)
    for bad in (0, math.inf, -2.0):
        with pytest.raises(ValueError, match="bounds_max"):
            DPKMeans(3, bounds_max=bad).fit(X)
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="n_iter"):
            DPKMeans(3, n_iter=bad).fit(X)
    with pytest.raises(TypeError, match="n_iter"):
        DPKMeans(3, n_iter=True).fit(X)
    with pytest.raises(ValueError, match="n_clusters"):
        DPKMeans(0).fit(X)
    with pytest.raises(ValueError, match="secure"):
        DPKMeans(3, secure="yes").fit(X)
    with pytest.raises(ValueError, match="random_state"):
        DPKMeans(3, random_state="seed").fit(X)
    with pytest.raises(ValueError, match="not fitted"):
        DPKMeans(3).evaluation_row_labels(X)


MEMMAP_BLOBS = "uses blobs with negative coordinates; the estimator takes counts only"


def _expected_sklearn_failures(estimator):
    reason = MEMMAP_BLOBS
    if estimator.mode == "corrected":
        reason += ("; it also reads labels_, which corrected mode does not set (the labels of "
                   "the training rows are not private: fit_predict/predict compute them)")
    return {"check_clustering": reason}


@parametrize_with_checks([DPKMeans(n_clusters=2, epsilon=5.0, random_state=0),
                          DPKMeans(n_clusters=2, epsilon=5.0, mode="paper", random_state=0)],
                         expected_failed_checks=_expected_sklearn_failures)
@pytest.mark.slow  # scikit-learn's conformance checks of a baseline (DP-τCC's stay fast)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


@pytest.mark.parametrize("mode", ["corrected", "paper"])
@pytest.mark.parametrize("shift", [0.0, 1.0])  # 87 % of the cells non-zero; every cell
def test_a_dense_matrix_fits_and_predicts_as_on_the_sparse_path(monkeypatch, mode, shift):
    """Whole counts: the dense path's bounds, norms and cluster sums are the sparse path's,
    its distances equal to rounding, so labels and centres come out the same."""
    X = sp.csr_matrix(blobs(seed=4, n=150)[0] + shift)
    assert dpk.dense_counts(X) is not None

    def run():
        out = []
        for seed, eps in [(0, 1.0), (1, 30.0)]:
            m = fit(X, n_clusters=3, epsilon=eps, mode=mode, random_state=seed)
            out.append((m.cluster_centers_, m.predict(X), m.score(X),
                        getattr(m, "row_labels_", None)))
        return out

    dense = run()
    monkeypatch.setattr(dpk, "dense_counts", lambda *args, **kwargs: None)
    for (c1, p1, s1, r1), (c2, p2, s2, r2) in zip(dense, run(), strict=True):
        np.testing.assert_allclose(c1, c2, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(p1, p2)
        assert s1 == pytest.approx(s2, rel=1e-12)
        np.testing.assert_array_equal(r1, r2)


def test_grid_rows_leaves_x_alone_when_cells_round_to_zero():
    """Cells below one grid step vanish from the gridded copy; X's own index arrays (shared
    with the copy until then) stay as they were."""
    X = sp.csr_matrix(np.array([[0.25, 2.0], [3.0, 0.0]]))
    before = X.indices.copy(), X.indptr.copy()
    out = dpk._grid_rows(X, 0.5, 10)
    assert out.nnz == 2 and out.toarray().tolist() == [[0.0, 2.0], [3.0, 0.0]]
    np.testing.assert_array_equal(X.indices, before[0])
    np.testing.assert_array_equal(X.indptr, before[1])


def test_a_frozen_matrix_computes_its_bounds_once_and_gives_the_same_model(monkeypatch):
    from dptaucc.validation import freeze_count_matrix

    X = np.kron(np.eye(3, dtype=int), np.full((20, 4), 5)) + 1  # every cell stored: dense
    frozen = freeze_count_matrix(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plain = [DPKMeans(n_clusters=3, epsilon=2.0, mode="paper", random_state=s).fit(X)
                 for s in range(2)]
    expected = [(m.cluster_centers_, m.predict(X)) for m in plain]
    calls = []
    real_bounds = dpk.feature_bounds
    monkeypatch.setattr(dpk, "feature_bounds", lambda A: calls.append(1) or real_bounds(A))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        models = [DPKMeans(n_clusters=3, epsilon=2.0, mode="paper", random_state=s).fit(frozen)
                  for s in range(2)]
    for model, (centres, labels) in zip(models, expected, strict=True):
        np.testing.assert_array_equal(model.cluster_centers_, centres)
        np.testing.assert_array_equal(model.predict(frozen), labels)
    assert len(calls) == 1  # two fits and two evaluations, one pass
