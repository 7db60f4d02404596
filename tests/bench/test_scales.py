"""Quick and partial results never replace the committed paper-scale outputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dptaucc.bench import outputs
from dptaucc.bench.scales import ScaleError, check_not_paper_dir, results_dir_for
from dptaucc.bench.store import RunStore


def test_scale_folders(results_dir):
    assert results_dir_for("paper") == results_dir
    assert results_dir_for("quick") == results_dir / "quick"
    check_not_paper_dir(results_dir / "quick", "x")
    with pytest.raises(ScaleError, match="refusing to write x into"):
        check_not_paper_dir(results_dir / ".." / results_dir.name, "x")
    with pytest.raises(ValueError):
        results_dir_for("huge")


def _committed_table(results_dir):
    results_dir.mkdir(parents=True)
    df = pd.DataFrame({"run_id": ["a"] * 3, "seed": [0, 1, 2]})
    df.to_parquet(results_dir / "supp_runtime.parquet")
    return (results_dir / "supp_runtime.parquet").read_bytes()


def test_collect_keeps_the_paper_table_while_the_store_is_incomplete(results_dir):
    before = _committed_table(results_dir)
    store = RunStore(results_dir / "runs", "supp_runtime")
    store.write({"run_id": "0123456789abcdef", "experiment": "supp_runtime", "status": "ok"})
    done = outputs.collect_guarded(results_dir, ["supp_runtime"])
    assert done["supp_runtime"].startswith("kept the existing table: the store holds 0 of "
                                           "the 1600 paper-scale jobs")
    assert (results_dir / "supp_runtime.parquet").read_bytes() == before
    # told explicitly, it collects what there is (merged into the existing table)
    outputs.collect_guarded(results_dir, ["supp_runtime"], allow_partial=True)
    table = pd.read_parquet(results_dir / "supp_runtime.parquet")
    assert "0123456789abcdef" in set(table["run_id"])


def test_a_grid_given_by_the_caller_decides_without_enumerating_it(results_dir, monkeypatch):
    from dptaucc.bench import configs

    before = _committed_table(results_dir)
    store = RunStore(results_dir / "runs", "supp_runtime")
    for rid in ("0123456789abcdef", "fedcba9876543210"):
        store.write({"run_id": rid, "experiment": "supp_runtime", "status": "ok"})
    monkeypatch.setattr(configs, "enumerate_jobs", lambda *a, **kw: pytest.fail("enumerated"))
    grid = {"0123456789abcdef", "fedcba9876543210", "00000000000000ff"}
    done = outputs.collect_guarded(results_dir, ["supp_runtime"], grids={"supp_runtime": grid})
    assert done["supp_runtime"].startswith("kept the existing table: the store holds 2 of "
                                           "the 3 paper-scale jobs")
    assert (results_dir / "supp_runtime.parquet").read_bytes() == before
    done = outputs.collect_guarded(results_dir, ["supp_runtime"],
                                   grids={"supp_runtime": grid - {"00000000000000ff"}})
    assert done == {"supp_runtime": "3 records"}  # merged into the committed table ("a")


def test_quick_folder_collects_freely(results_dir):
    quick = results_dir / "quick"
    before = _committed_table(results_dir)
    RunStore(quick / "runs", "supp_runtime").write(
        {"run_id": "0123456789abcdef", "experiment": "supp_runtime", "status": "ok",
         "algorithm": "dp_taucc", "dataset": "biclusters", "seed": 0})
    assert outputs.main(["collect"]) == 0  # default scale: quick
    assert len(pd.read_parquet(quick / "supp_runtime.parquet")) == 1
    assert (results_dir / "supp_runtime.parquet").read_bytes() == before
    assert json.loads(json.dumps(outputs.collect_guarded(quick))) == {
        "supp_runtime": "1 records"}
