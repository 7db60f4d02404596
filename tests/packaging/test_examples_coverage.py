"""Every public class and function carries a short ``>>>`` example in its own docstring.

Public: each class or function named in ``__all__`` of a module of ``dptaucc`` (with
``dptaucc.baselines`` and ``dptaucc.datasets``) whose dotted name has no part starting with
``_``. A class may instead rely on its module docstring's examples. The examples themselves run
in ``test_doctests.py``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import dptaucc.baselines
import dptaucc.datasets
import pytest

import dptaucc


def _public_modules() -> list[str]:
    names = []
    for package in (dptaucc, dptaucc.baselines, dptaucc.datasets):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            parts = info.name.split(".")[1:]
            if any(p.startswith("_") for p in parts) or parts[0] == "conf":
                continue
            names.append(info.name)
    return sorted(set(names))


def _missing(name: str) -> list[str]:
    module = importlib.import_module(name)
    module_has_examples = ">>>" in (module.__doc__ or "")
    out = []
    for attr in getattr(module, "__all__", ()):
        obj = getattr(module, attr, None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if ">>>" in (obj.__doc__ or ""):  # its own docstring, not an inherited one
            continue
        if inspect.isclass(obj) and module_has_examples:
            continue
        out.append(attr)
    return out


@pytest.mark.parametrize("name", _public_modules())
def test_public_names_have_examples(name):
    missing = _missing(name)
    assert not missing, f"{name}: public names without a '>>>' example: {missing}"
