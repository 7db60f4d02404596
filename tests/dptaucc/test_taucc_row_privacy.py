"""DP-τCC for one row replaced (``DPTauCCRow``): the rows' public L1 bound, the noise every
mechanism call really draws, and neighbours that differ in one whole row at each mechanism's
own ε.

Expected scales are written out here from the proof in docs/privacy.md, never read back from
the code under test: a table has L1 sensitivity 2B at ε_T = (1−h)ε/(2I); a column assignment
is one joint exponential mechanism with sensitivity 2B·Δ(W) at ε_C = h·ε/I, Δ(W) the largest
spread of a column of its weights (eq. 4.10).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import dptaucc.dp_taucc_row as row_mod
from dptaucc import DPTauCCRow
from dptaucc.privacy import PrivacyLedger, SeededSampler, joint_linear_exponential_mechanism
from dptaucc.privacy.checks import (
    RecordingSampler,
    ScaledSampler,
    discrete_laplace_pvalue,
    neighbour_log_ratio_bounds,
)
from dptaucc.privacy.hook import MECHANISM_HOOK
from dptaucc.row_bound import bound_rows


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(11)
    X = rng.poisson(0.8, size=(60, 45)).astype(float)
    X[:20, :15] += rng.poisson(3, size=(20, 15))
    X[20:40, 15:30] += rng.poisson(3, size=(20, 15))
    X[5] = 0  # an empty row
    return X


# ------------------------------------------------------------------ the public row bound
def _largest_remainder(row, bound):
    """Hamilton's apportionment of ``bound`` units to the shares of ``row``, in exact
    fractions: floors first, then one unit each to the largest remainders, ties to the left."""
    total = sum(row)
    shares = [Fraction(int(a) * bound, int(total)) for a in row]
    out = [math.floor(s) for s in shares]
    order = sorted(range(len(row)), key=lambda j: (-(shares[j] - out[j]), j))
    for j in order[:bound - sum(out)]:
        out[j] += 1
    return out


@pytest.mark.parametrize("bound", [1, 7, 50])
@pytest.mark.parametrize("scaling", ["scale", "clip"])
def test_rows_enter_the_public_ball_row_by_row(counts, bound, scaling):
    got = bound_rows(sp.csr_matrix(counts), bound, scaling).toarray()
    for row, new in zip(counts.astype(int), got, strict=True):
        mass = int(row.sum())
        if mass == 0 or (scaling == "clip" and mass <= bound):
            np.testing.assert_array_equal(new, row)
        else:
            assert new.tolist() == _largest_remainder(row.tolist(), bound)
        assert new.sum() <= bound and np.all(new >= 0) and np.all(new == np.round(new))


def test_a_row_bound_reads_its_own_row_only(counts):
    """Changing every other row leaves a row's bounded version as it was (a per-row rule)."""
    other = counts.copy()
    other[1:] = np.random.default_rng(5).poisson(4, size=other[1:].shape)
    a = bound_rows(sp.csr_matrix(counts), 20).toarray()[0]
    b = bound_rows(sp.csr_matrix(other), 20).toarray()[0]
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ noise drawn at each call
def _fit(X, seed, monkeypatch=None, **kwargs):
    rec = RecordingSampler(SeededSampler(np.random.default_rng(seed)))
    calls = []
    if monkeypatch is not None:
        original = row_mod.joint_linear_exponential_mechanism

        def spy(profiles, *, weights, epsilon, profile_l1, **kw):
            dense = profiles.toarray() if sp.issparse(profiles) else np.array(profiles)
            calls.append((dense, np.array(weights), epsilon, profile_l1))
            return original(profiles, weights=weights, epsilon=epsilon, profile_l1=profile_l1,
                            **kw)

        monkeypatch.setattr(row_mod, "joint_linear_exponential_mechanism", spy)
    model = DPTauCCRow(random_state=rec, **kwargs).fit(X)
    return model, rec, calls


@pytest.mark.parametrize("eps,n_iterations,h,bound", [(2.0, 4, 0.9, 1000), (1.0, 2, 0.5, 7),
                                                      (8.0, 1, 0.3, 40)])
def test_every_table_draws_discrete_laplace_at_2B_over_its_epsilon(counts, eps, n_iterations,
                                                                     h, bound):
    scale = 2 * bound * 2 * n_iterations / ((1 - h) * eps)  # 2B / ε_T
    noise = []
    for seed in range(15):
        model, rec, _ = _fit(counts, seed, n_row_clusters=3, n_col_clusters=3, epsilon=eps,
                             n_iterations=n_iterations, h=h, row_bound=bound)
        draws = rec.of_kind("discrete_laplace")
        assert len(draws) == 2 * n_iterations
        assert all(d.scale == pytest.approx(scale, rel=1e-12) for d in draws)
        assert all(d.output.shape[0] == 3 for d in draws)  # K0 rows, whatever the data
        tables = [e for e in model.privacy_ledger_.entries if "laplace" in e.mechanism]
        assert [e.sensitivity for e in tables] == [2.0 * bound] * len(draws)
        noise.extend(np.concatenate([d.output.ravel() for d in draws]))
    assert discrete_laplace_pvalue(np.array(noise), scale) > 1e-4


def _spread(weights):
    """Δ(W): the largest spread over the choices of one coordinate of the weights (eq. 4.10)."""
    return max(float(np.ptp(weights[:, d])) for d in range(weights.shape[1]))


@pytest.mark.parametrize("eps,n_iterations,h,bound,scaling", [
    (2.0, 4, 0.9, 1000, "scale"), (0.5, 3, 0.4, 9, "clip")])
def test_every_column_assignment_is_one_joint_choice_at_2B_times_the_spread(
        counts, monkeypatch, eps, n_iterations, h, bound, scaling):
    model, rec, calls = _fit(counts, 5, monkeypatch, n_row_clusters=3, n_col_clusters=3,
                             epsilon=eps, n_iterations=n_iterations, h=h, row_bound=bound,
                             row_scaling=scaling)
    choices = rec.of_kind("choose")
    assert len(calls) == len(choices) == n_iterations  # columns only: rows are not chosen
    eps_columns = h * eps / n_iterations
    masses = np.minimum(counts.sum(axis=1), bound) if scaling == "clip" else np.where(
        counts.sum(axis=1) > 0, bound, 0)
    for i, ((profiles, weights, epsilon, l1), draw) in enumerate(zip(calls, choices,
                                                                      strict=True)):
        assert epsilon == pytest.approx(eps_columns, rel=1e-12)
        assert l1 == 2 * bound
        assert draw.scale == pytest.approx(2 * bound * max(_spread(weights), 1e-9) / epsilon,
                                           rel=1e-12)
        assert draw.inputs.shape[0] == counts.shape[1]  # one choice per column
        np.testing.assert_allclose(draw.inputs, profiles @ weights.T, rtol=1e-12)
        if i == 0:  # the columns over the rows: every row within the ball
            np.testing.assert_array_equal(profiles.sum(axis=0), masses)
        else:  # the columns over the row clusters: all of the rows' mass
            assert profiles.shape[1] == 3 and profiles.sum() == pytest.approx(masses.sum())
    expo = [e for e in model.privacy_ledger_.entries if e.mechanism == "exponential"]
    assert [e.composition for e in expo] == ["sequential"] * n_iterations
    assert [e.noise_scale for e in expo] == pytest.approx([d.scale for d in choices])
    assert model.epsilon_spent_ == pytest.approx(eps)


def test_released_table_is_the_bounded_rows_table_plus_the_last_noise(counts):
    """One row cluster: the exact table is the column groups' mass of the bounded rows."""
    model, rec, _ = _fit(counts, 3, n_row_clusters=1, n_col_clusters=3, epsilon=4.0,
                         row_bound=12)
    rows = bound_rows(sp.csr_matrix(counts), 12).toarray()
    c = model.column_labels_
    exact = np.array([[rows[:, c == g].sum() for g in range(model.n_col_clusters_)]])
    np.testing.assert_array_equal(model.contingency_,
                                  np.maximum(exact + rec.of_kind("discrete_laplace")[-1].output, 0))


# ------------------------------------------------------------------ neighbours: one row replaced
class _ForcedColumns(SeededSampler):
    """Seeded noise, but every choice returns a fixed column labelling (a valid history: the
    guarantee holds given any earlier outputs)."""

    def __init__(self, seed, labels, factor=1.0):
        super().__init__(np.random.default_rng(seed))
        self.labels, self.factor = np.asarray(labels), factor

    def choose(self, scores, scale):
        return self.labels.copy()

    def discrete_laplace(self, size, scale):
        return super().discrete_laplace(size, scale * self.factor)


def _replaced_row_pair(bound):
    """Two column groups; row u holds the bound B in group 0 in D, in group 1 in D'."""
    X = np.zeros((9, 6), dtype=int)
    X[:4, :3], X[4:8, 3:] = 2, 2
    D, Dp = X.copy(), X.copy()
    D[8, 0], Dp[8, 3] = bound, bound
    return D, Dp


class _LastTable:
    """Audit hook (:mod:`dptaucc.privacy.hook`): releases every output as drawn and keeps the
    ``redraw`` of the last table call (fresh outputs of that same call)."""

    def released(self, step, mechanism, entries, output, redraw=None):
        if mechanism == "discrete-laplace":
            self.redraw = redraw
        return output


def _tail_hits(X, exact, runs, seed, factor):
    """One fit with one row cluster, columns forced to the two groups, I = 1, h = ½, ε = 4 (each
    table at its own ε_T = 1), then ``runs`` fresh draws of its released table. Counts
    {T̃_0 >= t_0 and T̃_1 <= t_1} for D's exact (t_0, t_1): on D each cell sits at its exact
    value's tail, on D' both are B away."""
    hook = _LastTable()
    token = MECHANISM_HOOK.set(hook)
    try:
        DPTauCCRow(1, 2, epsilon=4.0, n_iterations=1, h=0.5, row_bound=3,
                   random_state=_ForcedColumns(seed, [0, 0, 0, 1, 1, 1], factor)).fit(X)
    finally:
        MECHANISM_HOOK.reset(token)
    tables = np.maximum(hook.redraw(runs)[:, 0, :], 0)  # released: clipped at 0
    return int(np.sum((tables[:, 0] >= exact[0]) & (tables[:, 1] <= exact[1])))


@pytest.mark.parametrize("broken", [False, True])
def test_released_table_neighbours_at_the_tables_own_epsilon(broken):
    """Row u moves its mass B = 3 from one cell to the other (L1 distance 2B): the event's log
    ratio is exactly ε_T = 1 for discrete Laplace at scale 2B/ε_T; 2 with half the noise (a
    sensitivity of B, the one-sided count of a replaced row), which the test must flag."""
    D, Dp = _replaced_row_pair(3)
    rows = bound_rows(sp.csr_matrix(D), 3).toarray()  # the same thresholds on both sides
    exact = (int(rows[:, :3].sum()), int(rows[:, 3:].sum()))
    runs, factor = 8000, (0.5 if broken else 1.0)
    ha = _tail_hits(D, exact, runs, 0, factor)
    hb = _tail_hits(Dp, exact, runs, 1, factor)
    lower, upper = neighbour_log_ratio_bounds(ha, runs, hb, runs)
    if broken:
        assert lower > 1.0
    else:
        assert lower <= 1.0 <= upper and upper < 1.35


def _joint_choice_counts(profiles, n, seed, factor):
    sampler = ScaledSampler(SeededSampler(np.random.default_rng(seed)), factor)
    stacked = np.tile(profiles, (n, 1))
    out = joint_linear_exponential_mechanism(stacked, weights=np.eye(2), epsilon=2.0,
                                             profile_l1=2, sampler=sampler,
                                             ledger=PrivacyLedger(), step="columns")
    pairs = out.reshape(n, 2)
    return int(np.sum((pairs[:, 0] == 1) & (pairs[:, 1] == 1)))


@pytest.mark.parametrize("broken", [False, True])
def test_joint_choice_neighbours_at_its_own_epsilon(broken):
    """Two objects whose profiles move by one unit each (total L1 distance 2 = the call's
    profile_l1): the joint choice's true log ratio is 1.45 <= ε = 2 at scale 2·Δ(W)/ε; with half
    the noise (a Δ not scaled by the whole row's distance) it is 3.47 > 2, which must show."""
    D = np.array([[2.5, 1.0], [2.5, 1.0]])   # each object prefers choice 0 by 1.5
    Dp = np.array([[1.5, 1.0], [2.5, 2.0]])  # one unit out of object 0, one into object 1
    n, factor = 200_000, (0.5 if broken else 1.0)
    ha = _joint_choice_counts(Dp, n, 1, factor)
    hb = _joint_choice_counts(D, n, 2, factor)
    lower, upper = neighbour_log_ratio_bounds(ha, n, hb, n)
    if broken:
        assert lower > 2.0
    else:
        assert lower <= 2.0 and lower <= 1.45 <= upper


# ------------------------------------------------------------------ what the fit holds
def test_no_row_label_leaves_the_fit_and_the_table_keeps_K0_rows(counts):
    """Internal row clusters that end empty are kept (relabelling them would let one row's
    label change the released table's shape)."""
    for seed in range(5):
        model = DPTauCCRow(6, 3, epsilon=50.0, random_state=seed).fit(counts)
        assert model.contingency_.shape[0] == 6 and model.contingency_.dtype == np.int64
        assert not any(hasattr(model, a) for a in ("row_labels_", "rows_", "dp_row_labels_",
                                                   "n_row_clusters_"))
        labels = model.evaluation_row_labels(counts)  # the protocol: reads the rows, not DP
        assert labels.shape == (counts.shape[0],)


def test_secure_path_fits_with_the_same_ledger(counts):
    seeded = DPTauCCRow(3, 3, epsilon=2.0, random_state=0).fit(counts)
    secure = DPTauCCRow(3, 3, epsilon=2.0, secure=True).fit(counts)
    assert secure.contingency_.dtype == np.int64
    assert [(e.step, e.mechanism, e.epsilon, e.composition, e.sensitivity)
            for e in secure.privacy_ledger_.entries if e.mechanism != "exponential"] == [
        (e.step, e.mechanism, e.epsilon, e.composition, e.sensitivity)
        for e in seeded.privacy_ledger_.entries if e.mechanism != "exponential"]
    assert secure.epsilon_spent_ == pytest.approx(2.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(mode="paper"), "'mode' parameter of DPTauCCRow"),
    (dict(row_bound=0), "'row_bound' parameter"),
    (dict(row_bound=2.5), "'row_bound' parameter"),
    (dict(row_scaling="cut"), "'row_scaling' parameter"),
    (dict(epsilon=math.inf), "epsilon=inf releases the data without noise"),
])
def test_bad_parameters_are_refused(counts, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        DPTauCCRow(2, 2, **kwargs).fit(counts)
