"""The ``slurm`` tests run against a real SLURM cluster with accounting (``make slurm-start``
starts a one-node one on this machine); without one that answers they are skipped."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def _answers(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def cluster_problem() -> str | None:
    """Why the tests cannot run here, or None when sinfo and sacct answer."""
    if shutil.which("sbatch") is None:
        return "no SLURM here (sbatch not on PATH); start one with `make slurm-start`"
    if not _answers(["sinfo", "-h"]):
        return "no SLURM cluster answers (sinfo fails); start one with `make slurm-start`"
    if not _answers(["sacct", "-n", "-X", "-S", "now-1minutes"]):
        return "SLURM accounting does not answer (sacct fails)"
    return None


def pytest_collection_modifyitems(config, items):
    here = [it for it in items if "tests/slurm/" in str(it.fspath).replace("\\", "/")]
    if not here:
        return
    problem = cluster_problem()
    for item in here:
        item.add_marker(pytest.mark.slurm)
        if problem:
            item.add_marker(pytest.mark.skip(reason=problem))
