"""What SLURM says about a job array, polled without ever waiting blind.

:func:`watch` follows the tasks of one array until each has ended: with a result (submitit's
result pickle), dead in a state SLURM reported (FAILED, CANCELLED, OUT_OF_MEMORY, TIMEOUT,
...), or lost because neither the queue (``squeue``) nor accounting (``sacct``) has known it
for a few polls (SLURM keeps no accounting trace of a task cancelled while pending in a partly
started array). While it waits it prints why tasks are pending when that changes, and it
stops with :class:`execution.ClusterError` when they wait for a reason that cannot pass
(PartitionConfig: the request exceeds every node of the partition, ...).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dptaucc.bench.execution import ClusterError

#: states of a task that ended without the result pickle being a success of ours
DEATHS = ("FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
          "BOOT_FAIL", "DEADLINE", "COMPLETED", "REVOKED", "SPECIAL_EXIT")
#: pending reasons no wait can clear, with what they mean
HOPELESS = {
    "PartitionConfig": "the request (CPUs, memory, time or nodes per task) exceeds what the "
                       "partition's nodes offer",
    "PartitionNodeLimit": "more nodes than the partition allows",
    "PartitionTimeLimit": "a time limit above the partition's maximum",
    "BadConstraints": "constraints no node satisfies",
    "ReqNodeNotAvail": "the nodes it needs are down, drained or reserved",
    "InvalidAccount": "an invalid account",
    "InvalidQOS": "an invalid QOS",
}
#: polls, and seconds, a task may be absent from both squeue and sacct before it counts as
#: lost (accounting may take a few seconds to record a task slurmctld already forgot)
ABSENT_POLLS = 3
ABSENT_S = 15.0
#: polls a hopeless pending reason must persist before the driver gives up
HOPELESS_POLLS = 2
#: polls a dead task's result pickle is still awaited (file systems lag)
GRACE_POLLS = 1


def _run(cmd: Sequence[str]) -> str | None:
    """stdout of a SLURM command, or None when it fails or takes over 30 s."""
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


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
    print(f"[slurm] {msg}", file=sys.stderr, flush=True)


def watch(tasks: Sequence, name: str, poll_s: float,
          on_end: Callable[[int, TaskEnd], None], *, on_cluster: bool = True) -> None:
    """Follow submitit ``tasks`` (one array) until each has ended; call ``on_end(i, end)``.
    Polls every second at first, every ``poll_s`` seconds after ``4 * poll_s``.

    ``on_cluster`` False (submitit's local executor): the tasks' own ``done()`` decides."""
    from submitit.core.utils import pickle_load

    array_id = tasks[0].job_id.split("_")[0]
    left = dict(enumerate(tasks))
    absent: Counter = Counter()
    since: dict[int, float] = {}
    dead_polls: Counter = Counter()
    hopeless_polls = 0
    last_reasons = None
    started = time.monotonic()
    while left:
        queue = queue_states(array_id) if on_cluster else {}
        acct = (accounting_states(array_id) or {}) if on_cluster else {}
        reasons: Counter = Counter()
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
                if state == "PENDING" and reason not in ("None", ""):
                    reasons[reason] += 1
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
                on_end(i, end)
        bad = [r for r in reasons if r.split(",")[0] in HOPELESS]
        hopeless_polls = hopeless_polls + 1 if bad else 0
        if hopeless_polls >= HOPELESS_POLLS:
            cancel(array_id)
            reason = bad[0].split(",")[0]
            raise ClusterError(
                f"SLURM cannot run the tasks of {name}: they are pending with reason {reason} "
                f"({HOPELESS[reason]}); array {array_id} cancelled. Ask for less "
                f"(--slurm-cpus, --slurm-mem-gb, --slurm-time) or another partition "
                f"(sinfo lists them)")
        summary = dict(sorted(reasons.items()))
        if on_cluster and left and summary and summary != last_reasons:
            _log(f"{name}: {sum(reasons.values())} task(s) pending ("
                 + ", ".join(f"{r}: {n}" for r, n in summary.items()) + ")")
        last_reasons = summary
        if left:  # look often at first (short arrays), then every poll_s
            time.sleep(min(poll_s, max(1.0, (time.monotonic() - started) / 4)))
