"""Build the wheel once per session from the project's tracked files (a clean copy, so no stale
``build/`` folder or untracked file can slip into it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the folders a build reads (pyproject's package-dir), besides the top-level files
BUILD_INPUTS = ("dptaucc/", "baselines/", "datasets/", "conf/")


def project_files() -> list[str]:
    """The files a clone holds: tracked plus untracked-but-not-ignored (a new module counts)."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, text=True, check=True)
    return [f for f in out.stdout.splitlines() if (REPO / f).is_file()]


@pytest.fixture(scope="session")
def source_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout of the project")
    return project_files()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory, source_files) -> Path:
    """``pip wheel --no-deps`` of a copy of the project's files; the path of the .whl."""
    src = tmp_path_factory.mktemp("src")
    for f in source_files:
        if "/" in f and not f.startswith(BUILD_INPUTS):
            continue  # tests, results, scripts, docs: not part of the distribution
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(src)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (whl,) = out.glob("dptaucc_bench-*.whl")
    return whl
