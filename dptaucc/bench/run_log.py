"""What one ``reproduce`` invocation did, kept beside the tables it produced.

``<results_dir>/reproduce.json`` holds the last run's code commit, start and end times, wall
time (the sweep, then collect/figures/report), per-experiment job counts and where the time
went (core-seconds per experiment and per method, :mod:`costs`), so REPORT.md can say which
commit produced the tables, how long the whole reproduction took and what it spent it on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dptaucc.bench.costs import DECIMALS, method_totals
from dptaucc.bench.provenance import git_sha, utc_now

FILENAME = "reproduce.json"


def write_run_log(results_dir: str | os.PathLike, *, scale: str, resources: dict,
                  executor: str, started_utc: str, sweep_seconds: float,
                  total_seconds: float, experiments: dict[str, dict]) -> Path:
    """Write ``<results_dir>/reproduce.json`` for a finished run and return its path."""
    log = {
        "git_sha": git_sha(),
        "scale": scale,
        "executor": executor,
        "resources": resources,
        "started_utc": started_utc,
        "finished_utc": utc_now(),
        "sweep_seconds": round(sweep_seconds, DECIMALS),
        "total_seconds": round(total_seconds, DECIMALS),
        "experiments": {
            exp: {"jobs": int(info.get("total", 0)),
                  "run": int(info.get("pending", 0)),
                  "seconds": round(float(info.get("seconds", 0.0)), DECIMALS),
                  "statuses": dict(info.get("statuses", {})),
                  **({"core_seconds": info["core_seconds"]} if info.get("core_seconds")
                     else {})}
            for exp, info in experiments.items()},
    }
    log["methods_core_seconds"] = method_totals(log["experiments"])
    path = Path(results_dir) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
    return path


def read_run_log(results_dir: str | os.PathLike) -> dict | None:
    """The last run's log, or None when there is none (or it cannot be read)."""
    path = Path(results_dir) / FILENAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def where(log: dict) -> str:
    """``2 local workers`` or ``slurm (partition debug, 1 CPU(s), 8 GB per task)``."""
    res = log.get("resources") or {"workers": log.get("workers")}  # older logs: workers only
    if log["executor"] == "local":
        return f"{res.get('workers')} local workers"
    parts = [f"partition {res['partition']}" if res.get("partition") else "default partition",
             f"{res.get('cpus_per_task', 1)} CPU(s)"]
    if res.get("mem_gb") is not None:
        parts.append(f"{res['mem_gb']:g} GB")
    return f"{log['executor']} ({', '.join(parts)} per task)"


def describe(log: dict) -> str:
    """One REPORT line: commit, wall time and how many jobs this run ran."""
    run = sum(e["run"] for e in log["experiments"].values())
    jobs = sum(e["jobs"] for e in log["experiments"].values())
    resumed = "" if run == jobs else f" ({jobs - run} were already stored: a resumed run)"
    return (f"Last `reproduce` run ({', '.join(log['experiments'])}): code `{log['git_sha'][:12]}"
            f"{'-dirty' if log['git_sha'].endswith('-dirty') else ''}`, "
            f"{run} of {jobs} jobs run{resumed} on {where(log)}, "
            f"started {log['started_utc']}; wall time {log['total_seconds'] / 60:.1f} min "
            f"({log['sweep_seconds'] / 60:.1f} min of jobs, the rest collect, figures and "
            f"report).")
