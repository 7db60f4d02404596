"""``hydra/launcher=slurm``: a Hydra sweep on a SLURM cluster, batched like the reproduce driver.

Hydra hands the launcher a batch of jobs (up to 1000, ``hydra.sweeper.max_batch_size``). Jobs
already done in the store (or outside their algorithm's protocol range) are not submitted; the
rest, one per distinct run id, go through the driver's own submission
(:func:`slurm.submit_jobs`): contiguous batches of about ``task_minutes`` of work per array
task, the array recorded beside the store's lock (a rerun adopts it instead of submitting
again), pending reasons explained and waited for at most ``max_wait_hours`` (impossible ones
stop the sweep: one ``error:`` line, exit 2), a task that dies bisected until the job that
kills it has done so alone, the time limit's warning ending a batch at its deadline. Each
Hydra job then gets its ``outcome.json``, which the sweep's summary reads.

The tasks run the jobs themselves (no Hydra inside them): a job's Hydra folder holds its
``outcome.json``; its record in the store holds the rest. Registered with Hydra like
:mod:`cores_launcher`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from dptaucc.bench.configs import in_protocol, run_id, to_plain
from dptaucc.bench.execution import ClusterError, lost
from dptaucc.bench.hydra_sweep import _fail, write_outcome
from dptaucc.bench.outcomes import Outcome, from_record
from dptaucc.bench.store import RunStore

PLUGIN_NAME = "hydra_plugins.dptaucc_bench.ResumableSlurmLauncher"
#: launcher settings that are not sbatch options
OWN_KEYS = ("submitit_folder", "jobs_per_task", "task_minutes", "max_wait_hours",
            "additional_parameters")
#: launcher settings :func:`slurm.make_executor` takes
EXECUTOR_KEYS = ("timeout_min", "mem_gb", "cpus_per_task", "partition", "account",
                 "array_parallelism")


def _done(ret_overrides: list[str]) -> JobReturn:
    ret = JobReturn(overrides=ret_overrides, status=JobStatus.COMPLETED)
    ret.return_value = None
    return ret


class ResumableSlurmLauncher(Launcher):
    """See the module docstring."""

    def __init__(self, **params: Any) -> None:
        self.params = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v)
                       else v for k, v in params.items()}
        unknown = set(self.params) - set(OWN_KEYS) - set(EXECUTOR_KEYS) - {"_target_"}
        if unknown:
            _fail(f"hydra.launcher (slurm) does not know {', '.join(sorted(unknown))}; other "
                  f"sbatch options go to hydra.launcher.additional_parameters, e.g. "
                  f"'+hydra.launcher.additional_parameters.qos=long'", 2)
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context

    def _job(self, idx: int, overrides: list[str]) -> tuple[dict, Path]:
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(cfg):
            cfg.hydra.job.num = idx
        out_dir = Path(str(cfg.hydra.sweep.dir)) / str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        return {k: to_plain(cfg[k]) for k in cfg if k != "hydra"}, out_dir

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        results: dict[int, JobReturn] = {}
        todo: list[tuple[int, list[str], dict, Path]] = []
        for i, ov in enumerate(job_overrides):
            idx = initial_job_idx + i
            job, out_dir = self._job(idx, list(ov))
            if not in_protocol(job):
                write_outcome(out_dir, Outcome("excluded"))
                results[idx] = _done(list(ov))
                continue
            store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
            rid = run_id(job)
            if store.is_done(rid, retry_failed=bool(job["bench"].get("retry_failed", True))):
                write_outcome(out_dir, from_record("skipped", store.get(rid), store.path(rid)))
                results[idx] = _done(list(ov))
                continue
            todo.append((idx, list(ov), job, out_dir))
        skipped = len(job_overrides) - len(todo)
        if skipped:
            print(f"[slurm] {skipped} job(s) already done or outside the protocol: not "
                  f"submitted", file=sys.stderr, flush=True)
        if todo:
            Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
            outcomes = self._submit(list({run_id(j): j for _, _, j, _ in todo}.values()))
            for idx, ov, job, out_dir in todo:
                out = outcomes.get(run_id(job)) or lost(
                    job, RuntimeError("no cluster task returned it"))
                write_outcome(out_dir, out)
                results[idx] = _done(ov)
        return [results[initial_job_idx + i] for i in range(len(job_overrides))]

    def _submit(self, jobs: list[dict]) -> dict[str, Outcome]:
        """The driver's submission of ``jobs``; their outcomes by run id."""
        from dptaucc.bench.slurm import submit_jobs

        p = self.params
        folder = str(p["submitit_folder"]).replace("%j", "").rstrip("/")
        options = {k: p[k] for k in EXECUTOR_KEYS if p.get(k) is not None}
        try:
            tally = submit_jobs(
                jobs, executor="slurm", name=jobs[0]["bench"]["experiment"], folder=folder,
                jobs_per_task=p.get("jobs_per_task"), task_minutes=float(p["task_minutes"]),
                max_wait_h=float(p["max_wait_hours"]),
                wait_option="hydra.launcher.max_wait_hours",
                additional=dict(p.get("additional_parameters") or {}) or None, **options)
        except ClusterError as exc:
            _fail(str(exc), 2)
        return {o.run_id: o for o in tally.outcomes if o.run_id}


def register() -> None:
    """Make :data:`PLUGIN_NAME` known to Hydra as :class:`ResumableSlurmLauncher`."""
    plugins = Plugins.instance()
    plugins.register(ResumableSlurmLauncher)
    plugins.class_name_to_class[PLUGIN_NAME] = ResumableSlurmLauncher
