"""Run the reproduce driver's jobs on a cluster through submitit, in job arrays of batches.

Most jobs take well under a second, so one cluster task per job would spend its time in
scheduling and Python start-up. The pending jobs (deduplicated, protocol-filtered) are cut
into contiguous batches (neighbours share a dataset) sized by time (:func:`batches`: about
``--task-minutes`` of work each from the store's measured job times, at least as many tasks
as the partition has CPUs for while each keeps half a minute of work, never more than the
cluster's ``MaxArraySize``) and submitted as one job array, recorded beside the store's lock
(:mod:`slurm_arrays`) so that a rerun adopts it rather than submitting its jobs again. Each
task (:func:`slurm_task.run_batch`) runs its batch on one worker per half minute of work (at
most one per CPU), writes records to the shared store and returns what happened, the jobs it
could not start before its time limit as ``notrun``. The driver follows the array through
``squeue`` and ``sacct`` (:mod:`slurm_queue`): it explains pending reasons, waits out those
that can clear for a bounded time, stops with a one-line error on those that cannot, and
counts a task that vanished from both as lost. A task that dies costs only the job it was
running: the rest of its batch is submitted again in the next round's array, the suspect
alone and the others in two halves, until every job that kills its task has done so alone.
Ctrl-C cancels the array (finished records stay); a hang-up leaves it running; a rerun
submits only the jobs not done and not held by a live array.

``executor="slurm"`` needs a SLURM cluster with accounting (``sbatch``, ``squeue``,
``sacct``); ``executor="submitit-local"`` runs the same tasks as local processes through
submitit's LocalExecutor.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dptaucc.bench.configs import MAX_ARRAY_SIZE, run_id
from dptaucc.bench.execution import (
    ClusterError,
    Tally,
    job_seconds,
    lost,
    measured_times,
    record_death,
)
from dptaucc.bench.outcomes import Outcome
from dptaucc.bench.slurm_queue import MAX_WAIT_H
from dptaucc.bench.slurm_task import (  # noqa: F401 (run_batch and the constants: public here)
    SIGNAL_DELAY_S,
    THREAD_VARS,
    TIME_MARGIN_S,
    WARNING_SIGNAL,
    not_run,
    run_batch,
    task_info_path,
    time_limit_record,
)

EXECUTORS = ("local", "slurm", "submitit-local")
#: default work per array task: long enough that start-up (~5-10 s) is noise
TASK_MINUTES = 5.0
#: a task gets at least this much work even when more CPUs are free
MIN_TASK_S = 30.0
#: a task starts a second (third, ...) worker only for this much work per worker: each worker
#: is a new Python process that imports the bench and loads its datasets again (a 12-job batch
#: of 0.1 s jobs ran 15 s in a task of one worker, 58 s with two)
MIN_WORKER_S = 30.0
#: assumed cost of a job no stored record has timed yet
GUESS_JOB_S = 1.0
#: seconds between two looks at the queue (a dead task is noticed within ~3 polls)
POLL_S = 5.0
#: the environment variable that sets --slurm-max-wait's default (hours)
MAX_WAIT_ENV = "DPTAUCC_SLURM_MAX_WAIT_H"
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
        params["slurm_additional_parameters"] = {
            "signal": f"{WARNING_SIGNAL}@{signal_delay(timeout_min)}", **(additional or {})}
    if partition:
        params["slurm_partition"] = partition
    if account:
        params["slurm_account"] = account
    ex.update_parameters(**params)
    return ex


def signal_delay(timeout_min: float) -> int:
    """Seconds before a task's time limit at which submitit's warning comes: 90, or a quarter
    of a short time limit (at least twice :data:`TIME_MARGIN_S`)."""
    return int(min(SIGNAL_DELAY_S, max(2 * TIME_MARGIN_S, timeout_min * 60 / 4)))


def refusal(exc: Exception) -> str:
    """One line from sbatch's refusal inside submitit's FailedJobError."""
    lines = [ln.strip() for ln in str(exc).splitlines() if "error:" in ln]
    why = lines[-1].split("error:", 1)[1].strip() if lines else str(exc).splitlines()[0]
    first = lines[0].split("error:", 1)[1].strip() if len(lines) > 1 else ""
    return why + (f" ({first})" if first and first not in why else "")


@dataclass
class _Sweep:
    """What every round of one experiment's submission shares."""

    executor: Any
    name: str
    folder: Path
    serial: bool
    cpus: int
    poll_s: float
    on_cluster: bool
    patience: Any
    runs_dir: str
    results_dir: str
    signal_delay_s: float = SIGNAL_DELAY_S
    costs: dict = field(default_factory=dict)  # estimated seconds per run id
    task_workers: dict = field(default_factory=dict)  # workers of each task id, as submitted

    def workers(self, batch: Sequence[dict]) -> int:
        """Workers for a task running ``batch``: one per CPU while each keeps
        :data:`MIN_WORKER_S` of work, else fewer (one: its BLAS uses every CPU); timing
        experiments (``serial``) always one."""
        if self.serial:
            return 1
        work_s = sum(self.costs.get(run_id(j), GUESS_JOB_S) for j in batch)
        return max(1, min(self.cpus, int(work_s // MIN_WORKER_S)))


class HangUp(BaseException):
    """The driver's session hung up (SIGHUP): stop following the arrays, leave them running
    (a rerun adopts them, :mod:`slurm_arrays`)."""


def submit_jobs(jobs: Sequence[dict], *, executor: str = "slurm", name: str = "dptaucc",
                serial: bool = False, array_size: int = MAX_ARRAY_SIZE,
                jobs_per_task: int | None = None, task_minutes: float = TASK_MINUTES,
                folder: str | None = None, poll_s: float = POLL_S,
                max_wait_h: float | None = None, wait_option: str = "--slurm-max-wait",
                detach: bool = False, collect_only: bool = False, **params) -> Tally:
    """Submit ``jobs`` as one job array of batches, wait, and return their outcomes.

    ``serial`` (timing experiments): each task runs its batch with one worker whatever its
    CPUs. On a cluster, arrays of this experiment that an earlier driver left running on the
    store (:mod:`slurm_arrays`) are adopted first: followed and collected, their jobs not
    submitted again. ``detach``: submit and return (the arrays keep running; ``collect_only``
    later adopts them and submits nothing new but the retries of their dead tasks). A task
    that dies (out of memory, a crash, a node failure, its time limit) costs only the job it
    was running: its other unfinished jobs are submitted again, the suspect alone and the rest
    in halves, round after round, until every job that kills its task has done so alone and
    is stored as failed with the state SLURM reported. A cancelled task's unfinished jobs are
    ``lost``; a rerun submits them again. Tasks pending for a reason that may clear are waited
    for at most ``max_wait_h`` hours without progress (:class:`slurm_queue.Patience`).
    Raises :class:`execution.ClusterError` when SLURM refuses the array or can never run it."""
    from dptaucc.bench import slurm_queue as q

    tally = Tally()
    if not jobs:
        return tally
    folder = Path(folder or Path(jobs[0]["paths"]["results_dir"]) / "submitit" / name)
    cpus = int(params.get("cpus_per_task") or 1)
    on_cluster = executor == "slurm"
    if on_cluster:
        array_size = min(array_size, (q.max_array_size() or array_size + 1) - 1)
        slots = (q.cluster_cpus(params.get("partition")) or cpus) // cpus
        if not q.accounting_works():
            print("[slurm] warning: sacct does not answer (is accounting configured?); a task "
                  "that leaves the queue without a result counts as lost after a few polls",
                  file=sys.stderr)
    else:
        slots = max(1, (os.cpu_count() or 1) // cpus)
    patience = q.Patience(
        max_wait_s=(q.MAX_WAIT_H if max_wait_h is None else float(max_wait_h)) * 3600,
        partition=params.get("partition"), task_minutes=float(params.get("timeout_min") or 240),
        option=wait_option)
    costs = job_costs(jobs)
    sweep = _Sweep(make_executor(executor, folder, name=f"dptaucc-{name}", **params), name,
                   folder, serial, cpus, poll_s, on_cluster, patience,
                   str(jobs[0]["paths"]["runs_dir"]), str(jobs[0]["paths"]["results_dir"]),
                   signal_delay(float(params.get("timeout_min") or 240)),
                   {run_id(j): c for j, c in zip(jobs, costs, strict=True)})
    work_sets, handled = (_adopt(sweep, jobs, tally, detach) if on_cluster else ([], set()))
    rest = [j for j in jobs if run_id(j) not in handled]
    if collect_only:
        tally.outcomes += [not_run(j, "no live array of this sweep holds it; run the same "
                                      "command without --collect to submit it") for j in rest]
    elif rest:
        work_sets += batches(rest, array_size, jobs_per_task,
                             [sweep.costs[run_id(j)] for j in rest], task_minutes * 60, slots)
    round_no = 0
    while work_sets:
        round_no += 1
        if round_no > 1:
            print(f"[slurm] {name}: round {round_no}: {sum(map(len, work_sets))} job(s) in "
                  f"{len(work_sets)} task(s) of up to {max(map(len, work_sets))}",
                  file=sys.stderr, flush=True)
        work_sets = _submit_round(sweep, work_sets, tally, detach)
    return tally


def _adopt(sweep: _Sweep, jobs: Sequence[dict], tally: Tally, detach: bool
           ) -> tuple[list[list[dict]], set[str]]:
    """Follow the live arrays an earlier driver submitted for this experiment on this store;
    return the batches to retry and the run ids they held (not to be submitted again)."""
    import submitit

    from dptaucc.bench import slurm_arrays

    by_id = {run_id(j): j for j in jobs}
    retry: list[list[dict]] = []
    handled: set[str] = set()
    for entry in slurm_arrays.live(sweep.runs_dir):
        if entry.experiment != sweep.name:
            continue
        held = {r for b in entry.batches for r in b}
        handled |= held
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.submitted))
        print(f"[slurm] {sweep.name}: array {entry.array_id} (submitted {when}, "
              f"{sum(map(len, entry.batches))} jobs in {len(entry.batches)} task(s)) still runs "
              f"from an earlier driver: adopted, its jobs are not submitted again",
              file=sys.stderr, flush=True)
        if detach:
            tally.detached.append(entry.array_id)
            continue
        tasks = [submitit.SlurmJob(folder=entry.folder, job_id=t) for t in entry.task_ids]
        work_sets = [[by_id[r] for r in b if r in by_id] for b in entry.batches]
        adopted = replace(sweep, folder=Path(entry.folder), task_workers=dict(zip(
            entry.task_ids, entry.workers, strict=True)))
        try:
            retry += _follow_array(adopted, tasks, work_sets, entry.submitted - 1.0, tally,
                                   [len(b) for b in entry.batches], set(by_id))
        except HangUp:
            raise
        except BaseException:
            slurm_arrays.forget(sweep.runs_dir, entry.array_id)
            raise
        slurm_arrays.forget(sweep.runs_dir, entry.array_id)
    return retry, handled


def _submit_round(sweep: _Sweep, work_sets: list[list[dict]], tally: Tally,
                  detach: bool = False) -> list[list[dict]]:
    """Submit one array (recorded beside the store's lock while it runs), wait for it, add
    its outcomes to ``tally``; return the batches to submit in the next round."""
    from submitit.core.utils import FailedJobError

    from dptaucc.bench import slurm_arrays

    (sweep.folder / "running").mkdir(parents=True, exist_ok=True)
    since = time.time() - 1.0  # file systems round modification times
    n = len(work_sets)
    workers = [sweep.workers(b) for b in work_sets]
    try:
        tasks = sweep.executor.map_array(run_batch, work_sets, workers,
                                         [str(sweep.folder)] * n, [sweep.signal_delay_s] * n)
    except FailedJobError as exc:
        raise ClusterError(f"SLURM refused the array of {sweep.name}: {refusal(exc)}") from None
    array_id = tasks[0].job_id.split("_")[0]
    entry = slurm_arrays.LiveArray(
        array_id, f"dptaucc-{sweep.name}", sweep.name, sweep.results_dir, str(sweep.folder),
        [t.job_id for t in tasks], [[run_id(j) for j in b] for b in work_sets], workers,
        sweep.cpus, since)
    sweep.task_workers.update(zip(entry.task_ids, workers, strict=True))
    if sweep.on_cluster:
        slurm_arrays.add(sweep.runs_dir, entry)
    print(f"[slurm] {sweep.name}: {sum(map(len, work_sets))} jobs in {n} task(s) of up to "
          f"{max(map(len, work_sets))} jobs (array {array_id}); logs in {sweep.folder}",
          file=sys.stderr, flush=True)
    if detach:
        tally.detached.append(array_id)
        return []
    try:
        retry = _follow_array(sweep, tasks, work_sets, since, tally)
    except HangUp:
        raise  # the array runs on; a rerun adopts it
    except BaseException:
        if sweep.on_cluster:
            slurm_arrays.forget(sweep.runs_dir, array_id)
        raise
    if sweep.on_cluster:
        slurm_arrays.forget(sweep.runs_dir, array_id)
    return retry


def _follow_array(sweep: _Sweep, tasks: Sequence, work_sets: list[list[dict]], since: float,
                  tally: Tally, sizes: Sequence[int] | None = None,
                  wanted: set[str] | None = None) -> list[list[dict]]:
    """Wait for one array's tasks; add their outcomes to ``tally``; return the batches to
    submit again: the jobs a task returned unstarted at its time limit, and the unfinished
    jobs of tasks that died -- the job each was running alone, the rest in two halves. A task
    of one job that dies names its culprit: stored as failed with the state SLURM reported.

    An adopted array: ``work_sets`` hold only the jobs still pending when it was adopted,
    ``sizes`` the batches' sizes as submitted, ``wanted`` the run ids whose outcomes count."""
    sizes = list(sizes) if sizes is not None else [len(b) for b in work_sets]
    from tqdm.auto import tqdm

    from dptaucc.bench.slurm_queue import cancel, watch

    markers = sweep.folder / "running"
    array_id = tasks[0].job_id.split("_")[0]
    retry: list[list[dict]] = []

    def ended(i: int, end) -> None:
        bar.update(1)
        batch, task = work_sets[i], tasks[i].job_id
        if end.state is None:
            outs = [o for o in end.result if wanted is None or o.run_id in wanted]
            unstarted = {o.run_id for o in outs if o.outcome == "notrun"}
            tally.outcomes.extend(o for o in outs if o.outcome != "notrun")
            rest = [j for j in batch if run_id(j) in unstarted]
            if sizes[i] == 1 and rest:  # alone, it did not finish in a whole task
                tally.outcomes.append(time_limit_record(rest[0], where=_task_placement(
                    sweep, task)))
                what = "its only job did not finish: stored as failed by the time limit"
            elif rest:  # cut to what the task managed before its time limit
                size = max(1, len(batch) - len(rest))
                retry.extend(rest[k:k + size] for k in range(0, len(rest), size))
                what = (f"{len(rest)} job(s) not run: submitted again in tasks of up to {size} "
                        f"(--task-minutes too large for --slurm-time?)")
            else:
                return
            bar.write(f"[slurm] {sweep.name}: task {task} reached its time limit; {what}",
                      file=sys.stderr)
            return
        unfinished = _unfinished(batch, since)
        suspects = [j for j in unfinished if (markers / run_id(j)).exists()]
        for j in suspects:
            (markers / run_id(j)).unlink(missing_ok=True)
        died = RuntimeError(f"{end.state}: task {task} died ({end.detail})")
        tally.outcomes += _stored(batch, unfinished)
        if not unfinished:
            what = "every job of it had stored its record"
        elif end.state in ("CANCELLED", "ABSENT"):
            tally.outcomes += [lost(j, died) for j in unfinished]
            what = f"{len(unfinished)} unfinished job(s) lost (a rerun submits them again)"
        elif sizes[i] == 1:
            where = _task_placement(sweep, task)
            tally.outcomes.append(record_death(unfinished[0], died, where))
            what = f"its job {run_id(unfinished[0])} killed it alone: stored as failed"
        else:
            rest = [j for j in unfinished if j not in suspects]
            half = (len(rest) + 1) // 2
            retry.extend([[j] for j in suspects] + [b for b in (rest[:half], rest[half:]) if b])
            tally.restarts += 1
            what = (f"{len(unfinished)} unfinished job(s) submitted again: "
                    + (f"{len(suspects)} it was running alone, " if suspects else "")
                    + f"{len(rest)} others in {'two halves' if len(rest) > 1 else 'one task'}")
        bar.write(f"[slurm] {sweep.name}: task {task} ended {end.state} ({end.detail}); {what}",
                  file=sys.stderr)

    with tqdm(total=len(tasks), desc=f"{sweep.name} tasks", unit="task") as bar:
        try:
            watch(tasks, sweep.name, sweep.poll_s, ended, on_cluster=sweep.on_cluster,
                  patience=sweep.patience)
        except KeyboardInterrupt:
            _cancel_all(tasks, sweep.on_cluster, array_id, cancel)
            print(f"[slurm] interrupted: cancelled the unfinished tasks of {sweep.name}; "
                  f"finished records are kept, a rerun resumes", file=sys.stderr)
            raise
    _count_tasks(sweep, tasks, tally)
    return retry


def _task_placement(sweep: _Sweep, task_id: str) -> dict:
    """Where a dead task ran: what it wrote when it started, else what the driver knows (its
    submission, sacct's node list)."""
    try:
        return json.loads(task_info_path(sweep.folder, task_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    workers = sweep.task_workers.get(task_id, 1)
    where: dict[str, Any] = {"workers": workers, "blas_threads": max(1, sweep.cpus // workers),
                             "slurm_array_task": task_id, "cpu": None, "blas": None,
                             "host": None, "slurm_job_id": None}
    if sweep.on_cluster:
        from dptaucc.bench.slurm_queue import accounting_rows

        row = (accounting_rows(task_id) or {}).get(task_id, {})
        where.update(host=row.get("NodeList") or None, slurm_job_id=row.get("JobIDRaw"))
    return where


def _count_tasks(sweep: _Sweep, tasks: Sequence, tally: Tally) -> None:
    """Add the array's tasks, their workers and (on a cluster) the seconds and CPU-seconds
    SLURM allocated them to ``tally``."""
    tally.tasks += len(tasks)
    tally.task_workers += sum(sweep.task_workers.get(t.job_id, 1) for t in tasks)
    if not sweep.on_cluster:
        return
    rows = _final_rows(tasks[0].job_id.split("_")[0], [t.job_id for t in tasks])
    for task in tasks:
        row = rows.get(task.job_id, {})
        tally.task_s += float(row.get("ElapsedRaw") or 0)
        tally.task_core_s += float(row.get("CPUTimeRAW") or 0)


#: how long the driver waits for ``sacct`` to record its finished tasks' final state (the
#: accounting daemon writes it a moment after the task ends)
ACCOUNTING_WAIT_S = 30.0
#: the states of a task that is still running, or whose end accounting has not recorded yet
_NOT_FINAL = ("", "PENDING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED")


def _final_rows(array_id: str, task_ids: Sequence[str],
                wait_s: float = ACCOUNTING_WAIT_S) -> dict[str, dict[str, str]]:
    """``sacct``'s rows of the array's tasks once each has a final state (its elapsed and CPU
    seconds are then final too), polling once a second for at most ``wait_s``; after that,
    the rows as they are, with a message naming the tasks still unrecorded."""
    from dptaucc.bench.slurm_queue import accounting_rows

    deadline = time.monotonic() + wait_s
    while True:
        got = accounting_rows(array_id)
        if got is None:  # accounting does not answer: nothing to wait for
            return {}
        rows = got
        late = [t for t in task_ids
                if rows.get(t, {}).get("State", "").split(" ")[0] in _NOT_FINAL]
        if not late:
            return rows
        if time.monotonic() >= deadline:
            print(f"[slurm] sacct has not recorded the end of {len(late)} task(s) of array "
                  f"{array_id} after {wait_s:.0f} s ({', '.join(late[:3])}): their seconds are "
                  "counted as accounting shows them now", file=sys.stderr, flush=True)
            return rows
        time.sleep(1.0)


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
    g.add_argument("--slurm-max-wait", type=float, default=None, metavar="HOURS",
                   help=f"how long tasks may pend, none of the array running, for a reason "
                        f"that can clear (a maintenance reservation, drained nodes, Priority, "
                        f"Resources, ...) before the array is cancelled (default "
                        f"${MAX_WAIT_ENV} or {MAX_WAIT_H:g}); impossible requests stop at once")
    g.add_argument("--detach", action="store_true",
                   help="submit the arrays and return; they keep running (collect later "
                        "with the same command and --collect)")
    g.add_argument("--collect", action="store_true",
                   help="follow the arrays a detached or interrupted run left running on this "
                        "store, retry their dead tasks' jobs, write the outputs; submit "
                        "nothing else")


def resources(executor: str, options: dict, n_workers: int) -> dict:
    """What ``reproduce.json`` records about where the jobs ran."""
    if executor == "local":
        return {"workers": n_workers}
    keys = ("partition", "account", "cpus_per_task", "mem_gb", "timeout_min", "task_minutes",
            "jobs_per_task", "array_size", "array_parallelism", "additional", "max_wait_h")
    return {k: options.get(k) for k in keys if options.get(k) is not None}


def options_from_args(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`submit_jobs` from the parsed command line."""
    if (args.detach or args.collect) and args.executor != "slurm":
        raise SystemExit("--detach and --collect need --executor slurm")
    if args.detach and args.collect:
        raise SystemExit("--detach submits and returns, --collect follows: give one of them")
    max_wait = args.slurm_max_wait
    if max_wait is None:
        try:
            max_wait = float(os.environ.get(MAX_WAIT_ENV) or MAX_WAIT_H)
        except ValueError:
            raise SystemExit(f"${MAX_WAIT_ENV} must be a number of hours, got "
                             f"{os.environ[MAX_WAIT_ENV]!r}") from None
    if max_wait <= 0:
        raise SystemExit(f"--slurm-max-wait must be > 0 hours, got {max_wait:g}")
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
            "array_parallelism": args.slurm_parallelism, "additional": extra or None,
            "max_wait_h": max_wait, "detach": args.detach, "collect_only": args.collect}
