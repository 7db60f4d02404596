"""DP-τCC's privacy at every call site: the noise each mechanism call really draws, the
sensitivity each assignment uses, and a neighbour test of the released table at its own ε.

Expected scales are written out here from the paper (table: L1 sensitivity 1 at
ε_T = (1−h)ε/(2I), eq. 4.11; assignment: range sensitivity of its weights at h·ε/(2I),
eqs. 4.9-4.10), never read back from the code under test.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

import dptaucc.dp_taucc as dp_mod
from dptaucc import DPTauCC
from dptaucc.objective import contingency_table, relabel
from dptaucc.privacy import SeededSampler
from dptaucc.privacy.checks import (
    RecordingSampler,
    ScaledSampler,
    discrete_laplace_pvalue,
    neighbour_log_ratio_bounds,
)


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(11)
    X = rng.poisson(0.8, size=(60, 45)).astype(float)
    X[:20, :15] += rng.poisson(3, size=(20, 15))
    X[20:40, 15:30] += rng.poisson(3, size=(20, 15))
    return X


def _fit(X, seed, monkeypatch=None, **kwargs):
    """Fit with a recording sampler (and, given monkeypatch, a spy on the assignments)."""
    rec = RecordingSampler(SeededSampler(np.random.default_rng(seed)))
    calls = []
    if monkeypatch is not None:
        original = dp_mod.linear_exponential_mechanism

        def spy(profiles, *, weights, epsilon, **kw):
            calls.append((profiles.copy(), np.array(weights), epsilon))
            return original(profiles, weights=weights, epsilon=epsilon, **kw)

        monkeypatch.setattr(dp_mod, "linear_exponential_mechanism", spy)
    model = DPTauCC(random_state=rec, **kwargs).fit(X)
    return model, rec, calls


@pytest.mark.parametrize("eps,n_iterations,h", [(2.0, 4, 0.9), (1.0, 2, 0.5), (8.0, 1, 0.3)])
def test_every_table_call_draws_discrete_laplace_at_the_charged_scale(counts, eps,
                                                                       n_iterations, h):
    scale = 2 * n_iterations / ((1 - h) * eps)  # 1/ε_T, L1 sensitivity 1 (eq. 4.11)
    noise = []
    for seed in range(40):
        model, rec, _ = _fit(counts, seed, n_row_clusters=3, n_col_clusters=3, epsilon=eps,
                             n_iterations=n_iterations, h=h)
        draws = rec.of_kind("discrete_laplace")
        assert len(draws) == 2 * n_iterations
        assert all(d.scale == pytest.approx(scale, rel=1e-12) for d in draws)
        tables = [e for e in model.privacy_ledger_.entries if "laplace" in e.mechanism]
        assert [e.sensitivity for e in tables] == [1.0] * len(draws)
        noise.extend(np.concatenate([d.output.ravel() for d in draws]))
    assert discrete_laplace_pvalue(np.array(noise), scale) > 1e-4


def test_released_table_is_the_exact_table_plus_the_last_recorded_noise(counts):
    model, rec, _ = _fit(counts, 3, n_row_clusters=3, n_col_clusters=3, epsilon=4.0)
    r, k = relabel(model.dp_row_labels_)
    c, ell = relabel(model.column_labels_)
    exact = contingency_table(sp.csr_matrix(counts), r, c, k, ell)
    last = rec.of_kind("discrete_laplace")[-1].output
    np.testing.assert_array_equal(model.contingency_, np.maximum(exact + last, 0))
    assert model.contingency_.dtype == np.int64


def _range_sensitivity(weights):
    """max over coordinates d of the spread of W[:, d]: a neighbour adds one to one profile
    entry, which moves that object's utilities by the column W[:, d]."""
    return max(float(np.ptp(weights[:, d])) for d in range(weights.shape[1]))


@pytest.mark.parametrize("eps,n_iterations,h", [(2.0, 4, 0.9), (0.5, 3, 0.4)])
def test_every_assignment_samples_at_the_range_sensitivity_of_its_weights(
        counts, monkeypatch, eps, n_iterations, h):
    model, rec, calls = _fit(counts, 5, monkeypatch, n_row_clusters=3, n_col_clusters=3,
                             epsilon=eps, n_iterations=n_iterations, h=h)
    choices = rec.of_kind("choose")
    assert len(calls) == len(choices) == 2 * n_iterations
    eps_assign = h * eps / (2 * n_iterations)
    X = sp.csr_matrix(counts)
    for i, ((profiles, weights, epsilon), draw) in enumerate(zip(calls, choices, strict=True)):
        assert epsilon == pytest.approx(eps_assign, rel=1e-12)
        delta = max(_range_sensitivity(weights), dp_mod.SENSITIVITY_FLOOR)
        assert draw.scale == pytest.approx(delta / eps_assign, rel=1e-12)
        np.testing.assert_allclose(draw.inputs, np.asarray(profiles @ weights.T), rtol=1e-12)
        # the profiles are counts, so a one-cell neighbour moves one entry by exactly one
        dense = profiles.toarray() if sp.issparse(profiles) else profiles
        if i == 0:  # init: the columns of A over the rows
            np.testing.assert_array_equal(dense, counts.T)
        elif dense.shape[0] == X.shape[0]:  # rows over column clusters
            np.testing.assert_allclose(dense.sum(axis=1), counts.sum(axis=1))
        else:  # columns over row clusters
            np.testing.assert_allclose(dense.sum(axis=1), counts.sum(axis=0))
    expo = [e for e in model.privacy_ledger_.entries if e.mechanism == "exponential"]
    assert [e.noise_scale for e in expo] == pytest.approx([d.scale for d in choices])


def _released_total_at_most(X, threshold, runs, seed0, broken=False):
    """Fits with one row and one column cluster, I = 1, h = ½ and ε = 4: the released 1×1
    table's mechanism runs at its own ε_T = 1. Counts {T̃ <= threshold}."""
    hits = 0
    for s in range(runs):
        state = ScaledSampler(seed0 + s, 0.5) if broken else seed0 + s
        model = DPTauCC(1, 1, epsilon=4.0, n_iterations=1, h=0.5, random_state=state).fit(X)
        hits += int(model.contingency_[0, 0] <= threshold)
    return hits


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.slow
def test_released_table_neighbours_at_the_tables_own_epsilon(broken):
    """D and D' = D + e_uv: P(T̃ <= N | D) / P(T̃ <= N | D') = e^{ε_T} = e exactly for the
    discrete Laplace (true log ratio 1; 2 with half the noise, which the test must flag)."""
    D = np.array([[3, 0, 2], [1, 4, 0]], dtype=float)
    D2 = D.copy()
    D2[1, 2] += 1
    runs, total = 3000, int(D.sum())
    ha = _released_total_at_most(D, total, runs, 0, broken)
    hb = _released_total_at_most(D2, total, runs, 50_000, broken)
    lower, upper = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    if broken:
        assert lower > 1.0
    else:
        assert lower <= 1.0 <= upper


def test_secure_path_fits_with_the_same_ledger_and_integer_tables(counts):
    seeded = DPTauCC(3, 3, epsilon=2.0, random_state=0).fit(counts)
    secure = DPTauCC(3, 3, epsilon=2.0, secure=True).fit(counts)
    assert secure.contingency_.dtype == np.int64
    strip = [(e.step, e.mechanism, e.epsilon, e.composition)
             for e in seeded.privacy_ledger_.entries]
    assert [(e.step, e.mechanism, e.epsilon, e.composition)
            for e in secure.privacy_ledger_.entries] == strip
    assert secure.epsilon_spent_ == pytest.approx(2.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(secure=True, random_state=0), "random_state"),
    (dict(secure=True, mode="paper"), "corrected mode"),
    (dict(secure="yes"), "'secure' parameter of DPTauCC must be an instance of 'bool'"),
])
def test_secure_path_refuses_seeds_and_paper_mode(counts, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        DPTauCC(2, 2, **kwargs).fit(counts)


def test_infinite_epsilon_is_refused_in_corrected_mode(counts):
    with pytest.raises(ValueError, match="epsilon=inf releases the data without noise"):
        _fit(counts, 0, n_row_clusters=3, n_col_clusters=3, epsilon=math.inf)


def test_infinite_epsilon_draws_no_noise_in_paper_mode(counts):
    model, rec, _ = _fit(counts, 0, n_row_clusters=3, n_col_clusters=3, epsilon=math.inf,
                         mode="paper")
    assert all(d.scale == 0.0 for d in rec.draws)
    assert all((d.output == 0).all() for d in rec.of_kind("discrete_laplace"))


def test_corrected_assignment_floors_a_tiny_sensitivity_at_1e_minus_9():
    """Weights whose columns spread by 1e-13: Δ is raised to the floor 1e-9 (more noise,
    never less), and the choice samples at that scale."""
    from dptaucc.privacy import PrivacyLedger

    weights = np.array([[1.0, 2.0], [1.0 + 1e-13, 2.0]])
    ledger = PrivacyLedger()
    rec = RecordingSampler(0)
    dp_mod._assign_corrected(np.ones((4, 2)), weights, 0.5, rec, ledger, "s")
    assert ledger.entries[0].sensitivity == 1e-9
    assert rec.draws[0].scale == pytest.approx(1e-9 / 0.5)
