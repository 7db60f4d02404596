"""FastTauCC and DPTauCC: behaviour, modes, determinism, sparse/dense, bad input."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.datasets.synthetic import make_paper_biclusters
from sklearn.datasets import make_biclusters
from sklearn.metrics import normalized_mutual_info_score as nmi

import dptaucc.dp_taucc as dp_mod
import dptaucc.objective as obj_mod
from dptaucc import DPTauCC, FastTauCC
from dptaucc.objective import contingency_table, tau_hat


@pytest.fixture(scope="module")
def planted():
    """Three planted block co-clusters, low noise, made non-negative integer counts."""
    X, rows, cols = make_biclusters((600, 400), 3, noise=1.0, minval=5, maxval=20,
                                    shuffle=True, random_state=0)
    X = np.clip(np.round(X), 0, None)
    return sp.csr_matrix(X), rows.argmax(axis=0), cols.argmax(axis=0)


@pytest.fixture(scope="module")
def small_counts():
    rng = np.random.default_rng(11)
    X = rng.poisson(0.8, size=(60, 45)).astype(float)
    X[:20, :15] += rng.poisson(3, size=(20, 15))
    X[20:40, 15:30] += rng.poisson(3, size=(20, 15))
    return X


# ----------------------------------------------------------------- FastTauCC
def test_fast_taucc_recovers_planted_biclusters(planted):
    X, rl, cl = planted
    # Fast-τCC is meant to start from an over-estimate of K, L and merge (paper §3.2).
    model = FastTauCC(n_row_clusters=10, n_col_clusters=10, random_state=0).fit(X)
    assert nmi(rl, model.row_labels_) >= 0.95
    assert nmi(cl, model.column_labels_) >= 0.95
    assert model.converged_ and model.n_row_clusters_ == 3 and model.n_col_clusters_ == 3
    T = contingency_table(X, model.row_labels_, model.column_labels_, 3, 3)
    np.testing.assert_allclose(model.contingency_, T)
    assert model.tau_hat_rc_ == pytest.approx(tau_hat(T)[0])
    assert 0 < model.tau_rc_ <= 1 and model.tau_rc_ > model.tau_hat_rc_
    assert model.row_labels_private_ is False
    np.testing.assert_array_equal(model.evaluation_row_labels(X), model.row_labels_)
    assert model.rows_.shape == (3, X.shape[0]) and model.columns_.sum() == X.shape[1]


def test_fast_taucc_move_matches_dense_reference_formulas(small_counts):
    """One row pass equals the reference's dense Σ = P C (Q∘U − V)ᵀ argmax (eq. A.1)."""
    from dptaucc.fast_taucc import _move, _row_w
    from dptaucc.objective import aggregate_columns

    rng = np.random.default_rng(0)
    A = small_counts
    P = A / A.sum()
    r = rng.integers(0, 4, size=A.shape[0])
    c = rng.integers(0, 3, size=A.shape[1])
    R, C = np.eye(4)[r], np.eye(3)[c]
    Q = R.T @ P @ C
    sigma = P @ C @ (Q / Q.sum(axis=0) - Q.sum(axis=1)[:, None]).T
    expected = np.argmax(sigma, axis=1)
    got, _, _, _ = _move(aggregate_columns(sp.csr_matrix(A), c, 3), r, 4, _row_w, 1)
    # one pass, then relabel: compare partitions
    assert nmi(expected, got) == pytest.approx(1.0)


def test_fast_taucc_accepts_fractional_input(small_counts):
    model = FastTauCC(3, 3, random_state=0).fit(small_counts / 7.0)
    assert model.row_labels_.shape == (small_counts.shape[0],)


# ------------------------------------------------------------------- DPTauCC
@pytest.mark.parametrize("mode", ["corrected", "paper"])
@pytest.mark.parametrize("n_iterations,h", [(1, 0.5), (4, 0.9), (7, 0.1), (10, 0.33)])
def test_ledger_spends_exactly_epsilon(small_counts, mode, n_iterations, h):
    eps = 0.7
    model = DPTauCC(3, 3, epsilon=eps, n_iterations=n_iterations, h=h, mode=mode,
                    random_state=1).fit(small_counts)
    ledger = model.privacy_ledger_
    private = [e for e in ledger.entries if e.composition != "non-private"]
    assert len(private) == 4 * n_iterations
    assert abs(math.fsum(e.epsilon for e in private) - eps) <= 1e-12
    assert abs(ledger.epsilon_mechanisms - eps) <= 1e-12 and model.delta_spent_ == 0.0
    # paper mode reads the raw data for its final labels (Q7): no finite ε describes it
    assert model.epsilon_spent_ == (pytest.approx(eps, abs=1e-12) if mode == "corrected"
                                    else math.inf)
    tables = [e for e in private if "laplace" in e.mechanism]
    assert len(tables) == 2 * n_iterations
    expected = "discrete-laplace" if mode == "corrected" else "laplace-float"
    for e in tables:  # scale 1/ε_T = 2I/((1-h)ε), sensitivity 1 (eq. 4.11)
        assert e.mechanism == expected and e.sensitivity == 1.0
        assert e.noise_scale == pytest.approx(2 * n_iterations / ((1 - h) * eps), rel=1e-12)
    expo = [e for e in private if e.mechanism == "exponential"]
    assert all(e.composition == "parallel" for e in expo)
    assert all(e.epsilon == pytest.approx(h * eps / (2 * n_iterations)) for e in expo)
    assert all(e.noise_scale == pytest.approx(e.sensitivity / e.epsilon) for e in expo)


def test_modes_contract(small_counts):
    corrected = DPTauCC(3, 3, epsilon=2.0, random_state=0).fit(small_counts)
    assert corrected.row_labels_private_ is True
    assert corrected.privacy_ledger_.end_to_end_dp
    np.testing.assert_array_equal(corrected.row_labels_, corrected.dp_row_labels_)
    K, L = corrected.contingency_.shape
    assert corrected.n_row_clusters_ == K and corrected.n_col_clusters_ == L
    assert (corrected.contingency_ >= 0).all()
    assert (corrected.tau_hat_rc_, corrected.tau_hat_cr_) == tau_hat(corrected.contingency_)
    ev = corrected.evaluation_row_labels(small_counts)
    assert ev.shape == (60,) and ev.max() < K

    paper = DPTauCC(3, 3, epsilon=2.0, mode="paper", random_state=0).fit(small_counts)
    assert paper.row_labels_private_ is False
    assert paper.privacy_ledger_.non_private_steps == ["final/row-assignment"]
    assert not paper.privacy_ledger_.end_to_end_dp
    np.testing.assert_array_equal(paper.evaluation_row_labels(small_counts), paper.row_labels_)
    assert paper.n_row_clusters_ == paper.row_labels_.max() + 1


@pytest.mark.parametrize("mode,first_is_zero", [("paper", True), ("corrected", False)])
def test_first_table_source(small_counts, monkeypatch, mode, first_is_zero):
    """Paper Q1: the first table comes from an all-zero row incidence; corrected uses R⁽⁰⁾."""
    seen = []
    name = "float_laplace_mechanism" if mode == "paper" else "discrete_laplace_mechanism"
    original = getattr(dp_mod, name)

    def spy(values, *args, **kwargs):
        seen.append(np.array(values, copy=True))
        return original(values, *args, **kwargs)

    monkeypatch.setattr(dp_mod, name, spy)
    DPTauCC(3, 3, epsilon=1.0, mode=mode, random_state=0).fit(small_counts)
    assert len(seen) == 8
    assert (np.all(seen[0] == 0)) == first_is_zero
    assert seen[0].shape[0] == 3
    assert seen[0].sum() in (0.0, small_counts.sum())
    assert all(s.sum() == small_counts.sum() for s in seen[1:])


def test_nan_sensitivity_gives_uniform_assignment():
    """Paper Q4: NaN Δ -> uniform assignment, still charged."""
    from dptaucc.privacy import PrivacyLedger, SeededSampler

    ledger = PrivacyLedger()
    profiles = np.tile([5.0, 0.0, -5.0], (30000, 1))
    weights, raw = np.eye(3), np.full((3, 3), np.nan)
    labels = dp_mod._assign_paper(profiles, weights, raw, 1.0,
                                  SeededSampler(np.random.default_rng(0)), ledger, "s")
    freq = np.bincount(labels, minlength=3) / labels.size
    np.testing.assert_allclose(freq, 1 / 3, atol=0.015)
    assert ledger.epsilon_spent == 1.0 and "Q4" in ledger.entries[0].note


@pytest.mark.slow
def test_huge_epsilon_close_to_fast_taucc(planted):
    """With ε very large DP-τCC behaves like Fast-τCC started from the same K0 = L0 = 3.

    Both sometimes merge two planted clusters (a local optimum of τ̂), so we compare the mean
    NMI over 16 seeds, on rows (paper protocol) and columns.
    """
    X, rl, cl = planted
    seeds = range(16)
    fast = [FastTauCC(3, 3, random_state=s).fit(X) for s in seeds]
    fast_rows = np.mean([nmi(rl, f.row_labels_) for f in fast])
    fast_cols = np.mean([nmi(cl, f.column_labels_) for f in fast])
    for mode in ("corrected", "paper"):
        dp = [DPTauCC(3, 3, epsilon=1e6, mode=mode, random_state=s).fit(X) for s in seeds]
        assert np.mean([nmi(rl, d.evaluation_row_labels(X)) for d in dp]) >= fast_rows - 0.1
        assert np.mean([nmi(cl, d.column_labels_) for d in dp]) >= fast_cols - 0.1


def test_infinite_epsilon_reaches_a_fast_taucc_fixed_point(planted):
    """Without noise (every scale multiplied by 0, as ε = ∞ would give; corrected mode refuses
    ε = ∞ itself): each iteration is one exact Fast-τCC row move and column move."""
    from dptaucc.fast_taucc import _col_w_t, _move, _row_w
    from dptaucc.objective import aggregate_columns, aggregate_rows
    from dptaucc.privacy.checks import ScaledSampler

    X, _, _ = planted
    dp = DPTauCC(3, 3, n_iterations=15, random_state=ScaledSampler(0, factor=0.0)).fit(X)
    r, c = dp.row_labels_, dp.column_labels_
    K, L = dp.contingency_.shape
    np.testing.assert_allclose(dp.contingency_, contingency_table(X, r, c, K, L))
    _, _, _, moved_r = _move(aggregate_columns(X, c, L), r, K, _row_w, 1)
    _, _, _, moved_c = _move(aggregate_rows(X, r, K).T, c, L, _col_w_t, 1)
    assert not moved_r and not moved_c


def test_small_epsilon_is_worse_than_large(planted):
    X, rl, _ = planted
    scores = {eps: np.mean([nmi(rl, DPTauCC(3, 3, epsilon=eps, random_state=s).fit(X)
                                .row_labels_) for s in range(3)]) for eps in (1e-3, 1e3)}
    assert scores[1e3] > scores[1e-3] + 0.5


@pytest.mark.parametrize("mode", ["corrected", "paper"])
def test_same_seed_same_result_and_sparse_equals_dense(small_counts, mode):
    kw = dict(n_row_clusters=3, n_col_clusters=3, epsilon=1.0, mode=mode)
    a = DPTauCC(**kw, random_state=5).fit(small_counts)
    b = DPTauCC(**kw, random_state=5).fit(sp.csr_matrix(small_counts))
    c = DPTauCC(**kw, random_state=5).fit(sp.coo_matrix(small_counts).astype(np.int32))
    for other in (b, c):
        np.testing.assert_array_equal(a.row_labels_, other.row_labels_)
        np.testing.assert_array_equal(a.column_labels_, other.column_labels_)
        np.testing.assert_array_equal(a.contingency_, other.contingency_)
    d = DPTauCC(**kw, random_state=6).fit(small_counts)
    assert not np.array_equal(a.contingency_, d.contingency_)


def test_fast_sparse_equals_dense_and_seeded(small_counts):
    a = FastTauCC(4, 4, random_state=3).fit(small_counts)
    b = FastTauCC(4, 4, random_state=3).fit(sp.csr_matrix(small_counts))
    np.testing.assert_array_equal(a.row_labels_, b.row_labels_)
    np.testing.assert_array_equal(a.column_labels_, b.column_labels_)


@pytest.mark.parametrize("mode", ["corrected", "paper"])
def test_a_full_matrix_fits_exactly_as_on_the_sparse_path(monkeypatch, mode):
    """The supplement's filled synthetic matrix (every cell stored) is aggregated by BLAS
    products; whole counts give the sparse kernels' sums, so every output is the same."""
    X = make_paper_biclusters(50, n_rows=150).X
    assert obj_mod._full_array(X, 3) is not None  # the dense path is taken

    def fits():
        out = []
        for seed, eps in [(0, 0.5), (1, 3.0), (2, 50.0)]:
            m = DPTauCC(3, 3, epsilon=eps, mode=mode, random_state=seed).fit(X)
            f = FastTauCC(3, 3, random_state=seed).fit(X)
            out.append([m.row_labels_, m.column_labels_, m.contingency_, m.tau_rc_,
                        m.evaluation_row_labels(X), m.privacy_ledger_.to_records(),
                        f.row_labels_, f.column_labels_])
        return out

    dense = fits()
    monkeypatch.setattr(obj_mod, "DENSE_MAX_LABELS", 0)  # the scatter-add kernels
    for a, b in zip(dense, fits(), strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


# ----------------------------------------------------------------- bad input
GOOD = np.array([[1, 0, 2], [0, 3, 1], [4, 0, 0]], dtype=float)


@pytest.mark.parametrize("X,match", [
    (np.array([[1.0, -1.0], [0.0, 2.0]]), "Negative values in data passed to X"),
    (np.array([[1.0, np.nan], [0.0, 2.0]]), "NaN"),
    (np.array([[1.0, np.inf], [0.0, 2.0]]), "infinity"),
    (np.zeros((0, 3)), r"0 sample\(s\)"),
    (np.zeros((3, 0)), r"0 feature\(s\)"),
])
@pytest.mark.parametrize("cls", [DPTauCC, FastTauCC])
def test_bad_matrices(cls, X, match):
    with pytest.raises(ValueError, match=match):
        cls(1, 1).fit(X)


def test_fractional_counts_only_for_fast():
    X = GOOD + 0.5
    with pytest.raises(ValueError, match="fractional"):
        DPTauCC(2, 2).fit(X)
    FastTauCC(2, 2, random_state=0).fit(X)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_row_clusters=4), r"n_row_clusters=4 is larger than the number of rows \(n_samples=3"),
    (dict(n_col_clusters=5), r"n_col_clusters=5 is larger than the number of columns \(n_features"),
    (dict(n_row_clusters=0), r"'n_row_clusters' parameter .* range \[1, inf\)"),
    (dict(epsilon=0.0), r"'epsilon' parameter .* a float > 0 \(finite in corrected mode"),
    (dict(epsilon=-1.0), r"'epsilon' parameter .* a float > 0 \(finite in corrected mode"),
    (dict(h=0.0), r"'h' parameter .* range \(0.0, 1.0\)"),
    (dict(h=1.0), r"'h' parameter .* range \(0.0, 1.0\)"),
    (dict(n_iterations=0), r"'n_iterations' parameter .* range \[1, inf\)"),
    (dict(mode="fast"), r"'mode' parameter .* among \{'\w+', '\w+'\}"),
])
def test_bad_parameters(kwargs, match):
    params = dict(n_row_clusters=2, n_col_clusters=2) | kwargs
    with pytest.raises(ValueError, match=match):
        DPTauCC(**params).fit(GOOD)


def test_bad_parameter_types():
    with pytest.raises(TypeError, match="'n_iterations' parameter of DPTauCC must be an int"):
        DPTauCC(2, 2, n_iterations=2.5).fit(GOOD)
    with pytest.raises(TypeError, match="'max_iter' parameter of FastTauCC must be an int"):
        FastTauCC(2, 2, max_iter="10").fit(GOOD)
    with pytest.raises(ValueError, match="n_col_clusters=4 is larger"):
        FastTauCC(2, 4).fit(GOOD)


def test_evaluation_labels_check_shape(small_counts):
    model = DPTauCC(2, 2, random_state=0).fit(small_counts)
    with pytest.raises(ValueError, match="X has 10 features, but DPTauCC is expecting"):
        model.evaluation_row_labels(small_counts[:, :10])


@pytest.mark.parametrize("cls", [DPTauCC, FastTauCC])
def test_all_zero_matrix_is_accepted(cls):
    """An all-zero matrix is a valid input: refusing it would reveal that every count is 0."""
    model = cls(2, 2, random_state=0).fit(np.zeros((5, 4)))
    assert model.row_labels_.shape == (5,) and model.column_labels_.shape == (4,)
    assert (np.asarray(model.contingency_) >= 0).all()


def test_corrected_sensitivities_are_floored(small_counts):
    model = DPTauCC(3, 3, epsilon=1.0, random_state=0).fit(small_counts)
    expo = [e for e in model.privacy_ledger_.entries if e.mechanism == "exponential"]
    assert all(e.sensitivity >= dp_mod.SENSITIVITY_FLOOR for e in expo)
    assert all(0 < e.sensitivity <= 2 for e in expo)


def test_paper_final_step_rules():
    """Q7: argmax with label 0 when the best utility is <= 0; a zero column of T̃ -> NaN ->
    every row 0, then 1 % (>= 1) of the rows forced into cluster 1."""
    X = sp.csr_matrix(np.array([[5, 0, 0], [0, 0, 4], [0, 0, 0], [0, 3, 0]], dtype=float))
    c = np.array([0, 1, 1])
    T = np.array([[8.0, 1.0], [1.0, 9.0]])
    labels = dp_mod.paper_final_row_labels(X, c, T, np.random.default_rng(0))
    # row 2 is empty: utility 0 -> label 0, which it shares with row 0
    assert labels[0] == labels[2] and labels[1] == labels[3] != labels[0]
    T_zero_col = np.array([[8.0, 0.0], [1.0, 0.0]])
    labels = dp_mod.paper_final_row_labels(X, c, T_zero_col, np.random.default_rng(0))
    assert np.bincount(labels).tolist() == [3, 1]


def test_paper_evaluation_on_the_frozen_fitted_matrix_reuses_the_fit_labels(small_counts,
                                                                          monkeypatch):
    from dptaucc.validation import freeze_count_matrix

    X = freeze_count_matrix(small_counts)
    model = DPTauCC(3, 3, epsilon=2.0, mode="paper", random_state=4).fit(X)
    recomputed = model.evaluation_row_labels(sp.csr_matrix(small_counts))  # not frozen
    assert np.array_equal(recomputed, model.row_labels_)

    calls = []
    real = dp_mod.paper_final_row_labels
    monkeypatch.setattr(dp_mod, "paper_final_row_labels",
                        lambda *args: calls.append(1) or real(*args))
    reused = model.evaluation_row_labels(X)
    assert calls == [] and np.array_equal(reused, model.row_labels_)
    assert reused is not model.row_labels_  # a copy: the caller may change it
    other = np.asarray(small_counts.todense() if sp.issparse(small_counts) else small_counts)
    other = freeze_count_matrix(other[::-1].copy())  # another frozen matrix: recomputed
    assert np.array_equal(model.evaluation_row_labels(other), real(
        other, model.column_labels_, model.contingency_,
        np.random.default_rng(model._final_seed)))
    assert calls == [1]
