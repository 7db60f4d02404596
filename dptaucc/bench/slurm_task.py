"""Inside a cluster task: run a batch of jobs, mark what runs, stop before the time limit.

:func:`run_batch` is what each array task of :mod:`slurm` runs. It caps BLAS/OpenMP threads at
the task's CPUs, writes the task's provenance (host, CPU, SLURM ids, workers, BLAS threads) to
``<submitit folder>/tasks/<task id>.json`` for the records of jobs that kill it, marks the job
it runs in ``<submitit folder>/running/`` so that the driver knows the suspect of a death, and
keeps a deadline before the task's time limit (:class:`_TimeLimit`): the jobs it could not
start come back as ``notrun`` for the driver to submit again.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import time
from pathlib import Path

from dptaucc.bench.configs import run_id
from dptaucc.bench.execution import record_death, work
from dptaucc.bench.outcomes import Outcome

#: seconds between the warning signal and the task's time limit (sbatch --signal)
SIGNAL_DELAY_S = 90
#: the warning signal sbatch sends: SIGURG, whose default action is to do nothing, because
#: SLURM may send it up to a minute early, before the task has a handler (submitit's default,
#: USR2, killed tasks of a short time limit while Python started)
WARNING_SIGNAL = "URG"
#: signals a task takes as the time limit's warning (USR2: submitit's, and scancel --signal)
WARNING_SIGNALS = (signal.SIGURG, signal.SIGUSR2)
#: seconds before the time limit at which a task stops: the running job is stopped, comes back
#: not run (stored as failed by the time limit if it was the task's first), the rest too
TIME_MARGIN_S = 15
#: environment variables that size BLAS/OpenMP thread pools
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "NUMBA_NUM_THREADS")


class TimeLimitReached(BaseException):
    """The task's deadline before its time limit, inside a job (a BaseException: an
    estimator's ``except Exception`` must not swallow it)."""


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


def not_run(job: dict, why: str = "the task's time limit came before it started") -> Outcome:
    """A job a task returns unstarted (the driver submits it again)."""
    return Outcome("notrun", None, run_id(job), f"NotRun: {why}")


def _task_id() -> str | None:
    try:
        import submitit

        return submitit.JobEnvironment().job_id
    except RuntimeError:  # not inside a submitit task
        return None


def task_info_path(folder: str | Path, task_id: str) -> Path:
    """Where a task writes its provenance when it starts (read for jobs that kill it)."""
    return Path(folder) / "tasks" / f"{task_id}.json"


def _write_task_info(folder: str | None) -> None:
    from dptaucc.bench import provenance

    task = _task_id()
    if not folder or task is None:
        return
    path = task_info_path(folder, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**provenance.machine(), **provenance.placement()}),
                    encoding="utf-8")


def _seconds_left() -> float | None:
    """Seconds until this SLURM task's time limit (its EndTime from ``squeue``), None outside
    SLURM or when squeue does not say."""
    from dptaucc.bench.slurm_reasons import ask, parse_time

    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    end = parse_time((ask(["squeue", "-h", "-j", job, "-o", "%e"]) or "").strip())
    return None if end is None else (end - _dt.datetime.now()).total_seconds()


class _TimeLimit:
    """A deadline :data:`TIME_MARGIN_S` before the task's time limit: the limit SLURM set
    (``squeue`` EndTime, read when the task starts), or the warning signal sbatch sends
    ``signal_delay_s`` before it (:data:`WARNING_SIGNAL`; SLURM may send it up to a minute
    early), whichever is known. A warning well before the limit SLURM set (preemption, or
    ``scancel --signal``) moves the deadline closer. Jobs go on starting until the deadline;
    a job still running then is stopped (:class:`TimeLimitReached` raised in it)."""

    def __init__(self, signal_delay_s: float, seconds_left: float | None = None):
        self.delay = signal_delay_s
        self.end = None if seconds_left is None else time.monotonic() + seconds_left
        self.expired = False
        self.job_running = False

    def __enter__(self) -> _TimeLimit:
        self._old = {sig: signal.signal(sig, self._warn) for sig in WARNING_SIGNALS}
        self._old[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._expire)
        if self.end is not None:
            self._alarm_in(self.end - time.monotonic() - TIME_MARGIN_S)
        return self

    def __exit__(self, *exc) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _alarm_in(self, seconds: float) -> None:
        """Expire in ``seconds`` unless an earlier alarm is set."""
        pending = signal.getitimer(signal.ITIMER_REAL)[0]
        seconds = max(0.5, seconds)
        if pending == 0 or seconds < pending:
            signal.setitimer(signal.ITIMER_REAL, seconds)

    def _warn(self, signum, frame) -> None:
        if self.end is not None and self.end - time.monotonic() <= self.delay + 65:
            return  # the time limit's own warning: its deadline is set already
        self._alarm_in(self.delay - TIME_MARGIN_S)

    def _expire(self, signum, frame) -> None:
        self.expired = True
        if self.job_running:
            raise TimeLimitReached()


def run_batch(jobs: list[dict], n_workers: int = 1, folder: str | None = None,
              signal_delay_s: float = SIGNAL_DELAY_S) -> list[Outcome]:
    """Inside a cluster task: run a batch of validated jobs (skipping those done meanwhile).

    The task writes its provenance to ``<folder>/tasks/<task id>.json`` first. One worker:
    each job runs in this process with a marker file ``<folder>/running/<run id>`` while it
    runs, so the driver knows which job a dead task was running. The task's time limit sets a
    deadline (:class:`_TimeLimit`): jobs start until then; the jobs not
    started by then come back as ``notrun`` (the driver submits them again), and so does a
    job stopped at the deadline, unless it was the task's first (it had the whole task's
    time: stored as failed by the time limit). Several workers: the jobs run on a resilient
    pool (a dying worker costs its job, :func:`pool.map_resilient`); at the deadline the jobs
    without an outcome come back as ``notrun``."""
    from dptaucc.bench.provenance import WORKERS_ENV

    cap_threads(n_workers)
    os.environ[WORKERS_ENV] = str(n_workers)
    _write_task_info(folder)
    markers = Path(folder) / "running" if folder else None
    if markers is not None:
        markers.mkdir(parents=True, exist_ok=True)
    out: list[Outcome] = []
    with _TimeLimit(signal_delay_s, _seconds_left()) as limit:
        if n_workers > 1:
            return _run_parallel(jobs, n_workers, limit)
        for i, job in enumerate(jobs):
            if limit.expired:
                out += [not_run(j) for j in jobs[i:]]
                break
            mark = markers / run_id(job) if markers is not None else None
            if mark is not None:
                mark.touch()
            try:
                limit.job_running = True
                out.append(work(job))
                limit.job_running = False
            except TimeLimitReached:
                out.append(time_limit_record(job) if i == 0 else
                           not_run(job, "stopped at the task's time limit"))
                out += [not_run(j) for j in jobs[i + 1:]]
                break
            finally:
                limit.job_running = False
                if mark is not None:
                    mark.unlink(missing_ok=True)
    return out


def _run_parallel(jobs: list[dict], n_workers: int, limit: _TimeLimit) -> list[Outcome]:
    """A batch on ``n_workers`` processes; at the deadline the pool is stopped and the jobs
    without an outcome come back as ``notrun``."""
    from dptaucc.bench.pool import map_resilient

    out: list[Outcome] = []
    results = map_resilient(work, jobs, n_workers, run_id, record_death)
    limit.job_running = True
    try:
        for outcome in results:
            out.append(outcome)
    except TimeLimitReached:
        results.close()
        seen = {o.run_id for o in out}
        out += [not_run(j, "the task's time limit came before it finished")
                for j in jobs if run_id(j) not in seen]
    finally:
        limit.job_running = False
    return out


def time_limit_record(job: dict, where: dict | None = None) -> Outcome:
    """Store a job that did not finish within a whole task's time limit as failed by it, not
    by the method (a rerun retries it). ``where``: the task's provenance when the driver
    stores it (default: this process's)."""
    from dptaucc.bench import provenance
    from dptaucc.bench.outcomes import from_record
    from dptaucc.bench.run import base_record
    from dptaucc.bench.store import RunStore

    rec = base_record(job)
    rec.update(provenance.machine(), **provenance.placement())
    if where is not None:
        rec.update({k: v for k, v in where.items() if k in rec})
    rec.update(status="error", started_at=provenance.utc_now(),
               error="TimeLimit: the cluster task reached its SLURM time limit while this job "
                     "ran, the first of its task; the method did not fail. Give tasks more "
                     "time (--slurm-time, hydra.launcher.timeout_min)")
    store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
    return from_record("ran", rec, store.write(rec))
