"""The audit experiment: every method of the suite, both modes, several ε (``make audit``).

Reads ``conf/audit/audit.yaml`` (the grid, the fit budgets, a ``quick`` size), builds each
estimator from its ``conf/algorithm/<name>.yaml`` (target and parameters; "classes" means the
pair's planted number of clusters), audits it with the pair and events of
:mod:`dptaucc.audit.methods`, and writes one record per (method, mode, ε) to a parquet table
(rewritten after every audit, so an interrupted run keeps what it finished). Needs the
``[bench]`` extra (pandas, pyarrow).

Budget: fits per side per audit (``n_fits``, per-method overrides) and a time limit per audit;
``--dry-run`` times a few fits of every audit and prints the estimated wall time instead.
"""

from __future__ import annotations

import functools
import importlib
import math
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .methods import MethodAudit, method_audit, method_audits
from .runner import audit
from .stats import cp_lower, cp_upper

__all__ = ["AuditJob", "load_config", "plan", "run_job", "run_all", "estimate", "measurable_max",
           "RECORD_COLUMNS"]

RECORD_COLUMNS = [
    "method", "mode", "epsilon", "delta", "epsilon_spent", "end_to_end_dp", "epsilon_lower",
    "event", "epsilon_lower_max", "n_fits", "n_requested", "stopped_by_time", "time_s",
    "fit_time_s", "pair", "events", "alpha", "seed", "size", "git_sha", "versions", "started_at",
]


def _conf_dir() -> Path:
    return Path(str(resources.files("dptaucc.conf")))


def load_config(size: str = "full") -> dict:
    """``conf/audit/audit.yaml`` with the ``quick`` overrides applied when ``size="quick"``."""
    if size not in ("full", "quick"):
        raise ValueError(f"size must be 'full' or 'quick', got {size!r}")
    cfg = yaml.safe_load((_conf_dir() / "audit" / "audit.yaml").read_text(encoding="utf-8"))
    quick = cfg.pop("quick", {}) or {}
    if size == "quick":
        for key, value in quick.items():
            cfg[key] = value
    cfg["size"] = size
    return cfg


def algorithm_config(name: str) -> dict:
    path = _conf_dir() / "algorithm" / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no algorithm config {name!r} (conf/algorithm/{name}.yaml)")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _construct(target: str, kwargs: dict, random_state: int):
    """Build one estimator (module-level, so a factory pickles to joblib workers)."""
    module, _, attr = target.rpartition(".")
    cls = getattr(importlib.import_module(module), attr)
    return cls(**kwargs, random_state=random_state)


@dataclass(frozen=True)
class AuditJob:
    method: str
    mode: str | None  # None: a non-private method (one audit, no ε)
    epsilon: float | None
    n_fits: int
    time_limit: float | None

    @property
    def label(self) -> str:
        if self.mode is None:
            return f"{self.method} (not DP)"
        return f"{self.method}/{self.mode} ε={self.epsilon:g}"

    def factory(self):
        """``random_state -> estimator`` with the config's parameters for this job's pair."""
        alg = algorithm_config(self.method)
        n_clusters = method_audit(self.method).pair.n_clusters
        kwargs = {k: (n_clusters if v in ("classes", "col_classes") else v)
                  for k, v in (alg.get("params") or {}).items()}
        if alg.get("private", True):
            kwargs["epsilon"] = float(self.epsilon)
            kwargs["mode"] = self.mode
        return functools.partial(_construct, alg["target"], kwargs)


def plan(cfg: dict, methods: list[str] | None = None) -> list[AuditJob]:
    """The audits of a config: private methods × modes × ε, non-private methods once."""
    jobs = []
    per_method = cfg.get("n_fits_per_method") or {}
    for name in methods or cfg["methods"]:
        alg = algorithm_config(name)
        n = int(per_method.get(name, cfg["n_fits"]))
        limit = cfg.get("time_limit")
        if alg.get("private", True):
            jobs += [AuditJob(name, mode, float(eps), n, limit)
                     for mode in cfg["modes"] for eps in cfg["epsilons"]]
        else:
            jobs.append(AuditJob(name, None, None, n, limit))
    return jobs


def _probe(job: AuditJob, n: int = 3) -> tuple[float, bool, float]:
    """(ε spent, end-to-end DP, δ claimed) from ``n`` fits on D: ε spent is
    the largest ledger sum, or inf when the ledger names a non-private step (or the model has
    no ledger)."""
    build, D = job.factory(), method_audit(job.method).pair.D
    spent, e2e, delta = 0.0, True, 0.0
    for i in range(n):
        model = build(10_000 + i)  # outside the context: see runner._fit_and_observe
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(D)
        ledger = getattr(model, "privacy_ledger_", None)
        if ledger is None or ledger.non_private_steps or job.mode is None:
            e2e = False
        if ledger is not None:
            spent = max(spent, float(getattr(model, "epsilon_spent_", ledger.epsilon_spent)))
            delta = max(delta, float(ledger.budget_delta))
    return (spent if e2e else math.inf), e2e, delta


def _scenario_budget(job: AuditJob, spec: MethodAudit) -> tuple[int, float | None]:
    n = max(1, math.ceil(job.n_fits * spec.share))
    return n, None if job.time_limit is None else job.time_limit * spec.share


def run_job(job: AuditJob, *, seed: int = 0, alpha: float = 0.05, n_jobs: int | None = 1,
            progress: bool = True) -> list[dict]:
    """Audit one (method, mode, ε): one record per scenario of :func:`method_audits`, each at
    ``alpha / (number of scenarios)``, so that the largest ε_lower over the job's scenarios is
    still a simultaneous (1 − α) bound."""
    from dptaucc.bench import provenance

    specs = method_audits(job.method)
    a = alpha / len(specs)
    spent, e2e, delta = _probe(job)
    records = []
    for spec in specs:
        n, limit = _scenario_budget(job, spec)
        started = provenance.utc_now()
        res = audit(job.factory(), spec.pair.D, spec.pair.D_prime, list(spec.events),
                    n_fits=n, time_limit=limit, seed=seed, alpha=a, delta=delta,
                    n_jobs=n_jobs, progress=progress, description=f"{job.label} {spec.pair.name}")
        records.append({
            "method": job.method, "mode": job.mode or "–",
            "epsilon": math.nan if job.epsilon is None else job.epsilon,
            "delta": delta, "epsilon_spent": spent, "end_to_end_dp": e2e,
            "epsilon_lower": res.epsilon_lower, "event": res.event or "",
            "epsilon_lower_max": measurable_max(res.n_fits, len(res.events), a),
            "n_fits": res.n_fits, "n_requested": res.n_requested,
            "stopped_by_time": res.stopped_by_time, "time_s": res.elapsed_s,
            "fit_time_s": res.fit_time_s, "pair": spec.pair.name,
            "events": yaml.safe_dump(res.table(), sort_keys=False, allow_unicode=True),
            "alpha": a, "seed": seed, "git_sha": provenance.git_sha(),
            "versions": provenance.versions(), "started_at": started,
        })
    return records


def estimate(jobs: list[AuditJob], n_jobs: int, pairs: int = 3) -> list[dict]:
    """Run ``pairs`` pairs of fits (events included) of every scenario in this process and
    estimate each audit's wall time at its budget on ``n_jobs`` workers."""
    rows = []
    for job in jobs:
        est, per_fit = 0.0, []
        for spec in method_audits(job.method):
            for n in (1, pairs):  # the first run warms up (imports, caches) and is not timed
                res = audit(job.factory(), spec.pair.D, spec.pair.D_prime, list(spec.events),
                            n_fits=n, n_jobs=1, progress=False)
            n_fits, limit = _scenario_budget(job, spec)
            est += min(2 * n_fits * res.fit_time_s / max(1, n_jobs), limit or math.inf)
            per_fit.append(res.fit_time_s)
        rows.append({"audit": job.label, "fits_per_side": job.n_fits,
                     "ms_per_fit": 1000 * per_fit[0], "estimated_s": est})
    return rows


def measurable_max(n_fits: int, n_events: int, alpha: float) -> float:
    """The largest ε_lower n fits per side can give with ``n_events`` events: an event seen in
    every fit on one side and in none on the other."""
    a = alpha / (4 * n_events)
    return max(0.0, float(math.log(cp_lower(n_fits, n_fits, a) / cp_upper(0, n_fits, a))))


def _write(records: list[dict], out: Path, size: str) -> None:
    import pandas as pd

    df = pd.DataFrame(records)
    df["size"] = size
    df = df[[c for c in RECORD_COLUMNS if c in df.columns]]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".parquet.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(out)


def run_all(cfg: dict, jobs: list[AuditJob], out: Path, *, n_jobs: int | None,
            progress: bool = True) -> list[dict]:
    """Run every job and (re)write ``out`` after each one."""
    records: list[dict[str, Any]] = []
    for k, job in enumerate(jobs, 1):
        recs = run_job(job, seed=int(cfg.get("seed", 0)), alpha=float(cfg.get("alpha", 0.05)),
                       n_jobs=n_jobs, progress=progress)
        records += recs
        _write(records, out, cfg["size"])
        best = max(recs, key=lambda r: r["epsilon_lower"])
        claim = "not DP" if job.epsilon is None else f"claimed {job.epsilon:g}"
        print(f"[{k}/{len(jobs)}] {job.label}: ε_lower = {best['epsilon_lower']:.2f} ({claim}; "
              f"{sum(r['time_s'] for r in recs):.0f} s) {best['pair']}: {best['event']}",
              flush=True)
    return records


def default_output(cfg: dict, results_dir: str | Path = "results") -> Path:
    return Path(results_dir) / cfg.get("output", "audit.parquet")
