"""The end-to-end power scenarios of DP-KMeans, colored noise and DPNMF: each fixed event
reads the release the scenario moves, fires as designed on a release left without noise, and
bounds the correct code below its claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptaucc.audit.endtoend import audit_release
from dptaucc.audit.experiment import AuditJob
from dptaucc.audit.methods import call_site_setup, method_audits
from dptaucc.audit.workers import bug_context


def _power(method: str):
    scenario = next(s for s in method_audits(method) if not s.derive)  # the first: the power one
    return scenario, AuditJob(method, "corrected", 1.0, 100).factory(scenario.params)


def _fires(build, X, event, seeds) -> float:
    return float(np.mean([event(build(seed).fit(X)) for seed in seeds]))


def _power_bound(method: str, n_fits: int) -> tuple[float, float]:
    """The power scenario's bound on the correct code, and its claim (the scenario's ε)."""
    scenario, build = _power(method)
    params = dict(scenario.params)
    result = audit_release(build, scenario.pair.D, scenario.pair.D_prime, scenario.events,
                           n_fits=n_fits, alpha=0.05, claim=params["epsilon"],
                           delta=params.get("delta", 0.0), derive=False)
    return result.epsilon_lower, params["epsilon"]


def test_colored_noise_power_scenario_bounds_correct_code_below_its_claim():
    lower, claim = _power_bound("colored_noise", 400)
    assert 0.3 < lower <= claim


def test_colored_noise_power_event_sees_a_release_without_noise(monkeypatch):
    from dptaucc.baselines.colored_noise import estimator

    scenario, build = _power("colored_noise")
    original = estimator.public_domain_variances
    monkeypatch.setattr(estimator, "public_domain_variances",
                        lambda *a, **k: original(*a, **k) * 1e-12)
    half = scenario.events[1]  # "> 0.5": D's exact difference is +1, D''s −1
    assert _fires(build, scenario.pair.D, half, range(20)) == 1.0
    assert _fires(build, scenario.pair.D_prime, half, range(20)) == 0.0


def test_dp_kmeans_power_event_is_the_likelihood_ratio_of_the_release():
    scenario, build = _power("dp_kmeans")
    event = scenario.events[0]
    on_d = _fires(build, scenario.pair.D, event, range(150))
    on_dp = _fires(build, scenario.pair.D_prime, event, range(150, 300))
    tau = float(event.name.rsplit(" ", 1)[1])
    # every release in the event is at least e^τ times likelier on D (up to sampling)
    assert on_d > 0.1 and on_dp * math.exp(tau) <= on_d + 0.05


def test_dp_kmeans_power_scenario_puts_the_budget_on_one_release():
    """One iteration (``n_iter=1``): 300 fits per side already bound the correct code above
    a fifth of its claim (1.20 of 5 measured); with diffprivlib's rule (two iterations, the
    last released) the same fits bound it at 0."""
    assert dict(_power("dp_kmeans")[0].params)["n_iter"] == 1
    lower, claim = _power_bound("dp_kmeans", 300)
    assert 0.2 * claim < lower <= claim


def test_dp_kmeans_power_events_see_exact_counts():
    scenario, build = _power("dp_kmeans")
    ratio, exact = scenario.events
    with bug_context("dp_kmeans.exact_counts"):
        models = [(build(s).fit(scenario.pair.D), build(s + 60).fit(scenario.pair.D_prime))
                  for s in range(60)]
    assert all(exact(d) and not exact(dp) for d, dp in models)
    on_d, on_dp = (np.mean([ratio(m[side]) for m in models]) for side in (0, 1))
    assert on_d > 0.2 > 0.05 > on_dp


def _dpnmf_scenario(pair: str):
    scenario = next(s for s in method_audits("dpnmf") if s.pair.name == pair)
    return scenario, AuditJob("dpnmf", "corrected", 1.0, 100).factory(scenario.params)


@pytest.mark.parametrize("pair, event", [("one_word", 1), ("two_words", 1)])
@pytest.mark.parametrize("side, fires", [("D", True), ("D_prime", False)])
def test_dpnmf_power_events_read_a_release_without_noise(pair, event, side, fires):
    """Ā + B̄ above the midpoint of its exact values (one_word), the topic's lean to word 0
    (two_words): certain on D and impossible on D' when the release has (almost) no noise."""
    scenario, _ = _dpnmf_scenario(pair)
    params = {**dict(scenario.params), "epsilon": 1e9}  # (almost) no noise
    nearly_exact = AuditJob("dpnmf", "corrected", 1.0, 100).factory(tuple(params.items()))
    fired = _fires(nearly_exact, getattr(scenario.pair, side), scenario.events[event], range(10))
    assert fired == float(fires)


def test_dpnmf_power_scenario_is_on_the_release_and_bounds_correct_code_below_its_claim():
    """The power scenario (the first fixed-event one) reads the released (Ā, B̄), which u
    moves by √2/N: 500 fits per side bound the correct code at 0.94 of ε = 5 (the topic
    scenario about 0.6 at that size; a pair that does not move the release gives 0)."""
    scenario, _ = _power("dpnmf")
    assert scenario.pair.name == "one_word"
    lower, claim = _power_bound("dpnmf", 500)
    assert 0.7 < lower <= claim


def test_dpnmf_topic_scenario_bounds_correct_code_below_its_claim():
    """The released topic's lean bounds the correct code above 0 (about 0.6 at 500 fits per
    side; an event or pair that misses the move gives no bound) and below ε = 5."""
    scenario, build = _dpnmf_scenario("two_words")
    params = dict(scenario.params)
    result = audit_release(build, scenario.pair.D, scenario.pair.D_prime, scenario.events,
                           n_fits=500, alpha=0.05, claim=params["epsilon"],
                           delta=params["delta"], derive=False)
    assert 0.3 < result.epsilon_lower <= params["epsilon"]


def test_dpnmf_release_limit_is_declared_for_every_setup():
    for setup in call_site_setup("dpnmf"):
        assert "2/N" in setup.limit_of("epoch 2: (HHᵀ/N, VHᵀ/N)")


def test_colored_noise_centres_over_exact_sizes_show_on_every_fit():
    """One row added, one cluster: with the released centres divided by exact sizes the event
    fires on every fit on D and on none on D'; the correct code fires on neither."""
    [scenario] = [s for s in method_audits("colored_noise") if s.pair.name == "added_row"]
    build = AuditJob("colored_noise", "corrected", 1.0, 100).factory(scenario.params)
    event = scenario.events[1]
    seeds = range(6)
    D, D_prime = scenario.pair.D, scenario.pair.D_prime
    assert _fires(build, D, event, seeds) == _fires(build, D_prime, event, seeds) == 0.0
    with bug_context("colored_noise.centres_over_exact_sizes"):
        assert _fires(build, D, event, seeds) == 1.0
        assert _fires(build, D_prime, event, seeds) == 0.0


def test_dp_kmeans_centres_over_exact_sizes_show_on_every_fit():
    """One zero row added, one iteration: with the released centres divided by the exact
    sizes, centres × D's sizes lie on the sums' grid at every fit on D and rarely on D' (the
    zero cluster's noisy sum divisible by n + 1, or 0); the correct code gives it only when
    each noisy count divides its sum times the exact size, on D and D' alike."""
    [scenario] = [s for s in method_audits("dp_kmeans") if s.pair.name == "zero_row_added"]
    build = AuditJob("dp_kmeans", "corrected", 1.0, 100).factory(scenario.params)
    [event] = scenario.events
    D, D_prime = scenario.pair.D, scenario.pair.D_prime
    assert D_prime.shape[0] == D.shape[0] + 1
    assert _fires(build, D, event, range(40)) < 0.2
    assert _fires(build, D_prime, event, range(40, 80)) < 0.2
    with bug_context("dp_kmeans.centres_over_exact_sizes"):
        assert _fires(build, D, event, range(40)) == 1.0
        assert _fires(build, D_prime, event, range(40, 80)) <= 0.15
