"""What SLURM says about a job array, polled without ever waiting blind.

:func:`watch` follows the tasks of one array until each has ended: with a result (submitit's
result pickle), dead in a state SLURM reported (FAILED, CANCELLED, OUT_OF_MEMORY, TIMEOUT,
...), or lost because neither the queue (``squeue``) nor accounting (``sacct``) has known it
for a few polls (SLURM keeps no accounting trace of a task cancelled while pending in a partly
started array). While tasks pend it says why and what the cluster waits for
(:mod:`slurm_reasons`): a reason that can never clear (PartitionConfig: the request exceeds
every node of the partition, ...) stops it with :class:`execution.ClusterError`; one that may
clear (a maintenance reservation, drained nodes, Priority, Resources, ...) is waited out for
at most :attr:`Patience.max_wait_s` without progress (no task running or ending), or less when
a reservation holds the nodes beyond that bound.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dptaucc.bench import slurm_reasons as why
from dptaucc.bench.execution import ClusterError
from dptaucc.bench.slurm_reasons import ask as _run

#: states of a task that ended without the result pickle being a success of ours
DEATHS = ("FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
          "BOOT_FAIL", "DEADLINE", "COMPLETED", "REVOKED", "SPECIAL_EXIT")
#: polls, and seconds, a task may be absent from both squeue and sacct before it counts as
#: lost (accounting may take a few seconds to record a task slurmctld already forgot)
ABSENT_POLLS = 3
ABSENT_S = 15.0
#: polls an impossible pending reason must persist before the driver gives up
HOPELESS_POLLS = 2
#: default bound, in hours, on waiting for pending tasks while none of the array runs
MAX_WAIT_H = 48.0
#: seconds between two explanations of the same pending reasons (reservations, expected start)
EXPLAIN_S = 60.0
#: polls a dead task's result pickle is still awaited (file systems lag)
GRACE_POLLS = 1


def queue_states(array_id: str) -> dict[str, tuple[str, str]]:
    """``{"<array>_<task>": (state, reason)}`` of the array's tasks slurmctld still knows
    (ended ones too, for ``MinJobAge`` seconds: accounting may lag behind)."""
    out = _run(["squeue", "-h", "-r", "-t", "all", "-j", array_id, "-o", "%i|%T|%r"]) or ""
    states = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and "[" not in parts[0]:
            states[parts[0]] = (parts[1], parts[2])
    return states


def accounting_states(array_id: str) -> dict[str, str] | None:
    """``{"<array>_<task>": state}`` from ``sacct`` (None when accounting does not answer)."""
    out = _run(["sacct", "-n", "-X", "-P", "-j", array_id, "-o", "JobID,State"])
    if out is None:
        return None
    states = {}
    for line in out.splitlines():
        jid, _, state = line.strip().partition("|")
        if jid and "[" not in jid:
            states[jid] = state.split()[0] if state else ""
    return states


def accounting_rows(job_id: str) -> dict[str, dict[str, str]] | None:
    """``{"<array>_<task>": {field: value}}`` of a job or array from ``sacct`` (JobIDRaw,
    NodeList, AllocCPUS, ElapsedRaw, CPUTimeRAW, State); None when accounting does not
    answer."""
    fields = ("JobID", "JobIDRaw", "NodeList", "AllocCPUS", "ElapsedRaw", "CPUTimeRAW", "State")
    out = _run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", ",".join(fields)])
    if out is None:
        return None
    rows = {}
    for line in out.splitlines():
        values = line.strip().split("|")
        if len(values) == len(fields) and "[" not in values[0]:
            rows[values[0]] = dict(zip(fields, values, strict=True))
    return rows


def accounting_works() -> bool:
    """Does ``sacct`` answer (accounting configured)?"""
    return _run(["sacct", "-n", "-X", "-S", "now-1minutes", "-o", "JobID"]) is not None


def cluster_cpus(partition: str | None) -> int | None:
    """CPUs of the partition's usable nodes (the default partition when None), from sinfo."""
    out = _run(["sinfo", "-h", "-o", "%P|%C"])
    if not out:
        return None
    for line in out.splitlines():
        name, _, cpus = line.strip().partition("|")
        default = name.endswith("*")
        if (partition is None and default) or name.rstrip("*") == partition:
            alloc, idle, other, total = (int(x) for x in cpus.split("/"))
            return total - other
    return None


def max_array_size() -> int | None:
    """The cluster's ``MaxArraySize`` (task ids must be below it), from scontrol."""
    out = _run(["scontrol", "show", "config"]) or ""
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize" and value.strip().isdigit():
            return int(value.strip())
    return None


def cancel(array_id: str) -> None:
    _run(["scancel", array_id])


@dataclass
class TaskEnd:
    """How one array task ended: its result, or the state SLURM reported for its death."""

    result: object = None
    state: str | None = None  # None: the result is the task's return value
    detail: str = ""


def _log(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(f"[slurm] {msg}", file=sys.stderr)  # above a progress bar, not inside it


@dataclass
class Patience:
    """How long tasks may pend for reasons that can clear: ``max_wait_s`` without progress
    (no task of the array running or ending), judged against reservations on ``partition``'s
    nodes that a task of ``task_minutes`` would run into."""

    max_wait_s: float = MAX_WAIT_H * 3600
    partition: str | None = None
    task_minutes: float = 240.0
    option: str = "--slurm-max-wait"  # how the user sets the bound (for messages)

    def bound(self) -> str:
        return f"{self.option} {self.max_wait_s / 3600:g} h"


def _clock(seconds_from_now: float) -> str:
    then = _dt.datetime.now() + _dt.timedelta(seconds=seconds_from_now)
    return f"{then:%Y-%m-%d %H:%M:%S}"


class _Waiting:
    """The pending side of :func:`watch`: impossible reasons, the bounded wait and its
    messages."""

    def __init__(self, name: str, array_id: str, patience: Patience):
        self.name, self.array_id, self.patience = name, array_id, patience
        self.idle_since = time.monotonic()
        self.hopeless_polls = 0
        self.last_summary: dict | None = None
        self.last_text = ""
        self.explained_at = -EXPLAIN_S

    def progress(self) -> None:
        self.idle_since = time.monotonic()

    def _stop(self, why_text: str) -> None:
        cancel(self.array_id)
        raise ClusterError(f"SLURM cannot run the tasks of {self.name}: {why_text}; array "
                           f"{self.array_id} cancelled (finished records are kept; a rerun "
                           f"submits the rest)")

    def check(self, reasons: Counter, n_pending: int, running: bool) -> None:
        bad = [r for r in reasons if why.impossible(r)]
        self.hopeless_polls = self.hopeless_polls + 1 if bad else 0
        if self.hopeless_polls >= HOPELESS_POLLS:
            code = why.code(bad[0])
            self._stop(f"they are pending with reason {code} ({why.impossible(bad[0])}). Ask "
                       f"for less (--slurm-cpus, --slurm-mem-gb, --slurm-time) or another "
                       f"partition (sinfo lists them)")
        if running or not n_pending:
            self.progress()  # not waiting for the cluster: tasks run (or end)
            self.last_summary = None
            return
        waited = time.monotonic() - self.idle_since
        left = self.patience.max_wait_s - waited
        summary = dict(sorted(reasons.items()))
        now = time.monotonic()
        if summary != self.last_summary or now - self.explained_at >= EXPLAIN_S:
            self.explained_at = now
            p = self.patience
            ex = why.explain(reasons, self.array_id, p.partition, p.task_minutes)
            if ex.held_until is not None and ex.held_until > (
                    _dt.datetime.now() + _dt.timedelta(seconds=left)):
                self._stop(f"{ex.text}; that is after the wait bound ({_clock(left)}, "
                           f"{p.bound()}). Submit after the reservation ends, or raise "
                           f"{p.option}")
            text = (f"{self.name}: {n_pending} task(s) pending ("
                    + ", ".join(f"{r}: {n}" for r, n in summary.items()) + ")"
                    + (f"; waiting for {ex.text}" if ex.text else "")
                    + f"; waiting at most until {_clock(left)} ({p.bound()} without progress)")
            if summary and (summary != self.last_summary or ex.text != self.last_text):
                _log(text)
            self.last_summary, self.last_text = summary, ex.text
        if left <= 0:
            codes = "; ".join(sorted(reasons)) or "no reason given"
            self._stop(f"no task started for {waited / 3600:.2f} h ({self.patience.bound()}); "
                       f"they are pending with reason {codes}. Rerun when the cluster is "
                       f"free, or raise {self.patience.option}")


def watch(tasks: Sequence, name: str, poll_s: float,
          on_end: Callable[[int, TaskEnd], None], *, on_cluster: bool = True,
          patience: Patience | None = None) -> None:
    """Follow submitit ``tasks`` (one array) until each has ended; call ``on_end(i, end)``.
    Polls every second at first, every ``poll_s`` seconds after ``4 * poll_s``. Tasks pending
    for a reason that may clear are waited for as ``patience`` allows (:class:`Patience`).

    ``on_cluster`` False (submitit's local executor): the tasks' own ``done()`` decides."""
    from submitit.core.utils import pickle_load

    array_id = tasks[0].job_id.split("_")[0]
    left = dict(enumerate(tasks))
    absent: Counter = Counter()
    since: dict[int, float] = {}
    dead_polls: Counter = Counter()
    waiting = _Waiting(name, array_id, patience or Patience())
    seen_running: set[int] = set()
    started = time.monotonic()
    while left:
        queue = queue_states(array_id) if on_cluster else {}
        acct = (accounting_states(array_id) or {}) if on_cluster else {}
        reasons: Counter = Counter()
        n_pending, running = 0, False
        for i, task in list(left.items()):
            end = None
            if task.paths.result_pickle.exists():
                try:
                    kind, value = pickle_load(task.paths.result_pickle)
                except (EOFError, OSError):  # being written: next poll
                    continue
                end = (TaskEnd(value) if kind == "success" else
                       TaskEnd(state="FAILED", detail=str(value).strip().splitlines()[-1]))
            elif not on_cluster:
                if task.done():
                    end = TaskEnd(state=task.state, detail="the task ended without a result")
            elif task.job_id in queue or task.job_id in acct:
                absent.pop(i, None)
                since.pop(i, None)
                state, reason = queue.get(task.job_id, (acct.get(task.job_id, ""), ""))
                state = state.split()[0] if state else ""
                if state == "PENDING":
                    n_pending += 1
                    if reason not in ("None", ""):
                        reasons[reason] += 1
                elif state not in DEATHS:
                    running = True
                    if i not in seen_running:
                        seen_running.add(i)
                        waiting.progress()
                if state in DEATHS:
                    dead_polls[i] += 1
                    if dead_polls[i] > GRACE_POLLS:
                        end = TaskEnd(state=state, detail=f"SLURM reported {state}")
            else:
                absent[i] += 1
                since.setdefault(i, time.monotonic())
                if absent[i] >= ABSENT_POLLS and time.monotonic() - since[i] >= ABSENT_S:
                    end = TaskEnd(state="ABSENT", detail=(
                        f"task {task.job_id} is in neither squeue nor sacct (cancelled while "
                        f"pending, or purged)"))
            if end is not None:
                left.pop(i)
                waiting.progress()
                on_end(i, end)
        if on_cluster and left:
            waiting.check(reasons, n_pending, running)
        if left:  # look often at first (short arrays), then every poll_s
            time.sleep(min(poll_s, max(1.0, (time.monotonic() - started) / 4)))
