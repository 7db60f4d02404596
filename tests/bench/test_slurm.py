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


def test_the_time_limit_signal_ends_the_batch_at_its_deadline_not_at_the_warning(
        composer, results_dir, tmp_path):
    """submitit's warning signal inside a task (``TimeLimitInFit`` sends it to itself, then
    fits 5 s later): jobs go on starting until the deadline (the warning's delay minus a
    margin); a job stopped there comes back unstarted (``notrun``, submitted again) unless it
    was the task's first, which had the whole task: stored as failed by the time limit."""
    from dptaucc.bench.configs import enumerate_jobs
    from dptaucc.bench.slurm import TIME_MARGIN_S, run_batch

    sweep = {"dataset": "cstr", "algorithm.params.h": "0.5", "epsilon": "0.5,1.5",
             "seed": "range(2)", "algorithm._target_": "fake_estimators.TimeLimitInFit"}
    jobs = enumerate_jobs(composer, "supp_h", "quick",
                          [f"paths.results_dir={results_dir}"], sweep)
    low = [j for j in jobs if j["epsilon"] < 1]
    high = [j for j in jobs if j["epsilon"] > 1]
    folder = tmp_path / "task"
    # a deadline 15 s after the warning: the slow job and every job after it finish
    out = run_batch([high[0], *low], 1, str(folder), signal_delay_s=TIME_MARGIN_S + 15)
    assert [(o.outcome, o.status) for o in out] == [("ran", "ok")] * 3
    store = RunStore(results_dir / "runs", "supp_h")
    for rec in list(store.records()):  # start again from an empty store
        store.path(rec["run_id"]).unlink()
    # a deadline 1 s after the warning: the job running then is stopped
    out = run_batch([*low, *high], 1, str(folder), signal_delay_s=TIME_MARGIN_S + 1)
    assert [(o.outcome, o.status) for o in out] == [("ran", "ok"), ("ran", "ok"),
                                                     ("notrun", None), ("notrun", None)]
    assert out[2].error.startswith("NotRun: stopped at the task's time limit")
    assert sorted(r["run_id"] for r in store.records()) == sorted(o.run_id for o in out[:2])
    alone = run_batch([high[1]], 1, str(folder), signal_delay_s=TIME_MARGIN_S + 1)
    assert [(o.outcome, o.status) for o in alone] == [("ran", "error")]
    assert alone[0].error.startswith("TimeLimit: the cluster task reached its SLURM time limit")
    assert not list((folder / "running").iterdir())


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


@pytest.mark.parametrize("reason, impossible", [
    ("PartitionConfig", True), ("PartitionTimeLimit", True), ("BadConstraints", True),
    ("InvalidAccount", True), ("QOSNotAllowed", True), ("AccountNotAllowed", True),
    ("QOSMaxWallDurationPerJobLimit", True), ("AssocMaxCpuPerJobLimit", True),
    ("QOSMaxMemoryPerNode", True), ("QOSMinCpuNotSatisfied", True),
    ("DependencyNeverSatisfied", True), ("ReservationDeleted", True),
    ("Priority", False), ("Resources", False), ("BeginTime", False), ("Dependency", False),
    ("ReqNodeNotAvail, Reserved for maintenance", False), ("ReqNodeNotAvail, UnavailableNodes:n1",
                                                         False),
    ("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority "
     "partitions", False), ("PartitionNodeLimit", False), ("PartitionDown", False),
    ("JobHeldUser", False), ("JobHeldAdmin", False), ("AssocGrpCPUMinutesLimit", False),
    ("AssocMaxJobsLimit", False), ("QOSMaxJobsPerUserLimit", False),
    ("QOSMaxCpuPerUserLimit", False), ("MaxJobsPerAccount", False), ("QOSGrpJobsLimit", False),
    ("JobArrayTaskLimit", False), ("SomethingNew", False),
])
def test_pending_reasons_are_impossible_only_when_no_wait_can_clear_them(reason, impossible):
    from dptaucc.bench import slurm_reasons as why

    assert bool(why.impossible(reason)) is impossible
    assert why.waits_for(reason)  # every reason says something


def _waiting(monkeypatch, max_wait_s, explanation, clock):
    from dptaucc.bench import slurm_queue as q
    from dptaucc.bench import slurm_reasons as why

    cancelled = []
    monkeypatch.setattr(q, "cancel", cancelled.append)
    monkeypatch.setattr(q.why, "explain", lambda *a, **k: explanation)
    monkeypatch.setattr(q.time, "monotonic", lambda: clock[0])
    w = q._Waiting("exp", "9", q.Patience(max_wait_s=max_wait_s, option="--bound"))
    return w, cancelled, why


def test_a_transient_reason_is_waited_out_up_to_the_bound_and_progress_restarts_it(
        monkeypatch, capsys):
    from collections import Counter

    from dptaucc.bench.execution import ClusterError
    from dptaucc.bench.slurm_reasons import Explanation

    clock = [1000.0]
    w, cancelled, _ = _waiting(monkeypatch, 60.0, Explanation("the nodes are drained", None,
                                                              None), clock)
    pending = Counter({"ReqNodeNotAvail, UnavailableNodes:n1": 2})
    w.check(pending, 2, running=False)
    assert "waiting for the nodes are drained" in capsys.readouterr().err
    clock[0] += 50
    w.check(pending, 2, running=False)  # 50 s of 60: still waiting
    w.check(Counter(), 1, running=True)  # a task runs: progress
    clock[0] += 50
    w.check(pending, 1, running=False)  # 50 s since the progress
    assert not cancelled
    clock[0] += 11
    with pytest.raises(ClusterError, match="no task started for .*--bound.*ReqNodeNotAvail"):
        w.check(pending, 1, running=False)
    assert cancelled == ["9"]


def test_a_reservation_beyond_the_bound_stops_at_once_and_an_impossible_reason_too(monkeypatch):
    import datetime as dt
    from collections import Counter

    from dptaucc.bench.execution import ClusterError
    from dptaucc.bench.slurm_reasons import Explanation

    later = dt.datetime.now() + dt.timedelta(hours=2)
    held = Explanation("maintenance reservation m holds the nodes", later, None)
    w, cancelled, _ = _waiting(monkeypatch, 3600.0, held, [0.0])
    with pytest.raises(ClusterError, match="reservation m holds the nodes; that is after the "
                                           "wait bound"):
        w.check(Counter({"ReqNodeNotAvail, Reserved for maintenance": 1}), 1, running=False)
    w, cancelled, _ = _waiting(monkeypatch, 3600.0 * 3, held, [0.0])
    w.check(Counter({"ReqNodeNotAvail, Reserved for maintenance": 1}), 1, running=False)
    assert not cancelled  # the window ends within the bound: wait
    w, cancelled, _ = _waiting(monkeypatch, 3600.0, Explanation("", None, None), [0.0])
    w.check(Counter({"QOSMaxWallDurationPerJobLimit": 1}), 1, running=False)
    with pytest.raises(ClusterError, match="pending with reason QOSMaxWallDurationPerJobLimit"):
        w.check(Counter({"QOSMaxWallDurationPerJobLimit": 1}), 1, running=False)
    assert cancelled == ["9"]


def test_live_arrays_are_recorded_beside_the_lock_and_ended_ones_forgotten(tmp_path,
                                                                          monkeypatch):
    from dptaucc.bench import slurm_arrays as sa

    def entry(array_id, exp):
        return sa.LiveArray(array_id, f"dptaucc-{exp}", exp, str(tmp_path), "f",
                            [f"{array_id}_0", f"{array_id}_1"], [["a", "b"], ["c"]], [1, 1])

    sa.add(tmp_path, entry("5", "fig2"))
    sa.add(tmp_path, entry("6", "supp_h"))
    assert [a.array_id for a in sa.read(tmp_path)] == ["5", "6"]
    queue = {"5": ["5_1"], "6": []}
    monkeypatch.setattr(sa, "live_tasks", lambda array_id, name: queue[array_id])
    assert [a.array_id for a in sa.live(tmp_path)] == ["5"]
    assert [a.array_id for a in sa.read(tmp_path)] == ["5"]  # 6 ended: forgotten
    monkeypatch.setattr(sa, "live_tasks", lambda array_id, name: None)  # squeue silent
    assert [a.array_id for a in sa.live(tmp_path)] == ["5"]  # kept: better adopted than rerun
    sa.forget(tmp_path, "5")
    assert sa.read(tmp_path) == [] and not (tmp_path / sa.FILENAME).exists()


def test_task_seconds_wait_for_accounting_to_record_the_end(monkeypatch, capsys):
    """sacct records a task's end a moment after it: the driver polls (bounded) until every
    task has a final state, so a task's elapsed seconds are not read as 0 while it is still
    'RUNNING' in accounting; with no accounting it does not wait at all."""
    import dptaucc.bench.slurm as slurm
    import dptaucc.bench.slurm_queue as queue

    answers = iter([{"7_0": {"State": "RUNNING", "ElapsedRaw": "0"}},
                    {"7_0": {"State": "COMPLETED", "ElapsedRaw": "4"}}])
    monkeypatch.setattr(queue, "accounting_rows", lambda job_id: next(answers))
    monkeypatch.setattr(slurm.time, "sleep", lambda s: None)
    assert slurm._final_rows("7", ["7_0"])["7_0"]["ElapsedRaw"] == "4"

    monkeypatch.setattr(queue, "accounting_rows", lambda job_id: None)
    assert slurm._final_rows("7", ["7_0"]) == {}

    monkeypatch.setattr(queue, "accounting_rows", lambda job_id: {})
    assert slurm._final_rows("7", ["7_0"], wait_s=0.0) == {}
    assert "has not recorded the end of 1 task(s)" in capsys.readouterr().err
