"""DP-KMeans: paper mode reproduces diffprivlib 0.6.4 + the authors' change; corrected spends ε."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.models import KMeans as DplKMeans
from diffprivlib.utils import PrivacyLeakWarning
from dptaucc.baselines.dp_kmeans import DEFAULT_BOUNDS_MAX, DPKMeans, calc_iters, su_split
from scipy import stats
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.utils.estimator_checks import parametrize_with_checks


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
    assert coord == pytest.approx(4.97e-4, rel=2e-3)       # spec §5.3: ε_count (paper) for cstr
    assert count == pytest.approx(2.92e-3, rel=2e-3)       # ε_coord (paper) = c·N


def test_vectorised_update_matches_diffprivlib_update():
    """One DPLloyd centre update: ours (vectorised) vs diffprivlib's own ``_update_centers``,
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
    ours = np.array([DPKMeans._update_centers(Xs, np.zeros((2, 2)), labels, lower, upper,
                                              eps_count, eps_coord, upper - lower, rng)
                     for _ in range(800)])
    for c in range(2):
        for j in range(2):
            assert stats.ks_2samp(ref[:, c, j], ours[:, c, j]).pvalue > 1e-3


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
    assert m.epsilon_spent_ == float("inf")   # spec §8: ≈ c·ε
    assert m.epsilon_spent_ > 1.0
    assert m.delta_spent_ == 0.0
    assert "bounds" in m.privacy_ledger_.non_private_steps
    assert not m.privacy_ledger_.end_to_end_dp
    assert len([e for e in m.privacy_ledger_.entries if e.composition != "non-private"]) \
        == 2 * iters
    lo, hi = m.bounds_
    np.testing.assert_array_equal(lo, X.min(axis=0))     # bounds read from the data
    np.testing.assert_array_equal(hi, X.max(axis=0))


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


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_large_epsilon_recovers_tiny_does_not(mode):
    X, y = blobs()
    big = [nmi(y, fit(X, n_clusters=3, epsilon=1e4, mode=mode, bounds_max=12,
                      random_state=s).row_labels_) for s in range(6)]
    tiny = [nmi(y, fit(X, n_clusters=3, epsilon=1e-3, mode=mode, bounds_max=12,
                       random_state=s).row_labels_) for s in range(6)]
    assert np.mean(big) > 0.75
    assert np.mean(tiny) < np.mean(big) - 0.3


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_same_seed_same_result_sparse_equals_dense(mode):
    X, _ = blobs()
    a = fit(X, n_clusters=3, epsilon=2.0, mode=mode, random_state=42)
    b = fit(sp.csr_matrix(X), n_clusters=3, epsilon=2.0, mode=mode, random_state=42)
    c = fit(X, n_clusters=3, epsilon=2.0, mode=mode, random_state=43)
    np.testing.assert_array_equal(a.row_labels_, b.row_labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert not np.array_equal(a.cluster_centers_, c.cluster_centers_)


def test_corrected_clips_to_public_bound():
    X, _ = blobs()
    a = fit(X, n_clusters=3, epsilon=5.0, bounds_max=4, random_state=3)
    b = fit(np.minimum(X, 4), n_clusters=3, epsilon=5.0, bounds_max=4, random_state=3)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert np.all(a.bounds_[1] == 4.0)
    assert fit(X, n_clusters=3, random_state=0).bounds_[1][0] == DEFAULT_BOUNDS_MAX


def test_evaluation_labels_are_nearest_centre():
    X, _ = blobs()
    m = fit(X, n_clusters=3, epsilon=3.0, bounds_max=12, random_state=0)
    ev = m.evaluation_row_labels(X)
    Xc = np.minimum(X, 12)
    dense = ((Xc[:, None, :] - m.cluster_centers_[None]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(ev, dense)
    np.testing.assert_array_equal(np.unique(ev, return_inverse=True)[1], m.row_labels_)
    assert m.n_row_clusters_ == len(np.unique(ev))
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
    with pytest.raises(ValueError, match="mode"):
        DPKMeans(3, mode="faithful").fit(X)
    with pytest.raises(ValueError, match="bounds_max"):
        DPKMeans(3, bounds_max=0).fit(X)
    with pytest.raises(RuntimeError, match="not fitted"):
        DPKMeans(3).evaluation_row_labels(X)


EXPECTED_SKLEARN_FAILURES = {
    "check_clustering": "uses blobs with negative coordinates; the estimator takes counts only",
}


@parametrize_with_checks([DPKMeans(n_clusters=2, epsilon=5.0, random_state=0),
                          DPKMeans(n_clusters=2, epsilon=5.0, mode="paper", random_state=0)],
                         expected_failed_checks=lambda est: EXPECTED_SKLEARN_FAILURES)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)
