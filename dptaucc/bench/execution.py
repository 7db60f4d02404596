"""Running validated jobs against their store: what the reproduce driver and the cluster tasks
share (so that :mod:`reproduce` and :mod:`slurm` do not import each other).

:func:`work` runs one job and says how it ended; :func:`run_jobs` runs many with a progress
bar, on worker processes that may die without taking the sweep with them; :func:`lost` and
:func:`record_death` describe jobs whose process died; :func:`pending_jobs` drops the done
ones; :func:`measured_times` and :func:`estimate` turn stored records into per-job costs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from dptaucc.bench.configs import run_id
from dptaucc.bench.outcomes import Outcome, count, from_record
from dptaucc.bench.run import run_job
from dptaucc.bench.store import RunStore


class ClusterError(RuntimeError):
    """The cluster refused the work or can never run it (one line for the user, exit 2)."""


def work(job: dict) -> Outcome:
    """Run one validated job against its store (in a worker) and say how it ended, with the
    seconds the job took in its worker when it ran."""
    t0 = time.perf_counter()
    outcome, rec = run_job(job, validated=True)
    seconds = time.perf_counter() - t0
    path = None
    if rec is not None:
        path = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).path(rec["run_id"])
    out = from_record(outcome, rec, path)
    return dataclasses.replace(out, seconds=seconds) if outcome == "ran" else out


def lost(job: dict, exc: BaseException) -> Outcome:
    """The outcome of a job that never stored a record: its worker or cluster task died."""
    detail = str(exc).splitlines()[0] if str(exc) else ""
    return Outcome("lost", None, run_id(job),
                   f"WorkerDied: the process running this job died ({type(exc).__name__}: "
                   f"{detail})")


def record_death(job: dict, exc: BaseException, where: dict | None = None) -> Outcome:
    """Store a failed record for a job whose worker process died while it ran alone (a rerun
    retries it) and return its ``lost`` outcome. ``where``: the provenance of the process that
    died (host, CPU, SLURM ids, workers, BLAS threads), by default what the dead worker wrote
    in its marker (``exc.placement``, :func:`pool.map_resilient`), else this machine's with
    its BLAS threads unknown."""
    from dptaucc.bench import provenance
    from dptaucc.bench.run import base_record

    out = lost(job, exc)
    rec = base_record(job)
    where = where if where is not None else getattr(exc, "placement", None)
    rec.update(provenance.machine(), **provenance.placement())
    if where is None:
        rec["blas_threads"] = None  # the dead worker's, not this process's: unknown
    else:
        rec.update({k: v for k, v in where.items() if k in rec})
    rec.update(status="error", started_at=provenance.utc_now(),
               error=f"{out.error}\n(killed by a signal, out of memory, or a crash in native "
                     f"code; the other jobs of the sweep went on)")
    path = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).write(rec)
    return Outcome("lost", "error", out.run_id, out.error, str(path))


@dataclass
class Tally:
    """The outcomes of a run of jobs, and how often the worker pool was restarted; on a cluster
    also its tasks: how many, their workers, and the seconds and CPU-seconds SLURM allocated
    them (``sacct`` ElapsedRaw, CPUTimeRAW)."""

    outcomes: list[Outcome] = field(default_factory=list)
    restarts: int = 0
    tasks: int = 0
    task_workers: int = 0
    task_s: float = 0.0
    task_core_s: float = 0.0
    detached: list[str] = field(default_factory=list)  # arrays submitted and left running

    def counts(self) -> Counter:
        out = count(self.outcomes)
        if self.restarts:
            out["restarts"] = self.restarts
        return out


def pending_jobs(jobs: Iterable[dict]) -> list[dict]:
    """Jobs not done yet: no successful record (or no record at all when
    ``bench.retry_failed`` is false)."""
    out, done_cache = [], {}
    for job in jobs:
        key = (job["paths"]["runs_dir"], job["bench"]["experiment"],
               bool(job["bench"].get("retry_failed", True)))
        if key not in done_cache:
            done_cache[key] = RunStore(key[0], key[1]).done_ids(retry_failed=key[2])
        if run_id(job) not in done_cache[key]:
            out.append(job)
    return out


def run_jobs(jobs: Sequence[dict], n_jobs: int = 1, desc: str = "jobs",
             work: Callable[[dict], Outcome] = work) -> Tally:
    """Run ``jobs`` (validated, already filtered) with a progress bar.

    With ``n_jobs > 1`` the jobs run in worker processes; a worker that dies costs the job it
    was running (a ``lost`` outcome), not the sweep (:func:`pool.map_resilient`)."""
    from dptaucc.bench.pool import map_resilient
    from dptaucc.bench.provenance import WORKERS_ENV

    tally = Tally()
    if not jobs:
        return tally
    os.environ[WORKERS_ENV] = str(min(n_jobs, len(jobs)))  # the workers inherit it
    bar = tqdm(total=len(jobs), desc=desc, unit="job", dynamic_ncols=True, smoothing=0.05)

    def restarted(n_suspects: int, n_left: int) -> None:
        tally.restarts += 1
        bar.write(f"[reproduce] a worker died; rerunning the {n_suspects} job(s) it may have "
                  f"been running one at a time, then the other {n_left - n_suspects}")

    results = ((work(job) for job in jobs) if n_jobs == 1 else
               map_resilient(work, jobs, n_jobs, run_id, record_death, restarted))
    c: Counter = Counter()  # running counts (recounting every outcome per job is quadratic)
    try:
        for out in results:
            tally.outcomes.append(out)
            c.update(count([out]))
            bar.update(1)
            bar.set_postfix(ok=c["ok"], failed=c["error"] + c["lost"], refresh=False)
    finally:
        bar.close()
    return tally


def _key(alg, mode, dataset, n_cols) -> tuple:
    return (alg, mode or "-", dataset, None if n_cols is None else int(n_cols))


def measured_times(runs_dir: str) -> dict[tuple, float]:
    """Mean seconds per job (fit + evaluation) from every stored ok record, by
    (algorithm, mode, dataset, n_cols) and (algorithm, dataset, n_cols)."""
    sums: dict[tuple, list[float]] = {}
    for path in Path(runs_dir).glob("*/*.json"):
        try:
            r = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if r.get("status") != "ok" or r.get("fit_time_s") is None:
            continue
        t = float(r["fit_time_s"]) + float(r.get("eval_time_s") or 0.0)
        n_cols = r.get("p_n_cols")
        for key in (_key(r["algorithm"], r.get("mode"), r["dataset"], n_cols),
                    (r["algorithm"], r["dataset"], n_cols)):
            sums.setdefault(key, []).append(t)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def job_seconds(job: dict, times: dict[tuple, float]) -> float | None:
    """Measured seconds of one job from :func:`measured_times` (None when never timed)."""
    ds = job["dataset"]
    n_cols = ds.get("n_cols") if ds["loader"] == "biclusters" else None
    alg = job["algorithm"]["name"]
    mode = job["mode"] if job["algorithm"].get("private", True) else None
    return times.get(_key(alg, mode, ds["name"], n_cols), times.get((alg, ds["name"], n_cols)))


def estimate(jobs: Sequence[dict], times: dict[tuple, float]) -> tuple[float, int]:
    """Estimated CPU seconds of ``jobs`` from measured per-job times; and how many had none."""
    known = [job_seconds(job, times) for job in jobs]
    return sum(t for t in known if t is not None), sum(t is None for t in known)
