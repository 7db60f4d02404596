"""The ledger checked against the noise (dptaucc.audit.ledger_check, dptaucc.audit.privacy_map).

Every corrected estimator passes with every call charged exactly what its noise costs (the map
is tight: a map that undercounts would pass bugs), and one-line privacy bugs of the kinds an
under-reporting ledger has are caught: totals that drop a mechanism, a per-value mechanism
charged for one value, a scale from another sensitivity than the one charged, a Gaussian charged
as pure ε or with a smaller δ, two counts charged as one (parallel where they overlap), noise
drawn with no declared calibration, a secure fit drawing from a numpy generator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.nmf_dp import DPNMF
from dptaucc.baselines.nmf_dp.gaussian import analytic_gaussian_sigma

from dptaucc import DPTauCC
from dptaucc.audit import ledger_check as lc
from dptaucc.audit.experiment import AuditJob
from dptaucc.audit.methods import call_site_setup, method_audits
from dptaucc.audit.privacy_map import bounded_laplace_epsilon, call_cost, gaussian_epsilon
from dptaucc.privacy import PrivacyLedger, SecureSampler
from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw
from dptaucc.privacy.checks import ScaledSampler
from dptaucc.privacy.ledger import PrivacyLedger as Ledger

PRIVATE = ["dp_taucc", "dp_kmeans", "dpnmf", "dpm", "colored_noise"]


def _counts(seed=0, shape=(24, 10)):
    return np.random.default_rng(seed).poisson(1.5, size=shape)


def _units(name):
    return ([(s.pair, s.params) for s in method_audits(name)]
            + [(s.pair, s.params) for s in call_site_setup(name)])


def _assert_tight(check: lc.LedgerCheck):
    """Every call is charged what its noise costs, to 10⁻⁶: the map is not vacuous. The one
    exception is the bounded discrete Laplace, whose charge Δ/s per value is an upper bound:
    a value whose range {0, …, M} is narrower than Δ costs less (DP-KMeans' crafted call-site
    setup, a public bound one grid step above 4, measures 0.908 of the charge), never more."""
    assert check.calls, "no mechanism call observed"
    for call in check.calls:
        if call.epsilon_charged > 0 and math.isfinite(call.epsilon_charged):
            ratio = call.epsilon_cost / call.epsilon_charged
            low = 0.5 if call.mechanism == "bounded-discrete-laplace" else 1 - 1e-9
            assert low <= ratio <= 1 + 1e-6, (call.step, ratio, call.how)


@pytest.mark.parametrize("name", PRIVATE)
def test_every_corrected_estimator_is_charged_what_its_noise_costs(name):
    job = AuditJob(name, "corrected", 1.0, 1)
    for pair, params in _units(name):
        for k, X in enumerate((pair.D, pair.D_prime)):
            check = lc.check_fit(job.factory(params)(100 + k), X)
            check.raise_for_problems()
            _assert_tight(check)


@pytest.mark.octave
def test_dphd_is_charged_what_its_noise_costs():
    job = AuditJob("dphd", "corrected", 1.0, 1)
    pair, params = _units("dphd")[0]
    check = lc.check_fit(job.factory(params)(3), pair.D)
    check.raise_for_problems()
    _assert_tight(check)
    assert {c.mechanism for c in check.calls} == {"discrete-laplace", "exponential"}


@pytest.mark.parametrize("name", ["dp_taucc", "dp_kmeans", "dpnmf", "colored_noise"])
def test_secure_fits_draw_only_os_randomness(name):
    job = AuditJob(name, "corrected", 1.0, 1)
    pair, params = _units(name)[0]
    model = job.factory(params)(0).set_params(random_state=None, secure=True)
    check = lc.check_fit(model, pair.D)
    check.raise_for_problems()
    assert check.secure and {s for c in check.calls for s in c.sources} == {"secure"}


# ------------------------------------------------------------------ the privacy map itself
def test_bounded_map_is_the_exact_worst_case_of_small_ranges():
    """The closed form against a brute-force max over every pair and output."""
    for upper in (1, 2, 3, 7, 12):
        for scale in (0.4, 1.3, 5.0):
            for sens in (1, 2, 5):
                q = math.exp(-1 / scale)
                y = np.arange(upper + 1)
                pmf = np.array([q ** np.abs(y - w) for w in y])
                pmf /= pmf.sum(axis=1, keepdims=True)
                worst = max(float(np.max(np.log(pmf[w] / pmf[v])))
                            for w in y for v in y if abs(w - v) <= sens)
                mapped = float(bounded_laplace_epsilon(scale, upper, sens))
                assert mapped == pytest.approx(worst, rel=1e-9, abs=1e-12)


def test_gaussian_curve_matches_the_analytic_calibration():
    for eps, delta in ((0.25, 2.5e-6), (1.0, 1e-5), (4.0, 0.005)):
        sigma = analytic_gaussian_sigma(1.0, eps, delta)
        assert gaussian_epsilon(1.0 / sigma, delta) == pytest.approx(eps, rel=1e-9)


def test_map_sees_the_scale_drawn_not_the_scale_charged():
    declared = (Declaration("exponential", 1.0, "range"),)
    assert call_cost(Calibration(declared, (NoiseDraw("choice", "seeded", 2.0, 5),))
                     ).epsilon == pytest.approx(0.5)
    assert call_cost(Calibration(declared, (NoiseDraw("choice", "seeded", 1.0, 5),))
                     ).epsilon == pytest.approx(1.0)
    assert call_cost(Calibration((), (NoiseDraw("choice", "seeded", 1.0, 5),))).epsilon \
        == math.inf  # noise with no declared calibration


# ------------------------------------------------------------------ bugs it must catch
def _taucc():
    return DPTauCC(2, 2, epsilon=1.0, n_iterations=2, random_state=0)


def _violation(model, X=None) -> lc.LedgerCheck:
    check = lc.check_fit(model, _counts() if X is None else X)
    assert check.verdict == "violation", check.summary()
    return check


def test_correct_code_is_ok_on_the_same_fits():
    for model in (_taucc(), DPKMeans(2, epsilon=1.0, random_state=0),
                  DPNMF(2, epsilon=1.0, delta=1e-5, random_state=0)):
        assert lc.check_fit(model, _counts()).verdict == "ok"


def test_totals_that_drop_the_exponential_mechanism(monkeypatch):
    def mechanisms_but_exponential(self):
        return math.fsum(e.epsilon for e in self.entries
                         if e.composition != "non-private" and e.mechanism != "exponential")
    monkeypatch.setattr(Ledger, "epsilon_mechanisms", property(mechanisms_but_exponential))
    check = _violation(_taucc())
    assert check.epsilon_spent < 1.0
    assert any("differs from the ε" in p for p in check.problems)


def test_parallel_entries_counted_once_where_they_overlap(monkeypatch):
    """A ledger that treats every 'parallel' entry of one mechanism as one family (charging its
    largest ε once), although the calls draw on the same rows in different iterations."""
    def overlapping_parallel(self):
        live = [e for e in self.entries if e.composition != "non-private"]
        seq = [e.epsilon for e in live if e.composition == "sequential"]
        par: dict[str, float] = {}
        for e in live:
            if e.composition == "parallel":
                par[e.mechanism] = max(par.get(e.mechanism, 0.0), e.epsilon)
        return math.fsum(seq + list(par.values()))
    monkeypatch.setattr(Ledger, "epsilon_mechanisms", property(overlapping_parallel))
    _violation(_taucc())


def test_bounded_mechanism_charging_one_value_of_many(monkeypatch):
    """DP-KMeans' sums: 2d values move, the charge is one value's ε."""
    from dptaucc.privacy import bounded

    original = bounded.bounded_discrete_laplace_mechanism

    class OneValue:
        def __init__(self, ledger):
            self.ledger = ledger

        def charge(self, step, mechanism, epsilon, *args, **kwargs):
            return self.ledger.charge(step, mechanism, epsilon / 16, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.ledger, name)

    def buggy(values, **kwargs):
        kwargs["ledger"] = OneValue(kwargs["ledger"])
        return original(values, **kwargs)
    monkeypatch.setattr("dptaucc.baselines.dp_kmeans.bounded_discrete_laplace_mechanism", buggy)
    X = _counts(shape=(30, 8))  # d = 8: 2d = 16 values move
    check = _violation(DPKMeans(2, epsilon=1.0, random_state=0), X)
    bad = [c for c in check.calls if not c.ok]
    assert bad and all("sums" in c.step for c in bad)
    assert all(c.epsilon_cost == pytest.approx(16 * c.epsilon_charged, rel=1e-6) for c in bad)


def test_scale_from_another_sensitivity_than_the_one_charged(monkeypatch):
    from dptaucc.privacy import mechanisms

    original = mechanisms._charge_scaled

    def half_scale(ledger, step, mechanism, epsilon, sensitivity, composition, note):
        return original(ledger, step, mechanism, epsilon, sensitivity, composition, note) / 2
    monkeypatch.setattr(mechanisms, "_charge_scaled", half_scale)
    check = _violation(_taucc())
    assert all(c.epsilon_cost == pytest.approx(2 * c.epsilon_charged, rel=1e-6)
               for c in check.calls)


def test_mechanism_drawing_at_half_the_scale(monkeypatch):
    """The sampler the mechanisms draw from halves every scale; the charges stay."""
    from dptaucc.privacy import mechanisms

    original = mechanisms.as_sampler
    monkeypatch.setattr(mechanisms, "as_sampler", lambda s: ScaledSampler(original(s), 0.5))
    _violation(_taucc())


@pytest.mark.parametrize("charged_delta", [lambda d: 0.0, lambda d: d / 10])
def test_gaussian_charged_as_pure_or_with_a_smaller_delta(monkeypatch, charged_delta):
    from dptaucc.baselines.nmf_dp import release

    original = release.gaussian_mechanism

    def buggy(values, **kwargs):
        ledger = kwargs["ledger"]

        class Ledger_:
            def charge(self, step, mechanism, epsilon, delta, *args):
                return ledger.charge(step, mechanism, epsilon, charged_delta(delta), *args)

            def __getattr__(self, name):
                return getattr(ledger, name)
        return original(values, **{**kwargs, "ledger": Ledger_()})
    monkeypatch.setattr(release, "gaussian_mechanism", buggy)
    check = _violation(DPNMF(2, epsilon=1.0, delta=1e-5, random_state=0))
    assert all(not c.ok for c in check.calls)


def test_two_counts_charged_as_one_where_a_row_moves_both(monkeypatch):
    """DP-KMeans' counts declared 'each row is in one cluster' (sensitivity 1 at ε_count): the
    same noise, but a moved row changes two counts, and the books lose ε_count per
    iteration."""
    from dptaucc.baselines import dp_kmeans

    original = dp_kmeans.discrete_laplace_mechanism

    def buggy(values, *, epsilon, sensitivity, **kwargs):
        if "counts" in kwargs["step"]:
            epsilon, sensitivity = epsilon / 2, sensitivity / 2
        return original(values, epsilon=epsilon, sensitivity=sensitivity, **kwargs)
    monkeypatch.setattr(dp_kmeans, "discrete_laplace_mechanism", buggy)
    check = _violation(DPKMeans(2, epsilon=1.0, random_state=0))
    assert any("differs from the ε" in p for p in check.problems)


def test_noise_drawn_outside_any_declared_mechanism(monkeypatch):
    """The table's noise drawn from the sampler directly (charged as usual): no calibration
    declares it, and the entry's noise belongs to no observed call."""
    from dptaucc import dp_taucc
    from dptaucc.privacy import as_sampler

    def raw_table(exact, epsilon, sampler, ledger, step, paper, note=""):
        ledger.charge(step, "discrete-laplace", epsilon, 0.0, 1.0, "sequential", note,
                      1.0 / epsilon)
        noise = as_sampler(sampler).discrete_laplace(np.shape(exact), 1.0 / epsilon)
        return np.maximum(np.rint(exact).astype(np.int64) + noise, 0)
    monkeypatch.setattr(dp_taucc, "_noisy_table", raw_table)
    check = _violation(_taucc())
    assert any("no observed mechanism call drew" in p for p in check.problems)


def test_secure_fit_whose_side_draws_come_from_a_numpy_generator(monkeypatch):
    from dptaucc.privacy.samplers import Sampler

    monkeypatch.setattr(SecureSampler, "bernoulli", Sampler.bernoulli)
    check = _violation(DPKMeans(2, epsilon=1.0, secure=True))
    assert any("a seed can reproduce" in p for p in check.problems)


def test_ledger_record_is_a_gate_record(monkeypatch):
    from dptaucc.audit.experiment import violations

    build = AuditJob("dp_taucc", "corrected", 1.0, 1).factory((("n_iterations", 1),))
    pair = method_audits("dp_taucc")[0].pair
    ok = lc.ledger_record(build, pair.D, pair.D_prime, seed=1)
    assert ok["verdict"] == "ok" and ok["scope"] == "ledger"
    monkeypatch.setattr(PrivacyLedger, "epsilon_mechanisms",
                        property(lambda self: 0.5 * math.fsum(e.epsilon for e in self.entries)))
    bad = lc.ledger_record(build, pair.D, pair.D_prime, seed=1)
    assert violations([{**bad, "mode": "corrected"}])


@pytest.mark.parametrize("name,scenario,target", [
    ("dpnmf", 0, "dptaucc.baselines.nmf_dp.model.dense_counts"),
    ("dp_kmeans", 1, "dptaucc.baselines.dp_kmeans.dense_counts"),
    ("dpm", 0, "dptaucc.baselines.dpm.rows.is_dense_enough"),
])
def test_filled_pairs_take_the_dense_paths_the_pairs_miss(monkeypatch, name, scenario, target):
    """The ledger record also checks each pair with every cell filled: the methods' dense
    branches run there, on pairs whose own density keeps them on the sparse branch."""
    import importlib

    module, attr = target.rsplit(".", 1)
    owner = importlib.import_module(module)
    original, dense = getattr(owner, attr), []

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        dense.append(out is True or (out is not None and out is not False))
        return out
    monkeypatch.setattr(owner, attr, spy)
    spec = method_audits(name)[scenario]
    pair, build = spec.pair, AuditJob(name, "corrected", 1.0, 1).factory(spec.params)
    lc.check_fit(build(0), pair.D)
    on_pair, dense[:] = list(dense), []
    lc.check_fit(build(0), lc.filled(pair.D))
    assert dense and all(dense) and not all(on_pair), (on_pair, dense)


@pytest.mark.parametrize("name", ["dpm", "colored_noise"])
def test_a_capped_row_budget_still_spends_the_epsilon_given(name):
    """ε > 400: the add/remove budget is capped at 200, the rest charged as set aside."""
    pair, params = _units(name)[0]
    build = AuditJob(name, "corrected", 1000.0, 1).factory(params)
    check = lc.check_fit(build(0), pair.D)
    check.raise_for_problems()
    assert check.epsilon_spent == 1000.0


def test_a_fit_that_raises_is_named_not_fatal():
    """A fit that refuses an input (e.g. a bound read from an all-zero matrix) leaves that
    input's ledger unchecked and says so; the others are still checked; none: no evidence."""
    import numpy as np
    import scipy.sparse as sp

    from dptaucc import DPTauCC
    from dptaucc.audit.ledger_check import ledger_record

    class Picky(DPTauCC):
        def fit(self, X, y=None):
            if sp.csr_matrix(X).sum() < 5:
                raise ValueError("too few counts")
            return super().fit(X)

    class Refuses(DPTauCC):
        def fit(self, X, y=None):
            raise ValueError("never")

    D = np.zeros((6, 4), dtype=int)
    D_prime = D.copy()
    D_prime[0, 0] = 1
    rec = ledger_record(lambda s: Picky(2, 2, epsilon=1.0, random_state=s), D, D_prime, seed=0)
    assert rec["verdict"] == "ok" and rec["n_fits"] == 2
    assert "the fit on D raised ValueError: too few counts" in rec["event"]
    none = ledger_record(lambda s: Refuses(2, 2, epsilon=1.0, random_state=s), D, D_prime,
                         seed=0)
    assert none["verdict"] == "no evidence" and none["n_fits"] == 0


def test_colored_noise_white_variances_are_checked_by_a_setup(monkeypatch):
    """Colored noise's call-site setups include ``noise="white"`` (no other scenario uses it):
    white variances halved (ε about 1.7× its charge) make that setup's ledger record a
    violation, and the default full-covariance setup stays ok."""
    import dptaucc.baselines.colored_noise.estimator as cn

    setups = call_site_setup("colored_noise")
    white = [s for s in setups if dict(s.params).get("noise") == "white"]
    assert len(white) == 1
    build = AuditJob("colored_noise", "corrected", 1.0, 1).factory(white[0].params)
    pair = white[0].pair
    assert lc.ledger_record(build, pair.D, pair.D_prime, seed=1)["verdict"] == "ok"
    correct = cn.public_domain_variances

    def halved_white(p, gamma, noise, radius=cn.DOMAIN_RADIUS):
        var = correct(p, gamma, noise, radius)
        return var / 2 if noise == "white" else var

    monkeypatch.setattr(cn, "public_domain_variances", halved_white)
    assert lc.ledger_record(build, pair.D, pair.D_prime, seed=1)["verdict"] != "ok"
    full = setups[0]
    build_full = AuditJob("colored_noise", "corrected", 1.0, 1).factory(full.params)
    assert lc.ledger_record(build_full, full.pair.D, full.pair.D_prime, seed=1)["verdict"] == "ok"
