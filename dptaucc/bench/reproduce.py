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
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dptaucc._cli import plain
from dptaucc.bench.configs import (
    EXPERIMENTS,
    Composer,
    UnknownChoiceError,
    check_choices,
    distinct_jobs,
    expand_experiment,
)
from dptaucc.bench.costs import cost_summary
from dptaucc.bench.execution import (  # noqa: F401 (record_death, lost, work: public here too)
    ClusterError,
    Tally,
    estimate,
    lost,
    measured_times,
    pending_jobs,
    record_death,
    run_jobs,
    work,
)
from dptaucc.bench.lock import StoreLock, StoreLockedError
from dptaucc.bench.outcomes import Outcome, failure_summary
from dptaucc.bench.provenance import utc_now
from dptaucc.bench.run_log import write_run_log
from dptaucc.bench.scales import ScaleError, check_not_paper_dir, results_dir_for
from dptaucc.bench.validate import ConfigError, validate_jobs

#: other CPUs busy above this before a serial (timing) experiment: warn that timings suffer
BUSY_WARNING = 0.25


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
    if executor != "local":  # cluster tasks must not depend on their working directory
        results_dir = str(Path(results_dir).absolute())
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
        if summary.get("_detached"):  # nothing finished yet: no tables, log or report
            return summary
        if outputs:
            summary["_outputs"] = _outputs(results_dir, experiments, full_paper,
                                           summary["_outcomes"], n_jobs, plans)
        from dptaucc.bench.slurm import resources

        write_run_log(results_dir, scale=scale,
                      resources=resources(executor, slurm or {}, n_jobs), executor=executor,
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
    if executor == "slurm":
        _warn_other_arrays(Path(results_dir) / "runs", plans)
    summary["_detached"] = []
    for exp, jobs in plans.items():
        pend = todo[exp]
        serial = bool(jobs and jobs[0]["bench"].get("serial"))
        summary[exp] = {"total": len(jobs), "pending": len(pend)}
        _log(f"{exp}: {len(jobs)} jobs, {len(jobs) - len(pend)} already done"
             + (", serial" if serial else ""))
        t0 = time.perf_counter()
        if executor != "local":
            from dptaucc.bench.slurm import submit_jobs

            opts = dict(slurm)
            if not opts.get("folder"):  # submitit's pickles and logs: per run, per experiment
                stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
                opts["folder"] = str(Path(results_dir) / "submitit" / stamp / exp)
            tally = submit_jobs(pend, executor=executor, name=exp, serial=serial, **opts)
        else:
            if serial and pend:
                summary[exp]["other_busy_cpus_before"] = round(_check_idle(exp), 2)
            tally = run_jobs(pend, 1 if serial else n_jobs, desc=exp)
        summary["_outcomes"] += tally.outcomes
        seconds = time.perf_counter() - t0
        summary[exp].update(statuses=dict(tally.counts()), seconds=seconds)
        if tally.detached:
            summary[exp]["detached"] = list(tally.detached)
            summary["_detached"] += tally.detached
        if executor == "local":
            workers = 1 if serial else min(n_jobs, len(pend)) or 1
            summary[exp]["core_seconds"] = cost_summary(tally.outcomes, seconds, workers)
        else:  # the tasks' workers and the CPU-seconds SLURM allocated them
            summary[exp]["core_seconds"] = cost_summary(
                tally.outcomes, seconds, tally.task_workers or None,
                core_seconds=tally.task_core_s if executor == "slurm" else None,
                tasks=tally.tasks, task_seconds=tally.task_s if executor == "slurm" else None)
    summary["_seconds"] = time.perf_counter() - t_start
    return summary


def _warn_other_arrays(runs_dir: Path, plans: dict[str, list[dict]]) -> None:
    """Arrays an earlier driver left running on this store for experiments not run now keep
    writing records (and sharing the cluster): say so."""
    from dptaucc.bench import slurm_arrays

    for entry in slurm_arrays.live(runs_dir):
        if entry.experiment not in plans:
            _log(f"note: array {entry.array_id} of {entry.experiment} (an earlier run) still "
                 f"runs on this store; its jobs are not part of this run (rerun with "
                 f"--experiments {entry.experiment} --collect to collect it, or scancel "
                 f"{entry.array_id})")


def _outputs(results_dir: str, experiments: Sequence[str], full_paper: bool,
             outcomes: Sequence[Outcome], n_jobs: int = 1,
             plans: dict[str, list[dict]] | None = None) -> dict:
    """Tables and figures (on ``n_jobs`` processes); the report is written after the run log,
    whose commit and wall time it names. ``plans``: every experiment's jobs (at the full paper
    scale, its paper grid: the tables' guard need not enumerate it again)."""
    from dptaucc.bench.configs import run_id
    from dptaucc.bench.outputs import publish

    if full_paper and any(o.failed for o in outcomes):
        _log("some jobs failed: the paper-scale tables are left as they were for the "
             "experiments whose store is incomplete")
    # A complete paper-scale run is the reproduction: each complete table is rebuilt from the
    # store alone (merging would keep rows of older code, whose job ids differ). Quick and
    # partial runs merge (make collect), so a user adds a method by running only its jobs.
    grids = ({exp: {run_id(j) for j in jobs} for exp, jobs in plans.items()}
             if full_paper and plans is not None else None)
    return publish(results_dir, experiments, steps=("collect", "figures"), replace=full_paper,
                   n_jobs=n_jobs, grids=grids)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Plain-text columns: the first left-aligned, the others right-aligned."""
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in cells]


def summary_lines(summary: dict, experiments: Sequence[str], dry_run: bool = False) -> list[str]:
    """The end-of-run summary as a table, one row per experiment and a total.

    >>> summary = {"fig2_real": {"total": 10, "pending": 4, "seconds": 2.5,
    ...                          "statuses": {"ok": 3, "error": 1},
    ...                          "core_seconds": {"job_s": 4.25}}, "_seconds": 2.5}
    >>> print("\\n".join(summary_lines(summary, ["fig2_real"])))
    experiment  jobs  already done  ran  ok  failed  wall s  job core-s
    fig2_real     10             6    4   3       1     2.5         4.2
    total         10             6    4   3       1     2.5         4.2
    """
    if dry_run:
        rows = [[exp, s["total"], s["total"] - s["pending"], s["pending"],
                 f"{s['estimated_cpu_s']:.0f}", s["without_timing"]]
                for exp in experiments for s in [summary[exp]]]
        total = [sum(r[i] for r in rows) for i in (1, 2, 3)]
        rows.append(["total", *total, f"{sum(float(r[4]) for r in rows):.0f}",
                     sum(r[5] for r in rows)])
        return _table(["experiment", "jobs", "already done", "to run", "estimated CPU s",
                       "without a timing"], rows)
    rows = []
    for exp in experiments:
        s = summary[exp]
        statuses = s.get("statuses", {})
        failed = sum(n for k, n in statuses.items() if k not in ("ok", "skipped", "excluded",
                                                                 "restarts"))
        rows.append([exp, s["total"], s["total"] - s["pending"], s["pending"],
                     statuses.get("ok", 0), failed, float(s.get("seconds", 0.0)),
                     float((s.get("core_seconds") or {}).get("job_s") or 0.0)])
    total = ["total", *(sum(r[i] for r in rows) for i in range(1, 6)),
             float(summary.get("_seconds", 0.0)), sum(r[7] for r in rows)]
    rows = [[*r[:6], f"{r[6]:.1f}", f"{r[7]:.1f}"] for r in [*rows, total]]
    return _table(["experiment", "jobs", "already done", "ran", "ok", "failed", "wall s",
                   "job core-s"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.reproduce",
                                 description=plain(__doc__),
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
    from dptaucc.bench.slurm import HangUp

    slurm = options_from_args(args)
    previous = signal.signal(signal.SIGHUP, _hang_up)
    try:
        check_choices([f"experiment={','.join(exps)}", *args.sweep])
        summary = reproduce(args.scale, args.jobs, exps, args.results_dir, not args.no_retry,
                            args.dry_run, not args.no_outputs, sweep or None,
                            args.executor, slurm)
    except (ConfigError, ScaleError, StoreLockedError, UnknownChoiceError, ClusterError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished jobs are stored; run the same command again to resume",
              file=sys.stderr)
        return 130
    except HangUp:
        print("\nhang-up: the driver stops; finished jobs are stored and its SLURM job arrays "
              "keep running. Run the same command again to resume: it adopts the arrays "
              "(nothing is submitted twice)", file=sys.stderr)
        return 129
    finally:
        signal.signal(signal.SIGHUP, previous)
    if summary.get("_detached"):
        print(f"submitted array(s) {', '.join(summary['_detached'])}; they run without this "
              f"driver. Collect them with the same command and --collect (it waits for them, "
              f"retries the jobs of dead tasks and writes the outputs)")
        return 0

    print("\n".join(summary_lines(summary, exps, args.dry_run)))
    if not args.dry_run:
        where = Path(args.results_dir or results_dir_for(
            "paper" if args.scale == "paper" and not sweep else "quick"))
        outputs = ("" if args.no_outputs else
                   f"; tables, figures/ and REPORT.md in {where}/")
        print(f"jobs' wall time {summary['_seconds']:.1f} s; records in {where / 'runs'}/"
              f"{outputs}")
    problem = failure_summary(summary["_outcomes"], "run the same command again")
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


def _hang_up(signum, frame) -> None:
    from dptaucc.bench.slurm import HangUp

    raise HangUp()


if __name__ == "__main__":
    raise SystemExit(main())
