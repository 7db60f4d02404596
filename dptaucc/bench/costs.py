"""Where a run's time went: core-seconds per experiment and per method, from its job outcomes.

A job's seconds are measured in its worker around the whole job (dataset from the worker's
cache or loaded, fit, evaluation, record stored); the fit and evaluation seconds are the
record's own ``fit_time_s`` and ``eval_time_s``. Workers × wall time minus the jobs' seconds is
what the workers spent outside jobs: starting, importing, waiting for work, or idle at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dptaucc.bench.outcomes import Outcome

__all__ = ["cost_summary", "method_totals", "cost_lines"]


def _add(into: dict, out: Outcome) -> None:
    into["jobs"] = into.get("jobs", 0) + 1
    for key, value in (("job_s", out.seconds), ("fit_s", out.fit_seconds),
                       ("eval_s", out.eval_seconds)):
        into[key] = into.get(key, 0.0) + (value or 0.0)


#: decimals of the seconds kept (milliseconds: a quick run's fits sum to a few hundredths)
DECIMALS = 3


def _rounded(d: dict) -> dict:
    return {k: round(v, DECIMALS) if isinstance(v, float) else v for k, v in d.items()}


def cost_summary(outcomes: Iterable[Outcome], wall_seconds: float,
                 workers: int | None, *, core_seconds: float | None = None,
                 tasks: int | None = None, task_seconds: float | None = None) -> dict:
    """Core-seconds of the jobs that ran: ``job_s``, ``fit_s``, ``eval_s`` in total and per
    method (``methods``); with the number of local ``workers``, ``core_s`` = workers × wall and
    ``outside_jobs_s`` = ``core_s`` − ``job_s``.

    On a cluster: ``workers`` = the worker processes of all its tasks, ``core_seconds`` = the
    CPU-seconds SLURM allocated them (elapsed × CPUs per task, ``sacct`` CPUTimeRAW) and
    ``core_s`` is that; ``tasks`` and ``task_seconds`` (their summed elapsed time) are added.

    >>> outcomes = [Outcome("ran", algorithm="dp_taucc", seconds=2.0, fit_seconds=1.5,
    ...                     eval_seconds=0.25),
    ...             Outcome("ran", algorithm="dpm", seconds=1.0, fit_seconds=0.5),
    ...             Outcome("skipped", algorithm="dpm", seconds=9.0)]  # not counted
    >>> summary = cost_summary(outcomes, wall_seconds=2.5, workers=2)
    >>> summary["jobs"], summary["job_s"], summary["core_s"], summary["outside_jobs_s"]
    (2, 3.0, 5.0, 2.0)
    >>> summary["methods"]["dp_taucc"]
    {'jobs': 1, 'job_s': 2.0, 'fit_s': 1.5, 'eval_s': 0.25}
    """
    total: dict = {"jobs": 0, "job_s": 0.0, "fit_s": 0.0, "eval_s": 0.0}
    methods: dict[str, dict] = {}
    for out in outcomes:
        if out.outcome != "ran":
            continue
        _add(total, out)
        _add(methods.setdefault(out.algorithm or "?", {}), out)
    core = core_seconds if core_seconds is not None else (
        None if workers is None or tasks is not None else workers * wall_seconds)
    out = {**_rounded(total), "workers": workers,
           "core_s": None if core is None else round(core, DECIMALS),
           "outside_jobs_s": None if core is None else round(core - total["job_s"], DECIMALS),
           "methods": {m: _rounded(v) for m, v in sorted(methods.items())}}
    if tasks is not None:
        out["tasks"] = tasks
        out["task_s"] = None if task_seconds is None else round(task_seconds, DECIMALS)
    return out


def method_totals(experiments: Mapping[str, Mapping]) -> dict[str, dict]:
    """Per method, the sums over experiments of their ``core_seconds['methods']``.

    >>> experiments = {
    ...     "fig2": {"core_seconds": {"methods": {"dpm": {"jobs": 2, "job_s": 3.0}}}},
    ...     "table": {"core_seconds": {"methods": {"dpm": {"jobs": 1, "job_s": 1.0},
    ...                                            "dp_taucc": {"jobs": 5, "job_s": 9.0}}}},
    ...     "old": {}}  # no cost recorded
    >>> totals = method_totals(experiments)
    >>> list(totals), totals["dpm"]["jobs"], totals["dpm"]["job_s"]  # most expensive first
    (['dp_taucc', 'dpm'], 3, 4.0)
    """
    out: dict[str, dict] = {}
    for info in experiments.values():
        for method, cost in ((info.get("core_seconds") or {}).get("methods") or {}).items():
            acc = out.setdefault(method, {"jobs": 0, "job_s": 0.0, "fit_s": 0.0, "eval_s": 0.0})
            for key in acc:
                acc[key] += cost.get(key, 0)
    return {m: _rounded(v) for m, v in sorted(out.items(), key=lambda kv: -kv[1]["job_s"])}


def _s(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def cost_lines(log: Mapping) -> list[str]:
    """REPORT's "where the time went" tables from a run log (empty for older logs).

    >>> outcomes = [Outcome("ran", algorithm="dpm", seconds=1.0, fit_seconds=0.5)]
    >>> log = {"experiments": {"fig2": {"seconds": 1.5,
    ...                                 "core_seconds": cost_summary(outcomes, 1.5, 2)}}}
    >>> lines = cost_lines(log)
    >>> any(line.startswith("| fig2 | 1 |") for line in lines), cost_lines({"experiments": {}})
    (True, [])
    """
    exps = {e: i["core_seconds"] for e, i in log.get("experiments", {}).items()
            if i.get("core_seconds")}
    if not exps:
        return []
    lines = ["Where the time went (seconds of wall time in the workers, which are core-seconds "
             "on an otherwise idle machine; a job = its dataset from the worker's cache, the "
             "fit, the evaluation and its record stored; outside jobs = workers × wall minus "
             "the jobs: start-up, dispatch, idle workers; on a SLURM cluster, core-s is what "
             "SLURM allocated the tasks, elapsed × CPUs from sacct, and workers those of all "
             "its tasks):", "",
             "| experiment | jobs run | wall s | workers | core-s | in jobs | fits | evaluation "
             "| outside jobs |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for exp, c in exps.items():
        lines.append(f"| {exp} | {c['jobs']:,} | {_s(log['experiments'][exp].get('seconds'))} "
                     f"| {c.get('workers') or '-'} | {_s(c.get('core_s'))} | {_s(c['job_s'])} "
                     f"| {_s(c['fit_s'])} | {_s(c['eval_s'])} | {_s(c.get('outside_jobs_s'))} |")
    totals = log.get("methods_core_seconds") or method_totals(log["experiments"])
    lines += ["", "| method | jobs run | in jobs (core-s) | fits | evaluation | mean job ms |",
              "|---|---:|---:|---:|---:|---:|"]
    for method, c in totals.items():
        mean = 1000.0 * c["job_s"] / c["jobs"] if c["jobs"] else 0.0
        lines.append(f"| {method} | {c['jobs']:,} | {_s(c['job_s'])} | {_s(c['fit_s'])} "
                     f"| {_s(c['eval_s'])} | {mean:.1f} |")
    return lines
