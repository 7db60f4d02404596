"""The refit check (dptaucc.audit.refit_check): one estimator refitted after other fits must
hold what a fresh estimator fitted the same way holds.

Every private method passes on its first audit scenario; a refit that keeps a previous fit's
attribute (the colored-noise gap: a corrected model refitted after a paper-mode fit of the
local variant kept its non-private ``kmeans_labels_``), or whose values depend on the previous
fit (a warm start), is a violation, and the gate exits 3 on it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from toys import first_count

from dptaucc.audit import refit_check as rc
from dptaucc.audit.__main__ import main
from dptaucc.audit.experiment import AuditJob, _refit, violations
from dptaucc.audit.methods import call_site_setup, method_audits
from dptaucc.audit.secure import secure_factory
from dptaucc.base import SuiteEstimator

PRIVATE = ["dp_taucc", "dp_taucc_row", "dp_kmeans", "dphd", "dpnmf", "dpm", "colored_noise"]


def _first_unit(name):
    setups = call_site_setup(name)
    return (AuditJob(name, "corrected", None, 1, scope="call-site"), (setups[0], None)) \
        if setups else (AuditJob(name, "corrected", 1.0, 1), method_audits(name)[0])


def _no_forgetting(monkeypatch):
    """The bug: a fit no longer drops the attributes of an earlier fit."""
    monkeypatch.setattr(SuiteEstimator, "_forget_fit", lambda self: None)


@pytest.mark.parametrize("name", PRIVATE)
def test_every_private_method_refits_like_a_fresh_fit(name):
    job, unit = _first_unit(name)
    rec = _refit(job, unit, seed=0, bug=None)
    assert rec["scope"] == "refit" and rec["verdict"] == "ok", rec["event"]
    compared = int(rec["step"].split()[0])
    assert compared >= 2  # the same parameters and paper mode at least (dp_taucc_row: options)
    assert not violations([rec])


@pytest.mark.parametrize("name,attribute,history", [
    ("colored_noise", "kmeans_labels_", "variant='local' (in paper mode"),
    ("dp_kmeans", "labels_", "mode='paper'"),
    ("dpnmf", "row_labels_", "mode='paper'"),
])
def test_a_refit_that_keeps_a_paper_mode_attribute_is_a_violation(monkeypatch, name, attribute,
                                                                  history):
    _no_forgetting(monkeypatch)
    job, unit = _first_unit(name)
    rec = _refit(job, unit, seed=0, bug=None)
    assert rec["verdict"] == "violation" and violations([rec])
    assert any(p.startswith("refit keeps") and f"{attribute!r}" in p.split(" from ")[0]
               and history in p for p in rec["event"].split("; ")), rec["event"]


class WarmStart(BaseEstimator):
    """Releases X[0,0] + Laplace(1/ε) noise, started from the previous fit's release when
    ``warm`` (a private cache, so the fitted attributes' names are those of a fresh fit)."""

    def __init__(self, epsilon=1.0, warm=True, random_state=None):
        self.epsilon = epsilon
        self.warm = warm
        self.random_state = random_state

    def fit(self, X, y=None):
        start = getattr(self, "_last", 0.0) if self.warm else 0.0
        rng = np.random.default_rng(self.random_state)
        self.count_ = first_count(X) + rng.laplace(0.0, 1.0 / self.epsilon) + start
        self._last = self.count_
        return self


class Timed(BaseEstimator):
    """A release plus its wall time: two fresh fits with one seed differ in ``fit_seconds_``."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y=None):
        t0 = time.perf_counter()
        self.count_ = first_count(X) + np.random.default_rng(self.random_state).laplace()
        self.fit_seconds_ = time.perf_counter() - t0 + 1e-9 * np.random.default_rng().random()
        return self


def test_values_that_depend_on_the_previous_fit_are_a_violation():
    D, D_prime = np.array([[3]]), np.array([[4]])
    check = rc.check_refit(lambda s: WarmStart(random_state=s), D, D_prime, seed=1)
    assert check.verdict == "violation"
    assert "refit differs from a fresh fit in 'count_'" in check.problems[0]
    assert rc.check_refit(lambda s: WarmStart(warm=False, random_state=s), D, D_prime,
                          seed=1).verdict == "ok"


def test_attributes_two_fresh_fits_disagree_on_are_named_not_compared():
    check = rc.check_refit(lambda s: Timed(random_state=s), np.array([[3]]), np.array([[4]]),
                           seed=1)
    assert check.verdict == "ok" and check.compared == 1
    assert any("fit_seconds_" in note for note in check.notes)


def test_secure_fits_are_skipped_with_a_note(capsys):
    X = np.random.default_rng(0).poisson(2.0, size=(12, 8))
    build = secure_factory({"name": "dp_taucc", "_target_": "dptaucc.DPTauCC"},
                           {"n_row_clusters": 2, "n_col_clusters": 2})
    check = rc.check_refit(build, X, X + 1, seed=1)
    assert check.verdict == "no evidence" and "secure fit" in check.notes[0]
    job = AuditJob("dp_taucc", "corrected", None, 1, scope="call-site", secure=True)
    assert _refit(job, (call_site_setup("dp_taucc")[0], None), seed=0, bug=None) is None
    assert "refit: skipped" in capsys.readouterr().out


def test_histories_include_paper_mode_and_the_other_options():
    from dptaucc.baselines.dpm import DPM

    labels = [h.label for h in rc.histories(lambda s: DPM(random_state=s))]
    assert labels == ["same parameters", "mode='paper'", "row_transform='l1'"]
    same = rc.History("again", lambda s: DPM(random_state=s))  # duplicate settings: dropped
    assert len(rc.histories(lambda s: DPM(random_state=s), [same])) == 3


def test_difference_is_exact_with_nan_equal():
    assert rc.difference(np.array([1.0, np.nan]), np.array([1.0, np.nan])) is None
    assert rc.difference(np.array([1, 2], np.int32), np.array([1, 2], np.int64)) is not None
    assert rc.difference(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)])) is not None
    duplicated = sp.csr_matrix((np.array([1.0, 1.0]), (np.array([0, 0]), np.array([1, 1]))),
                               shape=(2, 2))
    assert rc.difference(duplicated, sp.csr_matrix(np.array([[0.0, 2.0], [0.0, 0.0]]))) is None
    assert rc.difference({"a": [1, (2, "x")]}, {"a": [1, (2, "y")]}) == "['a'][1][1]: 'x' != 'y'"


def test_the_gate_exits_3_on_a_refit_that_keeps_state(monkeypatch, tmp_path, capsys):
    _no_forgetting(monkeypatch)
    out = tmp_path / "audit.parquet"
    code = main(["--size", "quick", "--methods", "colored_noise", "--ledger-only",
                 "--no-progress", "--output", str(out)])
    assert code == 3
    assert "refit keeps 'kmeans_labels_'" in capsys.readouterr().out
    table = pd.read_parquet(out)
    refit = table[table["scope"] == "refit"]
    assert len(refit) == 1 and refit["verdict"].item() == "violation"
    lines = rc.refit_section(table)
    assert "**violation**: refit keeps 'kmeans_labels_'" in lines[-2]


def test_the_documented_refit_example_runs():
    """docs/audit.md's refit snippet, run as written after the ledger snippet it follows."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    ledger = next(b for b in blocks if "check_fit(model, pair.D)" in b)
    refit = next(b for b in blocks if "check_refit(build" in b)
    namespace = {"__name__": "example"}
    for code in (ledger, refit):
        exec(compile(code, "docs/audit.md", "exec"), namespace)
    assert namespace["check"].verdict == "ok"
