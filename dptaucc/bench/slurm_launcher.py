"""``hydra/launcher=slurm``: Hydra's submitit SLURM launcher, resumable and never waiting blind.

Differences from the stock launcher: a job already done in the store (or outside its
algorithm's protocol range) is not submitted again; the array is followed through ``squeue``
and ``sacct`` (:func:`slurm_queue.watch`: pending reasons shown, hopeless ones stop the sweep
with a one-line error, tasks gone from both are lost); a task that dies (cancelled, out of
memory, its time limit) leaves a ``lost`` outcome naming SLURM's state, so the sweep ends with
its summary rather than a traceback; an sbatch refusal (invalid partition, memory no node
has) is one ``error:`` line and exit 2. Registered with Hydra like :mod:`cores_launcher`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.plugins import Plugins
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf, open_dict

from dptaucc.bench.configs import in_protocol, run_id, to_plain
from dptaucc.bench.execution import ClusterError, lost
from dptaucc.bench.hydra_sweep import _fail, write_outcome
from dptaucc.bench.outcomes import Outcome, from_record
from dptaucc.bench.store import RunStore

PLUGIN_NAME = "hydra_plugins.dptaucc_bench.ResumableSlurmLauncher"
#: seconds between two looks at the queue
POLL_S = 5.0


def _done(ret_overrides: list[str]) -> JobReturn:
    ret = JobReturn(overrides=ret_overrides, status=JobStatus.COMPLETED)
    ret.return_value = None
    return ret


class ResumableSlurmLauncher(SlurmLauncher):
    """See the module docstring."""

    def _job(self, idx: int, overrides: list[str]) -> tuple[dict, Path]:
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(cfg):
            cfg.hydra.job.num = idx
        out_dir = Path(str(cfg.hydra.sweep.dir)) / str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        return {k: to_plain(cfg[k]) for k in cfg if k != "hydra"}, out_dir

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        import submitit
        from submitit.core.utils import FailedJobError

        from dptaucc.bench.slurm_queue import cancel, watch

        assert self.config is not None and self.hydra_context is not None
        results: dict[int, JobReturn] = {}
        todo, dirs = [], {}
        for i, ov in enumerate(job_overrides):
            idx = initial_job_idx + i
            job, out_dir = self._job(idx, list(ov))
            dirs[idx] = (job, out_dir)
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
            todo.append((idx, list(ov)))
        skipped = len(job_overrides) - len(todo)
        if skipped:
            print(f"[slurm] {skipped} job(s) already done or outside the protocol: not "
                  f"submitted", file=sys.stderr, flush=True)
        if todo:
            executor = submitit.AutoExecutor(cluster="slurm",
                                             folder=self.params["submitit_folder"])
            params = {k: v for k, v in self.params.items()
                      if k not in ("submitit_folder", "max_num_timeout")}
            base = {"name", "timeout_min", "cpus_per_task", "gpus_per_node", "tasks_per_node",
                    "mem_gb", "nodes"}
            executor.update_parameters(**{k if k in base else f"slurm_{k}": v
                                          for k, v in params.items()})
            Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
            state = Singleton.get_state()
            args = [(ov, "hydra.sweep.dir", idx, f"job_id_for_{idx}", state)
                    for idx, ov in todo]
            try:
                tasks = executor.map_array(self, *zip(*args, strict=True))
            except FailedJobError as exc:
                from dptaucc.bench.slurm import refusal

                _fail(f"SLURM refused the sweep's array: {refusal(exc)}", 2)
            print(f"[slurm] {len(tasks)} task(s) in array {tasks[0].job_id.split('_')[0]}; logs "
                  f"in {self.params['submitit_folder'].replace('%j', '')}", file=sys.stderr,
                  flush=True)
            self._wait(tasks, todo, dirs, results, watch, cancel)
        return [results[initial_job_idx + i] for i in range(len(job_overrides))]

    def _wait(self, tasks, todo, dirs, results, watch, cancel) -> None:
        name = str(self.params.get("name", "sweep"))

        def ended(i: int, end: Any) -> None:
            idx, ov = todo[i]
            if end.state is None:
                results[idx] = end.result
                return
            job, out_dir = dirs[idx]
            died = RuntimeError(f"{end.state}: task {tasks[i].job_id} died ({end.detail})")
            write_outcome(out_dir, lost(job, died))
            print(f"[slurm] job #{idx} ({' '.join(filter_overrides(ov))}): task "
                  f"{tasks[i].job_id} ended {end.state} ({end.detail})", file=sys.stderr)
            results[idx] = _done(ov)

        try:
            watch(tasks, name, POLL_S, ended)
        except ClusterError as exc:
            _fail(str(exc), 2)
        except KeyboardInterrupt:
            cancel(tasks[0].job_id.split("_")[0])
            raise


def register() -> None:
    """Make :data:`PLUGIN_NAME` known to Hydra as :class:`ResumableSlurmLauncher`."""
    plugins = Plugins.instance()
    plugins.register(ResumableSlurmLauncher)
    plugins.class_name_to_class[PLUGIN_NAME] = ResumableSlurmLauncher
