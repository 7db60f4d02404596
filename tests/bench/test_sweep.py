"""Sweeps end to end: Hydra multirun, rerun skips, interrupted sweeps resume, failures recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dptaucc.bench import reproduce as rp
from dptaucc.bench.configs import enumerate_jobs, run_id
from dptaucc.bench.outcomes import failure_summary
from dptaucc.bench.run_log import describe, read_run_log
from dptaucc.bench.scales import ScaleError
from dptaucc.bench.store import RunStore

REPO = Path(__file__).resolve().parents[2]


def _multirun(results_dir, *extra):
    cmd = [sys.executable, "-m", "dptaucc.bench", "-m", "experiment=quick", "algorithm=dp_taucc",
           "mode=corrected", "epsilon=0.5,1.5", "seed=range(2)",
           f"paths.results_dir={results_dir}", f"paths.log_dir={results_dir}/logs", *extra]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())


def test_hydra_multirun_then_rerun_skips(results_dir):
    first = _multirun(results_dir)
    assert first.returncode == 0, first.stderr[-2000:]
    store = RunStore(results_dir / "runs", "quick")
    recs = list(store.records())
    assert len(recs) == 4 and {r["status"] for r in recs} == {"ok"}
    assert sorted((r["epsilon"], r["seed"]) for r in recs) == [(0.5, 0), (0.5, 1), (1.5, 0),
                                                               (1.5, 1)]
    mtimes = {p.name: p.stat().st_mtime_ns for p in store.dir.glob("*.json")}
    second = _multirun(results_dir)
    assert second.returncode == 0, second.stderr[-2000:]
    log = second.stdout + second.stderr
    assert log.count("skipped:") == 4 and "ran:" not in log
    assert {p.name: p.stat().st_mtime_ns for p in store.dir.glob("*.json")} == mtimes


TINY = {"fig3_iterations": {"dataset": "cstr", "algorithm.params.n_iterations": "2,4,6",
                             "epsilon": "0.5,1.5,5", "seed": "range(2)"},
        "supp_h": {"dataset": "cstr", "algorithm.params.h": "0.1,0.5,0.9",
                   "epsilon": "0.5,1.5,5", "seed": "range(2)"}}


def _quick_jobs(composer, results_dir, experiment="fig3_iterations"):
    return enumerate_jobs(composer, experiment, "quick", [f"paths.results_dir={results_dir}"],
                          TINY[experiment])


def test_interrupted_sweep_resumes_to_the_full_set(composer, results_dir):
    jobs = _quick_jobs(composer, results_dir)
    assert len(jobs) == 18
    calls = []

    def crashing(job):
        if len(calls) == 5:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the sweep
        calls.append(run_id(job))
        return rp.work(job)

    with pytest.raises(KeyboardInterrupt):
        rp.run_jobs(rp.pending_jobs(jobs), 1, work=crashing)
    store = RunStore(results_dir / "runs", "fig3_iterations")
    assert store.done_ids() == set(calls) and len(calls) == 5
    before = {r["run_id"]: r["started_at"] for r in store.records()}
    pending = rp.pending_jobs(jobs)
    assert len(pending) == 13 and not {run_id(j) for j in pending} & set(calls)
    counts = rp.run_jobs(pending, 1).counts()
    assert counts == {"ok": 13}
    assert store.done_ids() == {run_id(j) for j in jobs}
    assert all(before[k] == r["started_at"] for r in store.records() if (k := r["run_id"])
               in before)
    assert rp.pending_jobs(jobs) == []


def test_killed_process_resumes(results_dir):
    """SIGKILL a real sweep after its first records; the rerun completes exactly the set."""
    cmd = [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick", "--jobs", "1",
           "--experiments", "supp_h", "--no-outputs",
           *(f"--sweep={k}={v}" for k, v in TINY["supp_h"].items())]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = results_dir / "quick" / "runs" / "supp_h"  # quick runs default to the quick folder
    try:
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(runs.glob("*.json"))) < 3:
            time.sleep(0.005)
        proc.kill()
    finally:
        proc.wait(timeout=30)
    n_before = len(list(runs.glob("*.json")))
    assert n_before >= 3
    # the killed driver's lock is stale: the rerun detects that and goes on
    assert (runs.parent / ".lock").exists()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "removing a stale lock" in done.stderr
    recs = [json.loads(p.read_text()) for p in runs.glob("*.json")]
    assert len(recs) == 18 and {r["status"] for r in recs} == {"ok"}
    assert len({r["run_id"] for r in recs}) == 18
    assert f"{n_before} already done" in done.stderr or n_before == 18
    assert not (runs.parent / ".lock").exists()


def test_failing_job_is_recorded_and_the_sweep_completes(composer, results_dir):
    jobs = _quick_jobs(composer, results_dir, "supp_h")
    bad = next(i for i, j in enumerate(jobs) if j["epsilon"] > 1)
    jobs[bad]["algorithm"]["_target_"] = "fake_estimators.FailsAtHighEpsilon"  # fails in fit
    tally = rp.run_jobs(rp.pending_jobs(jobs), 2)
    assert tally.counts() == {"ok": 17, "error": 1}
    store = RunStore(results_dir / "runs", "supp_h")
    errors = [r for r in store.records() if r["status"] == "error"]
    assert len(errors) == 1 and errors[0]["error"].startswith("RuntimeError: boom")
    summary = failure_summary(tally.outcomes)
    assert summary.startswith("1 job(s) failed: 1 RuntimeError")
    assert str(store.path(errors[0]["run_id"])) in summary
    # failed records are not done: a rerun retries them, unless told not to
    assert [run_id(j) for j in rp.pending_jobs(jobs)] == [run_id(jobs[bad])]
    assert rp.pending_jobs([{**j, "bench": {**j["bench"], "retry_failed": False}}
                            for j in jobs]) == []


def test_reproduce_end_to_end_with_outputs(results_dir):
    quick = results_dir / "quick"
    summary = rp.reproduce("quick", 2, ["fig3_iterations"], sweep=TINY["fig3_iterations"])
    assert summary["fig3_iterations"]["statuses"] == {"ok": 18}
    table = quick / "fig3_iterations.parquet"
    assert table.exists() and (quick / "fig3_iterations.csv").exists()
    assert (quick / "figures" / "fig3_supp_fig2_iterations_tau_paper.png").exists()
    report = (quick / "REPORT.md").read_text()
    assert "fig3_iterations: 18 records" in report
    # the run's own log: its commit and wall time, named in REPORT's header
    log = read_run_log(quick)
    assert log["experiments"]["fig3_iterations"]["run"] == 18
    assert log["total_seconds"] >= log["sweep_seconds"] > 0
    assert describe(log) in report and "18 of 18 jobs run on 2 local workers" in report
    # where the time went: every job's seconds in its worker, its fit and evaluation inside
    cost = log["experiments"]["fig3_iterations"]["core_seconds"]
    assert cost["jobs"] == cost["methods"]["dp_taucc"]["jobs"] == 18
    assert 0 < cost["fit_s"] + cost["eval_s"] <= cost["job_s"] <= cost["core_s"]
    assert log["methods_core_seconds"]["dp_taucc"]["job_s"] == cost["job_s"]
    assert "| fig3_iterations | 18 |" in report and "| dp_taucc | 18 |" in report
    assert sorted(p.name for p in results_dir.iterdir()) == ["quick"]  # paper folder untouched
    again = rp.reproduce("quick", 2, ["fig3_iterations"], sweep=TINY["fig3_iterations"],
                         outputs=False)
    assert again["fig3_iterations"].pop("core_seconds")["jobs"] == 0
    assert again["fig3_iterations"] == {"total": 18, "pending": 0, "statuses": {},
                                        "seconds": again["fig3_iterations"]["seconds"]}
    assert "0 of 18 jobs run (18 were already stored: a resumed run)" in describe(
        read_run_log(quick))


def test_quick_or_partial_runs_never_target_the_paper_folder(results_dir):
    for scale, sweep in (("quick", None), ("paper", {"seed": "range(2)"})):
        with pytest.raises(ScaleError, match="paper-scale results"):
            rp.reproduce(scale, 1, ["supp_h"], str(results_dir), sweep=sweep, dry_run=True)
        with pytest.raises(ScaleError):
            rp.reproduce(scale, 1, ["supp_h"], f"{results_dir}/./", sweep=sweep, dry_run=True)
    assert not results_dir.exists()
    plan = rp.reproduce("paper", 1, ["supp_h"], dry_run=True)  # the full grid may
    assert plan["supp_h"]["total"] == 13230


def test_reproduce_refuses_invalid_grids_before_running(results_dir):
    cmd = [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick",
           "--experiments", "supp_h", "--sweep", "epsilon=0.5,-1", "--sweep", "seed=range(1)"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "supp_h: epsilon must be > 0 (or inf), got -1" in out.stderr
    assert not list(results_dir.rglob("*.json"))


def _crash_once(job):
    """Kill the worker process the first time job #2 runs (a marker file remembers)."""
    marker = Path(job["paths"]["results_dir"]) / "crashed"
    if job["seed"] == 1 and job["epsilon"] == 1.5 and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("x")
        os._exit(3)
    return rp.work(job)


def test_dead_worker_restarts_the_pool(composer, results_dir):
    jobs = _quick_jobs(composer, results_dir)
    counts = rp.run_jobs(rp.pending_jobs(jobs), 2, work=_crash_once).counts()
    assert counts["restarts"] == 1 and (results_dir / "crashed").exists()
    # jobs that finished but were not reported before the death are skipped on the restart
    assert counts["ok"] + counts["skipped"] == 18
    assert rp.pending_jobs(jobs) == []
    assert len(RunStore(results_dir / "runs", "fig3_iterations")) == 18


def test_killed_worker_fails_its_job_only(composer, results_dir):
    """A job whose worker is SIGKILLed (as by the out-of-memory killer) is stored as failed
    and named in the summary; every other job completes; a rerun retries it."""
    jobs = _quick_jobs(composer, results_dir)[:8]
    bad = next(i for i, j in enumerate(jobs) if j["epsilon"] > 1)
    jobs[bad]["algorithm"]["_target_"] = "fake_estimators.KillsItselfAtHighEpsilon"
    tally = rp.run_jobs(jobs, 2)
    counts = tally.counts()
    assert counts["lost"] == 1 and counts["ok"] + counts["skipped"] == 7, counts
    store = RunStore(results_dir / "runs", "fig3_iterations")
    dead = store.get(run_id(jobs[bad]))
    assert dead["status"] == "error" and dead["error"].startswith("WorkerDied")
    assert failure_summary(tally.outcomes).startswith("1 job(s) failed: 1 WorkerDied")
    assert [run_id(j) for j in rp.pending_jobs(jobs)] == [run_id(jobs[bad])]


def test_ctrl_c_stops_the_driver_cleanly(results_dir):
    cmd = [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick", "--jobs", "1",
           "--experiments", "supp_h", "--no-outputs",
           "--sweep=algorithm._target_=fake_estimators.CtrlCInFit",
           *(f"--sweep={k}={v}" for k, v in TINY["supp_h"].items())]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent)}
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env,
                         start_new_session=True,  # its own process group, as in a terminal
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert out.returncode == 130, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "interrupted: finished jobs are stored" in out.stderr
    assert not (results_dir / "quick" / "runs" / ".lock").exists()
