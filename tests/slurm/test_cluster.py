"""The reproduce driver and the Hydra launcher against a real SLURM cluster (marked ``slurm``).

Every command runs in a subprocess, as a user runs it, on a few cstr jobs of ``supp_h``
(cstr is small: a job takes a fraction of a second once the task has started).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
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
    assert all(r["blas_threads"] == 1 and r["workers"] == 1 for r in recs)  # one CPU per task
    assert all(_placed(r) for r in recs)
    log = json.loads((tmp_path / "reproduce.json").read_text())
    assert log["executor"] == "slurm" and log["resources"]["cpus_per_task"] == 1
    cost = log["experiments"]["supp_h"]["core_seconds"]
    assert cost["workers"] == 2 and cost["tasks"] == 2 and cost["core_s"] >= cost["task_s"] > 0
    assert list((tmp_path / "submitit").glob("*/supp_h/*_log.out"))  # logs under results
    again = _driver(tmp_path, target, "--sweep=epsilon=0.5,1.5", "--jobs-per-task=2")
    assert again.returncode == 1 and _summary(again)["pending"] == 2


def _placed(rec: dict) -> bool:
    """Does the record say where and how its job ran?"""
    return bool(rec["host"] and rec["cpu"] and rec["slurm_job_id"] and rec["workers"]
                and rec["blas_threads"])


def test_six_crashing_jobs_of_twelve_in_one_batch_are_each_stored_alone(tmp_path):
    """Half of a 12-job batch SIGKILLs its task: the driver bisects, round after round (one
    array each), until each of the six has killed a task alone; the six innocent jobs end
    ok, and every record, the culprits' too, says where it ran."""
    out = _driver(tmp_path, "--sweep=algorithm._target_=fake_estimators.KillsItselfAtHighEpsilon",
                  "--sweep=epsilon=0.5,1.5", "--sweep=seed=range(6)", "--jobs-per-task=12",
                  timeout=420)
    assert out.returncode == 1, out.stderr[-3000:]
    recs = _records(tmp_path)
    assert len(recs) == 12
    assert sorted(r["epsilon"] for r in recs if r["status"] == "ok") == [0.5] * 6
    dead = [r for r in recs if r["status"] == "error"]
    assert sorted(r["epsilon"] for r in dead) == [1.5] * 6
    assert all(r["error"].startswith("WorkerDied") and "FAILED" in r["error"] for r in dead)
    assert "6 job(s) failed: 6 WorkerDied" in out.stderr
    assert all(_placed(r) for r in recs), [r for r in recs if not _placed(r)]
    rounds = 1 + out.stderr.count(": round ")
    assert rounds <= 4, out.stderr  # sizes 12, 6, 3, 1: the rest of a batch halves each round
    log = json.loads((tmp_path / "reproduce.json").read_text())
    cost = log["experiments"]["supp_h"]["core_seconds"]
    assert cost["workers"] >= rounds and cost["tasks"] >= rounds and cost["core_s"] > 0


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
    again = _driver(tmp_path, *args[:2], "--jobs-per-task=4")  # one task: a shorter test
    assert again.returncode == 0, again.stderr[-3000:]
    summary = _summary(again)
    assert (summary["ok"], summary["failed"]) == (4, 0), summary


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


def test_hydra_slurm_sweep_is_batched_keeps_the_working_directory_clean_and_uses_its_time(
        tmp_path):
    """Six 8-second jobs in one task of a 1-minute time limit: the batch runs until the
    deadline before the limit, the jobs it could not start are submitted again (the time
    limit's warning does not abandon the batch, nor fail the method), nothing lands in the
    working directory, and a rerun submits nothing."""
    flag = tmp_path / "slow"
    flag.touch()
    work = tmp_path / "cwd"
    work.mkdir()
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "dptaucc.bench", "-m", "experiment=supp_h",
           "hydra/launcher=slurm", "dataset=cstr", "seed=range(6)", "algorithm.params.h=0.5",
           "epsilon=0.5", "algorithm._target_=slow_estimators.SlowWhileFlagged",
           "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=1",
           "hydra.launcher.jobs_per_task=6", f"paths.results_dir={results}"]
    out = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=360,
                         env=_env(SLOW_FIT_FLAG=str(flag), SLOW_FIT_S="8"))
    err = out.stdout + out.stderr
    assert out.returncode == 0, err[-3000:]
    assert "6 jobs in 1 task(s)" in err  # batched, not one task per job
    assert "reached its time limit" in err and "not run: submitted again" in err, err
    recs = _records(results)
    assert len(recs) == 6 and all(r["status"] == "ok" and _placed(r) for r in recs)
    assert len({r["slurm_job_id"] for r in recs}) >= 2  # the rest ran in a later task
    assert not list(work.iterdir())  # nothing in the working directory
    assert list((results / "submitit").rglob("*_log.out"))  # logs under the results folder
    assert list((results / "outputs" / "multirun").rglob("outcome.json"))
    flag.unlink()
    again = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=240,
                           env=_env())
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "6 already done, 0 to run" in again.stdout + again.stderr


def test_a_maintenance_window_delays_the_sweep_which_then_finishes(tmp_path):
    """A maintenance reservation on every node, starting in 15 s for a minute: tasks of a
    10-minute limit cannot run before it. With a wait bound that ends before the window does
    the driver stops at once naming it (exit 2, array cancelled); with a longer bound it says
    what it waits for and until when, and the tasks run after the window."""
    name = f"dptaucc_test_{os.getpid()}"
    made = subprocess.run(["scontrol", "create", "reservation", f"reservationname={name}",
                           "starttime=now+15", "duration=1", "nodes=ALL", "users=root",
                           "flags=maint"], capture_output=True, text=True, timeout=20)
    assert made.returncode == 0, made.stderr
    try:
        shown = subprocess.run(["scontrol", "show", "reservation", name, "-o"],
                               capture_output=True, text=True, timeout=20).stdout
        end = datetime.fromisoformat(shown.split("EndTime=")[1].split()[0])
        short = _driver(tmp_path, "--sweep=epsilon=0.5", "--slurm-max-wait=0.005", timeout=120)
        assert short.returncode == 2, short.stderr[-3000:]
        last = short.stderr.strip().splitlines()[-1]
        assert last.startswith("error: SLURM cannot run the tasks of supp_h") and name in last
        assert "after the wait bound" in last and "Traceback" not in short.stderr
        assert not _squeue("dptaucc-supp_h")  # cancelled
        t0 = time.monotonic()
        out = _driver(tmp_path, "--sweep=epsilon=0.5", "--slurm-max-wait=0.1", timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        waited = next(ln for ln in out.stderr.splitlines() if "waiting for" in ln)
        assert "ReqNodeNotAvail" in waited and name in waited and f"{end:%H:%M:%S}" in waited
        assert "waiting at most until" in waited
        recs = _records(tmp_path)
        assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
        started = min(datetime.fromisoformat(r["started_at"]) for r in recs)
        assert started >= end.astimezone(), (started, end)  # after the window
        assert time.monotonic() - t0 < 240
    finally:
        subprocess.run(["scontrol", "delete", f"reservation={name}"], capture_output=True,
                       timeout=20)


def _wait_running(name: str, n: int, within: float = 90) -> None:
    deadline = time.monotonic() + within
    while sum(state == "RUNNING" for _, state in _squeue(name)) < n:
        assert time.monotonic() < deadline, f"{n} task(s) of {name} not running within {within} s"
        time.sleep(1)


def test_a_hang_up_leaves_the_array_running_and_the_rerun_adopts_it(tmp_path):
    """SIGHUP (a dropped SSH session) stops the driver, not its array; the rerun adopts the
    array instead of submitting its jobs again: one array's worth of tasks, each job run
    once, by that array."""
    flag = tmp_path / "slow"
    flag.touch()
    args = ("--sweep=algorithm._target_=slow_estimators.SlowWhileFlagged",
            "--sweep=epsilon=0.5,1.5", "--jobs-per-task=2")
    env = _env(SLOW_FIT_FLAG=str(flag), SLOW_FIT_S="8")
    proc = subprocess.Popen(_driver_cmd(tmp_path, *args), cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _wait_running("dptaucc-supp_h", 1)
    proc.send_signal(signal.SIGHUP)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 129, stderr[-3000:]
    assert "hang-up" in stderr and "Traceback" not in stderr
    live = {t.split("_")[0] for t, _ in _squeue("dptaucc-supp_h")}
    assert len(live) == 1  # the array runs on
    again = subprocess.run(_driver_cmd(tmp_path, *args), cwd=REPO, capture_output=True,
                           text=True, timeout=240, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"array {live.pop()}" in again.stderr and "adopted" in again.stderr
    recs = _records(tmp_path)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    assert len({r["slurm_array_task"].split("_")[0] for r in recs}) == 1  # one array ran all
    assert len(list((tmp_path / "submitit").rglob("*_submitted.pkl"))) == 2  # its 2 tasks
    assert not (tmp_path / "runs" / ".slurm_arrays.json").exists()


def test_detach_submits_and_returns_collect_gathers_later(tmp_path):
    """--detach returns with the array running; --collect adopts it, waits and writes the
    run's log, submitting nothing."""
    flag = tmp_path / "slow"
    flag.touch()
    args = ("--sweep=algorithm._target_=slow_estimators.SlowWhileFlagged",
            "--sweep=epsilon=0.5,1.5", "--jobs-per-task=2")
    env = {"SLOW_FIT_FLAG": str(flag), "SLOW_FIT_S": "15"}
    out = _driver(tmp_path, *args, "--detach", **env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "submitted array(s)" in out.stdout and "--collect" in out.stdout
    live = {t.split("_")[0] for t, _ in _squeue("dptaucc-supp_h")}
    assert len(live) == 1  # left running (each task has 30 s of work)
    assert not (tmp_path / "reproduce.json").exists()
    got = _driver(tmp_path, *args, "--collect", **env)
    assert got.returncode == 0, got.stderr[-3000:]
    assert f"array {live.pop()}" in got.stderr and "adopted" in got.stderr
    recs = _records(tmp_path)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    assert len(list((tmp_path / "submitit").rglob("*_submitted.pkl"))) == 2  # no new array
    assert json.loads((tmp_path / "reproduce.json").read_text())["executor"] == "slurm"


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
