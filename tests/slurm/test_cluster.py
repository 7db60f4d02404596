"""The reproduce driver and the Hydra launcher against a real SLURM cluster (marked ``slurm``).

Every command runs in a subprocess, as a user runs it, on a few cstr jobs of ``supp_h``
(cstr is small: a job takes a fraction of a second once the task has started).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from dptaucc.bench.store import RunStore

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FAKES = REPO / "tests" / "bench"
GRID = ["--sweep=dataset=cstr", "--sweep=algorithm.params.h=0.5", "--sweep=seed=range(2)"]


def _env(**extra) -> dict:
    path = os.pathsep.join(filter(None, [str(HERE), str(FAKES), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def _driver_cmd(results, *args) -> list[str]:
    return [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick",
            "--experiments", "supp_h", "--results-dir", str(results), "--no-outputs",
            "--executor", "slurm", "--slurm-mem-gb", "0.5", "--slurm-time", "10", *GRID, *args]


def _driver(results, *args, timeout=240, **env) -> subprocess.CompletedProcess:
    return subprocess.run(_driver_cmd(results, *args), cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=_env(**env))


def _records(results) -> list[dict]:
    return list(RunStore(Path(results) / "runs", "supp_h").records())


def _summary(out: subprocess.CompletedProcess) -> dict:
    """supp_h's row of the driver's summary table (columns by the header's names)."""
    lines = out.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("experiment "))
    row = next(ln for ln in lines if ln.startswith("supp_h "))
    names = [h.strip() for h in header.split("  ") if h.strip()]
    values = [int(v) if v.isdigit() else v for v in map(str.strip, row.split("  ")) if v]
    out = dict(zip(names, values, strict=True))
    return {**out, "pending": out["ran"]}


def _squeue(name: str) -> list[tuple[str, str]]:
    out = subprocess.run(["squeue", "-h", "-r", "-n", name, "-o", "%i|%T"],
                         capture_output=True, text=True, timeout=20).stdout
    return [tuple(line.split("|")) for line in out.split()]


def test_failing_method_exits_1_stores_errors_and_a_rerun_runs_only_those(tmp_path):
    target = "--sweep=algorithm._target_=fake_estimators.FailsAtHighEpsilon"
    out = _driver(tmp_path, target, "--sweep=epsilon=0.5,1.5", "--jobs-per-task=2")
    assert out.returncode == 1, out.stderr[-3000:]
    assert "2 job(s) failed: 2 RuntimeError" in out.stderr
    recs = _records(tmp_path)
    assert sorted(r["status"] for r in recs) == ["error", "error", "ok", "ok"]
    assert all("boom at epsilon=1.5" in r["error"] for r in recs if r["status"] == "error")
    assert all(r["slurm_job_id"] and r["slurm_array_task"] for r in recs)
    assert all(r["blas_threads"] == 1 for r in recs)  # one CPU per task
    log = json.loads((tmp_path / "reproduce.json").read_text())
    assert log["executor"] == "slurm" and log["resources"]["cpus_per_task"] == 1
    assert list((tmp_path / "submitit").glob("*/supp_h/*_log.out"))  # logs under results
    again = _driver(tmp_path, target, "--sweep=epsilon=0.5,1.5", "--jobs-per-task=2")
    assert again.returncode == 1 and _summary(again)["pending"] == 2


def test_a_job_that_kills_its_task_is_the_only_one_lost(tmp_path):
    out = _driver(tmp_path, "--sweep=algorithm._target_=fake_estimators.KillsItselfAtHighEpsilon",
                  "--sweep=epsilon=0.5,1.5", "--jobs-per-task=4")
    assert out.returncode == 1, out.stderr[-3000:]
    recs = {(r["epsilon"], r["seed"]): r for r in _records(tmp_path)}
    assert {k for k, r in recs.items() if r["status"] == "ok"} == {(0.5, 0), (0.5, 1)}
    dead = [r for r in recs.values() if r["status"] == "error"]
    assert len(dead) == 2 and all(r["error"].startswith("WorkerDied") for r in dead)
    assert all("FAILED" in r["error"] for r in dead)  # the state SLURM reported
    assert "retrying" in out.stderr


def test_cancelled_tasks_are_lost_never_waited_for_and_a_rerun_resumes(tmp_path):
    """Four one-job tasks, one at a time: cancel the three pending ones (SLURM keeps no
    accounting trace of them), then the running one."""
    flag = tmp_path / "slow"
    flag.touch()
    name = "dptaucc-supp_h"
    args = ("--sweep=algorithm._target_=slow_estimators.SlowWhileFlagged",
            "--sweep=epsilon=0.5,1.5", "--jobs-per-task=1", "--slurm-parallelism=1")
    t0 = time.monotonic()
    proc = subprocess.Popen(_driver_cmd(tmp_path, *args), cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(SLOW_FIT_FLAG=str(flag), SLOW_FIT_S="60"))
    deadline = time.monotonic() + 90
    while not any(state == "RUNNING" for _, state in _squeue(name)):
        assert time.monotonic() < deadline, "no task of the array started within 90 s"
        time.sleep(1)
    tasks = dict(_squeue(name))
    running = next(t for t, s in tasks.items() if s == "RUNNING")
    pending = [t for t, s in tasks.items() if s == "PENDING"]
    assert len(pending) == 3
    subprocess.run(["scancel", *pending], check=True, timeout=20)
    time.sleep(6)
    subprocess.run(["scancel", running], check=True, timeout=20)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr[-3000:]
    assert time.monotonic() - t0 < 150
    assert "4 job(s) failed: 4 WorkerDied" in stderr
    # pending tasks cancelled in a partly started array may leave no trace in accounting:
    # then they are lost after three polls (and 15 s) in neither squeue nor sacct
    assert stderr.count("ended CANCELLED") + stderr.count("ended ABSENT") == 4, stderr
    assert "ended CANCELLED" in stderr
    flag.unlink()
    again = _driver(tmp_path, *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _summary(again)["statuses"] == {"ok": 4}


def test_a_request_no_node_can_satisfy_stops_with_the_pending_reason(tmp_path):
    cpus = (os.cpu_count() or 1) + 2
    out = _driver(tmp_path, "--sweep=epsilon=0.5", f"--slurm-cpus={cpus}", timeout=120)
    assert out.returncode == 2, out.stderr[-3000:]
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: SLURM cannot run the tasks of supp_h")
    assert "PartitionConfig" in last
    assert "Traceback" not in out.stderr
    assert not subprocess.run(["squeue", "-h", "-n", "dptaucc-supp_h"], capture_output=True,
                              text=True).stdout.strip()  # the array was cancelled


def test_an_invalid_partition_or_memory_no_node_has_is_one_line_and_exit_2(tmp_path):
    out = _driver(tmp_path, "--sweep=epsilon=0.5", "--slurm-partition=no_such_partition",
                  timeout=120)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "FailedJobError" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: SLURM refused the array of supp_h") and "partition" in last
    big = _driver(tmp_path, "--sweep=epsilon=0.5", "--slurm-mem-gb=100000", timeout=120)
    assert big.returncode == 2 and "Traceback" not in big.stderr, big.stderr[-3000:]
    last = big.stderr.strip().splitlines()[-1]
    assert last.startswith("error: SLURM refused the array of supp_h") and "Memory" in last


def test_hydra_slurm_launcher_sweep_and_rerun(tmp_path):
    cmd = [sys.executable, "-m", "dptaucc.bench", "-m", "experiment=supp_h",
           "hydra/launcher=slurm", "dataset=cstr", "seed=0", "algorithm.params.h=0.5",
           "epsilon=0.5,1.5", "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10",
           f"paths.results_dir={tmp_path}", f"paths.log_dir={tmp_path}/logs"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240,
                         env=_env())
    err = out.stdout + out.stderr
    assert out.returncode == 0, err[-3000:]
    recs = _records(tmp_path)
    assert len(recs) == 2 and all(r["status"] == "ok" and r["slurm_job_id"] for r in recs)
    assert list((tmp_path / "submitit").rglob("*_log.out"))  # logs under the results folder
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240,
                           env=_env())
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "2 already done, 0 to run" in again.stdout + again.stderr


def test_hydra_sweep_with_a_cancelled_task_ends_with_its_summary(tmp_path):
    flag = tmp_path / "slow"
    flag.touch()
    cmd = [sys.executable, "-m", "dptaucc.bench", "-m", "experiment=supp_h",
           "hydra/launcher=slurm", "dataset=cstr", "seed=0", "algorithm.params.h=0.5",
           "epsilon=0.5,1.5", "algorithm._target_=slow_estimators.SlowWhileFlagged",
           "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10",
           f"paths.results_dir={tmp_path}", f"paths.log_dir={tmp_path}/logs"]
    proc = subprocess.Popen(cmd, cwd=REPO, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            env=_env(SLOW_FIT_FLAG=str(flag), SLOW_FIT_S="60"))
    deadline = time.monotonic() + 90
    while not any(state == "RUNNING" for _, state in _squeue("dptaucc-supp_h")):
        assert time.monotonic() < deadline, "no task of the sweep started within 90 s"
        time.sleep(1)
    subprocess.run(["scancel", "-n", "dptaucc-supp_h"], check=True, timeout=20)
    stdout, stderr = proc.communicate(timeout=120)
    err = stdout + stderr
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err and "CANCELLED" in err, err
    assert "2 job(s) failed: 2 WorkerDied" in err
