"""Run the reproduce driver's jobs on a cluster through submitit, in batches.

Most jobs take well under a second, so one cluster task per job would spend its time in
scheduling and Python start-up, and a paper-scale grid would exceed SLURM's job-array limit.
Instead the pending jobs (already deduplicated: a non-private method runs once per seed;
jobs outside the protocol are dropped) are cut into at most ``array_size`` (default 1000)
contiguous batches -- contiguous, so one task's jobs share a dataset -- and submitted as one
job array; each task runs its batch, writing records to the shared store, and reports what
happened. The driver waits, showing tasks done / total; Ctrl-C cancels the array (finished
records stay). Like the local run it is resumable: a rerun submits only the jobs not done.

``executor="slurm"`` needs a SLURM cluster (``sbatch`` on PATH); ``executor="local"`` runs the
same tasks as local processes through submitit's LocalExecutor (what the tests use).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dptaucc.bench.configs import MAX_ARRAY_SIZE, run_id
from dptaucc.bench.outcomes import Outcome
from dptaucc.bench.reproduce import Tally, lost, run_jobs, work

EXECUTORS = ("local", "slurm", "submitit-local")


def run_batch(jobs: list[dict], n_workers: int = 1) -> list[Outcome]:
    """Inside a cluster task: run a batch of validated jobs (skipping those done meanwhile)."""
    tally = run_jobs(jobs, n_workers, desc="batch", work=work)
    return tally.outcomes


def batches(jobs: Sequence[dict], array_size: int = MAX_ARRAY_SIZE,
            jobs_per_task: int | None = None) -> list[list[dict]]:
    """Contiguous batches: ``jobs_per_task`` each, or as few per task as keeps the number of
    tasks within ``array_size``."""
    if array_size < 1:
        raise ValueError(f"array_size must be >= 1, got {array_size}")
    size = max(jobs_per_task or 1, math.ceil(len(jobs) / array_size))
    return [list(jobs[i:i + size]) for i in range(0, len(jobs), size)]


def make_executor(kind: str, folder: str | Path, *, name: str = "dptaucc",
                  timeout_min: int = 240, mem_gb: float = 8.0, cpus_per_task: int = 1,
                  partition: str | None = None, account: str | None = None,
                  array_parallelism: int = 256, additional: dict | None = None):
    """A submitit executor: SLURM (``kind="slurm"``) or local processes
    (``"submitit-local"``)."""
    import submitit

    clusters = {"slurm": "slurm", "submitit-local": "local"}
    if kind not in clusters:
        raise ValueError(f"executor must be one of {', '.join(clusters)}, got {kind!r}")
    cluster = clusters[kind]
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    params = {"name": name, "timeout_min": timeout_min, "mem_gb": mem_gb,
              "cpus_per_task": cpus_per_task, "slurm_array_parallelism": array_parallelism}
    if partition:
        params["slurm_partition"] = partition
    if account:
        params["slurm_account"] = account
    if additional:
        params["slurm_additional_parameters"] = dict(additional)
    ex.update_parameters(**params)
    return ex


def submit_jobs(jobs: Sequence[dict], *, executor: str = "slurm", name: str = "dptaucc",
                serial: bool = False, array_size: int = MAX_ARRAY_SIZE,
                jobs_per_task: int | None = None, folder: str | None = None,
                poll_s: float = 10.0, **params) -> Tally:
    """Submit ``jobs`` as one job array of batches, wait, and return their outcomes.

    ``serial`` (timing experiments): each task runs its batch with one worker whatever its
    CPUs. A task that dies (time limit, node failure) makes its jobs without a successful
    record ``lost``; a rerun submits them again."""
    tally = Tally()
    if not jobs:
        return tally
    if folder is None:
        folder = str(Path(jobs[0]["paths"]["log_dir"]) / "submitit" / name)
    work_sets = batches(jobs, array_size, jobs_per_task)
    cpus = int(params.get("cpus_per_task") or 1)
    ex = make_executor(executor, folder, name=name, **params)
    submitted = ex.map_array(run_batch, work_sets, [1 if serial else cpus] * len(work_sets))
    print(f"[slurm] {name}: {len(jobs)} jobs in {len(submitted)} tasks of up to "
          f"{len(work_sets[0])} jobs (array {submitted[0].job_id.split('_')[0]}); logs in "
          f"{folder}", file=sys.stderr, flush=True)
    try:
        _wait(submitted, work_sets, tally, poll_s, name)
    except KeyboardInterrupt:
        for job in submitted:
            if not job.done():
                job.cancel(check=False)
        print(f"[slurm] interrupted: cancelled the unfinished tasks of {name}; finished records "
              f"are kept, a rerun resumes", file=sys.stderr)
        raise
    return tally


def _wait(submitted, work_sets, tally: Tally, poll_s: float, name: str) -> None:
    from tqdm.auto import tqdm

    left = dict(enumerate(submitted))
    with tqdm(total=len(submitted), desc=f"{name} tasks", unit="task") as bar:
        while left:
            for i in [i for i, job in left.items() if job.done()]:
                job = left.pop(i)
                try:
                    tally.outcomes += job.result()
                except Exception as exc:  # the task died: its unfinished jobs are lost
                    tally.outcomes += _lost_batch(work_sets[i], exc)
                bar.update(1)
            if left:
                time.sleep(poll_s)


def _lost_batch(jobs: list[dict], exc: Exception) -> list[Outcome]:
    from dptaucc.bench.store import RunStore

    out = []
    for job in jobs:
        store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
        rec = store.get(run_id(job))
        if rec is not None and rec.get("status") == "ok":
            out.append(Outcome("ran", "ok", rec["run_id"], None, str(store.path(rec["run_id"]))))
        else:
            out.append(lost(job, exc))
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The reproduce driver's cluster options."""
    g = ap.add_argument_group("cluster (submitit)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: joblib on this machine (default); slurm: job arrays on a SLURM "
                        "cluster; submitit-local: the same arrays as local processes (testing)")
    g.add_argument("--array-size", type=int, default=MAX_ARRAY_SIZE,
                   help=f"most tasks per job array (default {MAX_ARRAY_SIZE}; SLURM's default "
                        "MaxArraySize is 1001)")
    g.add_argument("--jobs-per-task", type=int, default=None,
                   help="jobs per task (default: as few as fit in --array-size tasks)")
    g.add_argument("--slurm-partition", default=None)
    g.add_argument("--slurm-account", default=None)
    g.add_argument("--slurm-time", type=int, default=240, help="minutes per task")
    g.add_argument("--slurm-mem-gb", type=float, default=8.0)
    g.add_argument("--slurm-cpus", type=int, default=1,
                   help="CPUs per task; a task runs its batch on that many workers")
    g.add_argument("--slurm-parallelism", type=int, default=256,
                   help="tasks of the array running at once")
    g.add_argument("--slurm-option", action="append", default=[], metavar="KEY=VALUE",
                   help="any other sbatch option, e.g. --slurm-option qos=long (repeatable)")
    g.add_argument("--submitit-dir", default=None,
                   help="submitit's folder (task pickles and logs); default under paths.log_dir")


def options_from_args(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`submit_jobs` from the parsed command line."""
    extra = {}
    for item in args.slurm_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--slurm-option expects KEY=VALUE, got {item!r}")
        extra[key] = value
    return {"array_size": args.array_size, "jobs_per_task": args.jobs_per_task,
            "folder": args.submitit_dir, "timeout_min": args.slurm_time,
            "mem_gb": args.slurm_mem_gb, "cpus_per_task": args.slurm_cpus,
            "partition": args.slurm_partition, "account": args.slurm_account,
            "array_parallelism": args.slurm_parallelism, "additional": extra or None}
