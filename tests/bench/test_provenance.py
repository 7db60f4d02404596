"""Provenance: the commit only of this project's own checkout, machine and library facts."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from dptaucc.bench import provenance

REPO = Path(__file__).resolve().parents[2]


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def _repo_with(tmp_path, name: str, package_at: str) -> Path:
    """A git repo whose pyproject names ``name``, holding dptaucc/bench/provenance.py at
    ``package_at``; returns that file's path."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    target = tmp_path / package_at / "dptaucc" / "bench" / "provenance.py"
    target.parent.mkdir(parents=True)
    shutil.copy(provenance.__file__, target)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "x")
    return target


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_commit_only_for_this_projects_checkout(tmp_path):
    assert provenance.project_root() == REPO  # the tests run from the checkout
    own = _repo_with(tmp_path / "own", provenance.PROJECT, ".")
    assert provenance.project_root(own) == (tmp_path / "own").resolve()
    sha = provenance.commit(tmp_path / "own")
    assert len(sha) == 40 and not sha.endswith("-dirty")
    own.write_text(own.read_text() + "\n# changed\n")
    assert provenance.commit(tmp_path / "own") == sha + "-dirty"
    # installed inside another project's repo (e.g. a venv in it): not our commit
    other = _repo_with(tmp_path / "other", "someone-else", ".")
    assert provenance.project_root(other) is None
    nested = _repo_with(tmp_path / "nested", provenance.PROJECT,
                        ".venv/lib/python3/site-packages")
    assert provenance.project_root(nested) is None
    assert provenance.project_root(tmp_path / "nowhere" / "dptaucc" / "bench" / "x.py") is None


def test_outputs_do_not_make_the_code_dirty(tmp_path):
    own = _repo_with(tmp_path, provenance.PROJECT, ".")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "REPORT.md").write_text("a")
    _git(tmp_path, "add", "results")
    _git(tmp_path, "commit", "-qm", "results")
    sha = provenance.commit(tmp_path)
    (tmp_path / "results" / "REPORT.md").write_text("b")
    assert provenance.commit(tmp_path) == sha
    own.write_text("changed")
    assert provenance.commit(tmp_path) == sha + "-dirty"


def test_machine_facts():
    m = provenance.machine()
    assert set(m) == {"git_sha", "versions", "python", "os", "host", "cpu", "blas"}
    assert m["host"] == socket.gethostname()
    assert json.loads(m["versions"])["dptaucc-bench"]
    libs = json.loads(m["blas"])
    assert any(lib.get("user_api") == "blas" for lib in libs)
    assert provenance.blas_threads() >= 1
    assert provenance.uses_octave("dptaucc.baselines.dphd.DPHD")
    assert not provenance.uses_octave("dptaucc.DPTauCC")


def test_placement_says_the_workers_the_runner_announced(monkeypatch):
    monkeypatch.setenv(provenance.WORKERS_ENV, "3")
    monkeypatch.setenv("SLURM_JOB_ID", "12")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "10")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")
    p = provenance.placement()
    assert (p["workers"], p["slurm_job_id"], p["slurm_array_task"]) == (3, "12", "10_2")
    assert p["host"] == socket.gethostname() and p["blas_threads"] >= 1
    monkeypatch.delenv(provenance.WORKERS_ENV)
    assert provenance.placement()["workers"] == 1  # a process running jobs alone


@pytest.mark.octave
@pytest.mark.skipif(shutil.which("octave-cli") is None, reason="needs GNU Octave")
def test_octave_line_names_its_blas_and_the_threads_dphd_gives_it():
    provenance.octave_version.cache_clear()
    line = provenance.octave_version()
    assert re.fullmatch(r"GNU Octave, version \d+\.\d+\S*; BLAS: \S.*; 1 thread", line), line


def test_blas_line_keeps_plain_values_only(monkeypatch):
    """Regression: after scipy's MatrixMarket reader ran, threadpoolctl reported a function as
    a library's version and the job's provenance crashed (not JSON serialisable)."""
    def reader_version():  # what threadpoolctl handed over
        return "1.0"

    libs = ({"user_api": "blas", "internal_api": "fmm", "version": reader_version,
             "num_threads": 1},)
    monkeypatch.setattr(provenance, "_threadpools", lambda: libs)
    assert json.loads(provenance.blas()) == [{"user_api": "blas", "internal_api": "fmm",
                                              "num_threads": 1}]
