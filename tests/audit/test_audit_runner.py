"""The auditor on mechanisms of known privacy loss: it catches a 2x error, stays below a correct
claim, is deterministic given its seed, and treats a raising fit as an outcome."""

from __future__ import annotations

import time

import numpy as np
import pytest
from toys import DataBlind, LaplaceCount, RaisesOnZero, RandomizedResponse

from dptaucc import DPTauCC
from dptaucc.audit import FIT_RAISED, audit, fit_seed
from dptaucc.audit import events as ev
from dptaucc.audit.events import AuditEventError
from dptaucc.audit.pairs import moving_row

D, D1 = np.array([[3]]), np.array([[4]])
THRESHOLDS = (3.5, 4.0, 4.5, 5.0)


def count_above(t):
    return ev.Event(f"count > {t}", lambda m: m.count_ > t)


def test_detects_laplace_at_half_its_charged_scale():
    """Claimed ε = 1, noise at scale 1/2 (true ε = 2): ε_lower > 1 (its speed is a benchmark's
    business, not a unit test's: a wall-clock bound fails on a busy machine)."""
    res = audit(LaplaceCount(epsilon=1.0, noise_factor=0.5), D, D1,
                [count_above(t) for t in THRESHOLDS], n_fits=3000, seed=1, progress=False)
    assert res.epsilon_lower > 1.0
    assert res.epsilon_lower <= 2.0  # and never above the truth (this seed)


def test_correct_laplace_stays_below_its_claim_and_is_tight():
    res = audit(LaplaceCount(epsilon=1.0), D, D1, [count_above(t) for t in THRESHOLDS],
                n_fits=3000, seed=1, progress=False)
    assert 0.5 < res.epsilon_lower <= 1.0


@pytest.mark.parametrize("seed", range(4))
def test_randomized_response_never_above_its_epsilon(seed):
    res = audit(RandomizedResponse(epsilon=0.7), np.array([[0]]), np.array([[1]]),
                {"bit": lambda m: m.bit_}, n_fits=2000, seed=seed, progress=False)
    assert res.epsilon_lower <= 0.7


def test_data_blind_mechanism_gives_zero():
    res = audit(DataBlind(), D, D1, {"value > 1/2": lambda m: m.value_ > 0.5,
                                     "value > 0.9": lambda m: m.value_ > 0.9},
                n_fits=1000, progress=False)
    assert res.epsilon_lower == 0.0 and res.event is None and res.best is None
    assert res.verdict == "bound" and res.uninformative == [FIT_RAISED]


def test_a_fit_that_raises_is_an_outcome_not_a_crash():
    res = audit(RaisesOnZero(), np.array([[0]]), np.array([[1]]),
                {"value is 1": lambda m: m.value_ == 1.0}, n_fits=200, progress=False)
    assert res.events[0] == FIT_RAISED
    assert list(res.counts_d) == [200, 0] and list(res.counts_dp) == [0, 200]
    assert res.epsilon_lower > 3.0 and FIT_RAISED in res.event


def test_deterministic_given_the_seed_and_independent_of_workers():
    p = moving_row()
    est = DPTauCC(2, 2, epsilon=1.0)
    evs = [ev.same_label(p.u, 0), ev.table_cell_above(p, 0.5)]
    runs = [audit(est, p.D, p.D_prime, evs, n_fits=40, seed=3, n_jobs=j, progress=False)
            for j in (1, 2, 1)]
    for r in runs[1:]:
        assert np.array_equal(r.counts_d, runs[0].counts_d)
        assert np.array_equal(r.counts_dp, runs[0].counts_dp)
        assert r.epsilon_lower == runs[0].epsilon_lower
    other = audit(est, p.D, p.D_prime, evs, n_fits=40, seed=4, progress=False)
    assert not (np.array_equal(other.counts_d, runs[0].counts_d)
                and np.array_equal(other.counts_dp, runs[0].counts_dp))


def test_fresh_independent_seeds_per_fit():
    seeds = [fit_seed(0, i) for i in range(4000)]
    assert len(set(seeds)) == len(seeds)  # no collision among these (32-bit ints)
    assert all(0 <= s < 2**32 for s in seeds)
    assert fit_seed(0, 5) == fit_seed(0, 5) != fit_seed(1, 5)


class SlowLaplace(LaplaceCount):
    def fit(self, X, y=None):
        time.sleep(0.01)
        return super().fit(X)


def test_time_limit_keeps_a_prefix_of_the_pairs():
    evs = [count_above(4.0)]
    cut = audit(SlowLaplace(), D, D1, evs, n_fits=10_000, time_limit=0.5, progress=False)
    assert cut.stopped_by_time and 1 <= cut.n_fits < 10_000
    same = audit(SlowLaplace(), D, D1, evs, n_fits=cut.n_fits, progress=False)
    assert np.array_equal(cut.counts_d, same.counts_d)
    assert np.array_equal(cut.counts_dp, same.counts_dp)


def test_an_event_that_raises_stops_the_audit_and_names_event_and_attribute():
    def broken(m):
        raise ZeroDivisionError("bug in the event")
    with pytest.raises(AuditEventError, match="'broken' raised ZeroDivisionError"):
        audit(DataBlind(), D, D1, {"broken": broken}, n_fits=5, progress=False)
    with pytest.raises(AuditEventError, match="'typo'.*attribute 'labels_'") as info:
        audit(DataBlind(), D, D1, {"typo": lambda m: m.labels_ == 0}, n_fits=5, progress=False)
    assert info.value.event == "typo" and info.value.attribute == "labels_"


def test_events_that_never_fire_give_no_evidence_not_a_pass():
    res = audit(DataBlind(), D, D1, {"never": lambda m: m.value_ > 2.0}, n_fits=50,
                progress=False)
    assert np.isnan(res.epsilon_lower) and res.verdict == "no evidence"
    assert set(res.uninformative) == {FIT_RAISED, "never"} and "no evidence" in str(res)


def test_factory_callable_is_accepted():
    res = audit(lambda rs: LaplaceCount(noise_factor=0.5, random_state=rs), D, D1,
                [count_above(4.0)], n_fits=500, progress=False)
    assert res.epsilon_lower > 0.5


@pytest.mark.parametrize("kwargs,match", [
    ({"D_prime": np.array([[5]])}, "one cell"),
    ({"D_prime": np.array([[3, 0]])}, "same shape"),
    ({"n_fits": 0}, "n_fits"),
    ({"time_limit": 0}, "time_limit"),
    ({"alpha": 1.5}, "alpha"),
    ({"events": {FIT_RAISED: lambda m: True}}, "distinct"),
])
def test_bad_input_is_refused_before_any_fit(kwargs, match):
    args = {"D_prime": D1, "events": [count_above(4.0)], **kwargs}
    with pytest.raises(ValueError, match=match):
        audit(LaplaceCount(), D, args.pop("D_prime"), args.pop("events"), progress=False,
              **args)


def test_estimator_without_random_state_is_refused():
    from sklearn.cluster import AgglomerativeClustering

    with pytest.raises(ValueError, match="random_state"):
        audit(AgglomerativeClustering(), D, D1, {"x": lambda m: True}, progress=False)
    with pytest.raises(TypeError):
        audit(42, D, D1, {"x": lambda m: True}, progress=False)
