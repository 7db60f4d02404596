"""Run the reproduce driver's jobs on a cluster through submitit, in job arrays of batches.

Most jobs take well under a second, so one cluster task per job would spend its time in
scheduling and Python start-up. The pending jobs (deduplicated, protocol-filtered) are cut
into contiguous batches (neighbours share a dataset) sized by time (:func:`batches`: about
``--task-minutes`` of work each from the store's measured job times, at least as many tasks
as the partition has CPUs for while each keeps half a minute of work, never more than the
cluster's ``MaxArraySize``) and submitted as one job array. Each task caps BLAS/OpenMP
threads at its CPUs, runs its batch, writes records to the shared store and returns what
happened. The driver follows the array through ``squeue`` and ``sacct``
(:mod:`slurm_queue`): it shows pending reasons, stops with a one-line error when they can
never clear, and counts a task that vanished from both as lost. A task that dies costs only
the job it was running: the rest of its batch is submitted again, the suspect alone.
Ctrl-C cancels the array (finished records stay); a rerun submits only the jobs not done.

``executor="slurm"`` needs a SLURM cluster with accounting (``sbatch``, ``squeue``,
``sacct``); ``executor="submitit-local"`` runs the same tasks as local processes through
submitit's LocalExecutor.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dptaucc.bench.configs import MAX_ARRAY_SIZE, run_id
from dptaucc.bench.execution import (
    ClusterError,
    Tally,
    job_seconds,
    lost,
    measured_times,
    record_death,
    run_jobs,
    work,
)
from dptaucc.bench.outcomes import Outcome

EXECUTORS = ("local", "slurm", "submitit-local")
#: default work per array task: long enough that start-up (~5-10 s) is noise
TASK_MINUTES = 5.0
#: a task gets at least this much work even when more CPUs are free
MIN_TASK_S = 30.0
#: assumed cost of a job no stored record has timed yet
GUESS_JOB_S = 1.0
#: seconds between two looks at the queue (a dead task is noticed within ~3 polls)
POLL_S = 5.0
#: submissions of one experiment's jobs: the array, then retries of dead tasks' leftovers
MAX_ROUNDS = 4
#: environment variables that size BLAS/OpenMP thread pools
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "NUMBA_NUM_THREADS")


class TimeLimitReached(BaseException):
    """submitit's pre-timeout signal inside a task (a BaseException: an estimator's
    ``except Exception`` must not swallow it)."""


# ---------------------------------------------------------------- inside a cluster task
def cap_threads(n_workers: int) -> int:
    """Cap BLAS/OpenMP threads at the task's CPUs (``SLURM_CPUS_PER_TASK``) shared by its
    workers; return the threads each worker gets."""
    from threadpoolctl import threadpool_limits

    cpus = int(os.environ.get("SLURM_CPUS_PER_TASK") or n_workers or 1)
    per_worker = max(1, cpus // max(1, n_workers))
    for var in THREAD_VARS:
        os.environ[var] = str(per_worker)
    threadpool_limits(limits=per_worker)
    return per_worker


def _raise_time_limit(signum, frame) -> None:
    raise TimeLimitReached()


def run_batch(jobs: list[dict], n_workers: int = 1, markers: str | None = None
              ) -> list[Outcome]:
    """Inside a cluster task: run a batch of validated jobs (skipping those done meanwhile).

    One worker: each job runs in this process with a marker file named by its run id in
    ``markers`` while it runs, so the driver knows which job a dead task was running, and
    submitit's pre-timeout signal (USR2) stores the running job as a time-limit failure."""
    cap_threads(n_workers)
    if n_workers > 1:
        return run_jobs(jobs, n_workers, desc="batch", work=work).outcomes
    signal.signal(signal.SIGUSR2, _raise_time_limit)
    out: list[Outcome] = []
    for i, job in enumerate(jobs):
        mark = Path(markers) / run_id(job) if markers else None
        if mark is not None:
            mark.touch()
        try:
            out.append(work(job))
        except TimeLimitReached:
            out.append(_time_limit_record(job))
            out += [lost(j, TimeoutError("not started before the task's time limit"))
                    for j in jobs[i + 1:]]
            break
        finally:
            if mark is not None:
                mark.unlink(missing_ok=True)
    return out


def _time_limit_record(job: dict) -> Outcome:
    """Store the job running when the task's time limit came as failed by it, not by the
    method (a rerun retries it)."""
    from dptaucc.bench import provenance
    from dptaucc.bench.outcomes import from_record
    from dptaucc.bench.run import base_record
    from dptaucc.bench.store import RunStore

    rec = base_record(job)
    rec.update(provenance.machine(), **provenance.scheduler(), status="error",
               started_at=provenance.utc_now(),
               error="TimeLimit: the cluster task reached its SLURM time limit while this job "
                     "ran (submitit's pre-timeout signal); the method did not fail. Give tasks "
                     "more time (--slurm-time) or less work (--task-minutes)")
    store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
    return from_record("ran", rec, store.write(rec))


# ---------------------------------------------------------------- batches
def batches(jobs: Sequence[dict], array_size: int = MAX_ARRAY_SIZE,
            jobs_per_task: int | None = None, costs: Sequence[float] | None = None,
            task_seconds: float = TASK_MINUTES * 60, slots: int = 1) -> list[list[dict]]:
    """Contiguous batches of ``jobs`` (neighbours share a dataset), at most ``array_size``.

    ``jobs_per_task``: that many jobs each. Otherwise by time: about ``task_seconds`` of work
    per task from the per-job ``costs`` (seconds; :data:`GUESS_JOB_S` each when None), and
    at least as many tasks as ``slots`` (tasks the cluster can run at once) as long as each
    keeps :data:`MIN_TASK_S` of work; cut where the cumulative cost crosses equal shares."""
    if array_size < 1:
        raise ValueError(f"array_size must be >= 1, got {array_size}")
    if not jobs:
        return []
    if jobs_per_task:
        size = max(jobs_per_task, math.ceil(len(jobs) / array_size))
        return [list(jobs[i:i + size]) for i in range(0, len(jobs), size)]
    costs = list(costs) if costs is not None else [GUESS_JOB_S] * len(jobs)
    total = sum(costs)
    n_tasks = max(math.ceil(total / task_seconds), min(slots, int(total // MIN_TASK_S)), 1)
    n_tasks = min(n_tasks, len(jobs), array_size)
    out: list[list[dict]] = [[]]
    done = 0.0
    for job, cost in zip(jobs, costs, strict=True):
        if out[-1] and done >= total * len(out) / n_tasks * (1 - 1e-9) and len(out) < n_tasks:
            out.append([])
        out[-1].append(job)
        done += cost
    return out


def job_costs(jobs: Sequence[dict]) -> list[float]:
    """Seconds per job from the store's records of the same (algorithm, mode, dataset), else
    the median of the known ones, else :data:`GUESS_JOB_S`."""
    if not jobs:
        return []
    times = measured_times(jobs[0]["paths"]["runs_dir"])
    known = [job_seconds(j, times) for j in jobs]
    timed = sorted(t for t in known if t is not None)
    fallback = timed[len(timed) // 2] if timed else GUESS_JOB_S
    return [fallback if t is None else t for t in known]


# ---------------------------------------------------------------- submission
def make_executor(kind: str, folder: str | Path, *, name: str = "dptaucc",
                  timeout_min: int = 240, mem_gb: float = 8.0, cpus_per_task: int = 1,
                  partition: str | None = None, account: str | None = None,
                  array_parallelism: int = 256, additional: dict | None = None):
    """A submitit executor: SLURM (``kind="slurm"``) or local processes
    (``"submitit-local"``). BLAS/OpenMP threads are capped at the task's CPUs before Python
    starts."""
    import submitit

    clusters = {"slurm": "slurm", "submitit-local": "local"}
    if kind not in clusters:
        raise ValueError(f"executor must be one of {', '.join(clusters)}, got {kind!r}")
    cluster = clusters[kind]
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    params = {"name": name, "timeout_min": timeout_min, "mem_gb": mem_gb,
              "cpus_per_task": cpus_per_task, "slurm_array_parallelism": array_parallelism}
    if cluster == "slurm":
        params["slurm_setup"] = [f"export {v}={cpus_per_task}" for v in THREAD_VARS]
    if partition:
        params["slurm_partition"] = partition
    if account:
        params["slurm_account"] = account
    if additional:
        params["slurm_additional_parameters"] = dict(additional)
    ex.update_parameters(**params)
    return ex


def refusal(exc: Exception) -> str:
    """One line from sbatch's refusal inside submitit's FailedJobError."""
    lines = [ln.strip() for ln in str(exc).splitlines() if "error:" in ln]
    why = lines[-1].split("error:", 1)[1].strip() if lines else str(exc).splitlines()[0]
    first = lines[0].split("error:", 1)[1].strip() if len(lines) > 1 else ""
    return why + (f" ({first})" if first and first not in why else "")


def submit_jobs(jobs: Sequence[dict], *, executor: str = "slurm", name: str = "dptaucc",
                serial: bool = False, array_size: int = MAX_ARRAY_SIZE,
                jobs_per_task: int | None = None, task_minutes: float = TASK_MINUTES,
                folder: str | None = None, poll_s: float = POLL_S, **params) -> Tally:
    """Submit ``jobs`` as one job array of batches, wait, and return their outcomes.

    ``serial`` (timing experiments): each task runs its batch with one worker whatever its
    CPUs. A task that dies (out of memory, a crash, a node failure, its time limit) costs
    only the job it was running: its other unfinished jobs are submitted again, the suspect
    alone, so a job that kills its task a second time is stored as failed with the state SLURM
    reported. A cancelled task's unfinished jobs are ``lost``; a rerun submits them again.
    Raises :class:`execution.ClusterError` when SLURM refuses the array or can never run it."""
    tally = Tally()
    if not jobs:
        return tally
    folder = Path(folder or Path(jobs[0]["paths"]["results_dir"]) / "submitit" / name)
    cpus = int(params.get("cpus_per_task") or 1)
    on_cluster = executor == "slurm"
    if on_cluster:
        from dptaucc.bench import slurm_queue as q

        array_size = min(array_size, (q.max_array_size() or array_size + 1) - 1)
        slots = (q.cluster_cpus(params.get("partition")) or cpus) // cpus
        if not q.accounting_works():
            print("[slurm] warning: sacct does not answer (is accounting configured?); a task "
                  "that leaves the queue without a result counts as lost after a few polls",
                  file=sys.stderr)
    else:
        slots = max(1, (os.cpu_count() or 1) // cpus)
    work_sets = batches(jobs, array_size, jobs_per_task, job_costs(jobs), task_minutes * 60,
                        slots)
    ex = make_executor(executor, folder, name=f"dptaucc-{name}", **params)
    for round_no in range(1, MAX_ROUNDS + 1):
        work_sets = _submit_round(ex, work_sets, 1 if serial else cpus, folder, tally, name,
                                  poll_s, on_cluster, last=round_no == MAX_ROUNDS)
        if not work_sets:
            break
        print(f"[slurm] {name}: retrying {sum(map(len, work_sets))} unfinished job(s) of dead "
              f"task(s), the job each was running alone", file=sys.stderr, flush=True)
    return tally


def _submit_round(ex, work_sets: list[list[dict]], workers: int, folder: Path, tally: Tally,
                  name: str, poll_s: float, on_cluster: bool, last: bool
                  ) -> list[list[dict]]:
    """Submit one array, wait for it, add its outcomes to ``tally``; return the batches to
    retry: the unfinished jobs of tasks that died, each job a task was running alone. A task
    of one job that dies names its culprit: stored as failed with the state SLURM reported."""
    from submitit.core.utils import FailedJobError

    from dptaucc.bench.slurm_queue import cancel, watch

    markers = folder / "running"
    markers.mkdir(parents=True, exist_ok=True)
    since = time.time() - 1.0  # file systems round modification times
    try:
        tasks = ex.map_array(run_batch, work_sets, [workers] * len(work_sets),
                             [str(markers)] * len(work_sets))
    except FailedJobError as exc:
        raise ClusterError(f"SLURM refused the array of {name}: {refusal(exc)}") from None
    array_id = tasks[0].job_id.split("_")[0]
    print(f"[slurm] {name}: {sum(map(len, work_sets))} jobs in {len(tasks)} task(s) of up to "
          f"{max(map(len, work_sets))} jobs (array {array_id}); logs in {folder}",
          file=sys.stderr, flush=True)
    retry: list[list[dict]] = []

    def ended(i: int, end) -> None:
        bar.update(1)
        if end.state is None:
            tally.outcomes.extend(end.result)
            return
        unfinished = _unfinished(work_sets[i], since)
        suspects = [j for j in unfinished if (markers / run_id(j)).exists()]
        for j in suspects:
            (markers / run_id(j)).unlink(missing_ok=True)
        died = RuntimeError(f"{end.state}: task {tasks[i].job_id} died ({end.detail})")
        tally.outcomes += _stored(work_sets[i], unfinished)
        if len(work_sets[i]) == 1 and unfinished and end.state not in ("CANCELLED", "ABSENT"):
            tally.outcomes.append(record_death(unfinished[0], died))
            what = f"its job {run_id(unfinished[0])} killed it: stored as failed"
        elif end.state in ("CANCELLED", "ABSENT") or last:
            tally.outcomes += [lost(j, died) for j in unfinished]
            what = f"{len(unfinished)} unfinished job(s) lost (a rerun submits them again)"
        else:
            rest = [j for j in unfinished if j not in suspects]
            retry.extend([[j] for j in suspects] + ([rest] if rest else []))
            tally.restarts += 1
            what = (f"{len(unfinished)} unfinished job(s) to retry, {len(suspects)} of them "
                    f"alone")
        bar.write(f"[slurm] {name}: task {tasks[i].job_id} ended {end.state} "
                  f"({end.detail}); {what}", file=sys.stderr)

    from tqdm.auto import tqdm

    with tqdm(total=len(tasks), desc=f"{name} tasks", unit="task") as bar:
        try:
            watch(tasks, name, poll_s, ended, on_cluster=on_cluster)
        except KeyboardInterrupt:
            _cancel_all(tasks, on_cluster, array_id, cancel)
            print(f"[slurm] interrupted: cancelled the unfinished tasks of {name}; finished "
                  f"records are kept, a rerun resumes", file=sys.stderr)
            raise
    return retry


def _cancel_all(tasks, on_cluster: bool, array_id: str, cancel) -> None:
    if on_cluster:
        cancel(array_id)
        return
    for task in tasks:
        if not task.done():
            task.cancel(check=False)


def _unfinished(jobs: list[dict], since: float) -> list[dict]:
    """The jobs of a dead task without a record written since ``since`` (ok or failed)."""
    from dptaucc.bench.store import RunStore

    out = []
    for job in jobs:
        path = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).path(run_id(job))
        try:
            fresh = path.stat().st_mtime >= since
        except FileNotFoundError:
            fresh = False
        if not fresh:
            out.append(job)
    return out


def _stored(jobs: list[dict], unfinished: list[dict]) -> list[Outcome]:
    """Outcomes of a dead task's jobs that did store a record."""
    from dptaucc.bench.outcomes import from_record
    from dptaucc.bench.store import RunStore

    out = []
    for job in jobs:
        if job in unfinished:
            continue
        store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
        rec = store.get(run_id(job))
        out.append(from_record("ran", rec, store.path(run_id(job))))
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
                   help="jobs per task (default: sized by --task-minutes)")
    g.add_argument("--task-minutes", type=float, default=TASK_MINUTES,
                   help=f"work per task from the store's measured job times (default "
                        f"{TASK_MINUTES:g}; {GUESS_JOB_S:g} s per job never timed), with at "
                        f"least as many tasks as the partition has CPUs for while each keeps "
                        f"{MIN_TASK_S:g} s of work")
    g.add_argument("--slurm-partition", default=None,
                   help="partition (default: the cluster's default partition; sinfo lists them)")
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
                   help="submitit's folder (task pickles and logs); default "
                        "<results folder>/submitit/<start time>/<experiment>")


def resources(executor: str, options: dict, n_workers: int) -> dict:
    """What ``reproduce.json`` records about where the jobs ran."""
    if executor == "local":
        return {"workers": n_workers}
    keys = ("partition", "account", "cpus_per_task", "mem_gb", "timeout_min", "task_minutes",
            "jobs_per_task", "array_size", "array_parallelism", "additional")
    return {k: options.get(k) for k in keys if options.get(k) is not None}


def options_from_args(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`submit_jobs` from the parsed command line."""
    extra = {}
    for item in args.slurm_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--slurm-option expects KEY=VALUE, got {item!r}")
        extra[key] = value
    return {"array_size": args.array_size, "jobs_per_task": args.jobs_per_task,
            "task_minutes": args.task_minutes,
            "folder": args.submitit_dir, "timeout_min": args.slurm_time,
            "mem_gb": args.slurm_mem_gb, "cpus_per_task": args.slurm_cpus,
            "partition": args.slurm_partition, "account": args.slurm_account,
            "array_parallelism": args.slurm_parallelism, "additional": extra or None}
