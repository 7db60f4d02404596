"""The mutation run's machinery: scratch copy, restore, time limits, maps, table, report;
the false-alarm run's statistics."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dptaucc.auditscore.baselines import AuditBaseline, TestMap, _junit, doctest_ids
from dptaucc.auditscore.false_alarms import clopper_pearson, primitive_decisions, summarise
from dptaucc.auditscore.judgements import load_judgements
from dptaucc.auditscore.mutants import Store, merge_tables, mutant_table, score
from dptaucc.auditscore.mutate import mutants_of
from dptaucc.auditscore.report import audit_score_section
from dptaucc.auditscore.scratch import ScratchTree, run, tree_hash
from dptaucc.auditscore.targets import GROUPS

REPO = Path(__file__).resolve().parents[2]
MECHANISMS = "dptaucc/privacy/mechanisms.py"


def _exact_mutant():
    source = (REPO / MECHANISMS).read_text(encoding="utf-8")
    return next(m for m in mutants_of(MECHANISMS, source)
                if m.operator == "exact" and m.function == "discrete_laplace_mechanism.draw")


def test_a_mutant_lives_in_the_scratch_copy_only_and_is_always_undone(tmp_path):
    mutant = _exact_mutant()
    before = (REPO / MECHANISMS).read_bytes()
    with ScratchTree(REPO, tmp_path) as tree:
        copy = tree.copy / MECHANISMS
        assert copy.read_bytes() == before and tree.hash == tree_hash(REPO)
        with pytest.raises(KeyError), tree.mutated(mutant) as path:
            assert path == copy and b"return exact + sampler" not in copy.read_bytes()
            assert (REPO / MECHANISMS).read_bytes() == before  # the working tree untouched
            raise KeyError("a crash while a mutant is in place")
        assert copy.read_bytes() == before  # restored even so
        assert (tree.copy / "dptaucc" / "baselines").resolve() == (tree.copy / "baselines")
        scratch = tree.dir
    assert not scratch.exists()  # nothing left behind


@pytest.mark.slow
def test_commands_import_the_scratch_copy_and_see_the_mutant(tmp_path):
    with ScratchTree(REPO, tmp_path) as tree:
        assert tree.imports_from_view()
        probe = ("import numpy as np; from dptaucc.privacy import discrete_laplace_mechanism as "
                 "m, PrivacyLedger as L; print(m(np.zeros(200, int), epsilon=1.0, "
                 "sensitivity=1, sampler=np.random.default_rng(0), ledger=L(), step='s')"
                 ".any())")
        honest = run([sys.executable, "-c", probe], cwd=tree.copy, env=tree.env(), timeout=300)
        with tree.mutated(_exact_mutant()):
            broken = run([sys.executable, "-c", probe], cwd=tree.copy, env=tree.env(),
                         timeout=300)
    assert honest.output.split()[-1] == "True"   # noise drawn
    assert broken.output.split()[-1] == "False"  # the mutant releases the exact zeros


def test_a_command_over_its_time_limit_is_killed_with_its_children(tmp_path):
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(600)']); time.sleep(600)")
    start = time.perf_counter()
    res = run([sys.executable, "-c", code], cwd=tmp_path, env={}, timeout=2.0)
    assert res.timed_out and time.perf_counter() - start < 60
    assert run([sys.executable, "-c", "raise SystemExit(3)"], cwd=tmp_path, env={},
               timeout=60).returncode == 3


def test_reach_and_test_selection():
    base = AuditBaseline("primitives", 0, 10.0, {"a.py": [3, 7, 8]})
    assert base.reaches("a.py", (7, 7)) and base.reaches("a.py", (5, 9))
    assert not base.reaches("a.py", (4, 6)) and not base.reaches("b.py", (3, 3))
    assert not AuditBaseline("x", 3, 1.0, {}).usable  # a gate failing correct code judges nothing
    tm = TestMap("g", 0, 5.0, {"a.py": {"3": ["t1", "t2"], "4": ["t3"], "5": []}},
                 ["t1", "t3"], {"t1": 1.0, "t3": 2.0})
    assert tm.tests_for("a.py", (5, 5), False) == ["t1", "t3"]  # ran at import only
    assert tm.tests_for("a.py", (6, 6), False) == []  # never ran
    assert tm.tests_for("a.py", (3, 3), False) == ["t1"]  # t2 failed on correct code
    assert tm.tests_for("a.py", (9, 9), True) == ["t1", "t3"]  # module level: any of the file
    assert tm.seconds_of(["t1", "t3"]) == 3.0


def test_junit_names_become_node_ids(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase classname="tests.privacy.test_ledger" '
        'name="test_a[1]" time="0.5"/><testcase classname="tests.privacy.test_ledger" '
        'name="test_b" time="1.0"><failure/></testcase></testsuite></testsuites>')
    passed, durations = _junit(xml, REPO)
    assert passed == ["tests/privacy/test_ledger.py::test_a[1]"]
    assert durations["tests/privacy/test_ledger.py::test_b"] == 1.0
    ids = doctest_ids(next(g for g in GROUPS if g.name == "dpm"))
    assert "tests/packaging/test_doctests.py::test_examples_run[dptaucc.baselines.dpm.tree]" in ids


def test_judgements_are_checked(tmp_path):
    assert isinstance(load_judgements(), dict)
    bad = tmp_path / "j.yaml"
    bad.write_text("abc:\n  verdict: fine\n  reason: x\n")
    with pytest.raises(ValueError, match="verdict"):
        load_judgements(bad)
    bad.write_text("abc:\n  verdict: gap\n  reason: ''\n")
    with pytest.raises(ValueError, match="reason"):
        load_judgements(bad)


def test_table_score_and_report(tmp_path):
    source = "def f(x):\n    return x * 2 + 1\n"
    sample = mutants_of("dptaucc/privacy/m.py", source)[:5]
    store = Store(tmp_path / "store" / "results.jsonl")
    outcomes = [("violation", "failed"), ("survived", "survived"), ("survived", "failed"),
                ("unreached", "survived"), ("timeout", "no tests")]
    for m, (audit, tests) in zip(sample, outcomes, strict=True):
        store.put({"id": m.id, "tree_hash": "t", "audit": audit, "tests": tests,
                   "audits_run": ["primitives"], "audit_s": 1.0, "tests_s": 1.0, "n_tests": 1})
    assert Store(store.path).get(sample[0].id, "t")["audit"] == "violation"  # resumed
    assert Store(store.path).get(sample[0].id, "other tree") is None
    judgements = {sample[1].id: {"verdict": "equivalent", "reason": "r"}}
    df = mutant_table(sample, store, "t", judgements, 99, 0)
    s = score(df)
    assert (s["run"], s["reached"], s["unreached"], s["equivalent"], s["unjudged"]) == (
        5, 4, 1, 1, 1)
    assert (s["killed_audit"], s["killed_tests"], s["killed_both"]) == (2, 2, 1)
    assert (s["score_killed"], s["score_n"]) == (2, 3) and math.isclose(s["score"], 2 / 3)
    assert s["score_violations"] == 1  # the other kill is a timeout
    df.to_parquet(tmp_path / "audit_mutants.parquet")
    rows = [{"kind": "primitive", "name": "p", "alarm": a, "alpha": 0.05, "config": "n=100"}
            for a in (True, False, False, False)]
    pd.DataFrame(rows).to_parquet(tmp_path / "audit_false_alarms.parquet")
    text = "\n".join(audit_score_section(tmp_path))
    assert "2/3 (67 %) of the 3 non-equivalent mutants" in text
    assert "| primitive | 4 | 1 | 0.2500" in text and "primitive: n=100" in text


def test_the_report_section_is_read_from_the_tables_and_follows_them(tmp_path):
    """The REPORT section says when a table is absent, and its numbers come from the stored
    tables: a changed outcome or a changed alarm changes the text."""
    absent = "\n".join(audit_score_section(tmp_path))
    assert "No mutation run is stored" in absent and "No false-alarm run is stored" in absent
    assert "Score" not in absent and "observed rate" not in absent

    sample = mutants_of("dptaucc/privacy/m.py", "def f(x):\n    return x * 2 + 1\n")[:4]
    store = Store(tmp_path / "store" / "results.jsonl")
    for m in sample:
        store.put({"id": m.id, "tree_hash": "t", "audit": "violation", "tests": "failed",
                   "audits_run": ["primitives"], "audit_s": 30.0, "tests_s": 30.0})
    mutant_table(sample, store, "t", {}, 1328, 7).to_parquet(tmp_path / "audit_mutants.parquet")
    decisions = pd.DataFrame({"kind": ["primitive"] * 200, "name": ["p"] * 200,
                              "alarm": [False] * 200, "alpha": [0.05] * 200,
                              "config": ["n=50000"] * 200, "seed": range(200)})
    decisions.to_parquet(tmp_path / "audit_false_alarms.parquet")
    first = "\n".join(audit_score_section(tmp_path))
    assert "a stratified sample of 4 of the 1328 mutants" in first and "(seed 7" in first
    assert "A sample, not a census" in first and "4 min of audits and tests" in first
    assert "kills 4/4 (100 %) of the 4 non-equivalent mutants" in first
    assert "interval 40–100 %" in first  # Clopper–Pearson for 4 of 4
    assert "| primitive | 200 | 0 | 0.0000 [0.0000, 0.0183] | 0.05 | 10.0 |" in first
    assert "No kind of decision alarms significantly" in first and "seeds 0–199" in first

    store.put({"id": sample[0].id, "tree_hash": "t", "audit": "survived", "tests": "failed",
               "audits_run": ["primitives"], "audit_s": 30.0, "tests_s": 30.0})
    mutant_table(sample, store, "t", {}, 1328, 7).to_parquet(tmp_path / "audit_mutants.parquet")
    decisions.loc[:39, "alarm"] = True  # 40 alarms in 200 at α = 0.05: too many
    decisions.to_parquet(tmp_path / "audit_false_alarms.parquet")
    second = "\n".join(audit_score_section(tmp_path))
    assert "kills 3/4 (75 %) of the 4 non-equivalent mutants" in second
    assert "unjudged" in second and sample[0].id in second  # the survivor is listed
    assert "| primitive | 200 | 40 | 0.2000 [" in second
    assert "Above nominal (the interval lies above α): primitive." in second


def test_a_run_of_one_group_keeps_the_other_groups_rows_and_the_report_splits_them(tmp_path):
    """A table of two groups judged on different trees and seeds: a new run of one group (or of
    some ids) replaces only its own rows; REPORT gives each group's sample and score."""
    privacy = mutants_of("dptaucc/privacy/bounded.py", "def f(x):\n    return x * 2 + 1\n")[:3]
    dpm = mutants_of("baselines/dpm/core.py", "def g(x):\n    return x - 3\n")[:2]
    store = Store(tmp_path / "results.jsonl")
    for m, audit in zip(privacy, ("violation", "survived", "error"), strict=True):
        store.put({"id": m.id, "tree_hash": "t1", "audit": audit, "tests": "failed"})
    old = mutant_table(privacy, store, "t1", {privacy[1].id: {"verdict": "out of reach",
                                                               "reason": "2^-53"}}, 1328, 1)
    for m in dpm:
        store.put({"id": m.id, "tree_hash": "t2", "audit": "survived", "tests": "survived"})
    table = merge_tables(old, mutant_table(dpm, store, "t2", {}, 1068, 1))
    assert sorted(table["group"]) == ["dpm"] * 2 + ["privacy"] * 3
    assert set(table.loc[table["group"] == "privacy", "tree_hash"]) == {"t1"}
    store.put({"id": dpm[0].id, "tree_hash": "t3", "audit": "violation", "tests": "survived"})
    again = merge_tables(table, mutant_table(dpm[:1], store, "t3", {}, 1068, 0), by_id_only=True)
    assert len(again) == 5 and again.loc[again["id"] == dpm[0].id, "audit"].item() == "violation"
    assert again.loc[again["id"] == dpm[0].id, "sample_seed"].item() == 1  # its sample's seed
    assert again.loc[again["id"] == dpm[1].id, "audit"].item() == "survived"
    assert score(again)["out_of_reach"] == 1 and score(again)["score_n"] == 5
    again.to_parquet(tmp_path / "audit_mutants.parquet")
    text = "\n".join(audit_score_section(tmp_path))
    assert "one stratified sample per group: dpm 2 of 1068 (seed 1, tree t2, t3)" in text
    assert "privacy 3 of 1328 (seed 1, tree t1)" in text
    assert "| dpm | 2 | 2 | 1 | 0 | 0 | 1 / 0 / 1 | 0 / 0 / 0 | 1/2 (50 %), 1–99 % |" in text
    assert "| privacy | 3 | 3 | 2 | 3 | 2 | 0 / 1 / 0 | 0 / 1 / 0 | 2/3 (67 %), 9–99 % |" in text


def test_clopper_pearson_and_the_false_alarm_summary():
    lo, hi = clopper_pearson(3, 100)
    assert 0.006 < lo < 0.007 and 0.085 < hi < 0.086  # R: binom.test(3, 100)$conf.int
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    rows = primitive_decisions(seed=5, n=2000)
    from dptaucc.audit.primitives import PRIMITIVES

    assert [r["name"].split()[0] for r in rows] == list(PRIMITIVES)  # one decision each
    assert {"discrete-laplace", "bounded-discrete-laplace", "exponential",
            "linear-exponential", "gaussian"} <= set(PRIMITIVES)
    s = summarise(pd.DataFrame(rows))
    assert s["decisions"].tolist() == [len(PRIMITIVES)]
    assert s["nominal_alpha"].tolist() == pytest.approx([0.05])


@pytest.mark.parametrize("second_exit, outcome", [(3, "violation"), (0, "survived")])
def test_a_violation_kills_only_when_an_independent_audit_confirms_it(
        tmp_path, monkeypatch, second_exit, outcome):
    """A mutant that only reshuffles the randomness crosses the line by chance at the audit's
    α: its violation is rerun with another audit seed, and counts only when it repeats."""
    import subprocess

    from dptaucc.auditscore import baselines
    from dptaucc.auditscore.mutants import judge_mutant

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "dptaucc").mkdir()
    source = "def f(x):\n    return x * 2\n"
    (repo / "dptaucc" / "m.py").write_text(source)
    mutant = mutants_of("dptaucc/m.py", source)[0]
    gate = f"import sys; raise SystemExit({second_exit} if '--seed' in sys.argv else 3)"
    monkeypatch.setitem(baselines.AUDITS, "fake", ("-c", gate))
    base = AuditBaseline("fake", 0, 1.0, {"dptaucc/m.py": [1, 2]})
    with ScratchTree(repo, tmp_path) as tree:
        record = judge_mutant(tree, mutant, {"fake": base}, None, factor=3.0, floor=60.0)
    assert record["audit"] == outcome
    assert ("not confirmed with --seed 1" in record["audit_detail"]) == (outcome == "survived")
    assert ("| confirmed with --seed 1" in record["audit_detail"]) == (outcome == "violation")
