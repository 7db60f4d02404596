"""Shared fixtures: a temporary results dir and the engine's Hydra composer. The offline CLUTO
mirror comes from the environment (``DPTAUCC_MIRROR``, which the Makefile sets)."""

from __future__ import annotations

import pytest


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
