"""The per-method catalogue: its events run on every estimator of the suite without errors, and
its raw-data recomputations locate exactly what a noiseless fit releases."""

from __future__ import annotations

import math
import shutil
import warnings

import numpy as np
import pytest
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.dpm.audit import leaf_sizes

from dptaucc import DPTauCC
from dptaucc.audit import audit
from dptaucc.audit import events as ev
from dptaucc.audit.events import released_cell
from dptaucc.audit.experiment import AuditJob, algorithm_config, load_config, plan
from dptaucc.audit.methods import builtin_methods, call_site_setup, method_audit, method_audits
from dptaucc.audit.pairs import RowPair, all_zero_row
from dptaucc.privacy.checks import ScaledSampler

ALGORITHMS = ("dp_taucc", "fast_taucc", "dp_kmeans", "dphd", "dpnmf", "dpm", "colored_noise",
              "fccm", "dp_taucc_row")
HAVE_OCTAVE = shutil.which("octave-cli") is not None


def test_scenarios_cover_every_algorithm_config():
    assert set(builtin_methods()) == set(ALGORITHMS)
    for name in ALGORITHMS:
        spec = method_audit(name)
        names = [e.name for e in spec.events]
        assert len(set(names)) == len(names) and spec.why
        assert algorithm_config(name)["_target_"]
    with pytest.raises(ValueError, match="no algorithm config"):
        method_audit("nope")
    for name in ALGORITHMS:
        specs = method_audits(name)
        assert specs[0].pair.name == method_audit(name).pair.name
        private = algorithm_config(name).get("private", True)
        assert ("all_zero_matrix" in [s.pair.name for s in specs[1:]]) is private
        assert bool(call_site_setup(name)) is private


def _jobs():
    out = []
    for name in ALGORITHMS:
        config = algorithm_config(name)
        modes = (tuple(config.get("modes", ("paper", "corrected")))
                 if config.get("private", True) else (None,))
        for mode in modes:
            marks = [pytest.mark.octave, pytest.mark.skipif(not HAVE_OCTAVE, reason="no Octave")] \
                if name == "dphd" else []
            out.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return out


@pytest.mark.parametrize("name,mode", _jobs())
def test_events_run_without_errors_on_the_suite(name, mode):
    job = AuditJob(name, mode, None if mode is None else 1.0, 3, None)
    spec = method_audit(name)
    events = ev.applicable(spec.events, job.factory()(0))
    res = audit(job.factory(), spec.pair.D, spec.pair.D_prime, events, n_fits=3,
                progress=False,  # an event that raised would have stopped the audit
                require_cell_neighbours=not isinstance(spec.pair, RowPair))
    assert res.n_fits == 3


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_dp_taucc_cell_hypotheses_match_a_noiseless_fit(mode):
    """Without noise (every scale times 0, as ε = ∞ gives; corrected mode refuses ε = ∞
    itself) the released table is exact: the located cell equals D's value, D' adds one."""
    p = all_zero_row()
    for seed in range(3):
        # paper mode's float noise comes from the generator itself: ε = ∞ there
        m = (DPTauCC(2, 2, epsilon=math.inf, mode=mode, random_state=seed) if mode == "paper"
             else DPTauCC(2, 2, random_state=ScaledSampler(seed, factor=0.0))).fit(p.D)
        y, x_d, x_dp = released_cell(m, p)
        assert y == x_d and x_dp == x_d + 1


def test_dpm_tree_replay_matches_noiseless_leaf_counts():
    """Without noise DPM's leaf counts are the true leaf sizes, which the replay must
    reproduce."""
    p = all_zero_row(n_per_cluster=20)
    for seed in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPM(random_state=ScaledSampler(seed, factor=0.0)).fit(p.D)
        sizes = leaf_sizes(m, p.D)
        assert np.array_equal([s for s, _ in sizes], m.leaf_counts_)
        assert sum(s for s, _ in sizes) == p.D.shape[0]


def test_plan_and_budget_of_both_sizes():
    full, quick = load_config("full"), load_config("quick")
    primitives, *jobs = plan(full)
    # the seeded primitives first; six private methods x two modes and DP-τCC's row variant
    # (corrected only) end to end, plus the seven's call sites; non-private once
    assert (primitives.label, primitives.n_fits) == ("primitives (seeded)", 400_000)
    assert len(jobs) == 6 * 2 + 1 + 7 + 2
    assert {j.method for j in jobs} == set(ALGORITHMS)
    assert all(j.mode is None and j.epsilon is None for j in jobs
               if j.method in ("fast_taucc", "fccm"))
    assert {j.mode for j in jobs if j.method == "dp_taucc_row"} == {"corrected"}
    _, *q = plan(quick)
    assert len(q) == 7 + 7 + 2 and {j.mode for j in q} == {"corrected", None}
    full_fits = {(j.method, j.scope): j.n_fits for j in jobs}
    assert all(j.n_fits < full_fits[j.method, j.scope] for j in q)
    assert quick["output"] != full["output"]
    with pytest.raises(ValueError):
        load_config("huge")


def test_job_factory_builds_the_configured_estimator():
    est = AuditJob("dp_taucc", "paper", 0.5, 1, None).factory()(123)
    assert isinstance(est, DPTauCC)
    assert (est.epsilon, est.mode, est.random_state, est.n_row_clusters) == (0.5, "paper", 123, 2)
    assert est.n_iterations == algorithm_config("dp_taucc")["params"]["n_iterations"]
    fast = AuditJob("fast_taucc", None, None, 1, None).factory()(7)
    assert not hasattr(fast, "epsilon") and fast.random_state == 7


def test_disjoint_rows_moves_every_dphd_release_by_its_sensitivity():
    from dptaucc.baselines.dphd.audit import disjoint_rows

    p = disjoint_rows(bound=10)
    D, Dp = p.D.toarray(), p.D_prime.toarray()
    assert D.shape == (7, 2) and (D.sum(axis=1) == 10).all() and (Dp.sum(axis=1) == 10).all()
    diff = np.flatnonzero((D != Dp).any(axis=1))
    assert diff.tolist() == [p.u]
    assert np.abs(D[p.u] - Dp[p.u]).sum() == 2 * 10  # disjoint supports at the L1 bound
    assert np.log(D.shape[0]) <= 2  # one grid level: the same 15 calls in every fit


def test_dpm_power_event_is_exact_on_exact_counts():
    """The power scenario's event reads the leaf counts against the replayed tree: a fitted
    tree whose leaf counts are set to the exact sizes on D never fires it, set to the exact
    sizes on D' it fires exactly when u's two leaves are at depth 2 (some trees do that)."""
    from dptaucc.baselines.dpm.audit import POWER_PARAMS, leaf_counts_toward, row_between_leaves

    p = row_between_leaves()
    event = leaf_counts_toward(p, min_depth=2)
    fired = []
    for seed in range(40):
        m = DPM(random_state=seed, **dict(POWER_PARAMS)).fit(p.D_prime)
        on_d, on_dp = leaf_sizes(m, p.D), leaf_sizes(m, p.D_prime)
        m.leaf_counts_ = np.array([size for size, _ in on_d])
        assert not event(m)
        m.leaf_counts_ = np.array([size for size, _ in on_dp])
        moved = [a for a, b in zip(on_d, on_dp, strict=True) if a != b]
        deep = len(moved) == 2 and all(depth == 2 for _, depth in moved)
        assert event(m) == deep
        fired.append(deep)
    assert any(fired) and not all(fired)


def test_dpm_power_event_separates_d_from_d_prime_at_its_epsilon():
    """At the scenario's ε = 5 the event is far likelier on D' (the two counts' loss, 0.44·ε,
    a ratio of e^2.2 ≈ 9, over about a fifth of the trees): 400 fits per side."""
    from dptaucc.baselines.dpm.audit import POWER_PARAMS, leaf_counts_toward, row_between_leaves

    p = row_between_leaves()
    event = leaf_counts_toward(p, min_depth=2)
    counts = [sum(event(DPM(random_state=s, **dict(POWER_PARAMS)).fit(X)) for s in range(400))
              for X in (p.D, p.D_prime)]
    assert counts[1] >= 30 and counts[1] >= 3 * (counts[0] + 1), counts


def _plant_best_candidate_splits(monkeypatch):
    """The mutant 7a59f68cc53c by hand: the split choice's exponential mechanism is called
    (and charged) but each node gets its best candidate."""
    from dptaucc.baselines.dpm import tree

    original = tree.choose_splits

    def best_candidate(utilities, *args):
        original(utilities, *args)
        return np.asarray(utilities).argmax(axis=1)
    monkeypatch.setattr(tree, "choose_splits", best_candidate)


@pytest.mark.parametrize("n_bins", [3, 4, 13, 100, 800])
def test_dpm_tied_coordinates_move_the_best_split_at_every_grid(n_bins):
    """D's best root split is the first inner bin of coordinate 0, D′'s of coordinate 1, on
    any grid (13 to 800 bins are what the interval release gives) and for any root count N
    from 1 to n + n_zero − 2 (the margin the noisy root count may use)."""
    from dptaucc.baselines.dpm.audit import tied_coordinates
    from dptaucc.baselines.dpm.tree import TreeParams, node_utilities

    p = tied_coordinates()
    n = p.D.shape[0]
    params = TreeParams(lo=-100.0, hi=100.0, n_bins=n_bins)
    corners = [X.toarray() * 200.0 - 100.0 for X in (p.D, p.D_prime)]  # rows at 0 or 1
    for N in (1, n // 2, n - 1, n, n + 1, n + 100, n + 198):
        best = [divmod(int(np.argmax(node_utilities(Z, float(N), params))), n_bins)
                for Z in corners]
        assert best == [(0, 1), (1, 1)], (N, best)


def test_dpm_best_split_event_sees_a_split_released_as_the_best_candidate(monkeypatch):
    """The event reads the released root split against D's best: the correct choice hits it
    about once in 2·13 fits on either side; a split released as the best candidate hits it
    on every fit of D and on none of D'."""
    from dptaucc.baselines.dpm.audit import best_split_scenario

    s = best_split_scenario()
    event = s.events[0]

    def fires(X):
        return sum(event(DPM(random_state=seed, **dict(s.params)).fit(X)) for seed in range(40))
    correct = [fires(s.pair.D), fires(s.pair.D_prime)]
    assert max(correct) <= 10, correct
    _plant_best_candidate_splits(monkeypatch)
    assert [fires(s.pair.D), fires(s.pair.D_prime)] == [40, 0]


def test_dpm_best_split_scenario_bounds_the_planted_bug_above_its_claim(monkeypatch):
    """Through the engine's factory (the scenario's settings): the correct code stays at or
    below ε = 1 on 200 fits per side; the best-candidate split exceeds it at the first look."""
    from dptaucc.baselines.dpm.audit import best_split_scenario

    from dptaucc.audit.endtoend import audit_release
    from dptaucc.audit.experiment import AuditJob

    s = best_split_scenario()
    build = AuditJob("dpm", "corrected", 1.0, 200).factory(s.params)
    claim = dict(s.params)["epsilon"]

    def bound(n_fits):
        return audit_release(build, s.pair.D, s.pair.D_prime, s.events, n_fits=n_fits,
                             alpha=0.05, claim=claim, derive=False).epsilon_lower
    assert bound(200) <= claim
    _plant_best_candidate_splits(monkeypatch)
    assert bound(200) > 2 * claim


def test_dpm_split_call_site_setup_reaches_the_split_charge():
    """The split choice's own call-site setup (a row added in the bin of an upper-outer
    candidate, below a lower-outer one) costs the pair at least 0.9 of the call's charge
    exactly, and 10⁵ draws per side bound it above 0.75 of it (0.94 at 1.5·10⁶, 0.96 at 5·10⁶)."""
    from dptaucc.audit.callsite import audit_call_site
    from dptaucc.audit.experiment import AuditJob

    setup = next(s for s in call_site_setup("dpm") if s.pair.name == "row_below_outer_candidates")
    build = AuditJob("dpm", "corrected", None, 100, scope="call-site").factory(setup.params)
    result = audit_call_site(build, setup.pair.D, setup.pair.D_prime, setup.first,
                             n_fits=100_000, alpha=0.05)
    assert result.step == "split_level_0" and result.epsilon_claimed == pytest.approx(3.0)
    assert 0.9 * result.epsilon_claimed <= result.epsilon_pair <= result.epsilon_claimed
    assert 0.75 * result.epsilon_claimed < result.epsilon_lower <= result.epsilon_claimed


@pytest.mark.octave
@pytest.mark.skipif(not HAVE_OCTAVE, reason="GNU Octave (octave-cli) not installed")
def test_dphd_power_event_is_exact_on_noiseless_fits():
    """With no noise DPHD's one centre is u's row over n: (B/n, 0) on D, (0, B/n) on D'; the
    event fires on D' only."""
    from dptaucc.baselines.dphd import DPHD
    from dptaucc.baselines.dphd.audit import POWER_PARAMS, centre_toward, row_among_zeros

    p = row_among_zeros()
    event = centre_toward(p)
    fits = [DPHD(random_state=ScaledSampler(3, factor=0.0), **dict(POWER_PARAMS)).fit(X)
            for X in (p.D, p.D_prime)]
    n = p.D.shape[0]
    np.testing.assert_allclose(fits[0].cluster_centers_, [[10 / n, 0.0]])
    np.testing.assert_allclose(fits[1].cluster_centers_, [[0.0, 10 / n]])
    assert [event(m) for m in fits] == [False, True]


def test_a_scenario_runs_only_in_its_modes():
    """DPHD's power scenario sets a row bound and budget weights, which paper mode refuses:
    it is audited in corrected mode only (not as a row of fits that all raised)."""
    from dptaucc.audit.experiment import _n_units

    def pairs(mode):
        return [s.pair.name for s in _n_units(AuditJob("dphd", mode, 1.0, 10), None)]

    assert "row_among_zeros" in pairs("corrected")
    assert "row_among_zeros" not in pairs("paper") and "new_column_maximum" in pairs("paper")
