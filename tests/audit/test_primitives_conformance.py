"""The exact conformance layer of the primitives audit: it passes the kernels as they are and
fails on δ-sized sampler bugs (law moved on events of probability ~2⁻⁵³) that no number of
draws can show, each planted here by swapping one kernel function."""

import math

import numpy as np
import pytest

from dptaucc import kernels
from dptaucc.audit import conformance, primitives
from dptaucc.audit.conformance import GROUPS, Case, conformance_rows, run_case
from dptaucc.audit.experiment import AuditJob, run_job, violations
from dptaucc.privacy import SeededSampler, exact, samplers, wide_choice


def _failing(*groups: str) -> dict[str, str]:
    """{group: failures} of the groups that fail (only the named groups are run)."""
    rows = conformance_rows({g: GROUPS[g] for g in groups})
    return {r["primitive"]: r["failed"] for r in rows if not r["conforms"]}


def test_correct_kernels_conform_in_every_group():
    rows = conformance_rows()
    assert [r["primitive"] for r in rows] == list(GROUPS)
    assert all(r["conforms"] and r["check"] == "conformance" for r in rows), rows
    assert sum(r["n"] for r in rows) == sum(len(cases) for cases in GROUPS.values()) >= 20
    assert not any(primitives.violated(r) for r in rows)


def test_exponential_that_drops_the_low_word_of_a_tiny_uniform_fails(monkeypatch):
    """Every variate through the log1p branch: 1 − U loses the low word when U < 2⁻⁵³."""
    def log1p_only(hi, lo):
        tail = (np.asarray(lo) + 2.0**-54) * 2.0**-53
        with np.errstate(divide="ignore"):
            return -kernels.libm_log1p(-((1.0 - np.asarray(hi)) - tail))

    monkeypatch.setattr(kernels, "exponential_from_uniforms", log1p_only)
    failed = _failing("exponential_from_uniforms")
    assert "small arrays" in failed["exponential_from_uniforms"], failed
    assert "hi=0.0, lo=0.0: got inf" in failed["exponential_from_uniforms"]


def test_bernoulli_whose_tie_goes_to_true_fails(monkeypatch):
    """The tie hi = ⌊p·2⁵³⌋ decided by lo < a + whole: p rounded up to the 2⁻⁵³ grid."""
    def tie_up(p, hi, lo):
        hi = hi * 2.0**53
        a = p * 2.0**53
        whole = np.floor(a)
        return (hi < whole) | ((hi == whole) & (lo < a + whole))

    monkeypatch.setattr(samplers, "_bernoulli_from_uniforms", tie_up)
    failed = _failing("_bernoulli_from_uniforms", "seeded sampler draws",
                      "SecureSampler.bernoulli")
    assert set(failed) == {"_bernoulli_from_uniforms", "seeded sampler draws",
                           "SecureSampler.bernoulli"}, failed
    assert "(tie: True)" in failed["_bernoulli_from_uniforms"]


def test_seeded_sampler_that_reuses_its_high_uniform_as_the_low_one_fails(monkeypatch):
    def reused(self, size):
        u = self.rng.random(size)
        return kernels.exponential_from_uniforms(u, u)

    monkeypatch.setattr(SeededSampler, "standard_exponential", reused)
    failed = _failing("seeded sampler draws")["seeded sampler draws"]
    assert "standard_exponential" in failed and "discrete_laplace" in failed, failed
    assert "choose" not in failed  # the choice draws its own uniforms, still right


def test_exact_choice_bounds_that_miss_e_minus_gamma_fail(monkeypatch):
    """hi halved: proposal weights ⌈2³¹·e^(−γ)⌉, every proposal accepted."""
    real = exact._float_bounds
    monkeypatch.setattr(exact, "_float_bounds", lambda g: (real(g)[0], real(g)[1] * 0.5))
    failed = _failing("exact bounds", "exact_choose")
    assert "_float_bounds" in failed["exact bounds"] and "exact_choose" in failed, failed


def test_exact_choice_reading_its_uniform_from_the_wrong_bits_fails(monkeypatch):
    """Every OS word shifted right by 11 more bits before use: U below 2⁻¹¹."""
    real = exact.exact_choose

    def shifted(scores, scale, words=exact.os_words):
        return real(scores, scale, lambda n: words(n) >> np.uint64(11))

    monkeypatch.setattr(exact, "exact_choose", shifted)
    assert "exact_choose" in _failing("exact_choose")


def test_wide_choice_whose_fallback_takes_the_second_largest_weight_fails(monkeypatch):
    """U·total rounded to the last running sum (U within 2⁻⁵² of 1) falls back to the
    second largest weight's index instead of the largest's."""
    real = wide_choice.choose_wide_rows

    def second_largest(logits, hi, lo, scale=1.0):
        out = real(logits, hi, lo, scale)
        for i in range(logits.shape[0]):
            row = logits[i] / scale
            weights = kernels.libm_exp(row - row.max())
            u = (hi[i] + (lo[i] + 2.0**-54) * 2.0**-53) * np.cumsum(weights)[-1]
            order = np.argsort(weights, kind="stable")
            if not (u < np.cumsum(weights[order])).any():
                out[i] = order[-2]
        return out

    monkeypatch.setattr(wide_choice, "choose_wide_rows", second_largest)
    monkeypatch.setattr(samplers, "choose_wide_rows", second_largest)  # the sampler's name
    failed = _failing("choose_by_inversion", "seeded sampler draws")
    assert "wide rows" in failed["choose_by_inversion"], failed
    assert "the fallback" in failed["choose_by_inversion"]
    assert "compiled" not in failed["choose_by_inversion"]  # only the wide path is planted
    assert "choose, wide" in failed["seeded sampler draws"]


def test_a_case_that_raises_is_a_difference_and_a_case_too_close_to_a_boundary_is_refused():
    def boom():
        raise RuntimeError("ran out of words")

    assert run_case(Case("x", "y", boom)) == "raised RuntimeError: ran out of words"
    # U·total a relative 2⁻⁵³ from a running sum: the kernel's rounding may legitimately
    # cross it, so the case is refused rather than judged
    with pytest.raises(ValueError, match="too close"):
        conformance._inversion([0.0, 0.0], 0.5 - 2.0**-53, 0.5)


def test_the_cli_and_the_gate_exit_3_on_a_planted_kernel_bug(monkeypatch, capsys):
    assert primitives.main(["--conformance-only"]) == 0
    assert "exact conformance" in capsys.readouterr().out

    def tie_up(p, hi, lo):
        whole = np.floor(p * 2.0**53)
        return (hi * 2.0**53 < whole) | ((hi * 2.0**53 == whole) & (lo < p * 2.0**53 + whole))

    monkeypatch.setattr(samplers, "_bernoulli_from_uniforms", tie_up)
    assert primitives.main(["--conformance-only"]) == 3
    out = capsys.readouterr().out
    assert "VIOLATION: sampler kernels off their exact reference" in out
    assert "_bernoulli_from_uniforms" in out
    records = run_job(AuditJob("primitives", "corrected", None, 100, scope="sampler"),
                      progress=False)
    found = violations(records)
    steps = {r["step"] for r in found}
    assert "conformance: _bernoulli_from_uniforms" in steps, steps
    assert all(r["scope"] == "sampler" and r["method"] == "primitives" for r in found)
    exact_rows = [r for r in records if r["step"].startswith("conformance: ")]
    assert len(exact_rows) == len(GROUPS) and all(math.isnan(r["epsilon_lower"])
                                                 and r["alpha"] == 0.0 for r in exact_rows)


def test_report_lists_the_conformance_rows_apart_from_the_bounds(tmp_path):
    import pandas as pd

    from dptaucc.audit.report import primitives_section

    rows = conformance_rows({g: GROUPS[g] for g in ("exact_choose", "mechanism arguments")})
    rows[1] = {**rows[1], "conforms": False, "failed": "bounded n_changed: accepted"}
    pd.DataFrame(rows).to_parquet(tmp_path / "audit_primitives.parquet", index=False)
    text = "\n".join(primitives_section(tmp_path / "audit_primitives.parquet"))
    assert "| `exact_choose` | 1 | exact |" in text
    assert "| `mechanism arguments` | 1 | VIOLATION: bounded n_changed: accepted |" in text
    assert "| exact_choose | exact |" not in text  # not in the table of bounds


def test_a_case_that_cannot_run_here_is_named_not_counted_as_exact():
    def unavailable():
        raise conformance.NotRun("no secure sampler here")

    [row] = conformance_rows({"g": [Case("a", "r", lambda: None), Case("b", "r", unavailable)]})
    assert row["conforms"] and row["n"] == 1
    assert row["event"] == "all 1 cases exact; b not run: no secure sampler here"


def test_the_secure_gate_runs_the_conformance_checks_too(monkeypatch):
    """``python -m dptaucc.audit --secure`` runs the fresh-sampler job, not the seeded
    primitives job: the exact conformance checks run there as well, so a slip in a secure-only
    kernel (the exact choice's rational bounds on e^-γ) is a violation of that job."""
    from fractions import Fraction

    job = AuditJob("samplers", "corrected", None, 100, scope="sampler", secure=True)
    records = run_job(job, progress=False)
    exact_rows = [r for r in records if r["step"].startswith("conformance: ")]
    assert len(exact_rows) == len(GROUPS) and not violations(records)
    assert {r["method"] for r in exact_rows} == {"samplers"}

    bounds = exact.exp_neg_bounds
    monkeypatch.setattr(exact, "exp_neg_bounds",
                        lambda gamma, bits: tuple(x * Fraction(1001, 1000)
                                                  for x in bounds(gamma, bits)))
    steps = {r["step"] for r in violations(run_job(job, progress=False))}
    assert "conformance: exact bounds" in steps, steps


def test_gaussian_outputs_off_their_grid_fail(monkeypatch):
    """value + noise released unrounded (or only the noise rounded): the low bits carry the
    value, whatever the noise's law; the exact grid check sees it on the first draw."""
    from dptaucc.privacy import mechanisms

    assert not _failing("gaussian_mechanism")
    monkeypatch.setattr(mechanisms, "snap_to_grid", lambda noisy, scale, bits=24: noisy)
    failed = _failing("gaussian_mechanism")
    assert "outputs on the grid" in failed["gaussian_mechanism"], failed
    assert "is off the grid" in failed["gaussian_mechanism"]
