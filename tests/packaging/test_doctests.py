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

#: not library code: the configuration package and the command-line entry modules
SKIP = ("dptaucc.conf",)
MODULES = sorted({
    info.name
    for package in (dptaucc, dptaucc.baselines, dptaucc.datasets)
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    if not info.name.startswith(SKIP) and not info.name.endswith(".__main__")})
#: the examples of the experiment engine and the audit (Hydra, figures, fits by the
#: thousand) and of the GNU Octave bridge take seconds: ``slow``, so ``make test`` runs them
#: and ``make test-fast`` (the library's unit tests) does not
SLOW = ("dptaucc.bench.", "dptaucc.audit.", "dptaucc.baselines.dphd.octave")


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow)
                                  if m.startswith(SLOW) else m for m in MODULES])
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(
            module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
