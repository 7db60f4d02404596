"""Mechanism-level audits: near ε at the claimed calibration, above ε when it is wrong."""

import math

import numpy as np
import opendp.prelude as dp
import pytest

from dptaucc.audit import primitives
from dptaucc.audit.primitives import PRIMITIVES, SEEDED_ONLY, audit_primitive, primitive_names
from dptaucc.privacy import SeededSampler
from dptaucc.privacy.exact import exact_choose

dp.enable_features("contrib")


#: the wide choice is audited on 10⁵ outputs per side (it is drawn row by row), the many-choice
#: call on 3·10⁵ of 65 choices (measured 0.92-0.96 at seeds 0-3), the fine bounded pair at
#: ε = 0.2 (0.86-0.91 of it): a looser floor
SEEDED_FLOOR = {"exponential-wide": 0.85, "exponential-many": 0.85,
                "bounded-discrete-laplace-fine": 0.85}


#: the charge of each primitive's call at the audit's ε = 1 (the fine bounded pair spends a
#: fifth of it)
CHARGE = {"bounded-discrete-laplace-fine": primitives.FINE_BOUND_SHARE}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_each_seeded_primitive_audits_at_nine_tenths_of_its_epsilon(name):
    row = audit_primitive(name, 1.0, seed=1)
    charge = CHARGE.get(name, 1.0)
    assert row["epsilon"] == pytest.approx(charge) and row["path"] == "seeded"
    assert SEEDED_FLOOR.get(name, 0.9) * charge <= row["epsilon_lower"] <= charge, row
    # the privacy map recomputes exactly the charge from the noise drawn
    assert row["map_ok"] and row["epsilon_map"] == pytest.approx(charge, rel=1e-6), row


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_the_audit_has_power_against_a_halved_scale(name):
    row = audit_primitive(name, 1.0, n=200_000, seed=2, scale_factor=0.5)
    assert row["epsilon_lower"] > row["epsilon"], row


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_the_privacy_map_sees_a_halved_scale_from_a_thousand_outputs(name):
    """The statistical bound needs 10⁵ outputs; the map reads the scale drawn."""
    row = audit_primitive(name, 1.0, n=1_000, seed=2, scale_factor=0.5)
    assert primitives.violated(row) and row["epsilon_map"] > row["epsilon"], row


#: secure rows draw OS randomness (not replayable), so a bound at the usual α = 0.05 would put a
#: correct primitive above its ε in up to 5 % of runs: these tests use α = 10⁻⁴ (a false alarm
#: in at most 1 run in 10⁴) and floors that leave room for sampling noise; the secure Gaussian
#: gets 20,000 outputs per side here (OpenDP's exact Gaussian is slow)
SECURE_ALPHA = 1e-4
#: the secure wide choice measured 0.45-0.62 over four runs of 200,000 outputs (fresh OS
#: randomness each time, so its floor leaves room for that spread)
SECURE_FLOOR = {"gaussian": 0.3, "exponential-wide": 0.3,
                #: ε = 0.2: the bound's sampling error is a larger share of the charge
                "bounded-discrete-laplace-fine": 0.5}
#: the wide choice's secure audit picks its event on 10,000 outputs (its 50,000 per side, a fifth
#: of them): in about 2-5 % of runs (1 in 60 seeded runs at the same size, 1 in 19 secure runs
#: measured) the pick misses the informative event and the bound is ~0.01, so the floor asks
#: for it in one of two independent runs (both below: about 1 run of the test in 500)
SECURE_RUNS = {"exponential-wide": 2}
SLOW_SECURE = {"discrete-laplace", "bounded-discrete-laplace", "gaussian",  # 3-5 s each
               "exponential-wide", "bounded-discrete-laplace-fine"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name in SLOW_SECURE else name
                                  for name in primitive_names(secure=True)])
def test_secure_primitives_audit_near_epsilon_without_violation(name):
    n = 20_000 if name == "gaussian" else 200_000
    runs = [audit_primitive(name, 1.0, n=n, secure=True, alpha=SECURE_ALPHA)
            for _ in range(SECURE_RUNS.get(name, 1))]
    for row in runs:  # no run above the claim
        assert row["path"] == "secure" and row["epsilon_lower"] <= row["epsilon"], row
    charge = CHARGE.get(name, 1.0)
    assert max(r["epsilon_lower"] for r in runs) >= SECURE_FLOOR.get(name, 0.7) * charge, runs


def test_the_secure_audit_has_power_against_a_halved_scale():
    row = audit_primitive("exponential", 1.0, n=100_000, secure=True, scale_factor=0.5)
    assert row["path"] == "secure" and row["epsilon_lower"] > 1.0, row


class ZCDPCalibratedChoice(SeededSampler):
    """A plausible bug: the Gumbel noisy max calibrated with OpenDP's zCDP map so that
    ρ = ε, while the ledger claims pure ε (the right conversion is ρ = ε²/8)."""

    def __init__(self, epsilon, sensitivity, seed):
        super().__init__(np.random.default_rng(seed))
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=2),
                 dp.linf_distance(T=float))
        self.beta = dp.binary_search_param(
            lambda s: dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=s),
            d_in=sensitivity / 2, d_out=epsilon)

    def choose(self, scores, scale):
        return exact_choose(scores, self.beta)


def test_zcdp_calibrated_noisy_max_labelled_pure_epsilon_is_caught():
    buggy = ZCDPCalibratedChoice(1.0, 1.0, seed=3)
    assert buggy.beta == pytest.approx(1 / math.sqrt(8), rel=1e-3)  # true ε = √8 ≈ 2.8
    row = audit_primitive("exponential", 1.0, n=200_000, sampler=buggy)
    assert row["epsilon"] == 1.0 and row["epsilon_lower"] > 1.0, row


def test_rows_have_the_promised_columns_and_bad_input_is_refused():
    row = audit_primitive("discrete-laplace", 0.5, n=1_000, seed=0)
    assert {"primitive", "path", "epsilon", "delta", "epsilon_lower", "n", "seconds"} <= set(row)
    with pytest.raises(ValueError, match="unknown primitive"):
        audit_primitive("laplace", 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        audit_primitive("exponential", 0.0)


def test_cli_exits_3_on_a_violation_and_0_otherwise(monkeypatch, capsys):
    assert primitives.main(["-n", "20000"]) == 0
    run, _ = PRIMITIVES["discrete-laplace"]

    def doubled_epsilon(side, n, eps, delta, sampler, ledger):  # spends 2ε, charges ε
        out = run(side, n, 2 * eps, delta, sampler, type(ledger)())
        ledger.charge("audit", "discrete-laplace", eps, 0.0, 1.0, "sequential", "", 1 / eps)
        return out

    monkeypatch.setitem(PRIMITIVES, "discrete-laplace", (doubled_epsilon, False))
    # 20,000 outputs per side bound the doubled ε at 1.93-1.99 (seeds 0-3), far above its 1
    assert primitives.main(["-n", "20000"]) == 3
    out = capsys.readouterr().out
    assert "VIOLATION" in out and "for discrete-laplace (seeded)" in out


def test_cli_exits_3_when_a_mechanism_draws_below_its_charge(monkeypatch, capsys):
    """Every scaled mechanism draws at half the scale it charges for: 2000 outputs per side
    cannot bound that above ε, the map sees it at once."""
    from dptaucc.privacy import mechanisms

    charge = mechanisms._charge_scaled
    monkeypatch.setattr(mechanisms, "_charge_scaled", lambda *args: charge(*args) / 2)
    assert primitives.main(["-n", "2000"]) == 3
    out = capsys.readouterr().out
    assert "VIOLATION" in out and "exponential (seeded)" in out


def test_report_section_from_the_stored_table(tmp_path):
    from dptaucc.audit.primitives import main as cli
    from dptaucc.audit.report import primitives_section

    assert primitives_section(tmp_path / "audit_primitives.parquet") == []
    assert cli(["-n", "2000", "--output", str(tmp_path / "audit_primitives.parquet")]) == 0
    text = "\n".join(primitives_section(tmp_path / "audit_primitives.parquet"))
    assert "### Mechanism-level audit" in text and "| discrete-laplace | seeded | 1 |" in text


def test_the_numpy_choice_paths_are_audited_with_power(monkeypatch):
    """``exponential-many`` (65 choices: beyond the compiled loop) and ``exponential-portable``
    (compiled loops off) run the numpy choice; a halved scale planted there alone shows in
    both and not in ``exponential``, which the compiled loop serves when it is built."""
    from dptaucc import kernels

    real = kernels._choose_block
    calls = []

    def halved(logits, hi, lo, scale):
        calls.append(logits.shape[1])
        return real(logits, hi, lo, scale / 2)

    monkeypatch.setattr(kernels, "_choose_block", halved)
    for name in ("exponential-many", "exponential-portable"):
        calls.clear()
        row = audit_primitive(name, 1.0, n=200_000, seed=2)
        assert calls and row["epsilon_lower"] > 1.0, (name, row)
    if kernels.native_kernels() is not None:
        calls.clear()
        row = audit_primitive("exponential", 1.0, n=200_000, seed=2)
        assert not calls and row["epsilon_lower"] <= 1.0, row


def test_the_seeded_only_paths_are_not_repeated_on_the_secure_samplers():
    assert set(SEEDED_ONLY) <= set(PRIMITIVES)
    assert not set(SEEDED_ONLY) & set(primitive_names(secure=True))
    assert primitive_names(secure=False) == list(PRIMITIVES)


@pytest.mark.parametrize("name", ["discrete-laplace", "exponential", "exponential-many"])
def test_an_inverted_scale_is_seen_because_the_audit_scale_is_not_one(monkeypatch, name):
    """Δ/ε computed as ε/Δ: at Δ = ε = 1 (the audit's pairs before Δ = 2) both are 1."""
    from dptaucc.privacy import mechanisms

    def inverted(ledger, step, mechanism, epsilon, sensitivity, composition, note):
        scale = 0.0 if math.isinf(epsilon) else epsilon / sensitivity
        ledger.charge(step, mechanism, epsilon, 0.0, sensitivity, composition, note, scale)
        return scale

    monkeypatch.setattr(mechanisms, "_charge_scaled", inverted)
    assert primitives.SENSITIVITY != 1
    assert primitives.violated(audit_primitive(name, 1.0, n=20_000, seed=4))


def test_a_kernel_that_transforms_the_utilities_is_seen(monkeypatch):
    """A choice computed from scale/u instead of u/scale: at utilities 0 every logit is inf
    on both sides (one fixed choice, nothing to see); at the audit's UTILITY_BASE it shows."""
    from dptaucc import kernels

    real = kernels._choose_block

    def transformed(logits, hi, lo, scale):
        with np.errstate(divide="ignore"):
            return real(scale / logits, hi, lo, 1.0)

    monkeypatch.setattr(kernels, "_choose_block", transformed)
    assert primitives.UTILITY_BASE != 0
    row = audit_primitive("exponential-many", 1.0, n=50_000, seed=3)
    assert row["epsilon_lower"] > 1.0, row
    monkeypatch.setattr(primitives, "UTILITY_BASE", 0.0)  # the old pair: every utility 0 on D
    monkeypatch.setattr(primitives, "UTILITY_TILT", 0.0)
    assert audit_primitive("exponential-many", 1.0, n=50_000, seed=3)["epsilon_lower"] <= 1.0


@pytest.mark.parametrize("name, inverter", [("exponential-many", "_invert_sorted_by_argsort"),
                                            ("exponential-portable",
                                             "_invert_sorted_by_network")])
def test_each_numpy_primitive_takes_its_own_inversion(monkeypatch, name, inverter):
    """The numpy choice inverts the cumulative weights by argsort beyond 16 choices and by a
    sorting network up to 16: one primitive reaches each."""
    from dptaucc import kernels

    real, seen = getattr(kernels, inverter), []

    def spy(weights, u):
        seen.append(weights.shape[0])
        return real(weights, u)

    monkeypatch.setattr(kernels, inverter, spy)
    audit_primitive(name, 1.0, n=1_000, seed=0)
    assert seen, f"{name} never reached {inverter}"


def test_a_fold_of_the_bounded_draw_is_seen_at_a_small_epsilon(monkeypatch):
    """The bounded mechanism folds the discrete-Laplace draw z into {0, 1, …} as z or −z − 1;
    folding the negative half to z − 1 instead leaves every loss at ε = 1 on {0, …, 10}
    within ε (the plain pair passes) but costs 2.75× the charge at y = 1 on the fine pair
    (ε = 0.2 on {0, …, 20}, computed from the exact law)."""
    from dptaucc.privacy import bounded

    real = np.where

    def folded(cond, x, y):
        if isinstance(y, np.ndarray) and y.dtype == np.int64 and np.array_equal(y, -x - 1):
            return real(cond, x, x - 1)
        return real(cond, x, y)

    monkeypatch.setattr(bounded.np, "where", folded)
    assert not primitives.violated(audit_primitive("bounded-discrete-laplace", 1.0, seed=4))
    row = audit_primitive("bounded-discrete-laplace-fine", 1.0, seed=4)
    assert row["epsilon_lower"] > 2 * row["epsilon"], row


def test_a_kernel_that_never_returns_a_unique_maximum_is_seen(monkeypatch):
    """A choice kernel that hands the largest weight's mass to the next one changes nothing
    when the maximum is tied on both sides; with choice 0 the unique maximum on D only
    (UTILITY_TILT) it never comes out on D and often on D'."""
    from dptaucc import kernels

    real = kernels._invert_sorted_by_network

    def skip_top(weights, u):
        chosen = real(weights, u)
        cols = np.arange(weights.shape[1])
        top = weights.max(axis=0)
        unique = (weights == top).sum(axis=0) == 1
        lower = np.where(weights < top, weights, -np.inf)
        hit = unique & (weights[chosen, cols] == top)
        return np.where(hit, lower.argmax(axis=0), chosen)

    monkeypatch.setattr(kernels, "_invert_sorted_by_network", skip_top)
    assert primitives.UTILITY_TILT > 0
    row = audit_primitive("exponential-portable", 1.0, n=50_000, seed=5)
    assert row["epsilon_lower"] > 1.0, row


@pytest.mark.parametrize("name", ["linear-exponential", "linear-exponential-sparse"])
def test_a_linear_sensitivity_read_along_the_wrong_axis_is_seen(monkeypatch, name):
    """Δ(W) taken over each row of W instead of each column: the pairs' W has two columns whose
    rows all span Δ/2, so the slip halves the sensitivity (with one column it gave Δ = 0 and a
    uniform, data-blind choice: the audit saw nothing)."""
    from dptaucc.privacy import mechanisms

    monkeypatch.setattr(mechanisms, "linear_range_sensitivity",
                        lambda w: float(np.max(np.ptp(np.asarray(w, dtype=float), axis=1))))
    row = audit_primitive(name, 1.0, n=50_000, seed=3)
    assert row["epsilon_lower"] > 1.0, row
