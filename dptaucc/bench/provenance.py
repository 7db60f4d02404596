"""Provenance columns of a record: the code, the libraries and the machine that produced it.

Everything here is read once per process (cached): the git commit of this project's own
checkout (with ``-dirty`` when tracked code differs from it), package versions, Python, the
OS, the host name and CPU model, the BLAS/OpenMP libraries numpy and scipy loaded
(threadpoolctl), and GNU Octave's version and BLAS for the jobs that run in Octave (DPHD).
:func:`placement` says how the job ran there: the SLURM job and array task, the worker
processes running jobs side by side (:data:`WORKERS_ENV`, set by whoever starts them) and the
BLAS threads each had.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import socket
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

#: the distribution whose checkout a commit hash may describe
PROJECT = "dptaucc-bench"
_PACKAGES = (PROJECT, "numpy", "scipy", "scikit-learn", "diffprivlib", "hydra-core", "pandas",
             "threadpoolctl")
#: the environment variable through which a runner tells its workers how many run side by side
WORKERS_ENV = "DPTAUCC_WORKERS"
#: paths whose changes do not make the code dirty (outputs, not code)
_NOT_CODE = (":(exclude)results",)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          timeout=10, check=True).stdout.strip()


def project_root(package_file: str | Path = __file__) -> Path | None:
    """This project's checkout when the running code lives in one (an editable install or a
    run from the source tree): the folder two levels above the ``dptaucc`` package must be a
    git work tree's top level whose pyproject.toml names this project. None for an installed
    copy, even one inside another git repository."""
    root = Path(package_file).resolve().parents[2]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    if not re.search(rf'^name\s*=\s*"{re.escape(PROJECT)}"', text, re.MULTILINE):
        return None
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel")).resolve()
    except (OSError, subprocess.SubprocessError):
        return None
    return root if top == root else None


def commit(root: Path) -> str:
    """HEAD of the checkout at ``root``, ``-dirty`` if tracked code differs from it (changes
    under ``results/`` are outputs, not code); ``unknown`` if git cannot tell."""
    try:
        sha = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".",
                     *_NOT_CODE)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


@lru_cache(maxsize=1)
def git_sha() -> str:
    """The commit of this project's own checkout (:func:`commit`), or ``unknown`` when the
    code does not run from one (:func:`project_root`)."""
    root = project_root()
    return "unknown" if root is None else commit(root)


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
def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


@lru_cache(maxsize=1)
def os_name() -> str:
    """Kernel and distribution, e.g. ``Linux-6.1.0-x86_64-with-glibc2.36``."""
    return platform.platform()


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux) and the logical CPU count."""
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "unknown"
    return f"{name} ({os.cpu_count()} logical CPUs)"


@lru_cache(maxsize=1)
def _threadpools() -> tuple[dict, ...]:
    from threadpoolctl import threadpool_info

    return tuple(threadpool_info())


def blas() -> str:
    """JSON list of the BLAS/OpenMP libraries loaded: API, implementation, version, threading
    layer and threads (read once per process: workers keep the limit they started with)."""
    keep = ("user_api", "internal_api", "version", "threading_layer", "num_threads",
            "architecture")
    # only plain values: a library may report e.g. a function as its version (scipy's
    # MatrixMarket reader, once used), which is neither JSON nor the same in two processes
    libs = [{k: p[k] for k in keep if isinstance(p.get(k), (str, int, float))}
            for p in _threadpools()]
    libs.sort(key=lambda lib: json.dumps(lib, sort_keys=True))  # the same order in every process
    return json.dumps(libs, sort_keys=True)


def blas_threads() -> int:
    """Threads of the BLAS/OpenMP pools of this process (max over the loaded libraries)."""
    return int(max((p.get("num_threads") or 0 for p in _threadpools()), default=0))


@lru_cache(maxsize=1)
def octave_version() -> str | None:
    """GNU Octave's version and the BLAS it runs on, with the BLAS threads DPHD's Octave gets,
    e.g. ``GNU Octave, version 7.3.0; BLAS: OpenBLAS (config: …); 1 thread`` (asked once per
    process); None without Octave."""
    from dptaucc.baselines.dphd.octave import OCTAVE_EXECUTABLE, OCTAVE_THREADS

    try:
        out = subprocess.run([OCTAVE_EXECUTABLE, "--norc", "--quiet", "--no-window-system",
                              "--eval", "disp(version()); disp(version('-blas'))"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in (out.stdout or "").strip().splitlines()]
    if out.returncode != 0 or not lines or not lines[0]:
        return None
    blas = lines[1] if len(lines) > 1 and lines[1] else "unknown"
    threads = f"{OCTAVE_THREADS} thread" + ("" if OCTAVE_THREADS == 1 else "s")
    return f"GNU Octave, version {lines[0]}; BLAS: {blas}; {threads}"


def uses_octave(target: str) -> bool:
    """Does the estimator at import path ``target`` run in Octave (DPHD)?"""
    return target.startswith("dptaucc.baselines.dphd")


@lru_cache(maxsize=1)
def host() -> str:
    """This machine's host name (on a cluster: the node the job ran on)."""
    return socket.gethostname()


def machine() -> dict:
    """The provenance columns that do not depend on the job."""
    return {"git_sha": git_sha(), "versions": versions(), "python": python_version(),
            "os": os_name(), "host": host(), "cpu": cpu_model(), "blas": blas()}


def workers() -> int:
    """Worker processes running jobs side by side in this run (this one included): what the
    runner put in :data:`WORKERS_ENV`, 1 when it did not (a process running jobs alone)."""
    try:
        return max(1, int(os.environ.get(WORKERS_ENV) or 1))
    except ValueError:
        return 1


def placement() -> dict:
    """Where and how the job ran: :func:`scheduler`'s SLURM ids, the host, the workers side by
    side and this process's BLAS threads."""
    return {**scheduler(), "host": host(), "workers": workers(),
            "blas_threads": blas_threads()}


def scheduler() -> dict:
    """The SLURM job running this process: ``slurm_job_id`` (the task's own job id) and
    ``slurm_array_task`` (``<array job id>_<task id>``, what squeue and sacct show); None
    outside SLURM."""
    env = os.environ
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return {"slurm_job_id": env.get("SLURM_JOB_ID"),
            "slurm_array_task": f"{array}_{task}" if array and task else None}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
