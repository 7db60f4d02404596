"""``python -m dptaucc.bench.reproduce``: every experiment, resumable, then collect/figures/report.

The driver enumerates each experiment's grid itself (Hydra's parser, :mod:`configs`), skips
jobs already in the store and runs the rest with joblib (loky processes, one BLAS thread per
worker; experiments with ``bench.serial`` -- supp_runtime -- run in this process, one at a
time). Progress: jobs done / total with an ETA (tqdm). Ctrl-C or a crash loses no finished job.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from tqdm.auto import tqdm

from dptaucc.bench.configs import Composer, enumerate_jobs, run_id
from dptaucc.bench.run import run_job
from dptaucc.bench.store import RunStore

#: the paper's experiments, in the order they are run (supp_runtime last: it is serial)
EXPERIMENTS = ("fig2_real", "fig3_iterations", "supp_h", "supp_synthetic", "supp_runtime")


def _work(job: dict) -> tuple[str, str, float]:
    outcome, rec = run_job(job)
    if rec is None:
        return outcome, "excluded", 0.0
    return outcome, str(rec.get("status")), float(rec.get("fit_time_s") or 0.0)


def pending_jobs(jobs: Iterable[dict]) -> list[dict]:
    """Jobs without a stored record (or with an error record when ``bench.retry_failed``)."""
    out, done_cache = [], {}
    for job in jobs:
        key = (job["paths"]["runs_dir"], job["bench"]["experiment"],
               bool(job["bench"].get("retry_failed")))
        if key not in done_cache:
            done_cache[key] = RunStore(key[0], key[1]).done_ids(retry_failed=key[2])
        if run_id(job) not in done_cache[key]:
            out.append(job)
    return out


def run_jobs(jobs: Sequence[dict], n_jobs: int = 1, desc: str = "jobs",
             work: Callable[[dict], tuple[str, str, float]] = _work,
             max_restarts: int = 3) -> Counter:
    """Run ``jobs`` (already filtered) with a progress bar; returns a Counter of statuses.

    If a worker process dies (segfault, out of memory), the pool is restarted on the jobs that
    have no record yet, at most ``max_restarts`` times; then the error propagates (a rerun
    resumes from the store)."""
    counts: Counter = Counter()
    if not jobs:
        return counts
    bar = tqdm(total=len(jobs), desc=desc, unit="job", dynamic_ncols=True, smoothing=0.05)
    remaining, restarts = list(jobs), 0
    try:
        while remaining:
            try:
                for _outcome, status, _t in _results(remaining, n_jobs, work):
                    counts[status] += 1
                    bar.update(1)
                    bar.set_postfix(ok=counts["ok"], err=counts["error"], refresh=False)
                remaining = []
            except Exception as exc:
                if n_jobs == 1 or type(exc).__name__ not in _POOL_DEATHS:
                    raise
                restarts += 1
                if restarts > max_restarts:
                    raise
                remaining = pending_jobs(remaining)
                counts["restarts"] += 1
                bar.write(f"[reproduce] a worker died ({type(exc).__name__}); restarting the "
                          f"pool on {len(remaining)} unfinished jobs ({restarts}/{max_restarts})")
    finally:
        bar.close()
    return counts


#: what joblib/loky raise when a worker process dies
_POOL_DEATHS = ("TerminatedWorkerError", "BrokenProcessPool")


def _results(jobs: Sequence[dict], n_jobs: int, work) -> Iterable:
    if n_jobs == 1:
        return (work(job) for job in jobs)
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs, batch_size=1, return_as="generator_unordered",
                    pre_dispatch="2*n_jobs")(delayed(work)(job) for job in jobs)


def _key(alg, mode, dataset, n_cols) -> tuple:
    return (alg, mode or "-", dataset, None if n_cols is None else int(n_cols))


def measured_times(runs_dir: str) -> dict[tuple, float]:
    """Mean seconds per job (fit + evaluation) from every stored ok record, by
    (algorithm, mode, dataset, n_cols) and (algorithm, dataset, n_cols)."""
    import json
    from pathlib import Path

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


def reproduce(scale: str = "paper", n_jobs: int | None = None,
              experiments: Sequence[str] = EXPERIMENTS, results_dir: str | None = None,
              retry_failed: bool = False, dry_run: bool = False, outputs: bool = True,
              sweep: dict[str, str] | None = None) -> dict:
    """Run the experiments at ``scale``; returns ``{experiment: {total, pending, statuses}}``.

    ``sweep`` replaces grid axes of every experiment (Hydra sweep strings, e.g.
    ``{"seed": "range(3)"}``); axes an experiment does not sweep are added to it."""
    n_jobs = n_jobs or os.cpu_count() or 1
    overrides = []
    if results_dir is not None:
        overrides.append(f"paths.results_dir={results_dir}")
    if retry_failed:
        overrides.append("bench.retry_failed=true")
    summary = {}
    with Composer() as composer:
        plans = {exp: enumerate_jobs(composer, exp, scale, overrides, sweep)
                 for exp in experiments}
    total = sum(len(j) for j in plans.values())
    todo = {exp: pending_jobs(jobs) for exp, jobs in plans.items()}
    print(f"[reproduce] scale={scale}: {total} jobs, {sum(map(len, todo.values()))} to run "
          f"({n_jobs} workers)", file=sys.stderr)
    t_start = time.perf_counter()
    for exp, jobs in plans.items():
        pend = todo[exp]
        serial = bool(jobs and jobs[0]["bench"].get("serial"))
        summary[exp] = {"total": len(jobs), "pending": len(pend)}
        print(f"[reproduce] {exp}: {len(jobs)} jobs, {len(jobs) - len(pend)} already stored"
              + (", serial" if serial else ""), file=sys.stderr)
        if dry_run:
            times = measured_times(jobs[0]["paths"]["runs_dir"]) if jobs else {}
            cpu, unknown = estimate(pend, times)
            summary[exp]["estimated_cpu_s"] = round(cpu, 1)
            summary[exp]["without_timing"] = unknown
            continue
        t0 = time.perf_counter()
        counts = run_jobs(pend, 1 if serial else n_jobs, desc=exp)
        summary[exp].update(statuses=dict(counts), seconds=time.perf_counter() - t0)
    summary["_seconds"] = time.perf_counter() - t_start
    if outputs and not dry_run:
        _outputs(results_dir, experiments)
    return summary


def _outputs(results_dir: str | None, experiments: Sequence[str]) -> None:
    from dptaucc.bench import collect, figures, report

    root = results_dir or os.environ.get("DPTAUCC_RESULTS_DIR", "results")
    collect.collect(root, experiments)
    figures.make_figures(root)
    report.write_report(root)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.reproduce", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=("paper", "quick"), default="paper")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS),
                    help="comma-separated subset of " + ",".join(EXPERIMENTS))
    ap.add_argument("--results-dir", default=None, help="default: $DPTAUCC_RESULTS_DIR or results")
    ap.add_argument("--retry-failed", action="store_true", help="rerun jobs stored as errors")
    ap.add_argument("--dry-run", action="store_true",
                    help="only count jobs (and estimate CPU time from stored records)")
    ap.add_argument("--no-outputs", action="store_true", help="skip collect/figures/report")
    ap.add_argument("--sweep", action="append", default=[], metavar="KEY=VALUES",
                    help="replace a grid axis, Hydra syntax (repeatable), e.g. seed='range(3)'")
    args = ap.parse_args(argv)
    exps = [e for e in args.experiments.split(",") if e]
    sweep = {}
    for item in args.sweep:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--sweep expects KEY=VALUES, got {item!r}")
        sweep[key] = value
    summary = reproduce(args.scale, args.jobs, exps, args.results_dir, args.retry_failed,
                        args.dry_run, not args.no_outputs, sweep or None)
    for exp in exps:
        print(f"{exp}: {summary[exp]}")
    print(f"total wall time: {summary['_seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
