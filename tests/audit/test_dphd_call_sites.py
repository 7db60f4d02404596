"""DPHD's mechanism calls under the audit hook: recorded as Octave receives them, replayed with
Octave stopped cleanly after call k, redrawn along the path the answer took, and the call-site
audit's verdict on correct code and on planted bugs."""

from __future__ import annotations

import functools
import math
import os
import signal

import numpy as np
import pytest
from dptaucc.baselines.dphd import DPHD, octave
from dptaucc.baselines.dphd.audit import disjoint_rows
from dptaucc.baselines.dphd.testing import have_octave

from dptaucc.audit.catalogue import CATALOGUE
from dptaucc.audit.redrawn import audit_call_site_redrawn, sample_call
from dptaucc.audit.transcript import record, replay
from dptaucc.privacy.hook import MECHANISM_HOOK

pytestmark = [pytest.mark.octave,
              pytest.mark.skipif(not have_octave(), reason="GNU Octave (octave-cli) not installed")]

PAIR = disjoint_rows()
EPS = 8.0


def build(seed, **kw):
    return DPHD(n_clusters=2, epsilon=EPS, n_rounds=1, max_value=10.0, row_l1_bound=10.0,
                random_state=seed, **kw)


def _index(calls, fragment):
    return next(c.index for c in calls if fragment in c.step)


def test_record_sees_every_release_as_octave_gets_it_and_changes_nothing():
    calls = record(build(0), PAIR.D)
    plain = build(0).fit(PAIR.D)
    again = build(0).fit(PAIR.D)  # after a recorded fit: the same seeded result
    np.testing.assert_array_equal(plain.cluster_centers_, again.cluster_centers_)
    assert calls[0].step == "public seeds" and calls[0].epsilon == 0.0
    steps = [c.step for c in calls]
    assert len(calls) == 15 and sum("partition" in s for s in steps) == 3
    picks = [c for c in calls if c.mechanism == "exponential"]
    assert len(picks) == 3 and all(c.output.shape == (1, 1) and c.output.min() >= 1
                                   for c in picks)  # 1-based, as Octave reads them
    charged = math.fsum(c.epsilon for c in calls)
    assert charged == pytest.approx(plain.privacy_ledger_.epsilon_spent)


class _ForceAll:
    def __init__(self, history):
        self.history, self.i = history, 0

    def released(self, step, mechanism, entries, output, redraw=None):
        want = self.history[self.i]
        assert want.step == step
        self.i += 1
        return want.output


def test_forced_releases_reach_octave():
    """A fit seeded 1 whose every release (public seeds included) is forced to a seed-0
    fit's ends with the seed-0 fit's centres: what the hook returns is what Octave uses."""
    history = record(build(0), PAIR.D)
    token = MECHANISM_HOOK.set(_ForceAll(history))
    try:
        forced = build(1).fit(PAIR.D)
    finally:
        MECHANISM_HOOK.reset(token)
    np.testing.assert_array_equal(forced.cluster_centers_, build(0).fit(PAIR.D).cluster_centers_)
    assert not np.array_equal(forced.cluster_centers_, build(1).fit(PAIR.D).cluster_centers_)


def test_replay_stops_octave_cleanly_after_call_k():
    history = record(build(0), PAIR.D)
    pid = octave.session().process.pid
    k = _index(history, "initial recover sums")
    call = replay(build(5), PAIR.D, history, k)
    assert call.step == history[k].step and call.output.shape == (2, 2)
    assert octave.session().process.pid == pid  # stopped, not killed: the same Octave serves on
    assert build(0).fit(PAIR.D).n_candidates_.size == 1


def test_a_stop_octave_does_not_honour_in_time_kills_it_with_a_warning(monkeypatch):
    class Stop(BaseException):
        pass

    sess = octave.session()
    monkeypatch.setattr(octave, "STOP_TIMEOUT", 0.5)

    def handler(request):  # Octave is paused: it cannot abandon the fit in time
        os.kill(sess.process.pid, signal.SIGSTOP)
        raise Stop

    with pytest.warns(RuntimeWarning, match="did not abandon the stopped fit"), \
            pytest.raises(Stop):
        octave.call("dphd_mechanism", "discrete-laplace", "s", 1.0, 1.0, "", np.zeros((1, 1)),
                    handler=handler)
    assert not sess.alive() and sess.process.poll() is not None  # killed, not left behind
    assert octave.session() is not sess


def test_redraw_follows_the_call_and_the_path_of_its_answer():
    history = record(build(0), PAIR.D)
    k = _index(history, "initial recover sizes")
    call, draws = sample_call(build(3), PAIR.D, history, k, 20_000)
    eps = call.epsilon
    assert draws.shape == (20_000, 2, 1) and call.epsilon == pytest.approx(EPS * 0.2 / 17)
    t = math.exp(-eps / 2)  # discrete Laplace of scale 2/ε: variance 2t/(1 − t)²
    var = 2 * t / (1 - t) ** 2
    assert draws.var(axis=0).ravel() == pytest.approx([var, var], rel=0.1)
    # the sizes of the 7 rows' two clusters sum to 7 (4 standard errors)
    assert draws.sum(axis=(1, 2)).mean() == pytest.approx(7, abs=4 * math.sqrt(2 * var / 20_000))
    with CATALOGUE["dphd.exact_sizes"].applied():
        _, exact = sample_call(build(3), PAIR.D, history, k, 50)
    assert exact.sum(axis=(1, 2)).tolist() == [7] * 50 and len(np.unique(exact[:, 0])) == 1


@pytest.mark.slow
@pytest.mark.parametrize("bug", [None, "dphd.sums_sensitivity_halved"])
def test_call_site_audit_flags_halved_sums_and_passes_correct_code(bug):
    b = functools.partial(build)
    history = record(build(0), PAIR.D)
    k = _index(history, "initial recover sums")
    res = audit_call_site_redrawn(b, PAIR.D, PAIR.D_prime, k, n_samples=60_000, alpha=0.05,
                                  bug=bug, n_histories=2, n_pilot=2000)
    assert res.verdict == ("ok" if bug is None else "violation"), res


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_a_local_search_pick_answered_with_its_argmax_is_a_violation_at_any_seed(seed):
    """The picks answered with the best candidate (``dphd.local_search_argmax``) move by a
    small share of their charge between D and D', rarely enough to change the best candidate:
    comparing the sides sees it at some audit seeds only. The redraws are the server's answers,
    and they all equal one candidate where the declared law spreads its mass: the law check
    (:mod:`dptaucc.audit.law_check`) flags it on one side, at every seed; not the correct
    code."""
    history = record(build(0), PAIR.D)
    k = _index(history, "local search swap 1")
    for bug, violates in ((None, False), ("dphd.local_search_argmax", True)):
        res = audit_call_site_redrawn(functools.partial(build), PAIR.D, PAIR.D_prime, k,
                                      n_samples=4000, alpha=0.05, seed=seed, bug=bug,
                                      n_histories=2, n_pilot=1000)
        assert bool(res.law_differs) is violates, res
        assert (res.verdict == "violation") is violates, res


# ------------------------------------------------------------------ the round selection
def _selection_setups():
    from dptaucc.baselines.dphd.audit import scenarios

    return {s.pair.name: s for s in scenarios().call_sites if s.first == 29}


def _selection_build(setup):
    params = dict(setup.params)
    return functools.partial(lambda seed, **kw: DPHD(n_clusters=2, random_state=seed, **kw),
                             **params)


def test_the_round_selection_setups_audit_the_selection_on_their_crafted_centres():
    """Both setups (two rounds) reach the round selection at call 29; under the crafted
    history row u's two versions move the utilities as designed: −1 and +1 on
    ``row_leaves_column`` (the charge's range 2), 1.8 on ``rows_below_bound``."""
    from dptaucc.audit.transcript import open_call

    setups = _selection_setups()
    assert set(setups) == {"row_leaves_column", "rows_below_bound"}
    for name, moved in (("row_leaves_column", 2.0), ("rows_below_bound", 1.8)):
        setup = setups[name]
        build = _selection_build(setup)
        history = setup.craft(record(build(0), setup.pair.D))
        assert history[29].step == "round selection" and len(history) == 30
        utilities = []
        for X in (setup.pair.D, setup.pair.D_prime):
            call, _ = open_call(build(1), X, history, 29)
            (decl,) = call.calibration.declarations
            assert decl.sensitivity == 2.0 and call.epsilon == pytest.approx(3.0)
            utilities.append(np.asarray(decl.exact, dtype=float).ravel())
        diff = utilities[1] - utilities[0]
        assert diff.max() - diff.min() == pytest.approx(moved, abs=1e-9), (name, utilities)


def _patched_m_files(tmp_path, file, old, new):
    """A copy of DPHD's Octave sources with ``old`` replaced by ``new`` in ``file``."""
    import shutil

    src = octave.M_FILES_DIR
    for m in src.glob("*.m"):
        shutil.copy(m, tmp_path / m.name)
    text = (tmp_path / file).read_text()
    assert text.count(old) == 1
    (tmp_path / file).write_text(text.replace(old, new))
    return tmp_path


#: the round selection's normaliser read from the data: the largest row norm instead of ρ
NORMALISER_FROM_DATA = ("scales(r) = (P.rho + min(", "scales(r) = (sqrt(max(rowsq)) + min(")


@pytest.mark.slow
@pytest.mark.parametrize("pair,bug", [
    ("row_leaves_column", None),
    ("rows_below_bound", None),
    ("row_leaves_column", "dphd.selection_sensitivity_halved"),
    ("rows_below_bound", "normaliser from data"),
])
def test_round_selection_audit_flags_planted_bugs_and_passes_correct_code(pair, bug, tmp_path,
                                                                          monkeypatch):
    """The round selection's call-site audit (the declared setups, 2·10⁵ picks a side): correct
    code within its charge, tight on ``row_leaves_column``; its range sensitivity halved
    (catalogue bug) and its normaliser read from the rows (Octave source changed in a copy)
    are violations, the latter by the pair's exact cost."""
    setup = _selection_setups()[pair]
    catalogued = bug if bug and bug.startswith("dphd.") else None
    if bug == "normaliser from data":
        patched = _patched_m_files(tmp_path, "dphd_fit.m", *NORMALISER_FROM_DATA)
        octave.shutdown()
        monkeypatch.setattr(octave, "M_FILES_DIR", patched)
    try:
        res = audit_call_site_redrawn(_selection_build(setup), setup.pair.D,
                                      setup.pair.D_prime, 29, n_samples=200_000, alpha=0.05,
                                      bug=catalogued, n_histories=1, n_pilot=1000,
                                      craft=setup.craft)
    finally:
        if bug == "normaliser from data":
            octave.shutdown()  # the next fit starts Octave on the real sources
    assert res.step == "round selection"
    if bug is None:
        assert res.verdict == "ok", res
        assert res.epsilon_pair <= res.epsilon_claimed * (1 + 1e-6)
        if pair == "row_leaves_column":
            assert res.epsilon_pair >= 0.95 * res.epsilon_claimed, res
            assert res.epsilon_lower >= 0.9 * res.epsilon_claimed, res
    else:
        assert res.verdict == "violation", res
        assert res.epsilon_pair > res.epsilon_claimed, res


# ------------------------------------------------------------------ the local search
def _local_search_setup(first: int = 7):
    """The local-search setup whose first audited call is ``first`` (7: the two swaps, 9: the
    final pick)."""
    from dptaucc.baselines.dphd.audit import scenarios

    (setup,) = [s for s in scenarios().call_sites if s.first == first]
    return setup


def test_no_replaced_row_moves_two_local_search_utilities_apart_by_more_than_root_two():
    """The local search's charged range (``LOCAL_SEARCH_RANGE``): with non-negative rows of
    norm at most ρ, any projection G and any candidates, a replaced row moves the utilities
    −loss/Λ² of two centre sets apart by at most √2, checked on random configurations and
    reached to 3 digits by the setup's centres ±(M/2)(1, −1)."""
    rng = np.random.default_rng(0)
    rho, worst = 10.0, 0.0
    for _ in range(3000):
        d, p = rng.integers(2, 6), rng.integers(1, 4)
        G = rng.normal(size=(p, d)) if rng.random() < 0.5 else np.eye(d)
        p = G.shape[0]
        rows = np.abs(rng.normal(size=(2, d))) * (rng.random((2, d)) < 0.7)
        rows *= rho * rng.random((2, 1)) ** 0.2 / np.maximum(
            np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        y, yp = rows @ G.T
        cands = rng.normal(size=(6, p)) * rng.uniform(0.1, 3) * rho / 3
        lam2 = (np.linalg.norm(G, 2) * rho + np.linalg.norm(cands, axis=1).max()) ** 2
        sets = [rng.choice(6, size=rng.integers(1, 4)) for _ in range(8)]
        moved = [(((cands[s] - yp) ** 2).sum(1).min() - ((cands[s] - y) ** 2).sum(1).min())
                 / lam2 for s in sets]
        worst = max(worst, max(moved) - min(moved))
    assert worst <= math.sqrt(2) + 1e-12
    h = 5 * math.sqrt(2)  # the setup: y = (10, 0), y' = (0, 10), c± = ±(h, −h), Λ = 2ρ
    c = np.array([h, -h])
    one = (np.sum((c - (0, 10)) ** 2) - np.sum((c - (10, 0)) ** 2)) / (2 * rho) ** 2
    assert 2 * one == pytest.approx(math.sqrt(2))


def test_the_local_search_setups_reach_their_picks_with_the_designed_candidates():
    """The crafted histories replay on D and D' up to each of the three picks: the swaps
    (calls 7-8) from {e, e} at ``SWAP_SEED``, the final pick (call 9) between {c₊, e} and
    {c₋, e}; every pick is charged 1.5 at range sensitivity √2, its utilities move apart by
    at most √2, and the pairs' exact costs are those declared (0.928, 0.928, 0.994 of the
    charge)."""
    from dptaucc.audit.pair_cost import pair_cost
    from dptaucc.audit.transcript import open_call

    for first, calls, want in ((7, (7, 8), 0.928), (9, (9,), 0.994)):
        setup = _local_search_setup(first)
        assert setup.max_calls == len(calls)
        build = _selection_build(setup)
        history = setup.craft(record(build(0), setup.pair.D))
        for k in calls:
            (a, _), (b, _) = (open_call(build(1), X, history, k)
                              for X in (setup.pair.D, setup.pair.D_prime))
            assert a.step == ("round 1: local search final pick" if k == 9
                              else f"round 1: local search swap {k - 6}")
            assert a.epsilon == pytest.approx(1.5)
            assert a.calibration.declarations[0].sensitivity == pytest.approx(math.sqrt(2))
            utilities = [np.asarray(c.calibration.declarations[0].exact, float).ravel()
                         for c in (a, b)]
            assert len(utilities[0]) == (16 if k < 9 else 2)
            diff = utilities[1] - utilities[0]
            assert diff.max() - diff.min() <= math.sqrt(2) + 1e-9
            ratio = pair_cost(a.calibration, b.calibration).epsilon / 1.5
            assert ratio == pytest.approx(want, abs=1e-3)


#: the local search calibrated for range sensitivity √2/2 (half of what its utilities can move)
LOCAL_SEARCH_HALVED = ("eps_step, sqrt(2), note_corrected(k, m)",
                       "eps_step, sqrt(2) / 2, note_corrected(k, m)")


@pytest.mark.slow
def test_a_local_search_swap_calibrated_for_half_its_range_is_a_violation(tmp_path, monkeypatch):
    """A swap drawn for range sensitivity √2/2 (the Octave source changed in a copy): on the
    swaps' setup its pair costs 1.92 × its charge, a violation by exact cost that
    ``disjoint_rows`` (0.2 at most) could not show; the correct code stays within it
    (0.928)."""
    setup = _local_search_setup()
    results = {}
    for bug in (None, "halved"):
        if bug:
            patched = _patched_m_files(tmp_path, "dphd_local_search.m", *LOCAL_SEARCH_HALVED)
            octave.shutdown()
            monkeypatch.setattr(octave, "M_FILES_DIR", patched)
        try:
            results[bug] = audit_call_site_redrawn(
                _selection_build(setup), setup.pair.D, setup.pair.D_prime, 7,
                n_samples=20_000, alpha=0.05, n_histories=1, n_pilot=1000, craft=setup.craft)
        finally:
            if bug:
                octave.shutdown()
    ok, bad = results[None], results["halved"]
    assert ok.verdict != "violation" and ok.epsilon_pair <= 0.93 * ok.epsilon_claimed, ok
    assert bad.verdict == "violation" and bad.epsilon_pair >= 1.9 * bad.epsilon_claimed, bad
