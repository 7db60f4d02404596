"""The job arrays a sweep has running on a store, recorded beside its lock.

A driver that loses its session (a hang-up, a killed login node) leaves its array running.
So every array the driver submits is written to ``<runs_dir>/.slurm_arrays.json`` before it
waits: its id, SLURM job name, experiment, results folder, submitit folder, its task ids,
the run ids of each task's batch, each task's workers and when it was submitted. A rerun on
the same store (:func:`live`) finds the arrays SLURM still has pending or running and adopts
them (follows and collects them, :mod:`slurm`) instead of submitting their jobs a second
time; entries of arrays that have ended are dropped. Only the holder of the store's lock
writes the file (atomically: a temporary file, then a rename).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

FILENAME = ".slurm_arrays.json"
#: states of a task SLURM may still run
LIVE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING",
               "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "REQUEUE_HOLD",
               "REQUEUE_FED", "RESV_DEL_HOLD")


@dataclass
class LiveArray:
    """One submitted array (see the module docstring)."""

    array_id: str
    job_name: str
    experiment: str
    results_dir: str
    folder: str
    task_ids: list[str]  # as SLURM names them: <array>_<i> (a lone task: its job id)
    batches: list[list[str]]  # run ids of each task's jobs, in task order
    workers: list[int]  # workers of each task
    cpus: int = 1
    submitted: float = field(default_factory=time.time)  # epoch seconds


def _path(runs_dir: str | os.PathLike) -> Path:
    return Path(runs_dir) / FILENAME


def read(runs_dir: str | os.PathLike) -> list[LiveArray]:
    """Every recorded array (an unreadable file counts as empty)."""
    try:
        data = json.loads(_path(runs_dir).read_text(encoding="utf-8"))
        return [LiveArray(**a) for a in data.get("arrays", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError):
        return []


def _write(runs_dir: str | os.PathLike, arrays: Sequence[LiveArray]) -> None:
    path = _path(runs_dir)
    if not arrays:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"arrays": [asdict(a) for a in arrays]}, indent=1),
                   encoding="utf-8")
    tmp.replace(path)


def add(runs_dir: str | os.PathLike, entry: LiveArray) -> None:
    _write(runs_dir, [a for a in read(runs_dir) if a.array_id != entry.array_id] + [entry])


def forget(runs_dir: str | os.PathLike, array_id: str) -> None:
    _write(runs_dir, [a for a in read(runs_dir) if a.array_id != array_id])


def live_tasks(array_id: str, job_name: str) -> list[str] | None:
    """Ids of the array's tasks SLURM may still run, None when ``squeue`` does not answer.
    Looked up by job name, so that a job reusing the id (a reset cluster) does not count."""
    from dptaucc.bench.slurm_reasons import ask as _run

    out = _run(["squeue", "-h", "-r", "-t", "all", "-n", job_name, "-o", "%i|%T|%F"])
    if out is None:
        return None
    rows = (ln.strip().split("|") for ln in out.splitlines() if ln.count("|") == 2)
    return [tid for tid, state, array in rows if array == array_id and state in LIVE_STATES]


def live(runs_dir: str | os.PathLike) -> list[LiveArray]:
    """The recorded arrays SLURM still has pending or running; the others are forgotten.
    When squeue does not answer, every entry is kept and returned (better adopted and found
    gone than submitted twice)."""
    arrays = read(runs_dir)
    keep = []
    for a in arrays:
        tasks = live_tasks(a.array_id, a.job_name)
        if tasks is None or tasks:
            keep.append(a)
    if len(keep) != len(arrays):
        _write(runs_dir, keep)
    return keep
