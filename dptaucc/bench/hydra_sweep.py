"""The Hydra side of the engine: the task of ``python -m dptaucc.bench`` and the sweep callback.

A single run (no ``-m``) validates its job (a bad value exits 2, nothing stored), refuses
to run a job off the grid of the experiment it names, holds the store's lock, and exits 1
when the job fails. In a sweep (``-m``) each job leaves an ``outcome.json`` in its Hydra job
folder; :class:`SweepCallback` takes the store's lock, checks every job of the grid before
the first starts (a bad value anywhere stops the sweep before it runs), says how many
distinct jobs the grid holds and how many are already done, points grids too large for
Hydra to the reproduce driver, and at the end reads the outcomes back: a sweep with failed
jobs exits 1 with a summary.
"""

from __future__ import annotations

import atexit
import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from dptaucc.bench.configs import (
    Composer,
    distinct_jobs,
    expand_grid,
    in_protocol,
    off_grid,
    scale_grid,
    to_plain,
)
from dptaucc.bench.lock import StoreLock, StoreLockedError
from dptaucc.bench.outcomes import Outcome, count, failure_summary, from_record
from dptaucc.bench.run import run_job, summarize
from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import ConfigError, validate_job, validate_jobs

log = logging.getLogger("dptaucc.bench")

OUTCOME_FILE = "outcome.json"
#: above this many Hydra jobs, point to the reproduce driver (Hydra composes every job's
#: config twice, about 0.1-0.2 s each)
LARGE_SWEEP = 2000


def _fail(message: str, code: int) -> NoReturn:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def write_outcome(output_dir: str | Path, outcome: Outcome) -> None:
    path = Path(output_dir) / OUTCOME_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(outcome.to_json(), encoding="utf-8")


def read_outcomes(sweep_dir: str | Path) -> list[Outcome]:
    return [Outcome.from_json(p.read_text(encoding="utf-8"))
            for p in sorted(Path(sweep_dir).glob(f"*/{OUTCOME_FILE}"))]


def _record_path(job: dict, rec: dict | None) -> Path | None:
    if rec is None:
        return None
    return RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).path(rec["run_id"])


def task(cfg: DictConfig) -> None:
    """The task function of ``python -m dptaucc.bench``."""
    hc = HydraConfig.get()
    job = to_plain(cfg)
    if hc.mode != RunMode.MULTIRUN:
        return _single(job, hc)
    try:
        validate_job(job, protocol=False)
    except ConfigError as exc:
        log.error("invalid job, not run: %s", exc)
        write_outcome(hc.runtime.output_dir, Outcome("invalid", error=f"ConfigError: {exc}"))
        return None
    outcome, rec = run_job(job, validated=True)
    log.info("%s: %s", outcome, summarize(rec))
    write_outcome(hc.runtime.output_dir, from_record(outcome, rec, _record_path(job, rec)))
    return None


def _single(job: dict, hc: Any) -> None:
    experiment = hc.runtime.choices.get("experiment")
    if experiment:
        _refuse_off_grid(job, experiment, to_plain(hc.sweeper.params) or {})
    try:
        validate_job(job, protocol=True)
    except ConfigError as exc:
        _fail(f"invalid job, nothing run or stored: {exc}", 2)
    try:
        with StoreLock(job["paths"]["runs_dir"]):
            outcome, rec = run_job(job, validated=True)
    except StoreLockedError as exc:
        _fail(str(exc), 2)
    log.info("%s: %s", outcome, summarize(rec))
    if rec is not None and rec.get("status") != "ok":
        _fail(f"the job failed; its record {_record_path(job, rec)} holds the traceback "
              f"(a rerun retries it)", 1)


def _refuse_off_grid(job: dict, experiment: str, params: dict) -> None:
    quick = (job.get("bench") or {}).get("quick")
    misses = {scale: off_grid(job, scale_grid(params, quick, scale))
              for scale in ("paper", "quick")}
    if not all(misses.values()):
        return  # on the paper or the quick grid: a legitimate single job of the experiment
    off = ", ".join(f"{k}={v!r}" for k, v in misses["paper"].items())
    _fail(f"experiment={experiment} names a sweep grid, but this is a single run (no -m) and "
          f"its job is off that grid ({off}); nothing was run or stored. Add -m to run the "
          f"grid (python -m dptaucc.bench -m experiment={experiment} ...), set every swept "
          f"value to one on the grid, or drop experiment= to run an ad-hoc job "
          f"(stored under 'adhoc').", 2)


# ---------------------------------------------------------------- the sweep as a whole
def sweep_grid(config: DictConfig) -> tuple[list[str], dict[str, list]] | None:
    """The sweep as (compose overrides, grid axes), merged like Hydra's basic sweeper
    (command-line overrides replace the experiment's ``hydra.sweeper.params``); None when it
    uses syntax this check does not follow (``+key``, ``~key``, ``group@package``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = to_plain(config.hydra.sweeper.params) or {}
    texts = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    fixed: dict[str, str] = {}
    grid: dict[str, list] = {}
    for o in OverridesParser.create().parse_overrides(texts):
        key = o.get_key_element()
        if o.is_delete() or o.is_add() or o.is_force_add() or "@" in key:
            return None
        values = list(o.sweep_iterator()) if o.is_sweep_override() else [o.value()]
        if key.startswith("paths.") or key == "paths":
            if len(values) != 1:
                return None
            fixed[key] = f"{key}={values[0]}"
            grid.pop(key, None)
        else:
            grid[key] = values
            fixed.pop(key, None)
    return list(fixed.values()), grid


def plan(config: DictConfig) -> dict | None:
    """Expand and check the sweep's jobs; raises ConfigError listing invalid ones."""
    spec = sweep_grid(config)
    if spec is None:
        return None
    fixed, grid = spec
    with Composer() as composer:
        jobs = list(expand_grid(composer, fixed, grid))
    errors = validate_jobs(jobs)
    if errors:
        raise ConfigError("invalid jobs in the sweep, nothing was run:\n  "
                          + "\n  ".join(errors[:10]))
    distinct = distinct_jobs(jobs)
    from dptaucc.bench.execution import pending_jobs

    return {"total": len(jobs), "excluded": sum(not in_protocol(j) for j in jobs),
            "distinct": len(distinct), "pending": len(pending_jobs(distinct))}


class SweepCallback(Callback):
    """Lock, plan and summary of a Hydra sweep (``hydra.callbacks`` in conf/config.yaml)."""

    def __init__(self) -> None:
        self.lock: StoreLock | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            self.lock = StoreLock(config.paths.runs_dir).acquire()
        except StoreLockedError as exc:
            _fail(str(exc), 2)
        atexit.register(self.lock.release)
        try:
            p = plan(config)
        except ConfigError as exc:
            self.lock.release()
            _fail(str(exc), 2)
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("could not check this sweep ahead (%s); each job is checked when it "
                        "starts", exc)
            return
        if p is None:
            log.info("sweep syntax not checked ahead; each job is checked when it starts")
            return
        dup = p["total"] - p["excluded"] - p["distinct"]
        log.info("sweep: %d Hydra jobs = %d distinct jobs (%d outside an algorithm's ε range, "
                 "%d repeats of a non-private method's run); %d already done, %d to run; "
                 "records in %s/%s", p["total"], p["distinct"], p["excluded"], dup,
                 p["distinct"] - p["pending"], p["pending"], config.paths.runs_dir,
                 config.bench.experiment)
        if p["total"] > LARGE_SWEEP:
            log.warning(
                "this sweep has %d jobs: Hydra composes each job's config (twice, about "
                "0.1-0.2 s each), minutes to hours of overhead. For grids this size use the "
                "reproduce driver, which expands the grid once and runs locally or as SLURM "
                "job arrays: python -m dptaucc.bench.reproduce --experiments %s --scale paper "
                "[--sweep KEY=VALUES ...] [--executor slurm]", p["total"],
                config.bench.experiment)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        outcomes = read_outcomes(config.hydra.sweep.dir)
        if self.lock is not None:
            self.lock.release()
        counts = dict(count(outcomes))
        log.info("sweep finished: %s", ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
                 or "no jobs")
        problem = failure_summary(outcomes, "run the same command again")
        if problem:
            print(problem, file=sys.stderr)
            sys.exit(1)
