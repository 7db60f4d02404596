"""``python -m dptaucc.bench.reproduce``: every experiment, resumable, then collect/figures/report.

The driver enumerates each experiment's grid itself (Hydra's parser, :mod:`configs`), validates
every job before any runs, skips jobs already done in the store (a failed job is retried
unless ``--no-retry``) and runs the rest: locally with joblib (loky processes, one BLAS
thread per worker; experiments with ``bench.serial`` -- supp_runtime -- run in this process,
one at a time), or on a SLURM cluster through submitit in job arrays (``--executor slurm``,
:mod:`slurm`). One sweep at a time per store (:mod:`lock`). Progress: jobs done / total with an
ETA (tqdm). Ctrl-C or a crash loses no finished job. It exits non-zero when jobs failed.

Where results go (:mod:`scales`): ``--scale paper`` with the full grids writes to
``results/``; the quick scale and any ``--sweep`` change write to ``results/quick/``, and the
driver refuses to write them into the paper-scale folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from dptaucc.bench.configs import (
    EXPERIMENTS,
    Composer,
    UnknownChoiceError,
    check_choices,
    distinct_jobs,
    expand_experiment,
    run_id,
)
from dptaucc.bench.lock import StoreLock, StoreLockedError
from dptaucc.bench.outcomes import Outcome, count, failure_summary, from_record
from dptaucc.bench.provenance import utc_now
from dptaucc.bench.run import run_job
from dptaucc.bench.run_log import write_run_log
from dptaucc.bench.scales import ScaleError, check_not_paper_dir, results_dir_for
from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import ConfigError, validate_jobs

#: other CPUs busy above this before a serial (timing) experiment: warn that timings suffer
BUSY_WARNING = 0.25


def work(job: dict) -> Outcome:
    """Run one validated job against its store (in a worker) and say how it ended."""
    outcome, rec = run_job(job, validated=True)
    path = None
    if rec is not None:
        path = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).path(rec["run_id"])
    return from_record(outcome, rec, path)


def lost(job: dict, exc: BaseException) -> Outcome:
    """The outcome of a job that never stored a record: its worker or cluster task died."""
    detail = str(exc).splitlines()[0] if str(exc) else ""
    return Outcome("lost", None, run_id(job),
                   f"WorkerDied: the process running this job died ({type(exc).__name__}: "
                   f"{detail})")


def record_death(job: dict, exc: BaseException) -> Outcome:
    """Store a failed record for a job whose worker process died while it ran alone (a rerun
    retries it) and return its ``lost`` outcome."""
    from dptaucc.bench import provenance
    from dptaucc.bench.run import base_record

    out = lost(job, exc)
    rec = base_record(job)
    rec.update(provenance.machine(), status="error", started_at=provenance.utc_now(),
               error=f"{out.error}\n(killed by a signal, out of memory, or a crash in native "
                     f"code; the other jobs of the sweep went on)")
    path = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).write(rec)
    return Outcome("lost", "error", out.run_id, out.error, str(path))


@dataclass
class Tally:
    """The outcomes of a run of jobs, and how often the worker pool was restarted."""

    outcomes: list[Outcome] = field(default_factory=list)
    restarts: int = 0

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

    tally = Tally()
    if not jobs:
        return tally
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
    import json

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


def estimate(jobs: Sequence[dict], times: dict[tuple, float]) -> tuple[float, int]:
    """Estimated CPU seconds of ``jobs`` from measured per-job times; and how many had none."""
    total, unknown = 0.0, 0
    for job in jobs:
        ds = job["dataset"]
        n_cols = ds.get("n_cols") if ds["loader"] == "biclusters" else None
        alg = job["algorithm"]["name"]
        mode = job["mode"] if job["algorithm"].get("private", True) else None
        t = times.get(_key(alg, mode, ds["name"], n_cols), times.get((alg, ds["name"], n_cols)))
        if t is None:
            unknown += 1
        else:
            total += t
    return total, unknown


def _log(msg: str) -> None:
    print(f"[reproduce] {msg}", file=sys.stderr, flush=True)


def _check_idle(exp: str) -> float:
    """Warn when other processes keep CPUs busy before a timing experiment; return the count."""
    from dptaucc.bench.contention import other_busy_cpus

    busy = other_busy_cpus(1.0)
    if busy > BUSY_WARNING:
        _log(f"WARNING: {exp} measures fit times but other processes keep {busy:.1f} CPU(s) "
             f"busy; its timings will be inflated (each record stores what it saw: "
             f"load_1m, other_busy_cpus). Rerun it on an idle machine for the paper's figure.")
    return busy


def reproduce(scale: str = "paper", n_jobs: int | None = None,
              experiments: Sequence[str] = EXPERIMENTS, results_dir: str | None = None,
              retry_failed: bool = True, dry_run: bool = False, outputs: bool = True,
              sweep: dict[str, str] | None = None, executor: str = "local",
              slurm: dict | None = None) -> dict:
    """Run the experiments at ``scale``; returns ``{experiment: {total, pending, statuses}}``
    plus ``_outcomes`` (every job's :class:`outcomes.Outcome`) and ``_seconds``.

    ``sweep`` replaces grid axes of every experiment (Hydra sweep strings, e.g.
    ``{"seed": "range(3)"}``); axes an experiment does not sweep are added to it. A run that
    is not the full paper grid (quick scale, or any ``sweep``) goes to the quick folder and
    may not target the paper-scale one (:class:`scales.ScaleError`). Invalid jobs raise
    :class:`validate.ConfigError` before anything runs."""
    full_paper = scale == "paper" and not sweep
    if results_dir is None:
        results_dir = str(results_dir_for("paper" if full_paper else "quick"))
    if not full_paper:
        check_not_paper_dir(results_dir, f"a {scale}-scale run" if not sweep
                            else f"a run with a modified grid ({', '.join(sweep)})")
    n_jobs = n_jobs or os.cpu_count() or 1
    overrides = [f"paths.results_dir={results_dir}",
                 f"bench.retry_failed={'true' if retry_failed else 'false'}"]
    with Composer() as composer:
        grids = {exp: list(expand_experiment(composer, exp, scale, overrides, sweep))
                 for exp in experiments}
    errors = validate_jobs(j for jobs in grids.values() for j in jobs)
    if errors:
        raise ConfigError("invalid jobs, nothing was run:\n  " + "\n  ".join(errors[:10])
                          + (f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""))
    plans = {exp: distinct_jobs(jobs) for exp, jobs in grids.items()}
    runs_dir = str(Path(results_dir) / "runs")
    if dry_run:
        return _dry_run(plans, scale, results_dir)
    with StoreLock(runs_dir):
        started, t0 = utc_now(), time.perf_counter()
        summary = _run_plans(plans, scale, results_dir, n_jobs, executor, slurm or {})
        if outputs:
            summary["_outputs"] = _outputs(results_dir, experiments, full_paper,
                                           summary["_outcomes"])
        write_run_log(results_dir, scale=scale, n_workers=n_jobs, executor=executor,
                      started_utc=started, sweep_seconds=summary["_seconds"],
                      total_seconds=time.perf_counter() - t0,
                      experiments={e: summary[e] for e in experiments})
        if outputs:  # the report's header names this run's commit and wall time
            from dptaucc.bench.report import write_report

            write_report(results_dir)
    return summary


def _dry_run(plans: dict[str, list[dict]], scale: str, results_dir: str) -> dict:
    summary: dict = {"_outcomes": [], "_seconds": 0.0}
    _log(f"scale={scale} -> {results_dir} (dry run)")
    for exp, jobs in plans.items():
        pend = pending_jobs(jobs)
        times = measured_times(jobs[0]["paths"]["runs_dir"]) if jobs else {}
        cpu, unknown = estimate(pend, times)
        summary[exp] = {"total": len(jobs), "pending": len(pend),
                        "estimated_cpu_s": round(cpu, 1), "without_timing": unknown}
    return summary


def _run_plans(plans: dict[str, list[dict]], scale: str, results_dir: str, n_jobs: int,
               executor: str, slurm: dict) -> dict:
    summary: dict = {"_outcomes": []}
    todo = {exp: pending_jobs(jobs) for exp, jobs in plans.items()}
    total = sum(len(j) for j in plans.values())
    where = f"{n_jobs} workers" if executor == "local" else f"{executor} executor"
    _log(f"scale={scale} -> {results_dir}: {total} jobs, {sum(map(len, todo.values()))} to run "
         f"({where})")
    t_start = time.perf_counter()
    for exp, jobs in plans.items():
        pend = todo[exp]
        serial = bool(jobs and jobs[0]["bench"].get("serial"))
        summary[exp] = {"total": len(jobs), "pending": len(pend)}
        _log(f"{exp}: {len(jobs)} jobs, {len(jobs) - len(pend)} already done"
             + (", serial" if serial else ""))
        t0 = time.perf_counter()
        if executor != "local":
            from dptaucc.bench.slurm import submit_jobs

            tally = submit_jobs(pend, executor=executor, name=exp, serial=serial, **slurm)
        else:
            if serial and pend:
                summary[exp]["other_busy_cpus_before"] = round(_check_idle(exp), 2)
            tally = run_jobs(pend, 1 if serial else n_jobs, desc=exp)
        summary["_outcomes"] += tally.outcomes
        summary[exp].update(statuses=dict(tally.counts()), seconds=time.perf_counter() - t0)
    summary["_seconds"] = time.perf_counter() - t_start
    return summary


def _outputs(results_dir: str, experiments: Sequence[str], full_paper: bool,
             outcomes: Sequence[Outcome]) -> dict:
    from dptaucc.bench.outputs import publish

    if full_paper and any(o.failed for o in outcomes):
        _log("some jobs failed: the paper-scale tables are left as they were for the "
             "experiments whose store is incomplete")
    # A complete paper-scale run is the reproduction: each complete table is rebuilt from the
    # store alone (merging would keep rows of older code, whose job ids differ). Quick and
    # partial runs merge (make collect), so a user adds a method by running only its jobs.
    return publish(results_dir, experiments, replace=full_paper)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.reproduce", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=("paper", "quick"), default="paper")
    ap.add_argument("--jobs", type=int, default=None,
                    help="local worker processes (default: all cores)")
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS),
                    help="comma-separated subset of " + ",".join(EXPERIMENTS))
    ap.add_argument("--results-dir", default=None,
                    help="default: results/ for the full paper scale, results/quick/ otherwise "
                         "(results = $DPTAUCC_RESULTS_DIR if set)")
    ap.add_argument("--no-retry", action="store_true",
                    help="skip jobs stored as failed (default: retry them)")
    ap.add_argument("--dry-run", action="store_true",
                    help="only count jobs (and estimate CPU time from stored records)")
    ap.add_argument("--no-outputs", action="store_true", help="skip collect/figures/report")
    ap.add_argument("--sweep", action="append", default=[], metavar="KEY=VALUES",
                    help="replace a grid axis, Hydra syntax (repeatable), e.g. seed='range(3)'")
    from dptaucc.bench.slurm import add_arguments, options_from_args

    add_arguments(ap)
    args = ap.parse_args(argv)
    exps = [e for e in args.experiments.split(",") if e]
    sweep = {}
    for item in args.sweep:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--sweep expects KEY=VALUES, got {item!r}")
        sweep[key] = value
    try:
        check_choices([f"experiment={','.join(exps)}", *args.sweep])
        summary = reproduce(args.scale, args.jobs, exps, args.results_dir, not args.no_retry,
                            args.dry_run, not args.no_outputs, sweep or None,
                            args.executor, options_from_args(args))
    except (ConfigError, ScaleError, StoreLockedError, UnknownChoiceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished jobs are stored; run the same command again to resume",
              file=sys.stderr)
        return 130

    for exp in exps:
        print(f"{exp}: {summary[exp]}")
    print(f"total wall time: {summary['_seconds']:.1f} s")
    problem = failure_summary(summary["_outcomes"], "run the same command again")
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
