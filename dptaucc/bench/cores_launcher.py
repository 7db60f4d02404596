"""``hydra/launcher=cores``: Hydra's joblib launcher, except that a dying worker is one failed job.

With the stock joblib launcher one worker killed by the out-of-memory killer (or a crash in
native code) stops the whole sweep. This launcher runs the same jobs on the same loky
processes through :func:`pool.map_resilient`: the job whose worker died is stored as a failed
record (``WorkerDied``; a rerun retries it) and the sweep goes on.

Hydra instantiates launchers only under names from its ``hydra_plugins`` namespace. To keep
this project's one import root, :func:`register` (called by ``python -m dptaucc.bench``) adds
the class to Hydra's plugin registry, under its own name and under :data:`PLUGIN_NAME`, the
name ``conf/hydra/launcher/cores.yaml`` targets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hydra.core.plugins import Plugins
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_joblib_launcher._core import execute_job
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from joblib import effective_n_jobs
from omegaconf import OmegaConf, open_dict

from dptaucc.bench.configs import to_plain
from dptaucc.bench.hydra_sweep import write_outcome
from dptaucc.bench.pool import map_resilient
from dptaucc.bench.provenance import WORKERS_ENV

PLUGIN_NAME = "hydra_plugins.dptaucc_bench.ResilientJoblibLauncher"


def _run(item: tuple) -> tuple[int, JobReturn]:
    """One Hydra job in a worker (Hydra's own ``execute_job``); returns (index, result)."""
    return item[0], execute_job(*item)


class ResilientJoblibLauncher(JoblibLauncher):
    """Hydra's joblib launcher on :func:`pool.map_resilient` (see the module docstring)."""

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        n_jobs = int(self.joblib.get("n_jobs") or -1)
        os.environ[WORKERS_ENV] = str(min(effective_n_jobs(n_jobs), len(job_overrides)) or 1)
        state = Singleton.get_state()
        items = [(initial_job_idx + i, list(ov), self.hydra_context, self.config,
                  self.task_function, state) for i, ov in enumerate(job_overrides)]
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        print(f"[cores] launching {len(items)} jobs on {n_jobs if n_jobs > 0 else 'all'} cores",
              file=sys.stderr, flush=True)
        results = dict(map_resilient(_run, items, n_jobs, key=lambda it: it[0],
                                     on_death=self._dead))
        return [results[it[0]] for it in items]

    def _dead(self, item: tuple, exc: BaseException) -> tuple[int, JobReturn]:
        """Store the job whose worker died as failed; the sweep goes on."""
        from dptaucc.bench.execution import record_death

        idx, overrides = item[0], item[1]
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(cfg):
            cfg.hydra.job.num = idx
        output_dir = Path(str(cfg.hydra.sweep.dir)) / str(OmegaConf.select(
            cfg, "hydra.sweep.subdir"))
        job = {k: to_plain(cfg[k]) for k in cfg if k != "hydra"}
        outcome = record_death(job, exc)
        write_outcome(output_dir, outcome)
        print(f"[cores] job #{idx} ({' '.join(overrides)}): {outcome.error}", file=sys.stderr)
        ret = JobReturn(overrides=overrides, status=JobStatus.COMPLETED)
        ret.return_value = None
        return idx, ret


def register() -> None:
    """Make :data:`PLUGIN_NAME` known to Hydra as :class:`ResilientJoblibLauncher`."""
    plugins = Plugins.instance()
    plugins.register(ResilientJoblibLauncher)
    plugins.class_name_to_class[PLUGIN_NAME] = ResilientJoblibLauncher
