"""scripts/bench_scaling.py: the stage breakdown times the fit without changing it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

import dptaucc.dp_taucc as dp_taucc_module
from dptaucc import DPTauCC

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str):
    sys.path.insert(0, str(SCRIPTS))  # the script imports its sibling _baseline
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPTS))
    return module


scaling = _load("bench_scaling")


def test_stage_seconds_times_every_stage_and_restores_the_functions():
    X = scaling._matrix(20000, seed=3)
    originals = {name: getattr(dp_taucc_module, name)
                 for name in ("aggregate_columns", "blind_block_init", "_noisy_table")}
    check = DPTauCC._check_fit
    plain = DPTauCC(4, 3, epsilon=2.0, random_state=5).fit(X)
    with scaling.stage_seconds() as seconds:
        timed = DPTauCC(4, 3, epsilon=2.0, random_state=5).fit(X)
    assert np.array_equal(plain.row_labels_, timed.row_labels_)
    assert np.array_equal(plain.contingency_, timed.contingency_)
    for stage in ("input check", "blind init", "A C label sums", "R^T A label sums",
                  "exp. mechanism", "choice", "tables"):
        assert seconds[stage] > 0, stage
    assert seconds["exp. mechanism"] >= 0  # the choice's time is taken out of it
    assert all(getattr(dp_taucc_module, name) is f for name, f in originals.items())
    assert DPTauCC._check_fit is check


def test_worker_reports_stage_passes():
    rec = scaling.worker(20000, "dp_taucc", repeats=1, clusters=3, breakdown=True)
    stages = rec["stage_passes"]
    assert {"choice", "A C label sums", "other"} <= set(stages)
    measured = sum(v for k, v in stages.items() if k != "other")
    assert 0 < measured <= rec["passes"] * 3  # a separate fit, about as long as the others
