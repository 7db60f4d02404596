"""Sweeps end to end: Hydra multirun, rerun skips, interrupted sweeps resume, failures recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dptaucc.bench import reproduce as rp
from dptaucc.bench.configs import enumerate_jobs, run_id
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
        return rp._work(job)

    with pytest.raises(KeyboardInterrupt):
        rp.run_jobs(rp.pending_jobs(jobs), 1, work=crashing)
    store = RunStore(results_dir / "runs", "fig3_iterations")
    assert store.done_ids() == set(calls) and len(calls) == 5
    before = {r["run_id"]: r["started_at"] for r in store.records()}
    pending = rp.pending_jobs(jobs)
    assert len(pending) == 13 and not {run_id(j) for j in pending} & set(calls)
    counts = rp.run_jobs(pending, 1)
    assert counts == {"ok": 13}
    assert store.done_ids() == {run_id(j) for j in jobs}
    assert all(before[k] == r["started_at"] for r in store.records() if (k := r["run_id"])
               in before)
    assert rp.pending_jobs(jobs) == []


def test_killed_process_resumes(results_dir):
    """SIGKILL a real sweep after its first records; the rerun completes exactly the set."""
    cmd = [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick", "--jobs", "1",
           "--experiments", "supp_h", "--results-dir", str(results_dir), "--no-outputs",
           *(f"--sweep={k}={v}" for k, v in TINY["supp_h"].items())]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = results_dir / "runs" / "supp_h"
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
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    recs = [json.loads(p.read_text()) for p in runs.glob("*.json")]
    assert len(recs) == 18 and {r["status"] for r in recs} == {"ok"}
    assert len({r["run_id"] for r in recs}) == 18
    assert f"{n_before} already stored" in done.stderr or n_before == 18


def test_failing_job_is_recorded_and_the_sweep_completes(composer, results_dir):
    jobs = _quick_jobs(composer, results_dir, "supp_h")
    jobs[3]["algorithm"]["params"]["h"] = -2.0  # invalid: the estimator rejects it in fit
    counts = rp.run_jobs(rp.pending_jobs(jobs), 2)
    assert counts == {"ok": 17, "error": 1}
    store = RunStore(results_dir / "runs", "supp_h")
    errors = [r for r in store.records() if r["status"] == "error"]
    assert len(errors) == 1 and errors[0]["p_h"] == -2.0 and errors[0]["error"]
    assert rp.pending_jobs(jobs) == []
    assert len(rp.pending_jobs([{**j, "bench": {**j["bench"], "retry_failed": True}}
                                for j in jobs])) == 1


def test_reproduce_end_to_end_with_outputs(results_dir):
    summary = rp.reproduce("quick", 2, ["fig3_iterations"], str(results_dir),
                           sweep=TINY["fig3_iterations"])
    assert summary["fig3_iterations"]["statuses"] == {"ok": 18}
    table = results_dir / "fig3_iterations.parquet"
    assert table.exists() and (results_dir / "fig3_iterations.csv").exists()
    assert (results_dir / "figures" / "fig3_supp_fig2_iterations_tau_paper.png").exists()
    assert "fig3_iterations: 18 records" in (results_dir / "REPORT.md").read_text()
    again = rp.reproduce("quick", 2, ["fig3_iterations"], str(results_dir),
                         sweep=TINY["fig3_iterations"], outputs=False)
    assert again["fig3_iterations"] == {"total": 18, "pending": 0, "statuses": {},
                                        "seconds": again["fig3_iterations"]["seconds"]}


def _crash_once(job):
    """Kill the worker process the first time job #2 runs (a marker file remembers)."""
    marker = Path(job["paths"]["results_dir"]) / "crashed"
    if job["seed"] == 1 and job["epsilon"] == 1.5 and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("x")
        os._exit(3)
    return rp._work(job)


def test_dead_worker_restarts_the_pool(composer, results_dir):
    jobs = _quick_jobs(composer, results_dir)
    counts = rp.run_jobs(rp.pending_jobs(jobs), 2, work=_crash_once)
    assert counts["restarts"] == 1 and (results_dir / "crashed").exists()
    assert rp.pending_jobs(jobs) == []
    assert len(RunStore(results_dir / "runs", "fig3_iterations")) == 18
