"""Provenance columns of a record: git commit, library versions, BLAS threads, start time."""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

_PACKAGES = ("dptaucc-bench", "numpy", "scipy", "scikit-learn", "diffprivlib", "hydra-core")


@lru_cache(maxsize=1)
def git_sha() -> str:
    """HEAD of the repository this package lives in (suffix ``-dirty`` if tracked files changed)."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@lru_cache(maxsize=1)
def versions() -> str:
    """JSON ``{package: version}`` of the libraries a result depends on."""
    out = {}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return json.dumps(out, sort_keys=True)


@lru_cache(maxsize=1)
def blas_threads() -> int:
    """Threads of the BLAS/OpenMP pools of this process (max over the loaded libraries; read
    once per process: workers keep the limit they were started with)."""
    from threadpoolctl import threadpool_info

    info = threadpool_info()
    return int(max((p.get("num_threads") or 0 for p in info), default=0))


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
