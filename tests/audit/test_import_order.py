"""audit.report, bench.figures and bench.report import in any order (no import cycle)."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = ("dptaucc.audit.report", "dptaucc.bench.figures", "dptaucc.bench.report")


@pytest.mark.parametrize("first", MODULES)
def test_each_module_imports_first_in_a_fresh_interpreter(first):
    code = "; ".join(f"import {m}" for m in (first, *MODULES))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
