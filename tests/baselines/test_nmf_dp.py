"""DPNMF behaviour: paper mode as the authors ran it (variance-as-std, (2ε, 2δ), farthest
centroid, NNDSVD init), corrected mode's model and methods, input checks, sklearn API.
The privacy of corrected mode is tested in test_nmf_dp_privacy.py."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.nmf_dp import DPNMF, analytic_gaussian_sigma, classical_gaussian_sigma
from dptaucc.baselines.nmf_dp.gaussian import gaussian_delta, gaussian_epsilon, paper_noise_std
from dptaucc.baselines.nmf_dp.init import nndsvd_init, project_columns
from dptaucc.baselines.nmf_dp.updates import (
    half_sq_loss,
    local_coefficients,
    paper_stop,
    relative_improvement_stop,
    w_steps,
)
from sklearn.exceptions import NotFittedError
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


def unit_rows(X):
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)


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
    std = 2 * (sens / eps_e) ** 2 * math.log(1.25 / delta_e)
    assert m.noise_std_ == pytest.approx(std)
    assert all(e.noise_scale == pytest.approx(std) and e.sensitivity == pytest.approx(sens)
               for e in charged)
    sigma_star = classical_gaussian_sigma(sens, eps_e, delta_e)
    assert m.noise_std_ == pytest.approx(sigma_star**2)
    assert {"initialisation", "H updates", "raw counts"} <= set(m.privacy_ledger_.non_private_steps)
    assert m.release_kinds()["coefficients_"] == "non-private"
    assert m.coefficients_.shape == (3, 300) and len(m.loss_) == I and m.n_h_steps_ == [1] * I


def test_paper_noise_under_calibrated_on_large_n():
    """With N docs the paper's noise is 40.98/(Nε) times the calibrated amount."""
    N, eps = 3891, 0.1
    sens, eps_e, delta_e = 2 / N, eps / 4, 1e-5 / 4
    ratio = paper_noise_std(sens, eps_e, delta_e) / classical_gaussian_sigma(sens, eps_e, delta_e)
    assert ratio == pytest.approx(40.98 / (N * eps), rel=1e-3)


@pytest.mark.parametrize("eps,delta", [(0.05, 1e-5), (0.5, 1e-6), (4.0, 1e-3)])
def test_analytic_gaussian_is_tight_and_beats_classical(eps, delta):
    s = analytic_gaussian_sigma(1.0, eps, delta)
    assert gaussian_delta(s, 1.0, eps) <= delta * (1 + 1e-9)
    assert gaussian_delta(0.99 * s, 1.0, eps) > delta
    if eps < 1:
        assert s < classical_gaussian_sigma(1.0, eps, delta)
    assert gaussian_epsilon(s, 1.0, delta) == pytest.approx(eps, rel=1e-6)


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


@pytest.mark.parametrize("paper_rule", [True, False])
@pytest.mark.parametrize("alpha", [1e-4, 0.3, 3.0])
def test_w_steps_follow_the_written_update_and_stop(alpha, paper_rule):
    """The fused loop equals W ← Π_col(max(0, W − α(WĀ − B̄))) step by step, stopping on
    the surrogate ½tr(WᵀWĀ) − tr(WᵀB̄): the authors' rule (relative change < η) or the
    corrected one (improvement ≤ η|previous|); at most 201 steps."""
    rng = np.random.default_rng(4)
    W = np.asfortranarray(project_columns(rng.random((30, 3))))
    before = W.copy()
    A = rng.normal(0.1, 0.05, (3, 3))
    B = rng.normal(0.05, 0.2, (30, 3))
    rule = paper_stop if paper_rule else relative_improvement_stop
    got, steps = w_steps(W, A, B, alpha, 1e-4, 200, stop=rule)
    np.testing.assert_array_equal(W, before)  # the caller's W is not touched
    loss = lambda M: 0.5 * np.trace(M.T @ M @ A) - np.trace(M.T @ B)  # noqa: E731
    ref, k = W, 0
    while True:
        k += 1
        new = project_columns(np.maximum(ref - alpha * (ref @ A - B), 0.0))
        prev, cur = loss(ref), loss(new)
        stop = (cur - prev) / prev < 1e-4 if paper_rule else not prev - cur > 1e-4 * abs(prev)
        ref = new
        if stop or k > 200:
            break
    assert steps == k
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    if alpha == 1e-4 and paper_rule:
        assert steps == 201  # a tiny step never meets the tolerance: the 201-step cap


def test_local_coefficients_solve_each_documents_problem():
    """Projected gradient on ½‖v − Wh‖² over {h ≥ 0, ‖h‖ ≤ 1}: the fixed point satisfies
    the optimality condition h = Π(h − ∇/L) (checked on the result of many steps) and
    beats random feasible points."""
    rng = np.random.default_rng(2)
    W = project_columns(rng.random((20, 3)))
    V = unit_rows(rng.random((15, 20))).T
    H = local_coefficients(W.T @ V, W.T @ W, np.zeros((3, 15)), 500)
    assert H.min() >= 0 and np.linalg.norm(H, axis=0).max() <= 1 + 1e-12
    L = np.linalg.norm(W.T @ W, 2)
    again = project_columns(np.maximum(H - (W.T @ W @ H - W.T @ V) / L, 0.0))
    np.testing.assert_allclose(again, H, atol=1e-9)
    best = 0.5 * np.sum((V - W @ H) ** 2, axis=0)
    for _ in range(200):
        cand = project_columns(rng.random((3, 15)))
        assert np.all(best <= 0.5 * np.sum((V - W @ cand) ** 2, axis=0) + 1e-12)


def test_corrected_large_epsilon_recovers_tiny_does_not():
    X, y = topics()
    big = [nmi(y, DPNMF(3, 50.0, random_state=s).fit(X).evaluation_row_labels(X))
           for s in range(4)]
    tiny = [nmi(y, DPNMF(3, 1e-4, random_state=s).fit(X).evaluation_row_labels(X))
            for s in range(4)]
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
    X, y = topics()
    for mode, pick, Xh in (("paper", np.argmax, X / X.max()), ("corrected", np.argmin,
                                                                unit_rows(X))):
        m = DPNMF(3, 50.0, mode=mode, random_state=3).fit(X)
        dist = np.linalg.norm(Xh[:, None, :] - m.components_[None], axis=2)
        ev = m.evaluation_row_labels(sp.csr_matrix(X))
        np.testing.assert_array_equal(ev, pick(dist, axis=1))
        np.testing.assert_array_equal(m.fit_predict(X), m.labels_ if mode == "paper" else ev)
        if mode == "paper":
            np.testing.assert_array_equal(np.unique(ev, return_inverse=True)[1], m.row_labels_)
    # with three topics farthest != nearest: the paper's labels lose the structure
    paper = DPNMF(3, 50.0, mode="paper", random_state=0).fit(X)
    corrected = DPNMF(3, 50.0, random_state=0).fit(X)
    assert nmi(y, paper.row_labels_) < nmi(y, corrected.evaluation_row_labels(X)) - 0.2


def test_transform_gives_each_documents_coefficients():
    X, y = topics()
    for mode in ("corrected", "paper"):
        m = DPNMF(3, 50.0, mode=mode, random_state=1).fit(X)
        T = m.transform(X)
        assert T.shape == (300, 3) and T.min() >= 0
        assert np.linalg.norm(T, axis=1).max() <= 1 + 1e-12
        # the same numbers up to BLAS round-off (dense and sparse products, or fewer rows,
        # may sum in another order on another machine)
        np.testing.assert_allclose(m.transform(sp.csr_matrix(X)), T, rtol=0, atol=1e-12)
        np.testing.assert_allclose(m.transform(X[:7]), T[:7], rtol=0, atol=1e-12)  # one by one
    # corrected: documents of one topic load on one topic
    m = DPNMF(3, 50.0, random_state=1).fit(X)
    assert nmi(y, m.transform(X).argmax(axis=1)) > 0.9


def test_corrected_model_keeps_no_per_document_output():
    X, _ = topics()
    m = DPNMF(3, 0.5, random_state=0).fit(X)
    for attr in ("coefficients_", "loss_", "row_labels_", "labels_", "n_row_clusters_",
                 "row_labels_private_"):
        assert not hasattr(m, attr), attr
    assert m.components_.shape == (3, 24)
    assert m.n_h_steps_ == [50] * 4


def test_determinism_and_sparse_input():
    X, _ = topics()
    for mode in ("corrected", "paper"):
        a = DPNMF(3, 0.3, mode=mode, random_state=7).fit(X)
        b = DPNMF(3, 0.3, mode=mode, random_state=7).fit(sp.csr_matrix(X))
        c = DPNMF(3, 0.3, mode=mode, random_state=8).fit(X)
        np.testing.assert_allclose(a.components_, b.components_, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(a.evaluation_row_labels(X), b.evaluation_row_labels(X))
        assert not np.allclose(a.components_, c.components_)
    assert len(a.loss_) == 4 and a.n_row_clusters_ == len(np.unique(a.row_labels_))


@pytest.mark.parametrize("mode", ["corrected", "paper"])
def test_all_zero_matrix_is_accepted(mode):
    Z = np.zeros((12, 6))
    m = DPNMF(3, 0.5, mode=mode, random_state=0).fit(Z)
    assert np.all(np.isfinite(m.components_))
    assert m.evaluation_row_labels(Z).shape == (12,)
    assert np.all(m.transform(Z) == 0)
    one = Z.copy()
    one[4, 2] = 1.0
    m2 = DPNMF(3, 0.5, mode=mode, random_state=0).fit(one)
    assert [e.step for e in m2.privacy_ledger_.entries] == \
        [e.step for e in m.privacy_ledger_.entries]


def test_infinite_epsilon_is_the_noiseless_algorithm_in_paper_mode():
    X, y = topics()
    with pytest.raises(ValueError, match="epsilon=inf"):  # corrected mode promises ε-DP
        DPNMF(3, math.inf).fit(X)
    m = DPNMF(3, math.inf, mode="paper", random_state=0).fit(X)
    assert m.noise_std_ == 0.0 and m.epsilon_spent_ == math.inf
    assert nmi(y, m.evaluation_row_labels(X)) > 0.5  # the authors' run on raw counts


def test_secure_path_fits_with_the_same_ledger():
    X, _ = topics()
    seeded = DPNMF(3, 0.5, random_state=0).fit(X)
    secure = DPNMF(3, 0.5, secure=True).fit(X)
    strip = lambda m: [(e.step, e.epsilon, e.delta, e.sensitivity, e.noise_scale)  # noqa: E731
                       for e in m.privacy_ledger_.entries]
    assert strip(secure) == strip(seeded)
    assert secure.epsilon_spent_ == pytest.approx(0.5)
    with pytest.raises(ValueError, match="random_state"):
        DPNMF(3, secure=True, random_state=0).fit(X)
    with pytest.raises(ValueError, match="corrected mode"):
        DPNMF(3, secure=True, mode="paper").fit(X)


def test_bad_input():
    X, _ = topics()
    with pytest.raises(ValueError, match="Negative values in data"):
        DPNMF(3).fit(-X)
    with pytest.raises(ValueError, match="larger than the number of rows"):
        DPNMF(301).fit(X)
    with pytest.raises(ValueError, match="larger than the number of columns"):
        DPNMF(25).fit(X)
    for bad in (0, -1, 2.5, "3"):
        with pytest.raises((ValueError, TypeError), match="n_clusters"):
            DPNMF(bad).fit(X)
    for bad in (0.0, -0.5, float("nan"), "1"):
        with pytest.raises((ValueError, TypeError), match="epsilon"):
            DPNMF(3, epsilon=bad).fit(X)
    for bad in (0.0, 1.0, 1.5, -1e-5):
        with pytest.raises(ValueError, match="delta"):
            DPNMF(3, delta=bad).fit(X)
    with pytest.raises(ValueError, match="n_epochs"):
        DPNMF(3, n_epochs=0).fit(X)
    with pytest.raises(ValueError, match="mode"):
        DPNMF(3, mode="faithful").fit(X)
    with pytest.raises(ValueError, match="secure"):
        DPNMF(3, secure="yes").fit(X)
    with pytest.raises(ValueError, match="random_state"):
        DPNMF(3, random_state="seed").fit(X)
    fitted = DPNMF(3, random_state=0).fit(X)
    for method in (fitted.evaluation_row_labels, fitted.transform):
        with pytest.raises(ValueError, match="features"):
            method(X[:, :5])
    for method in ("evaluation_row_labels", "transform"):
        with pytest.raises(NotFittedError):
            getattr(DPNMF(3), method)(X)


EXPECTED_SKLEARN_FAILURES = {
    "check_clustering": "uses blobs with negative coordinates; the estimator takes counts only",
}


@parametrize_with_checks([DPNMF(n_clusters=2, epsilon=0.5, random_state=0),
                          DPNMF(n_clusters=2, epsilon=0.5, mode="paper", random_state=0)],
                         expected_failed_checks=lambda est: EXPECTED_SKLEARN_FAILURES)
@pytest.mark.slow  # scikit-learn's conformance checks of a baseline (DP-τCC's stay fast)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("mode", ["corrected", "paper"])
@pytest.mark.parametrize("shift", [0.0, 1.0])  # 60 % of the cells non-zero; every cell
def test_a_dense_matrix_fits_as_on_the_sparse_path(monkeypatch, mode, shift):
    """A dense-enough X is computed on as a dense array (BLAS products): the same model and
    labels as the sparse path, up to floating-point rounding."""
    import dptaucc.baselines.nmf_dp.model as model_mod

    X = sp.csr_matrix(topics(seed=2, n=120)[0] + shift)
    assert model_mod.dense_counts(X) is not None

    def run():
        out = []
        for seed, eps in [(0, 0.5), (1, 50.0)]:
            m = DPNMF(3, eps, mode=mode, random_state=seed).fit(X)
            out.append((m.components_, m.evaluation_row_labels(X), m.transform(X),
                        getattr(m, "loss_", None)))
        return out

    dense = run()
    monkeypatch.setattr(model_mod, "dense_counts", lambda *args, **kwargs: None)
    for a, b in zip(dense, run(), strict=True):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_allclose(a[2], b[2], rtol=1e-9, atol=1e-12)
        if a[3] is not None:
            np.testing.assert_allclose(a[3], b[3], rtol=1e-12)
