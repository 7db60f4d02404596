"""docs/audit.md's "your own method" recipe, run as written: a user's estimator, its audit
scenarios in a file beside it and its config in a directory of its own; ``python -m
dptaucc.audit --methods noisy_margins`` passes the correct code and exits 3 with the declared
bug planted (the same gate, the same power rules as the built-in methods)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


def recipe_files() -> dict[str, str]:
    """The fenced blocks of the recipe whose first line names a file: ``{path: text}``."""
    text = (REPO / "docs" / "audit.md").read_text(encoding="utf-8")
    section = text[text.index("### Your own method, step by step"):]
    out = {}
    for body in re.findall(r"```(?:python|yaml)\n(.*?)```", section, re.S):
        first = body.splitlines()[0]
        if first.startswith("# ") and first.endswith((".py", ".yaml")):
            out[first[2:]] = body
    return out


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTAUCC_CONFIG_PATH": str(tmp_path / "myconf"),
           "PYTHONPATH": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "dptaucc.audit", "--size", "quick", "--methods",
                           "noisy_margins", "--results-dir", str(tmp_path / "results"),
                           "--jobs", "1", "--no-progress", *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_own_method_is_audited_from_its_own_files(tmp_path):
    files = recipe_files()
    assert sorted(files) == ["myconf/algorithm/noisy_margins.yaml", "mypkg/margins.py",
                             "mypkg/margins_audit.py"]
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    (tmp_path / "mypkg" / "__init__.py").write_text("")

    ok = _run(tmp_path)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    table = pd.read_parquet(tmp_path / "results" / "quick" / "audit.parquet")
    sites = table[table["scope"] == "call-site"]
    twin = sites["pair"].str.endswith(("(filled)", "(widened)"))
    assert twin.sum() == 2  # its first setup's first two calls on the other input form, too
    sites = sites[~twin]
    assert sorted(sites["step"].str.split(" ").str[1]) == ["column", "row"]
    # the same power rules: each call site reaches most of its charge of 2 on correct code
    assert (sites["epsilon_lower"] >= 0.8 * sites["epsilon_claimed"]).all(), sites
    assert (table["verdict"] != "violation").all()
    # its calls draw through the library's mechanisms: each has its pair's exact cost, at most
    # its charge (the row and column sums move by the full sensitivity: exactly the charge)
    assert (sites["epsilon_pair"] <= sites["epsilon_claimed"] * (1 + 1e-6)).all(), sites
    assert (sites["epsilon_pair"] >= 0.99 * sites["epsilon_claimed"]).all(), sites

    broken = _run(tmp_path, "--bug", "noisy_margins.sensitivity_halved")
    assert broken.returncode == 3, broken.stdout[-3000:] + broken.stderr[-3000:]
    # seen without sampling: first by the neighbour sweep (a planted bug stops the gate at its
    # first violation), whose random pairs move the row sums by 1 against a declared 0.5
    assert "VIOLATION noisy_margins/corrected sweep" in broken.stdout, broken.stdout[-3000:]
    assert "L1 move 1 > sensitivity 0.5" in broken.stdout
