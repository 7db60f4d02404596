"""FCCM, collaborative FCCM (Honda et al. 2015) with the masked secure sum, site-wise runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.fccm import (
    FCCM,
    SMC_NOTE,
    CollaborativeFCCM,
    MessageLog,
    fccm_iterate,
    fccm_objective,
    init_memberships,
    make_planted_coclusters,
    masked_secure_sum,
    sitewise_fccm,
    split_columns,
    typicality_correlation,
)
from dptaucc.baselines.fccm.collaborative import ANALYST
from dptaucc.baselines.fccm.core import (
    item_aggregates,
    item_update,
    object_aggregates,
    object_update,
)
from dptaucc.baselines.fccm.secure_sum import decode_fixed, draw_zero_sum_masks, encode_fixed
from scipy.special import xlogy
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import normalized_mutual_info_score as nmi

from dptaucc.objective import contingency_table
from dptaucc.privacy import attributes_of_kind, fitted_attributes, undeclared_attributes

# The paper's §6.1 setting: 100 objects × 90 binary items, 4 co-clusters, items over 4 sites.
# One initialisation per trial, as in the paper's Table 1.
TOY = dict(lambda_u=0.01, lambda_w=6.0, normalize=None, n_init=1)
COLLAB_TOY = dict(lambda_u=0.04, lambda_w=6.0, normalize=None, n_sites=4, column_split="random",
                  n_init=1)


def toy(seed=0, **kw):
    return make_planted_coclusters(random_state=seed, **kw)


def poisson_counts(seed=0, n=60, m=40):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(3), n // 3)
    cols = np.repeat(np.arange(3), -(-m // 3))[:m]
    lam = np.where(rows[:, None] == cols[None, :], 2.0, 0.3)
    return sp.csr_matrix(rng.poisson(lam).astype(float)), rows, cols


# --------------------------------------------------------------------------- core FCCM
def test_objective_never_decreases_and_constraints_hold():
    X, _, _ = toy(1)
    rng = np.random.default_rng(0)
    U = init_memberships(rng, 4, X.shape[0])
    groups = split_columns(X.shape[1], 3)
    lam_u, lam_w = 0.05, 4.0
    W = np.empty((4, X.shape[1]))
    for g in groups:
        W[:, g] = item_update(item_aggregates(X[:, g], U), lam_w)
    values = [fccm_objective(X, U, W, lam_u, lam_w, groups)]
    for _ in range(15):
        U = object_update(object_aggregates(X, W), lam_u)
        values.append(fccm_objective(X, U, W, lam_u, lam_w, groups))
        for g in groups:
            W[:, g] = item_update(item_aggregates(X[:, g], U), lam_w)
        values.append(fccm_objective(X, U, W, lam_u, lam_w, groups))
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[:-1]).max())
    assert values[-1] > values[0]
    np.testing.assert_allclose(U.sum(axis=0), 1.0)
    for g in groups:
        np.testing.assert_allclose(W[:, g].sum(axis=1), 1.0)


def test_objective_formula_on_dense_example():
    rng = np.random.default_rng(3)
    R = rng.random((5, 4))
    U = rng.dirichlet(np.ones(2), size=5).T
    W = rng.dirichlet(np.ones(4), size=2)
    expected = (np.einsum("ci,cj,ij->", U, W, R) - 0.3 * xlogy(U, U).sum()
                - 2.0 * xlogy(W, W).sum())
    assert fccm_objective(sp.csr_matrix(R), U, W, 0.3, 2.0) == pytest.approx(expected)


def test_whole_data_fccm_recovers_planted_coclusters():
    X, r, c = toy(2, p_in=0.7)
    m = FCCM(4, random_state=0, **dict(TOY, n_init=3)).fit(X)
    assert nmi(r, m.row_labels_) > 0.95
    assert nmi(c, m.column_labels_) > 0.9
    assert m.memberships_.shape == (100, 4) and m.typicalities_.shape == (4, 90)
    np.testing.assert_allclose(m.memberships_.sum(axis=1), 1.0)
    np.testing.assert_allclose(m.typicalities_.sum(axis=1), 1.0)


# --------------------------------------------------------------------------- secure sum
def test_zero_sum_masks_cancel_modulo_2_64():
    rng = np.random.default_rng(0)
    masks = draw_zero_sum_masks(rng, 5, (3, 7))
    total = np.zeros((3, 7), dtype=np.uint64)
    for e in masks:
        total += e
    assert not total.any()
    assert all(e.dtype == np.uint64 for e in masks)


def test_fixed_point_roundtrip_and_overflow():
    x = np.array([-3.25, 0.0, 1e-9, 12345.678])
    np.testing.assert_allclose(decode_fixed(encode_fixed(x, 40), 40), x, atol=2.0 ** -40)
    with pytest.raises(ValueError, match="overflows"):
        encode_fixed(np.array([2.0 ** 30]), 40, headroom=3)
    with pytest.raises(ValueError, match="not finite"):
        encode_fixed(np.array([np.nan]), 40)


def test_masked_shares_look_random_but_sum_exactly():
    rng = np.random.default_rng(1)
    names = ["site0", "site1", "site2", "site3"]
    values = {t: rng.integers(0, 50, size=(3, 400)).astype(float) for t in names}
    log = MessageLog(store_payloads=True)
    total = masked_secure_sum(values, "site0", "site1", np.random.default_rng(7), log, 1,
                              "x", 20)
    np.testing.assert_array_equal(total, sum(values.values()))  # exact for integers
    shares = {m.sender: m.payload for m in log if m.kind == "x:share"}
    masks = {m.receiver: m.payload for m in log if m.kind == "x:mask"}
    assert set(shares) == {"site0", "site2", "site3"} and set(masks) == {"site1", "site2", "site3"}
    assert all(m.receiver == "site1" for m in log if m.kind == "x:share")
    assert all(m.sender == "site0" for m in log if m.kind == "x:mask")
    for t, share in shares.items():
        enc = encode_fixed(values[t], 20)
        assert not np.any(share == enc)
        # the encoded values are small (top bit always 0); the shares' bits are fair coins
        top = (share >> np.uint64(63)).astype(float)
        low = (share >> np.uint64(40)) & np.uint64(1)
        assert abs(top.mean() - 0.5) < 0.05 and abs(low.astype(float).mean() - 0.5) < 0.05
        assert not np.any(enc >> np.uint64(63))
    # the aggregator's total: received shares + its own masked value; masks cancel exactly
    own = encode_fixed(values["site1"], 20) + masks["site1"]
    acc = own.copy()
    for share in shares.values():
        acc += share
    expected = np.zeros_like(acc)
    for t in names:
        expected += encode_fixed(values[t], 20)
    np.testing.assert_array_equal(acc, expected)


def test_secure_sum_rejects_two_parties_and_same_roles():
    log = MessageLog()
    two = {"a": np.zeros(2), "b": np.zeros(2)}
    with pytest.raises(ValueError, match="at least 3"):
        masked_secure_sum(two, "a", "b", np.random.default_rng(0), log, 0, "x", 10)
    three = {"a": np.zeros(2), "b": np.zeros(2), "c": np.zeros(2)}
    with pytest.raises(ValueError, match="different"):
        masked_secure_sum(three, "a", "a", np.random.default_rng(0), log, 0, "x", 10)


# --------------------------------------------------------------------------- message log audit
INTER_SITE_KINDS = {"memberships", "row_totals", "keep_current_run", "row_labels"} | {
    f"{k}:{part}" for k in ("object_aggregates", "objective", "row_totals", "contingency")
    for part in ("mask", "share")}
ANALYST_KINDS = {"memberships", "typicalities", "contingency"}


def _slices(payload: np.ndarray, length: int):
    """Every 1-D slice of ``payload`` of the given length, as rows of a 2-D array."""
    a = np.atleast_2d(payload)
    out = [a[i] for i in range(a.shape[0]) if a.shape[1] == length]
    out += [a[:, j] for j in range(a.shape[1]) if a.shape[0] == length]
    return out


@pytest.mark.parametrize("normalize", [None, "l1"])
@pytest.mark.slow
def test_no_raw_block_leaves_its_site(normalize):
    X, _, _ = toy(3)
    params = dict(COLLAB_TOY, normalize=normalize)
    if normalize == "l1":
        params.update(lambda_u=4 * 0.01 / 90, lambda_w=6 * 100 / 90)
    model = CollaborativeFCCM(4, store_payloads=True, random_state=5, **params).fit(X)
    log = model.message_log_
    n, C = X.shape[0], 4
    dense = X.toarray()
    blocks = [dense[:, cols] for cols in model.site_columns_]
    names = [f"site{t}" for t in range(4)]
    assert {m.kind for m in log} <= INTER_SITE_KINDS | ANALYST_KINDS
    for msg in log:
        assert msg.sender in names and msg.sender != msg.receiver
        if msg.receiver == ANALYST:
            assert msg.kind in ANALYST_KINDS
            continue
        assert msg.receiver in names and msg.kind in INTER_SITE_KINDS
        # between sites only aggregates over objects travel: C×n, n, C×C or a scalar flag
        assert msg.shape in {(C, n), (n,), (C, C), (1,)}, (msg.kind, msg.shape)
    # no payload carries a raw column (object profile of an item) in the clear or encoded
    raw_cols = np.hstack(blocks).T  # every item's object profile, m × n
    encoded = encode_fixed(raw_cols, model.fractional_bits)
    for msg in log:
        for sl in _slices(msg.payload, n):
            assert not np.any((raw_cols == sl.astype(float)).all(axis=1)), msg.kind
            assert not np.any((encoded == sl).all(axis=1)), msg.kind


def test_each_share_is_the_sites_aggregate_under_a_mask():
    """A site's messages are functions of A^t = W^t R^tᵀ only (recomputed from the public U)."""
    X, _, _ = toy(4)
    model = CollaborativeFCCM(4, store_payloads=True, random_state=2, **COLLAB_TOY).fit(X)
    log, bits = model.message_log_, model.fractional_bits
    broadcasts = {}
    for msg in log:
        if msg.kind == "memberships" and msg.receiver == "site0":
            broadcasts[msg.round] = msg.payload
    rounds = sorted(broadcasts)
    checked = 0
    for msg in log:
        if msg.kind != "object_aggregates:share" or msg.sender in ("site0", "site1"):
            continue
        t = int(msg.sender[4:])
        mask = next(m.payload for m in log if m.kind == "object_aggregates:mask"
                    and m.round == msg.round and m.receiver == msg.sender)
        revealed = decode_fixed(msg.payload - mask, bits)
        U_prev = broadcasts[max(r for r in rounds if r < msg.round)]
        R_t = X[:, model.site_columns_[t]]
        A_t = object_aggregates(R_t, item_update(item_aggregates(R_t, U_prev), 6.0))
        np.testing.assert_allclose(revealed, A_t, atol=1e-10)
        checked += 1
    assert checked >= 2 * (model.n_iter_)  # sites 2 and 3, every iteration
    # each broadcast U is the softmax of the securely summed aggregates
    U_last = broadcasts[rounds[-1]]
    np.testing.assert_allclose(U_last.T, model.memberships_)


def test_masks_do_not_depend_on_the_data():
    X, _, _ = toy(5)
    Y, _, _ = toy(6)
    a = CollaborativeFCCM(4, random_state=9, **COLLAB_TOY).fit(X).message_log_
    b = CollaborativeFCCM(4, random_state=9, **COLLAB_TOY).fit(Y).message_log_
    masks_a = [m.digest for m in a if m.kind == "object_aggregates:mask" and m.round == 2]
    masks_b = [m.digest for m in b if m.kind == "object_aggregates:mask" and m.round == 2]
    shares_a = [m.digest for m in a if m.kind == "object_aggregates:share" and m.round == 2]
    shares_b = [m.digest for m in b if m.kind == "object_aggregates:share" and m.round == 2]
    assert masks_a and masks_a == masks_b
    assert set(shares_a).isdisjoint(shares_b)


# --------------------------------------------------------------------------- equivalence
def _check_same_as_grouped(model, R, inits, lam_u, lam_w, max_iter):
    runs = [fccm_iterate(R, U0, lam_u, lam_w, max_iter=max_iter, tol=1e-7,
                         column_groups=model.site_columns_) for U0 in inits]
    best = max(r.objective for r in runs)
    # restarts that reach the same optimum up to a label permutation tie within round-off:
    # the protocol may keep any of them, so compare with the one it kept
    ties = [r for r in runs if r.objective >= best - 1e-9 * abs(best)]
    ref = min(ties, key=lambda r: np.abs(r.memberships.T - model.memberships_).max())
    assert model.n_iter_ == ref.n_iter
    np.testing.assert_allclose(model.memberships_, ref.memberships.T, atol=1e-6)
    np.testing.assert_allclose(model.typicalities_, ref.typicalities, atol=1e-9)
    np.testing.assert_array_equal(model.row_labels_, ref.memberships.argmax(axis=0))
    assert model.objective_ == pytest.approx(best, rel=1e-6)
    return runs


@pytest.mark.parametrize("normalize", [None, "l1"])
def test_collaborative_equals_centralised_fccm_with_site_constraints(normalize):
    """Same init: the protocol computes the whole-data FCCM with per-site item constraints.

    (Not the unconstrained whole-data FCCM: the paper's §5.2 notes the per-site normalisation
    of W^t changes the model; that gap is measured in the next tests.)
    """
    X, _, _ = poisson_counts(1)
    lam_u, lam_w = (0.05, 3.0) if normalize is None else (0.002, 1.0)
    model = CollaborativeFCCM(3, n_sites=3, lambda_u=lam_u, lambda_w=lam_w,
                              normalize=normalize, column_split="random", max_iter=200,
                              n_init=1, random_state=11).fit(X)
    U0 = init_memberships(np.random.default_rng(11), 3, X.shape[0])  # the fit's first draw
    R = X if normalize is None else sp.csr_matrix(X.multiply(1.0 / X.sum(axis=1)))
    _check_same_as_grouped(model, R, [U0], lam_u, lam_w, 200)


def test_collaborative_keeps_the_best_restart():
    X, _, _ = toy(0)
    model = CollaborativeFCCM(4, random_state=5, **dict(COLLAB_TOY, n_init=3)).fit(X)
    rng = np.random.default_rng(5)
    inits = [init_memberships(rng, 4, X.shape[0]) for _ in range(3)]
    runs = _check_same_as_grouped(model, X, inits, 0.04, 6.0, 300)
    objectives = [r.objective for r in runs]
    assert max(objectives) - min(objectives) > 1.0  # restarts reach different optima
    assert runs[-1].objective < max(objectives) - 1.0  # so "keep the last" would be wrong


@pytest.mark.slow
def test_collaborative_matches_whole_data_far_better_than_site_wise():
    """Honda et al. §6.1, Table 1: correlation with whole-data item memberships, 10 trials."""
    corr_co, corr_sw, agree_co, agree_sw = [], [], [], []
    for trial in range(10):
        X, _, _ = toy(100 + trial)
        whole = FCCM(4, random_state=trial, **TOY).fit(X)
        co = CollaborativeFCCM(4, random_state=trial, **COLLAB_TOY).fit(X)
        sw = sitewise_fccm(X, 4, n_sites=4, column_split="random", random_state=trial, **TOY)
        assert all(np.array_equal(a, b) for a, b in zip(co.site_columns_, sw.site_columns,
                                                         strict=True))
        corr_co.append(np.mean([typicality_correlation(co.typicalities_[:, c],
                                                       whole.typicalities_[:, c])
                                for c in co.site_columns_]))
        corr_sw.append(np.mean([typicality_correlation(W, whole.typicalities_[:, c])
                                for W, c in zip(sw.typicalities(), sw.site_columns,
                                                strict=True)]))
        agree_co.append(nmi(whole.row_labels_, co.row_labels_))
        agree_sw.append(np.mean([nmi(whole.row_labels_, lab) for lab in sw.row_labels()]))
    # measured: corr 0.90 (best 1.00) vs 0.69 (best 0.79); row NMI with whole 0.93 vs 0.34
    assert np.max(corr_co) > 0.999 and np.max(corr_sw) < 0.9
    assert np.mean(corr_co) > 0.85 and np.mean(corr_co) > np.mean(corr_sw) + 0.1
    assert np.mean(agree_co) > 0.85 and np.mean(agree_sw) < 0.5
    assert np.sum(np.array(agree_co) > np.array(agree_sw)) >= 9


def test_collaborative_recovers_planted_coclusters():
    X, r, c = toy(7, p_in=0.7)
    model = CollaborativeFCCM(4, random_state=1, **dict(COLLAB_TOY, n_init=3)).fit(X)
    assert nmi(r, model.row_labels_) > 0.95
    assert nmi(c, model.column_labels_) > 0.9
    assert model.n_row_clusters_ == model.n_col_clusters_ == 4


# --------------------------------------------------------------------------- contract
def test_ledger_says_secure_computation_not_dp():
    X, _, _ = poisson_counts(2)
    model = CollaborativeFCCM(3, random_state=0).fit(X)
    led = model.privacy_ledger_
    assert model.epsilon_spent_ == math.inf and model.row_labels_private_ is False
    assert model.delta_spent_ == 0.0 and not led.end_to_end_dp
    assert {"row_totals", "object_memberships", "evaluation_release"} <= set(led.non_private_steps)
    assert all(SMC_NOTE in e.note for e in led.entries)
    whole = FCCM(3, random_state=0).fit(X)
    assert whole.epsilon_spent_ == math.inf and not whole.privacy_ledger_.end_to_end_dp


@pytest.mark.parametrize("cls", [FCCM, CollaborativeFCCM])
def test_every_data_dependent_attribute_is_declared_non_private(cls):
    """FCCM is not DP: what it computes from the data is declared non-private (never DP or
    post-processing), and a fit with such attributes reports ε = ∞."""
    X, _, _ = poisson_counts(2)
    model = cls(3, random_state=0, n_init=1).fit(X)
    assert undeclared_attributes(model) == []
    kinds = model.release_kinds()
    assert {kinds[a] for a in fitted_attributes(model)} <= {"non-private", "public",
                                                             "post-processing"}
    assert {"memberships_", "typicalities_", "row_labels_", "column_labels_", "contingency_",
            "objective_"} <= set(attributes_of_kind(model, "non-private"))
    assert model.epsilon_spent_ == math.inf


def test_fitted_attributes_and_evaluation_labels():
    X, _, _ = poisson_counts(3)
    with pytest.raises(NotFittedError):
        CollaborativeFCCM(3).evaluation_row_labels(X)
    est = CollaborativeFCCM(3, random_state=0, n_init=1)
    assert est.fit(X) is est and est.n_features_in_ == X.shape[1]
    assert est.get_params() == CollaborativeFCCM(3, random_state=0, n_init=1).get_params()
    model = CollaborativeFCCM(3, n_col_clusters=3, lambda_u=0.03, lambda_w=0.3,
                              column_split="random", random_state=4, max_iter=500).fit(X)
    assert model.converged_
    top2 = np.sort(model.memberships_, axis=1)[:, -2:]
    assert np.all(top2[:, 1] - top2[:, 0] > 1e-6)  # no tied row: argmax is well defined
    np.testing.assert_array_equal(model.evaluation_row_labels(X), model.row_labels_)
    # another matrix (here: the same rows in another order) gets prototype assignments
    perm = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_array_equal(model.evaluation_row_labels(X[perm]), model.row_labels_[perm])
    np.testing.assert_array_equal(model.row_labels_, model.memberships_.argmax(axis=1))
    np.testing.assert_array_equal(model.column_labels_, model.typicalities_.argmax(axis=0))
    np.testing.assert_array_equal(
        model.contingency_,
        contingency_table(X, model.row_labels_, model.column_labels_, 3, 3))
    assert model.contingency_.sum() == X.sum()
    assert model.rows_.shape == (3, X.shape[0]) and model.columns_.shape == (3, X.shape[1])
    assert np.isfinite(model.tau_rc_) and np.isfinite(model.tau_cr_)
    for cols in model.site_columns_:  # per-site item constraint
        np.testing.assert_allclose(model.typicalities_[:, cols].sum(axis=1), 1.0)
    whole = FCCM(3, lambda_u=0.01, lambda_w=0.3, random_state=4, max_iter=500).fit(X)
    np.testing.assert_array_equal(whole.evaluation_row_labels(X), whole.row_labels_)
    with pytest.raises(ValueError, match="columns"):
        model.evaluation_row_labels(X[:, :10])
    assert clone(model).get_params() == model.get_params()


def test_large_whole_counts_are_summed_exactly():
    """Row totals and the contingency table go through the secure sum as exact integers."""
    rng = np.random.default_rng(0)
    X = sp.random(50, 30, density=0.3, random_state=1,
                  data_rvs=lambda k: rng.integers(1, 10**6, k).astype(float)).tocsr()
    model = CollaborativeFCCM(2, random_state=0, n_init=1).fit(X)
    assert X.sum() > 2.0 ** 27  # beyond the range of the 40-fractional-bit encoding
    np.testing.assert_array_equal(
        model.contingency_,
        contingency_table(X, model.row_labels_, model.column_labels_, 2, 2))


def test_determinism_and_seed_dependence():
    X, _, _ = poisson_counts(4)
    a = CollaborativeFCCM(3, random_state=3, column_split="random").fit(X)
    b = CollaborativeFCCM(3, random_state=3, column_split="random").fit(X)
    c = CollaborativeFCCM(3, random_state=4, column_split="random").fit(X)
    np.testing.assert_array_equal(a.memberships_, b.memberships_)
    assert [m.digest for m in a.message_log_] == [m.digest for m in b.message_log_]
    assert [m.digest for m in a.message_log_] != [m.digest for m in c.message_log_]
    d = CollaborativeFCCM(3, random_state=3, column_split="random").fit(X.toarray())
    np.testing.assert_array_equal(a.memberships_, d.memberships_)


def test_column_split_forms():
    assert [b.tolist() for b in split_columns(7, 3)] == [[0, 1, 2], [3, 4], [5, 6]]
    ids = np.array([2, 0, 1, 0, 2, 1])
    assert [b.tolist() for b in split_columns(6, 3, ids)] == [[1, 3], [2, 5], [0, 4]]
    blocks = split_columns(6, 3, [[5, 0], [1, 2], [3, 4]])
    assert [b.tolist() for b in blocks] == [[0, 5], [1, 2], [3, 4]]
    rnd = split_columns(10, 3, "random", np.random.default_rng(0))
    assert sorted(np.concatenate(rnd).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="cover"):
        split_columns(6, 3, [[0, 1], [1, 2], [3, 4]])
    with pytest.raises(ValueError, match="holds no column"):
        split_columns(6, 3, np.array([0, 0, 1, 1, 0, 1]))


def test_bad_input():
    X, _, _ = poisson_counts(5)
    with pytest.raises(ValueError, match="Negative values in data"):
        CollaborativeFCCM(3).fit(-X.toarray())
    with pytest.raises(ValueError, match="NaN"):
        FCCM(3).fit(np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="'n_sites' parameter .* range \\[3, inf\\)"):
        CollaborativeFCCM(3, n_sites=2).fit(X)
    with pytest.raises(ValueError, match="larger than the number of columns"):
        CollaborativeFCCM(3, n_sites=X.shape[1] + 1).fit(X)
    with pytest.raises(ValueError, match="larger than the number of rows"):
        CollaborativeFCCM(X.shape[0] + 1).fit(X)
    with pytest.raises(ValueError, match="n_col_clusters must be None or equal"):
        CollaborativeFCCM(3, n_col_clusters=4).fit(X)
    with pytest.raises(ValueError, match="lambda_u"):
        CollaborativeFCCM(3, lambda_u=0.0).fit(X)
    with pytest.raises(ValueError, match="lambda_w lists"):
        CollaborativeFCCM(3, lambda_w=[1.0, 2.0]).fit(X)
    with pytest.raises(ValueError, match="normalize"):
        FCCM(3, normalize="l2").fit(X)
    with pytest.raises(ValueError, match="fractional_bits"):
        CollaborativeFCCM(3, fractional_bits=60).fit(X)
    with pytest.raises(TypeError, match="'n_sites' parameter .* must be an int"):
        CollaborativeFCCM(3, n_sites=3.0).fit(X)
    # an all-zero matrix is a valid input (fits, nothing to separate)
    assert CollaborativeFCCM(3, random_state=0).fit(sp.csr_matrix((6, 6))).row_labels_.size == 6


# --------------------------------------------------------------------------- sklearn conformance
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

TWO_FEATURES = ("the check fits a 2-column matrix; the masked secure sum needs n_sites >= 3 "
                "sites holding >= 1 column each, so it raises 'n_sites=3 is larger than the "
                "number of columns (n_features=2)'. The same check passes for the whole-data FCCM.")
COLLAB_FAILURES = dict.fromkeys(
    ["check_estimators_overwrite_params", "check_estimators_fit_returns_self",
     "check_readonly_memmap_input", "check_fit_idempotent", "check_fit_check_is_fitted",
     "check_n_features_in"], TWO_FEATURES)


@parametrize_with_checks([FCCM(2, random_state=0, n_init=1),
                          CollaborativeFCCM(2, random_state=0, n_init=1)],
                         expected_failed_checks=lambda est: (
                             COLLAB_FAILURES if isinstance(est, CollaborativeFCCM)
                             else {}))
@pytest.mark.slow  # scikit-learn's conformance checks of a baseline (DP-τCC's stay fast)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
