"""Cluster batches through submitit, run here with its local executor."""

from __future__ import annotations

import os
import stat

import pytest

from dptaucc.bench import reproduce as rp
from dptaucc.bench.slurm import batches, make_executor
from dptaucc.bench.store import RunStore

TINY = {"dataset": "cstr", "algorithm": "dp_taucc,fast_taucc,fccm", "mode": "paper,corrected",
        "epsilon": "0.5,2", "seed": "range(2)"}


def test_batches_respect_the_array_size():
    jobs = [{"i": i} for i in range(2500)]
    b = batches(jobs, 1000, jobs_per_task=1)
    assert len(b) == 834 and {len(x) for x in b} == {3, 1}  # ceil(2500/1000) = 3 per task
    assert [j for x in b for j in x] == jobs  # contiguous, in order
    assert len(batches(jobs, 1000, jobs_per_task=50)) == 50
    # by time: 2500 jobs of 10 s = 25000 s -> 84 tasks of <= 300 s; never over array_size
    b = batches(jobs, 1000, costs=[10.0] * 2500, task_seconds=300)
    assert len(b) == 84 and [j for x in b for j in x] == jobs
    assert len(batches(jobs, 50, costs=[10.0] * 2500, task_seconds=300)) == 50
    with pytest.raises(ValueError):
        batches(jobs, 0)
    with pytest.raises(ValueError, match="executor must be one of"):
        make_executor("local", "x")


def test_batches_sized_by_time_fill_the_free_cpus_but_keep_minutes_of_work():
    jobs = [{"i": i} for i in range(324)]
    # quick jobs (0.2 s): 65 s of work on a 2-CPU partition -> 2 tasks, not 324 of one job
    assert [len(x) for x in batches(jobs, 1000, costs=[0.2] * 324, slots=2)] == [162, 162]
    # a 500-CPU partition still gives each task >= 30 s of work
    assert len(batches(jobs, 1000, costs=[0.2] * 324, slots=500)) == 2
    # costs decide the cut: the expensive half gets the smaller share of jobs
    b = batches(jobs, 1000, costs=[0.1] * 162 + [10.0] * 162, task_seconds=300)
    assert len(b) == 6 and len(b[0]) > len(b[-1])


def test_submitit_batches_run_deduplicated_jobs_and_resume(results_dir, tmp_path):
    """fig2_real on cstr: 3 algorithms x 2 modes x 2 ε x 2 seeds = 24 Hydra-style jobs, of
    which the non-private ones collapse to one per seed: 8 + 2 + 2 = 12 distinct jobs, run as
    3 local submitit tasks of 4 jobs."""
    os.umask(0o022)
    kw = {"array_size": 3, "jobs_per_task": 4, "folder": str(tmp_path / "submitit"), "poll_s": 0.5,
          "timeout_min": 10}
    summary = rp.reproduce("quick", 1, ["fig2_real"], sweep=TINY, outputs=False,
                           executor="submitit-local", slurm=kw)
    assert summary["fig2_real"]["total"] == 12
    assert summary["fig2_real"]["statuses"] == {"ok": 12}
    assert len(list((tmp_path / "submitit").glob("*_submitted.pkl"))) == 3  # three tasks
    store = RunStore(results_dir / "quick" / "runs", "fig2_real")
    paths = list(store.dir.glob("*.json"))
    assert len(paths) == 12
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in paths)  # group-readable
    again = rp.reproduce("quick", 1, ["fig2_real"], sweep=TINY, outputs=False,
                         executor="submitit-local", slurm=kw)
    assert again["fig2_real"]["pending"] == 0 and again["fig2_real"]["statuses"] == {}
    # a failed job is resubmitted on the next run (and only it)
    victim = paths[0]
    rec = store.get(victim.stem)
    store.write({**rec, "status": "error", "error": "RuntimeError: x"})
    third = rp.reproduce("quick", 1, ["fig2_real"], sweep=TINY, outputs=False,
                         executor="submitit-local", slurm=kw)
    assert third["fig2_real"]["pending"] == 1 and third["fig2_real"]["statuses"] == {"ok": 1}


def test_the_time_limit_signal_fails_the_running_job_not_the_method(composer, results_dir,
                                                                    tmp_path):
    """submitit's pre-timeout signal inside a task: the running job is stored as a time-limit
    failure (not the estimator's error) and the rest of the batch as not started."""
    from dptaucc.bench.configs import enumerate_jobs
    from dptaucc.bench.slurm import run_batch

    sweep = {"dataset": "cstr", "algorithm.params.h": "0.5", "epsilon": "0.5,1.5",
             "seed": "range(2)", "algorithm._target_": "fake_estimators.TimeLimitInFit"}
    jobs = enumerate_jobs(composer, "supp_h", "quick",
                          [f"paths.results_dir={results_dir}"], sweep)
    jobs.sort(key=lambda j: j["epsilon"])  # the two ε=0.5 jobs first
    markers = tmp_path / "running"
    markers.mkdir()
    out = run_batch(jobs, 1, str(markers))
    assert [o.outcome for o in out] == ["ran", "ran", "ran", "lost"]
    assert [o.status for o in out[:3]] == ["ok", "ok", "error"]
    assert out[2].error.startswith("TimeLimit: the cluster task reached its SLURM time limit")
    assert "not started before the task's time limit" in out[3].error
    assert not list(markers.iterdir())


class _Task:
    def __init__(self, job_id, folder):
        self.job_id = job_id
        self.paths = type("P", (), {"result_pickle": folder / f"{job_id}_result.pkl"})()


@pytest.mark.timeout(20)
def test_the_queue_watch_never_waits_blind(tmp_path, monkeypatch):
    """Without a cluster: tasks gone from squeue and sacct end as ABSENT after the bounded
    polls, a dead state is reported as SLURM gave it, a hopeless pending reason raises."""
    from dptaucc.bench import slurm_queue as q
    from dptaucc.bench.execution import ClusterError

    monkeypatch.setattr(q, "ABSENT_S", 0.0)
    monkeypatch.setattr(q.time, "sleep", lambda s: None)
    queue = {"7_1": ("FAILED", "NonZeroExitCode")}
    monkeypatch.setattr(q, "queue_states", lambda a: queue)
    monkeypatch.setattr(q, "accounting_states", lambda a: {})
    ends = {}
    q.watch([_Task("7_0", tmp_path), _Task("7_1", tmp_path)], "exp", 1.0,
            lambda i, e: ends.setdefault(i, e))
    assert ends[0].state == "ABSENT" and "neither squeue nor sacct" in ends[0].detail
    assert ends[1].state == "FAILED"
    queue = {"8_0": ("PENDING", "PartitionConfig")}
    cancelled = []
    monkeypatch.setattr(q, "cancel", cancelled.append)
    with pytest.raises(ClusterError, match="pending with reason PartitionConfig"):
        q.watch([_Task("8_0", tmp_path)], "exp", 1.0, lambda i, e: None)
    assert cancelled == ["8"]
