"""DPNMF: paper mode as spec §7 (variance-as-std, (2ε, 2δ), farthest centroid); corrected (ε, δ)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.nmf_dp import DPNMF, analytic_gaussian_sigma, classical_gaussian_sigma
from dptaucc.baselines.nmf_dp.gaussian import gaussian_delta, gaussian_epsilon, paper_noise_std
from dptaucc.baselines.nmf_dp.init import nndsvd_init, project_columns
from dptaucc.baselines.nmf_dp.updates import half_sq_loss
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.utils.estimator_checks import parametrize_with_checks


def topics(seed=0, n=300, k=3, d=24):
    """Poisson counts: documents of topic j use their own block of d/k words much more often."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n // k)
    lam = np.full((k, d), 0.3)
    w = d // k
    for j in range(k):
        lam[j, w * j:w * (j + 1)] = 4.0
    return rng.poisson(lam[y]).astype(float), y


def test_paper_ledger_is_2eps_2delta_and_noise_is_the_variance():
    X, _ = topics()
    eps, delta, I = 0.5, 1e-5, 4
    m = DPNMF(3, eps, delta, I, mode="paper", random_state=0).fit(X)
    charged = [e for e in m.privacy_ledger_.entries if e.composition != "non-private"]
    assert len(charged) == 2 * I
    assert all(e.epsilon == pytest.approx(eps / I) and e.delta == pytest.approx(delta / I)
               for e in charged)
    assert m.privacy_ledger_.epsilon_mechanisms == pytest.approx(2 * eps)
    assert m.epsilon_spent_ == math.inf  # non-private steps: no finite ε describes the fit
    assert m.delta_spent_ == pytest.approx(2 * delta)
    sens, eps_e, delta_e = 2 / X.shape[0], eps / I, delta / I
    assert m.noise_std_ == pytest.approx(2 * (sens / eps_e) ** 2 * math.log(1.25 / delta_e))
    sigma_star = classical_gaussian_sigma(sens, eps_e, delta_e)
    assert m.noise_std_ == pytest.approx(sigma_star**2)
    assert {"initialisation", "H updates", "raw counts"} <= set(m.privacy_ledger_.non_private_steps)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.9, 1e-6), (3.0, 1e-3)])
def test_corrected_ledger_is_eps_delta(eps, delta):
    X, _ = topics()
    m = DPNMF(3, eps, delta, n_epochs=5, random_state=0).fit(X)
    # the releases cost (ε, δ); the fit as a whole is not DP yet (non-private init/H steps)
    assert m.privacy_ledger_.epsilon_mechanisms == pytest.approx(eps, rel=1e-12)
    assert m.delta_spent_ == pytest.approx(delta, rel=1e-12)
    assert m.privacy_ledger_.strict
    assert set(m.privacy_ledger_.non_private_steps) == {"initialisation", "H updates"}
    sens = 2 * math.sqrt(2) / X.shape[0]
    assert m.noise_std_ == pytest.approx(analytic_gaussian_sigma(sens, eps / 5, delta / 5))
    assert m.row_labels_private_ is False


@pytest.mark.parametrize("eps,delta", [(0.05, 1e-5), (0.5, 1e-6), (4.0, 1e-3)])
def test_analytic_gaussian_is_tight_and_beats_classical(eps, delta):
    s = analytic_gaussian_sigma(1.0, eps, delta)
    assert gaussian_delta(s, 1.0, eps) <= delta * (1 + 1e-9)
    assert gaussian_delta(0.99 * s, 1.0, eps) > delta
    if eps < 1:
        assert s < classical_gaussian_sigma(1.0, eps, delta)
    assert gaussian_epsilon(s, 1.0, delta) == pytest.approx(eps, rel=1e-6)


def test_paper_noise_under_calibrated_on_large_n():
    """Spec §7.3: with N docs the paper's noise is 40.98/(Nε) times the calibrated amount."""
    N, eps = 3891, 0.1
    sens, eps_e, delta_e = 2 / N, eps / 4, 1e-5 / 4
    ratio = paper_noise_std(sens, eps_e, delta_e) / classical_gaussian_sigma(sens, eps_e, delta_e)
    assert ratio == pytest.approx(40.98 / (N * eps), rel=1e-3)


def test_gram_trick_loss_equals_dense_residual():
    rng = np.random.default_rng(1)
    V = sp.random(40, 30, density=0.2, random_state=2, format="csr") * 5
    W, H = rng.random((40, 4)), rng.random((4, 30))
    dense = 0.5 * np.linalg.norm(V.toarray() - W @ H) ** 2
    got = half_sq_loss(float(V.multiply(V).sum()), np.asarray(V.T @ W).T, W.T @ W, H)
    assert got == pytest.approx(dense, rel=1e-10)


def test_nndsvd_init_nonnegative_and_projection():
    X, _ = topics()
    W, H = nndsvd_init(sp.csr_matrix(X.T), 3, np.random.default_rng(0))
    assert W.shape == (24, 3) and H.shape == (3, 300)
    assert W.min() >= 0 and H.min() >= 0
    P = project_columns(H * 10)
    assert np.all(np.linalg.norm(P, axis=0) <= 1 + 1e-12)


def test_large_epsilon_recovers_tiny_does_not():
    X, y = topics()
    big = [nmi(y, DPNMF(3, 100.0, random_state=s).fit(X).row_labels_) for s in range(4)]
    tiny = [nmi(y, DPNMF(3, 1e-4, random_state=s).fit(X).row_labels_) for s in range(4)]
    assert min(big) > 0.9
    assert np.mean(tiny) < 0.7


def test_paper_mode_two_topics_recovers_tiny_does_not():
    """With K = 2 the farthest centroid is a label permutation of the nearest one."""
    X, y = topics(k=2)
    big = [nmi(y, DPNMF(2, 0.5, mode="paper", random_state=s).fit(X).row_labels_)
           for s in range(4)]
    tiny = [nmi(y, DPNMF(2, 1e-4, mode="paper", random_state=s).fit(X).row_labels_)
            for s in range(4)]
    assert min(big) > 0.9
    assert np.mean(tiny) < 0.7


def test_paper_labels_are_farthest_corrected_nearest():
    X, _ = topics()
    for mode, pick in (("paper", np.argmax), ("corrected", np.argmin)):
        m = DPNMF(3, 0.5, mode=mode, random_state=3).fit(X)
        Xh = X / X.max() if mode == "paper" else X / np.linalg.norm(X, axis=1, keepdims=True)
        dist = np.linalg.norm(Xh[:, None, :] - m.components_[None], axis=2)
        ev = m.evaluation_row_labels(sp.csr_matrix(X))
        np.testing.assert_array_equal(ev, pick(dist, axis=1))
        np.testing.assert_array_equal(np.unique(ev, return_inverse=True)[1], m.row_labels_)
    # with three topics farthest != nearest: the paper's labels lose the structure
    _, y = topics()
    paper = DPNMF(3, 0.5, mode="paper", random_state=0).fit(X)
    corrected = DPNMF(3, 0.5, random_state=0).fit(X)
    assert nmi(y, paper.row_labels_) < nmi(y, corrected.row_labels_) - 0.2


def test_determinism_and_sparse_input():
    X, _ = topics()
    a = DPNMF(3, 0.3, random_state=7).fit(X)
    b = DPNMF(3, 0.3, random_state=7).fit(sp.csr_matrix(X))
    c = DPNMF(3, 0.3, random_state=8).fit(X)
    np.testing.assert_array_equal(a.row_labels_, b.row_labels_)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-10, atol=1e-12)
    assert not np.allclose(a.components_, c.components_)
    assert len(a.loss_) == 4 and a.n_row_clusters_ == len(np.unique(a.row_labels_))


def test_bad_input():
    X, _ = topics()
    with pytest.raises(ValueError, match="Negative values in data"):
        DPNMF(3).fit(-X)
    with pytest.raises(ValueError, match="larger than the number of rows"):
        DPNMF(301).fit(X)
    with pytest.raises(ValueError, match="larger than the number of columns"):
        DPNMF(25).fit(X)
    for bad in (0.0, -0.5):
        with pytest.raises(ValueError, match="epsilon"):
            DPNMF(3, epsilon=bad).fit(X)
    for bad in (0.0, 1.0, 1.5, -1e-5):
        with pytest.raises(ValueError, match="delta"):
            DPNMF(3, delta=bad).fit(X)
    with pytest.raises(ValueError, match="n_epochs"):
        DPNMF(3, n_epochs=0).fit(X)
    with pytest.raises(ValueError, match="mode"):
        DPNMF(3, mode="faithful").fit(X)
    with pytest.raises(ValueError, match="features"):
        DPNMF(3, random_state=0).fit(X).evaluation_row_labels(X[:, :5])


EXPECTED_SKLEARN_FAILURES = {
    "check_clustering": "uses blobs with negative coordinates; the estimator takes counts only",
}


@parametrize_with_checks([DPNMF(n_clusters=2, epsilon=0.5, random_state=0),
                          DPNMF(n_clusters=2, epsilon=0.5, mode="paper", random_state=0)],
                         expected_failed_checks=lambda est: EXPECTED_SKLEARN_FAILURES)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
