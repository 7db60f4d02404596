"""The neighbour sweep (dptaucc.audit.neighbour_sweep): exact checks on random neighbouring pairs.

Each planted slip is found by the check written for it, and correct code passes every check on
every random pair: the methods' own (seeded fits, tens of pairs each) and a toy's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from toys import ColumnTotals

from dptaucc.audit.neighbour_sweep import method_specs, sweep, sweep_record
from dptaucc.audit.pairs import make_pair
from dptaucc.audit.runner import fit_seed


def _sweep_toy(leak: str, n_pairs: int = 30):
    specs = [(make_pair("moving_row"), (), (), True)]
    return sweep(lambda params: (lambda seed: ColumnTotals(leak, random_state=seed)), specs,
                 n_pairs, lambda i: fit_seed(0, i), np.random.default_rng(0))


def test_the_correct_toy_passes_every_check_on_every_pair():
    res = _sweep_toy("none")
    assert not res.violated, res
    assert res.pairs == 30 and res.calls == 60 and res.ratio <= 1.0 + 1e-9


def test_an_exact_total_behind_a_fitted_attribute_is_found_by_the_state_check():
    res = _sweep_toy("state")
    assert res.violated and "a fitted attribute differs under the same releases" in res.declared
    assert "share_" in res.declared


def test_a_slip_on_the_dense_input_path_is_found_in_the_dense_rounds():
    """Every DENSE_EVERY-th round over the specs fits dense arrays: a slip only dense inputs
    reach is found there, and never by the sparse rounds before it."""
    from dptaucc.audit.neighbour_sweep import DENSE_EVERY

    res = _sweep_toy("dense", n_pairs=2 * DENSE_EVERY)
    assert res.violated and "(dense)" in res.declared and "share_" in res.declared, res
    assert res.dense_pairs == 1 and res.pairs == DENSE_EVERY
    assert not _sweep_toy("dense", n_pairs=DENSE_EVERY - 1).violated


def test_an_exact_total_in_a_private_attribute_is_found_by_the_state_check():
    res = _sweep_toy("private")
    assert res.violated and "a fitted attribute differs under the same releases" in res.declared
    assert "_total" in res.declared


def test_utilities_weighted_by_the_data_are_found_by_the_exact_cost_or_the_declared_move():
    res = _sweep_toy("weights")
    assert res.violated, res
    assert "choice" in (res.declared + res.where)


def test_noise_reused_across_releases_is_found():
    """The totals drawn twice from a generator rebuilt from the seed: each release alone has
    the right law, but the two carry the same noise (their difference is exact)."""

    class Reused(ColumnTotals):
        def fit(self, X, y=None):
            from dptaucc.privacy import PrivacyLedger, discrete_laplace_mechanism

            totals = np.asarray(X.sum(axis=0)).ravel().astype(np.int64)
            ledger = PrivacyLedger()
            for step in ("first", "second"):
                rng = np.random.default_rng(self.random_state)  # the slip: a fresh generator
                discrete_laplace_mechanism(totals, epsilon=1.0, sensitivity=1, sampler=rng,
                                           ledger=ledger, step=step)
            self.privacy_ledger_ = ledger
            return self

    specs = [(make_pair("moving_row"), (), (), True)]
    res = sweep(lambda params: (lambda seed: Reused(random_state=seed)), specs, 30,
                lambda i: fit_seed(0, i), np.random.default_rng(0))
    assert res.violated and "noise reused" in res.declared, res
    fresh = sweep(lambda params: (lambda seed: ColumnTotals(random_state=seed)), specs, 30,
                  lambda i: fit_seed(0, i), np.random.default_rng(0))
    assert "noise reused" not in fresh.declared


def test_an_attribute_one_neighbour_never_moves_is_found_on_the_far_twin():
    """The number of rows holding counts, kept as a fitted attribute: one count more in a row
    that already has counts never changes it, a random matrix of the same shape does."""

    class RowsCounted(ColumnTotals):
        def fit(self, X, y=None):
            super().fit(X)
            self.rows_with_counts_ = int((sp.csr_matrix(X).getnnz(axis=1) > 0).sum())
            return self

    specs = [(make_pair("moving_row"), (), (), True)]
    res = sweep(lambda params: (lambda seed: RowsCounted(random_state=seed)), specs, 10,
                lambda i: fit_seed(0, i), np.random.default_rng(0))
    assert res.violated and "(far twin)" in res.declared, res
    assert "rows_with_counts_" in res.declared


def test_refused_inputs_are_counted_not_dropped():
    class Refuses(ColumnTotals):
        def fit(self, X, y=None):
            raise ValueError("this toy refuses every input")

    specs = [(make_pair("moving_row"), (), (), True)]
    res = sweep(lambda params: (lambda seed: Refuses(random_state=seed)), specs, 3,
                lambda i: fit_seed(0, i), np.random.default_rng(0))
    assert res.refused[0] == 6 and "refuses every input" in res.refused[1]
    assert res.calls == 0 and not res.violated


def test_a_sensitivity_slip_is_found_by_the_declared_move():
    res = _sweep_toy("doubled")
    assert res.violated and "L1 move 2 > sensitivity 1" in res.declared


@pytest.mark.parametrize("method", ["dp_taucc", "dp_taucc_row", "dp_kmeans", "dpnmf", "dpm",
                                    "colored_noise"])
def test_correct_methods_pass_the_sweep(method):
    from dptaucc.audit.experiment import AuditJob

    job = AuditJob(method, "corrected", 1.0, 10)
    rec = sweep_record(job.factory, method, seed=3, n_pairs=40)
    assert rec["verdict"] == "ok", rec["event"]
    assert rec["epsilon_pair"] <= 1.0 + 1e-6


def test_dp_kmeans_without_its_cell_clipping_is_a_violation(monkeypatch):
    """A bug none of DP-KMeans' crafted pairs can show (every row of its call-site pairs sits
    above the tiny public bound, so the sums saturate their ranges either way): rows of their
    own, up to 64 times the pair's scale, move a cluster sum past its declared sensitivity."""
    import dptaucc.baselines.dp_kmeans as km

    from dptaucc.audit.experiment import AuditJob

    original = km._grid_rows
    monkeypatch.setattr(km, "_grid_rows", lambda X, grid, steps: original(X, grid, math.inf))
    job = AuditJob("dp_kmeans", "corrected", 1.0, 10)
    rec = sweep_record(job.factory, "dp_kmeans", seed=0, n_pairs=80)
    assert rec["verdict"] == "violation", rec["event"]
    assert "moved beyond its declaration" in rec["event"] and "cluster sums" in rec["event"]


def test_specs_judge_costs_only_on_the_call_site_pairs():
    specs = method_specs("dpm")
    costed = {p.name for p, _, _, costs in specs if costs}
    assert costed and costed <= {"added_row", "row_below_outer_candidates", "row_inside_gaps"}
    assert any(not costs for *_, costs in specs)  # end-to-end pairs: path and state only


def test_a_call_its_setup_skips_is_still_costed_by_the_sweep(monkeypatch):
    """A setup's ``skip`` names what that setup does not sample; the sweep costs every call
    (it once skipped them everywhere, which hid DPHD's recover sums from it)."""
    import dptaucc.audit.methods as methods
    from dptaucc.audit.scenarios import CallSiteSetup

    setup = CallSiteSetup(make_pair("moving_row"), (), skip=("totals",))
    monkeypatch.setattr(methods, "call_site_setup", lambda method: (setup,))
    monkeypatch.setattr(methods, "method_audits", lambda method: ())
    specs = method_specs("toy")
    assert [skip for _, _, skip, _ in specs] == [()]
    res = sweep(lambda params: (lambda seed: ColumnTotals("doubled", random_state=seed)), specs,
                10, lambda i: fit_seed(0, i), np.random.default_rng(0))
    assert res.violated and "totals" in res.declared


def test_calls_the_sweep_cannot_cost_are_named_as_no_evidence(monkeypatch):
    """A call with no exact cost on any pair (its law cannot be compared across D and D′) is
    counted and named by its kind, and the record says so."""
    import dptaucc.audit.neighbour_sweep as ns
    from dptaucc.audit.pair_cost import PairCost

    real = ns.pair_cost

    def blind_to_the_choice(a, b, delta=0.0):
        if a is not None and any(d.mechanism == "exponential" for d in a.declarations):
            return PairCost(math.nan, "not comparable")
        return real(a, b, delta)

    monkeypatch.setattr(ns, "pair_cost", blind_to_the_choice)
    res = _sweep_toy("none", n_pairs=6)
    assert not res.violated and res.no_exact_cost == 6 and res.unjudged == ("choice",)
    monkeypatch.setattr(ns, "method_specs",
                        lambda method: [(make_pair("moving_row"), (), (), True)])
    rec = ns.sweep_record(lambda params: (lambda seed: ColumnTotals(random_state=seed)), "toy",
                          seed=0, n_pairs=4)
    assert rec["verdict"] == "ok" and "never costed exactly: choice;" in rec["step"]
    assert rec["step"].endswith("kinds of call met: choice · totals")


def test_the_report_names_calls_the_sweep_met_and_no_call_site_samples():
    """A user's method whose second call no call-site setup reaches: the tightness section
    says there is no call-site evidence on it."""
    import pandas as pd

    from dptaucc.audit.report import tightness_section

    rec = sweep_record(lambda params: (lambda seed: ColumnTotals(random_state=seed)), "dp_taucc",
                       seed=0, n_pairs=2)
    df = pd.DataFrame([
        {"method": "mine", "mode": "corrected", "scope": "call-site",
         "step": "#0 totals (discrete-laplace)", "epsilon_claimed": 1.0, "delta": 0.0,
         "epsilon_lower": 0.95, "n_fits": 1000, "verdict": "ok", "limit": ""},
        {"method": "mine", "mode": "corrected", "scope": "sweep", "step": rec["step"]}])
    text = "\n".join(tightness_section(df))
    assert "**Never sampled at a call site**" in text and "mine: choice." in text
    df.loc[1, "step"] = df.loc[1, "step"].replace(" · totals", "").replace("choice", "totals")
    text = "\n".join(tightness_section(df))  # every kind met is sampled: said, not omitted
    assert "**Never sampled at a call site**: none" in text
    assert "**Never sampled at a call site**: none" not in "\n".join(tightness_section(df[:1]))


def test_a_mechanisms_data_dependent_use_of_its_randomness_is_not_a_false_alarm():
    """DPM's interval pick reads a bounded integer whose rejection step now and then takes
    another word of the generator, depending on the chosen interval's length (data): with
    every release equal, the seeded stream then shifted DPM's public simulated gap table, and
    audit seed 9 flagged the correct code (split_tree_ 16 != 13 under the same releases).
    The replay now continues each call from the recorded fit's generator state."""
    from dptaucc.audit.experiment import AuditJob

    job = AuditJob("dpm", "corrected", 1.0, 10)
    rec = sweep_record(job.factory, "dpm", seed=9, n_pairs=44)
    assert rec["verdict"] == "ok", rec["event"]


def test_a_gaussian_release_off_its_grid_is_found_on_the_first_pair(monkeypatch):
    """DPNMF's Gaussian releases with the rounding to the σ-relative grid dropped: every
    release carries its exact input in its low bits; the sweep's grid check flags the first
    pair, and the correct code passes the same pairs."""
    from dptaucc.audit.experiment import AuditJob
    from dptaucc.privacy import mechanisms

    job = AuditJob("dpnmf", "corrected", 1.0, 10)
    assert sweep_record(job.factory, "dpnmf", seed=0, n_pairs=4)["verdict"] == "ok"
    monkeypatch.setattr(mechanisms, "snap_to_grid", lambda noisy, scale, bits=24: noisy)
    rec = sweep_record(job.factory, "dpnmf", seed=0, n_pairs=4)
    assert rec["verdict"] == "violation" and "off its mechanism's grid" in rec["event"], rec
