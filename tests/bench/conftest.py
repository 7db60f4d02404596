"""Shared fixtures: a temporary results dir and the offline CLUTO mirror (../shared/data/cluto)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _mirror(monkeypatch):
    if not os.environ.get("DPTAUCC_MIRROR"):
        mirror = REPO.parent / "shared" / "data" / "cluto"
        if (mirror / "MANIFEST.tsv").exists():
            monkeypatch.setenv("DPTAUCC_MIRROR", str(mirror))


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    d = tmp_path / "results"
    monkeypatch.setenv("DPTAUCC_RESULTS_DIR", str(d))
    return d


@pytest.fixture(scope="module")
def composer():
    from dptaucc.bench.configs import Composer

    with Composer() as c:
        yield c
