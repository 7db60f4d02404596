"""`make verify`: which record fields travel (travel.py), the stratified sample, the verdicts,
and the command end to end on committed records (a tampered one must be reported, exit 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from dptaucc.bench import verify
from dptaucc.bench.run import COLUMNS
from dptaucc.bench.travel import (
    EXACT_FIELDS,
    FLOAT_FIELDS,
    LEDGER_FIELD,
    MACHINE_FIELDS,
    OUTCOME_FIELDS,
    compare_records,
    field_kind,
)
from dptaucc.methods import methods

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- which fields travel
def test_every_record_column_has_exactly_one_kind():
    kinds = [set(EXACT_FIELDS), set(FLOAT_FIELDS), set(MACHINE_FIELDS), {LEDGER_FIELD}]
    assert sum(len(k) for k in kinds) == len(set().union(*kinds)), "a field in two kinds"
    assert set(COLUMNS) == set().union(*kinds), (
        "classify every record column in dptaucc/bench/travel.py (and docs/records.md)")
    assert set(OUTCOME_FIELDS) <= set(FLOAT_FIELDS) | set(EXACT_FIELDS)


def test_records_md_names_the_kind_of_every_field():
    text = (REPO / "docs" / "records.md").read_text(encoding="utf-8")
    section = text.split("## What travels between machines", 1)[1].split("\n## ", 1)[0]
    for kind, fields in (("exact", EXACT_FIELDS), ("float", FLOAT_FIELDS),
                         ("machine", MACHINE_FIELDS)):
        part = section.split(f"**{kind}**", 1)[1].split("\n- **", 1)[0]
        missing = [f for f in fields if f"`{f}`" not in part]
        assert not missing, f"docs/records.md: {kind} fields not listed: {missing}"


def test_float_path_modes_are_modes_of_their_method():
    for m in methods():
        assert set(m.float_path) <= set(m.modes), m.name


_RECORD = {"run_id": "r1", "algorithm": "dp_taucc", "mode": "corrected", "seed": 0,
           "epsilon": 1.0, "k_found": 3, "nmi_rows": 0.5, "ari_rows": None,
           "epsilon_spent": 1.0, "status": "ok", "p_h": 0.5, "fit_time_s": 0.1,
           "versions": "{}", "ledger": json.dumps([{"step": "a", "epsilon": 0.5,
                                                    "note": "x"}])}


def test_compare_records_exact_float_ledger_and_machine_fields():
    assert compare_records(_RECORD, {**_RECORD, "fit_time_s": 3.0, "versions": "{1}",
                                     "cpu": "other"}) == []
    assert compare_records(_RECORD, {**_RECORD, "ari_rows": math.nan}) == []  # NaN = missing
    near = compare_records(_RECORD, {**_RECORD, "nmi_rows": 0.5 + 2e-16,
                                     "ledger": _RECORD["ledger"].replace("0.5", "0.5000000001")})
    assert [(d.field, d.within_tolerance) for d in near] == [("ledger", True), ("nmi_rows", True)]
    far = compare_records(_RECORD, {**_RECORD, "nmi_rows": 0.51, "p_h": 0.6, "k_found": 3.0})
    assert [(d.field, d.within_tolerance) for d in far] == [("nmi_rows", False), ("p_h", False)]
    assert far[0].size == pytest.approx(0.01)
    words = compare_records(_RECORD, {**_RECORD, "ledger": _RECORD["ledger"].replace('"x"',
                                                                                      '"y"')})
    assert [(d.field, d.within_tolerance, d.size) for d in words] == [("ledger", False, math.inf)]
    assert field_kind("a_future_column") == "exact"


# ---------------------------------------------------------------- the sample
def _table(n_per_dataset: int = 4) -> pd.DataFrame:
    rows = []
    for alg, mode in (("dp_taucc", "corrected"), ("dp_taucc", "paper"), ("fast_taucc", None)):
        for ds in ("a", "b", "c"):
            for seed in range(n_per_dataset):
                rows.append({"run_id": f"{alg}{mode}{ds}{seed}", "algorithm": alg,
                             "mode": mode, "dataset": ds, "seed": seed, "epsilon": 1.0,
                             "status": "ok", "nmi_rows": 0.1 * seed})
    return pd.DataFrame(rows)


def test_the_sample_covers_every_stratum_and_spreads_over_datasets():
    sample = verify.stratified_sample({"exp": _table()}, per_stratum=4)
    strata = {}
    for v in sample:
        strata.setdefault(v.stratum, []).append(v.row["dataset"])
    assert set(strata) == {("exp", "dp_taucc", "corrected"), ("exp", "dp_taucc", "paper"),
                           ("exp", "fast_taucc", "-")}
    for datasets in strata.values():
        assert len(datasets) == 4 and set(datasets[:3]) == {"a", "b", "c"}
    other = verify.stratified_sample({"exp": _table()}, per_stratum=4, sample_seed=1)
    assert [v.row["run_id"] for v in other] != [v.row["run_id"] for v in sample]
    assert len(verify.stratified_sample({"exp": _table(1)}, per_stratum=9)) == 9  # all there is


# ---------------------------------------------------------------- the verdicts
def _judged(table, changes, float_path=None):
    sample = verify.stratified_sample({"exp": table}, per_stratum=len(table))
    reruns = {v.row["run_id"]: {**v.row, **changes.get(v.row["run_id"], {})} for v in sample}
    verify.judge(sample, reruns, {"exp": table}, float_path or {})
    return {v.row["run_id"]: v for v in sample}


def test_verdicts_identical_within_tolerance_different_and_float_path():
    table = _table()[lambda d: d.algorithm == "dp_taucc"].reset_index(drop=True)
    changes = {"dp_taucccorrecteda0": {"nmi_rows": 1e-17},
               "dp_taucccorrecteda1": {"nmi_rows": 0.25},  # inside the cell 0, .1, .2, .3
               "dp_taucccorrecteda2": {"nmi_rows": 0.9},   # far outside it
               "dp_taucccorrectedb1": {"epsilon_spent": 2.0}}
    plain = _judged(table, changes)
    assert plain["dp_taucccorrectedc0"].verdict == "identical"
    assert plain["dp_taucccorrecteda0"].verdict == "within tolerance"
    assert {plain[r].verdict for r in ("dp_taucccorrecteda1", "dp_taucccorrecteda2",
                                       "dp_taucccorrectedb1")} == {"different"}
    marked = _judged(table, changes, {"dp_taucc": ("corrected",)})
    assert marked["dp_taucccorrecteda1"].verdict == "float path"
    assert "inside the cell" in marked["dp_taucccorrecteda1"].note
    assert marked["dp_taucccorrecteda2"].verdict == "different"  # outside its cell
    assert marked["dp_taucccorrectedb1"].verdict == "different"  # privacy fields never flip


def test_many_float_path_flips_in_a_stratum_are_different():
    table = _table()[lambda d: d["mode"] == "paper"].reset_index(drop=True)
    changes = {r: {"nmi_rows": 0.15} for r in table.run_id[:7]}
    judged = _judged(table, changes, {"dp_taucc": ("paper",)})
    assert {judged[r].verdict for r in table.run_id[:7]} == {"different"}
    assert "more than a rare float-path flip" in judged[table.run_id[0]].note
    few = _judged(table, {r: changes[r] for r in table.run_id[:6]}, {"dp_taucc": ("paper",)})
    assert {few[r].verdict for r in table.run_id[:6]} == {"float path"}  # 6 of 12


def test_a_single_float_path_flip_is_rare_even_alone():
    table = _table()[lambda d: d["mode"] == "paper"].reset_index(drop=True)
    sample = verify.stratified_sample({"exp": table}, per_stratum=1)
    reruns = {v.row["run_id"]: {**v.row, "nmi_rows": v.row["nmi_rows"] + 0.01} for v in sample}
    verify.judge(sample, reruns, {"exp": table}, {"dp_taucc": ("paper",)})
    assert [v.verdict for v in sample] == ["float path"]


def test_a_record_not_run_is_not_checked_and_fails_the_command(capsys):
    sample = verify.stratified_sample({"exp": _table(1)}, per_stratum=1)
    verify.judge(sample, {}, {"exp": _table(1)}, {})
    assert {v.verdict for v in sample} == {"not checked"}
    assert verify.report(sample, {}, 1.0, details=5) == 1
    assert "not checked" in capsys.readouterr().out


# ---------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """Two cheap committed records of the paper grid (synthetic data: no download)."""
    table = pd.read_parquet(REPO / "results" / "supp_synthetic.parquet")
    keep = table[(table.algorithm.isin(["fast_taucc", "dp_taucc"]))
                 & (table.p_n_cols == table.p_n_cols.min()) & (table.seed == 0)]
    keep = keep.groupby("algorithm").head(1).reset_index(drop=True)
    assert len(keep) == 2
    return keep


def _run(tmp_path, table, *args):
    folder = tmp_path / "committed"
    folder.mkdir()
    table.to_parquet(folder / "supp_synthetic.parquet")
    before = sorted(p.name for p in folder.iterdir())
    code = verify.main(["--results-dir", str(folder), "--experiments", "supp_synthetic",
                        "--per-stratum", "1", "--jobs", "1", *args])
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written there
    return code


def test_verify_passes_on_the_committed_records(tmp_path, committed, capsys):
    assert _run(tmp_path, committed) == 0
    out = capsys.readouterr().out
    assert "OK: every checked record" in out and "different" in out


@pytest.mark.parametrize("field, value", [("nmi_rows", 0.01), ("k_found", 1)])
def test_a_tampered_record_is_reported_different(tmp_path, committed, capsys, field, value):
    tampered = committed.copy()
    row = tampered.index[tampered.algorithm == "dp_taucc"][0]
    tampered.loc[row, field] = tampered.loc[row, field] + value
    assert _run(tmp_path, tampered) == 1
    out = capsys.readouterr().out
    assert "different (1):" in out and field in out.split("different (1):", 1)[1]
    assert "FAILED: 1 record(s) differ" in out


def test_a_record_of_other_code_is_refused(tmp_path, committed, capsys):
    other = committed.copy()
    other.loc[0, "run_id"] = "0123456789abcdef"
    assert _run(tmp_path, other) == 2
    assert "is not a job the code builds" in capsys.readouterr().err


def test_verify_never_writes_into_the_committed_folder(tmp_path, committed, capsys):
    folder = tmp_path / "committed"
    folder.mkdir()
    committed.to_parquet(folder / "supp_synthetic.parquet")
    for work in (folder, folder / "runs"):
        with pytest.raises(verify.VerifyError, match="never into the committed results"):
            verify.verify(folder, ["supp_synthetic"], 1, 0, 1, 1.0, work_dir=work)
