"""REPORT's provenance section: commits with their -dirty flag, libraries, machine, idleness."""

from __future__ import annotations

import json

import pandas as pd

from dptaucc.bench.report import provenance_section


def _frame(n, sha, busy=None):
    blas = json.dumps([{"user_api": "blas", "internal_api": "openblas", "version": "0.3.30",
                        "threading_layer": "pthreads", "num_threads": 1}])
    versions = json.dumps({"dptaucc-bench": "0.1.0", "numpy": "2.4.6", "scipy": "1.17.1",
                           "scikit-learn": "1.8.0"})
    df = pd.DataFrame({"git_sha": [sha] * n, "versions": [versions] * n, "blas": [blas] * n,
                       "python": ["CPython 3.11.7"] * n, "os": ["Linux-6.1"] * n,
                       "cpu": ["EPYC (2 logical CPUs)"] * n, "octave": [None] * n,
                       "status": ["ok"] * n, "load_1m": [1.0] * n,
                       "other_busy_cpus": busy if busy is not None else [0.0] * n})
    return df


def test_provenance_section_keeps_dirty_and_judges_idleness():
    sha = "0123456789abcdef0123456789abcdef01234567"
    frames = {"fig2_real": _frame(3, sha + "-dirty"),
              "supp_runtime": _frame(2, sha, busy=[0.01, 0.02])}
    text = "\n".join(provenance_section(frames))
    assert "`0123456789ab-dirty` (3 records); `0123456789ab` (2 records)" in text
    assert "| BLAS | openblas 0.3.30 (pthreads) |" in text
    assert "| Python | CPython 3.11.7 |" in text and "| GNU Octave (DPHD) | not recorded |" \
        in text
    assert "ran on an otherwise idle machine" in text and "max 0.02" in text
    busy = {"supp_runtime": _frame(4, sha, busy=[0.0, 0.1, 1.5, 2.0])}
    text = "\n".join(provenance_section(busy))
    assert "NOT on an idle machine: 2 of 4 fits" in text
