"""``python -m dptaucc.bench`` end to end: exit codes, refusals, failures, Ctrl-C, dying workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import ConfigError

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _bench(results_dir, *args, timeout=180, **popen):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(HERE), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "dptaucc.bench", *args, f"paths.results_dir={results_dir}",
           f"paths.log_dir={results_dir}/logs"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                         env=env, **popen)
    out.stderr = out.stdout + out.stderr  # Hydra logs to stdout, refusals go to stderr
    return out


def _records(results_dir, experiment):
    return list(RunStore(Path(results_dir) / "runs", experiment).records())


def test_single_run_refusals_exit_2_and_store_nothing(results_dir):
    bad = _bench(results_dir, "epsilon=-1")
    assert bad.returncode == 2 and "epsilon must be > 0 (or inf), got -1" in bad.stderr
    off = _bench(results_dir, "experiment=fig2_real")
    assert off.returncode == 2
    assert "experiment=fig2_real names a sweep grid" in off.stderr
    assert "epsilon=1.0" in off.stderr and "Add -m" in off.stderr
    assert not list(Path(results_dir).rglob("*.json"))


def test_single_run_on_the_grid_runs_and_a_failure_exits_1(results_dir):
    on = _bench(results_dir, "experiment=fig2_real", "epsilon=0.5", "seed=1", "mode=paper")
    assert on.returncode == 0, on.stderr[-2000:]
    (rec,) = _records(results_dir, "fig2_real")
    assert (rec["epsilon"], rec["seed"], rec["status"]) == (0.5, 1, "ok")
    failed = _bench(results_dir, "algorithm._target_=fake_estimators.FailsAtHighEpsilon",
                    "epsilon=2")
    assert failed.returncode == 1
    assert "the job failed; its record" in failed.stderr and "holds the traceback" in failed.stderr


def test_sweep_with_failures_exits_1_with_a_summary(results_dir):
    out = _bench(results_dir, "-m", "experiment=quick", "algorithm=dp_taucc", "mode=corrected",
                 "algorithm._target_=fake_estimators.FailsAtHighEpsilon", "epsilon=0.5,1.5",
                 "seed=range(2)")
    assert out.returncode == 1, out.stderr[-3000:]
    assert "sweep: 4 Hydra jobs = 4 distinct jobs" in out.stderr
    assert "2 job(s) failed: 2 RuntimeError" in out.stderr
    assert str(Path(results_dir) / "runs" / "quick") in out.stderr  # an example record
    recs = _records(results_dir, "quick")
    assert sorted(r["status"] for r in recs) == ["error", "error", "ok", "ok"]


def test_sweep_with_an_invalid_value_runs_nothing(results_dir):
    out = _bench(results_dir, "-m", "experiment=quick", "algorithm=dp_taucc", "mode=corrected",
                 "epsilon=0.5,-1", "seed=range(2)")
    assert out.returncode == 2
    assert "invalid jobs in the sweep, nothing was run" in out.stderr
    assert "epsilon must be > 0 (or inf), got -1" in out.stderr
    assert "ran:" not in out.stderr and not list(Path(results_dir).rglob("*.json"))


def test_cores_launcher_survives_a_killed_worker(results_dir):
    out = _bench(results_dir, "-m", "experiment=quick", "algorithm=dp_taucc", "mode=corrected",
                 "algorithm._target_=fake_estimators.KillsItselfAtHighEpsilon",
                 "epsilon=0.5,1.5", "seed=range(2)", "hydra/launcher=cores",
                 "hydra.launcher.n_jobs=2")
    assert out.returncode == 1, out.stderr[-3000:]
    assert "2 job(s) failed: 2 WorkerDied" in out.stderr
    recs = {(r["epsilon"], r["seed"]): r for r in _records(results_dir, "quick")}
    assert len(recs) == 4
    assert {k for k, r in recs.items() if r["status"] == "ok"} == {(0.5, 0), (0.5, 1)}
    assert all(recs[(1.5, s)]["error"].startswith("WorkerDied") for s in (0, 1))


def test_ctrl_c_exits_130_without_a_traceback(results_dir):
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    cmd = [sys.executable, "-m", "dptaucc.bench", "-m",
           "algorithm._target_=fake_estimators.CtrlCInFit", "epsilon=0.5,1.5",
           f"paths.results_dir={results_dir}", f"paths.log_dir={results_dir}/logs"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env,
                          start_new_session=True,  # its own process group, as in a terminal
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "AttributeError" not in proc.stderr
    assert "interrupted: finished jobs are stored" in proc.stderr
    assert not (Path(results_dir) / "runs" / ".lock").exists()


def test_sweep_batch_size_keeps_the_first_job_close(composer):
    """Hydra composes a whole batch before its first job: batches stay small."""
    cfg = composer.compose(["experiment=fig2_real"], hydra=True)
    assert cfg.hydra.sweeper.max_batch_size == 8
    cores = composer.compose(["experiment=fig2_real", "hydra/launcher=cores"], hydra=True)
    assert cores.hydra.sweeper.max_batch_size == 8 * (os.cpu_count() or 1)
    slurm = composer.compose(["experiment=fig2_real", "hydra/launcher=slurm"], hydra=True)
    assert slurm.hydra.sweeper.max_batch_size == 1000


@pytest.mark.parametrize("override,n_datasets,n_seeds",
                         [("dataset=cstr,tr11", 2, 2), ("seed=range(3)", 1, 3)])
def test_plan_counts_distinct_jobs(composer, results_dir, override, n_datasets, n_seeds):
    """The sweep plan of experiment=quick: per (dataset, seed) 8 algorithms x 2 modes x 2 ε
    = 32 Hydra jobs; DPNMF at ε = 1.5 is outside its range (2 jobs); the two non-private
    methods collapse to one job each (8 -> 2): 24 distinct jobs."""
    from omegaconf import open_dict

    from dptaucc.bench.hydra_sweep import plan

    cfg = composer.compose(["experiment=quick", f"paths.results_dir={results_dir}"],
                           hydra=True)
    with open_dict(cfg):  # the command line, as Hydra's sweeper sees it
        cfg.hydra.overrides.task = ["experiment=quick", override,
                                    f"paths.results_dir={results_dir}"]
    p = plan(cfg)
    cells = n_datasets * n_seeds
    assert p == {"total": 32 * cells, "excluded": 2 * cells, "distinct": 24 * cells,
                 "pending": 24 * cells}
    bad = cfg.copy()
    with open_dict(bad):
        bad.hydra.overrides.task = ["experiment=quick", "epsilon=0.5,0"]
    with pytest.raises(ConfigError, match="epsilon must be > 0"):
        plan(bad)
