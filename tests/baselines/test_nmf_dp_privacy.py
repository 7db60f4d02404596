"""DPNMF corrected mode's privacy: the Gaussian release at its call site, a neighbour test of
the release at its own ε = 1, and regression tests for the audit's findings (non-private SVD
initialisation, global early stop, per-document outputs on the model).

Expected values are written out here from the method's math — the L2 sensitivity 2/N of
(HHᵀ/N, VHᵀ/N) for one replaced non-negative unit-norm document, the per-epoch budget
(ε/I, δ/I) and the exact Gaussian privacy profile of Balle & Wang (2018, Thm 8) — never read
back from the code under test.
"""

import math

import dptaucc.baselines.nmf_dp.model as model_mod
import dptaucc.baselines.nmf_dp.release as release_mod
import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.nmf_dp import DPNMF
from scipy import optimize, stats

from dptaucc.privacy import PrivacyLedger, SeededSampler
from dptaucc.privacy.checks import neighbour_log_ratio_bounds


def _counts(seed=3, n=40, m=12):
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.7, size=(n, m)).astype(float)
    X[: n // 2, : m // 2] += rng.poisson(2.5, size=(n // 2, m // 2))
    return X


def _unit_documents(X):
    """Vᵀ: every row of X scaled to unit L2 norm (an empty row stays 0)."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def _sensitivity(n):
    """One document replaced (non-negative v_i, h_i of norm ≤ 1): N²‖Δ(HHᵀ/N, VHᵀ/N)‖² =
    ‖h‖⁴ + ‖h′‖⁴ − 2(h·h′)² + ‖v‖²‖h‖² + ‖v′‖²‖h′‖² − 2(v·v′)(h·h′) ≤ 4, as h·h′, v·v′ ≥ 0."""
    return 2.0 / n


def _bw_delta(sigma, sens, eps):
    """Exact δ(ε) of the Gaussian mechanism N(0, σ²) with L2 sensitivity Δ (Balle & Wang)."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


def _calibrated_sigma(sens, eps, delta):
    """The smallest σ with δ(ε) ≤ δ, solved here independently of the estimator's code."""
    return optimize.brentq(lambda s: _bw_delta(s, sens, eps) - delta, 1e-3 * sens, 1e4 * sens,
                           xtol=1e-14 * sens, rtol=1e-13)


class _Spy:
    """Records the fit's releases: the (V, H) each epoch releases from, and what
    ``gaussian_mechanism`` received and returned."""

    def __init__(self, monkeypatch):
        self.statistics, self.mechanism = [], []
        real_release, real_mech = model_mod.release_statistics, release_mod.gaussian_mechanism

        def release(V, H, *args, **kwargs):
            self.statistics.append((V.copy(), H.copy()))
            return real_release(V, H, *args, **kwargs)

        def mechanism(values, *, sigma, epsilon, delta, sensitivity, **kwargs):
            out = real_mech(values, sigma=sigma, epsilon=epsilon, delta=delta,
                            sensitivity=sensitivity, **kwargs)
            self.mechanism.append(dict(values=np.array(values), sigma=sigma, epsilon=epsilon,
                                       delta=delta, sensitivity=sensitivity, out=np.array(out)))
            return out

        monkeypatch.setattr(model_mod, "release_statistics", release)
        monkeypatch.setattr(release_mod, "gaussian_mechanism", mechanism)


@pytest.mark.parametrize("eps,delta,n_epochs", [(0.5, 1e-5, 4), (2.0, 1e-3, 2), (0.9, 1e-6, 1)])
def test_every_release_draws_gaussian_noise_at_the_calibrated_sigma(monkeypatch, eps, delta,
                                                                     n_epochs):
    X = _counts()
    n, m = X.shape
    eps_e, delta_e = eps / n_epochs, delta / n_epochs
    sens = _sensitivity(n)
    sigma = _calibrated_sigma(sens, eps_e, delta_e)
    assert _bw_delta(sigma, sens, eps_e) <= delta_e * (1 + 1e-6)
    spy = _Spy(monkeypatch)
    z = []
    for seed in range(12):
        spy.mechanism.clear()
        spy.statistics.clear()
        model = DPNMF(3, eps, delta, n_epochs, random_state=seed).fit(X)
        assert len(spy.mechanism) == len(spy.statistics) == n_epochs
        for call, (V, H) in zip(spy.mechanism, spy.statistics, strict=True):
            assert call["epsilon"] == pytest.approx(eps_e, rel=1e-12)
            assert call["delta"] == pytest.approx(delta_e, rel=1e-12)
            assert call["sensitivity"] == pytest.approx(sens, rel=1e-12)
            assert call["sigma"] == pytest.approx(sigma, rel=1e-7)
            # the released values are (HHᵀ/N, VHᵀ/N) of unit-norm documents and H columns
            V = V.toarray() if sp.issparse(V) else V  # a dense-enough X is computed on dense
            np.testing.assert_allclose(V.T, _unit_documents(X), rtol=1e-12)
            assert H.min() >= 0 and np.linalg.norm(H, axis=0).max() <= 1 + 1e-12
            np.testing.assert_allclose(call["values"], np.vstack([H @ H.T / n, V @ H.T / n]),
                                       rtol=1e-10, atol=1e-15)
            z.append(((call["out"] - call["values"]) / sigma).ravel())
        entries = [e for e in model.privacy_ledger_.entries]
        assert [e.mechanism for e in entries] == ["gaussian"] * n_epochs
        assert [e.noise_scale for e in entries] == pytest.approx([sigma] * n_epochs, rel=1e-7)
        assert [e.sensitivity for e in entries] == pytest.approx([sens] * n_epochs, rel=1e-12)
        assert model.noise_std_ == pytest.approx(sigma, rel=1e-7)
        assert model.epsilon_spent_ == pytest.approx(eps, rel=1e-12)
        assert model.delta_spent_ == pytest.approx(delta, rel=1e-12)
    z = np.concatenate(z)
    assert z.size >= 12 * n_epochs * (3 + m) * 3
    assert stats.kstest(z, "norm").pvalue > 1e-4
    assert np.std(z) == pytest.approx(1.0, abs=0.05)


def _worst_pair(n=4):
    """Two neighbours that differ in one document (and its coefficients): e₁ against e₂ in
    both, so the statistics move by 2/N — the largest shift for non-negative unit vectors."""
    V = np.full((2, n), 0.5)
    H = np.full((2, n), 0.5)
    V2, H2 = V.copy(), H.copy()
    V[:, 0], H[:, 0] = (1.0, 0.0), (1.0, 0.0)
    V2[:, 0], H2[:, 0] = (0.0, 1.0), (0.0, 1.0)
    stat = lambda V, H: np.concatenate([(H @ H.T / n).ravel(), (V @ H.T / n).ravel()])  # noqa
    return (V, H), (V2, H2), stat(V, H), stat(V2, H2)


def _hits(V, H, u, mid, runs, seed, eps, delta):
    """Releases of (Ā, B̄) on the half-space {⟨release − mid, u⟩ > 0}."""
    sampler = SeededSampler(np.random.default_rng(seed))
    Vs = sp.csr_matrix(V)
    hits = 0
    for _ in range(runs):
        A, B = release_mod.release_statistics(Vs, H, eps, delta, sampler, PrivacyLedger(), "t")
        hits += float(np.concatenate([A.ravel(), B.ravel()]) @ u - mid @ u) > 0
    return hits


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.slow
def test_release_neighbours_at_its_own_epsilon(monkeypatch, broken):
    """One release at (ε, δ) = (1, 0.01) on the worst neighbour pair, event = the half-space
    through the midpoint of the two statistics. With σ calibrated for Δ = 2/N the event's
    log-ratio is L(s/σ), L(μ) = log Φ(μ/2) − log Φ(−μ/2), s = 2/N the pair's shift, and no
    calibrated mechanism can exceed L(Δ/σ). Half the noise (the broken variant, what a halved
    sensitivity or scale does) gives L(2s/σ) > L(Δ/σ), which the test must flag."""
    eps, delta, n, runs = 1.0, 0.01, 4, 5000
    (V, H), (V2, H2), f, f2 = _worst_pair(n)
    sens = _sensitivity(n)
    sigma = _calibrated_sigma(sens, eps, delta)
    shift = np.linalg.norm(f - f2)
    assert shift == pytest.approx(2.0 / n)
    L = lambda mu: stats.norm.logcdf(mu / 2) - stats.norm.logcdf(-mu / 2)  # noqa: E731
    if broken:
        real = release_mod.analytic_gaussian_sigma
        monkeypatch.setattr(release_mod, "analytic_gaussian_sigma",
                            lambda *a: real(*a) / 2)
    u, mid = f - f2, (f + f2) / 2
    ha = _hits(V, H, u, mid, runs, 1, eps, delta)
    hb = _hits(V2, H2, u, mid, runs, 2, eps, delta)
    lower, upper = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    if broken:
        assert lower > L(sens / sigma)
    else:
        assert lower <= L(shift / sigma) <= upper
        assert lower <= L(sens / sigma)


def _fake_releases(monkeypatch, seed=99):
    """Replace the releases by data-independent arrays (the same sequence for every fit) and
    record the H each epoch would have released from."""
    seen = []

    def fake(V, H, epsilon, delta, sampler, ledger, step):
        seen.append(H.copy())
        rng = np.random.default_rng(seed + len(seen))
        k, m = H.shape[0], V.shape[0]
        A = rng.random((k, k))
        return (A + A.T) / 2, rng.normal(0.1, 0.1, (m, k))

    monkeypatch.setattr(model_mod, "release_statistics", fake)
    return seen


def test_topics_depend_on_the_data_only_through_the_releases(monkeypatch):
    """Audit finding: the initialisation was an SVD of the data. With the releases replaced
    by fixed arrays, two unrelated data sets of one shape give the same topics and W-steps."""
    X, Y = _counts(1), _counts(2)[::-1] * 3
    _fake_releases(monkeypatch)
    a = DPNMF(3, 0.5, random_state=5).fit(X)
    _fake_releases(monkeypatch)
    b = DPNMF(3, 0.5, random_state=5).fit(Y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.n_w_steps_ == b.n_w_steps_ and a.n_h_steps_ == b.n_h_steps_


@pytest.mark.parametrize("cell", [(0, 0), (7, 11), (39, 5)])
def test_one_cell_changes_one_column_of_the_released_coefficients(monkeypatch, cell):
    """Audit finding: a global early stop made every document's coefficients depend on all
    documents. For neighbours (one cell + 1, so one document), given the same released
    statistics, the H every epoch releases from differs in that document's column only."""
    X = _counts()
    X2 = X.copy()
    X2[cell] += 1
    ha = _fake_releases(monkeypatch)
    DPNMF(3, 0.5, random_state=2).fit(X)
    hb = _fake_releases(monkeypatch)
    DPNMF(3, 0.5, random_state=2).fit(X2)
    assert len(ha) == len(hb) == 4
    others = np.arange(X.shape[0]) != cell[0]
    for Ha, Hb in zip(ha, hb, strict=True):
        np.testing.assert_array_equal(Ha[:, others], Hb[:, others])
        assert not np.array_equal(Ha[:, cell[0]], Hb[:, cell[0]])
        assert np.linalg.norm(Ha, axis=0).max() <= 1 + 1e-12


def test_corrected_fit_is_dp_end_to_end_and_keeps_nothing_per_document():
    """Audit finding: corrected mode named non-private steps and kept coefficients_, loss_
    and n_h_steps_ read from the data. Now: no non-private step, ε and δ spent exactly, and
    the same public step counts for any data."""
    X = _counts()
    a = DPNMF(3, 0.7, 1e-5, random_state=0).fit(X)
    b = DPNMF(3, 0.7, 1e-5, random_state=0).fit(np.zeros_like(X))
    for m in (a, b):
        assert m.privacy_ledger_.end_to_end_dp and m.privacy_ledger_.strict
        assert m.epsilon_spent_ == pytest.approx(0.7) and m.delta_spent_ == pytest.approx(1e-5)
        for attr in ("coefficients_", "loss_", "row_labels_", "labels_"):
            assert not hasattr(m, attr)
    assert a.n_h_steps_ == b.n_h_steps_
    assert a.noise_std_ == b.noise_std_


def test_no_replaced_document_moves_the_release_by_more_than_two_over_n():
    """The proof of Δ = 2/N (release.py) checked on random non-negative documents and
    coefficients (v of unit norm, h in the unit ball, many of them near-orthogonal pairs), and
    its premise: with signed documents the same move exceeds 2/N."""
    rng = np.random.default_rng(0)
    n, k, m = 7, 3, 5

    def move(v, h, v2, h2):
        return math.sqrt(np.linalg.norm(np.outer(h, h) - np.outer(h2, h2)) ** 2
                         + np.linalg.norm(np.outer(v, h) - np.outer(v2, h2)) ** 2) / n

    worst = 0.0
    for _ in range(20000):
        v, v2 = rng.random(m) ** 8, rng.random(m) ** 8  # sparse-ish: near-orthogonal pairs
        h, h2 = rng.random(k) ** 8, rng.random(k) ** 8
        v, v2 = v / np.linalg.norm(v), v2 / np.linalg.norm(v2)
        h = h / max(np.linalg.norm(h), 1.0) if rng.random() < 0.5 else h / np.linalg.norm(h)
        h2 = h2 / np.linalg.norm(h2)
        worst = max(worst, move(v, h, v2, h2))
    assert 0.95 * release_mod.statistics_sensitivity(n) < worst
    assert worst <= release_mod.statistics_sensitivity(n) * (1 + 1e-12)
    e0, e1 = np.eye(2)
    assert move(e0, e0, e1, e1) == pytest.approx(2.0 / n)  # attained: h ⊥ h′, v ⊥ v′
    half = np.array([0.5, math.sqrt(0.75)])  # h·h′ = ½, v′ = −v: 4 − 2c² + 2c = 4.5
    signed = move(e0, e0, -e0, half)
    assert signed == pytest.approx(math.sqrt(4.5) / n)  # > 2/N: why V ≥ 0 is needed


@pytest.mark.parametrize("mode", ["corrected", "paper"])
def test_the_model_keeps_its_last_release_and_the_topics_are_computed_from_it(monkeypatch,
                                                                               mode):
    """``A_bar_``, ``B_bar_`` are the last epoch's released (Ā, B̄), noise included, and not
    an earlier epoch's or the exact statistics; with one topic the W-step is one 1/Ā step
    from any start, so the topic is Π(max(0, B̄/Ā)) of that release alone."""
    X = _counts()
    releases = []
    name = "release_statistics" if mode == "corrected" else "paper_release"
    original = getattr(model_mod, name)

    def recording(V, H, *args, **kwargs):
        out = original(V, H, *args, **kwargs)
        releases.append((out, H @ H.T / H.shape[1], (V @ H.T) / H.shape[1]))
        return out

    monkeypatch.setattr(model_mod, name, recording)
    m = DPNMF(3, 0.5, n_epochs=3, mode=mode, random_state=4).fit(X)
    (A, B), exact_A, exact_B = releases[-1]
    assert len(releases) == 3
    assert m.A_bar_ is A and m.B_bar_ is B and m.A_bar_.shape == (3, 3)
    assert m.B_bar_.shape == (X.shape[1], 3)
    assert not np.allclose(m.B_bar_, np.asarray(exact_B))  # the noisy release
    assert not np.allclose(m.A_bar_, exact_A)
    assert not np.allclose(m.B_bar_, releases[-2][0][1])
    one = DPNMF(1, 5.0, n_epochs=2, random_state=1).fit(X)
    assert one.A_bar_[0, 0] > 0
    topic = np.maximum(one.B_bar_[:, 0] / one.A_bar_[0, 0], 0.0)
    np.testing.assert_allclose(one.components_[0], topic / max(1.0, np.linalg.norm(topic)),
                               rtol=1e-12, atol=1e-15)
