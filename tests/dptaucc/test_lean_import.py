"""``import dptaucc`` stays light; a fit loads none of the benchmark's heavy libraries itself."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BENCH_ONLY = ("pandas", "pyarrow", "matplotlib", "hydra", "omegaconf")

#: records which module first imports each of BENCH_ONLY (run in a fresh interpreter)
PROBE = """
import importlib.abc, json, sys
first = {}
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in %r and name not in first:
            frame = sys._getframe(1)
            skip = ("importlib", "_frozen")
            while frame and frame.f_globals.get("__name__", "").startswith(skip):
                frame = frame.f_back
            first[name] = frame.f_globals.get("__name__") if frame else None
        return None
sys.meta_path.insert(0, Spy())
%s
print(json.dumps({"first": first, "sklearn": "sklearn" in sys.modules}))
"""


def _probe(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE % (BENCH_ONLY, code)], check=True,
                         capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_dptaucc_loads_no_heavy_library():
    seen = _probe("import dptaucc")
    assert seen == {"first": {}, "sklearn": False}


@pytest.mark.slow
def test_a_fit_imports_no_benchmark_library_itself():
    """scikit-learn's own ``sklearn.utils.fixes`` imports pandas and pyarrow when they are
    installed; nothing of this package does."""
    seen = _probe("import numpy as np, dptaucc\n"
                  "dptaucc.DPTauCC(2, 2, random_state=0).fit(np.eye(6, dtype=int) * 3)")
    assert seen["sklearn"]
    assert not {"matplotlib", "hydra", "omegaconf"} & set(seen["first"])
    assert all(importer.startswith("sklearn.") or importer in BENCH_ONLY or
               importer.split(".")[0] in BENCH_ONLY
               for importer in seen["first"].values()), seen
