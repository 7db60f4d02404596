"""The ``Examples`` sections of the library's docstrings run (doctest) and stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import dptaucc.baselines
import dptaucc.datasets
import pytest

import dptaucc

#: the library (the benchmark engine ``dptaucc.bench`` and the audit have their own tests)
SKIP = ("dptaucc.bench", "dptaucc.audit", "dptaucc.conf", "dptaucc.datasets.__main__",
        "dptaucc.baselines.fccm.__main__")
#: the modules of the engine and the audit whose examples run too (entry points a user calls,
#: and every module whose public names carry examples)
ENTRY_POINTS = (
    "dptaucc.audit.bugs",
    "dptaucc.audit.callsite",
    "dptaucc.audit.derived",
    "dptaucc.audit.endtoend",
    "dptaucc.audit.events",
    "dptaucc.audit.experiment",
    "dptaucc.audit.methods",
    "dptaucc.audit.pairs",
    "dptaucc.audit.power",
    "dptaucc.audit.primitives",
    "dptaucc.audit.reachability",
    "dptaucc.audit.redrawn",
    "dptaucc.audit.report",
    "dptaucc.audit.runner",
    "dptaucc.audit.stats",
    "dptaucc.audit.transcript",
    "dptaucc.audit.workers",
    "dptaucc.bench.calibration",
    "dptaucc.bench.configs",
    "dptaucc.bench.costs",
    "dptaucc.bench.headline",
    "dptaucc.bench.job_data",
    "dptaucc.bench.metrics",
    "dptaucc.bench.run",
    "dptaucc.bench.savefig",
    "dptaucc.bench.validate",
)
MODULES = sorted([
    *(info.name
      for package in (dptaucc, dptaucc.baselines, dptaucc.datasets)
      for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
      if not info.name.startswith(SKIP)),
    *ENTRY_POINTS])


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(
            module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
