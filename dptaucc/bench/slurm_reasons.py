"""Why SLURM keeps a task pending, and whether waiting can help.

SLURM documents its pending reasons in "Job Reason Codes" (slurm.schedmd.com/job_reason_codes).
They fall in two kinds:

- **impossible**: the request as submitted violates a limit no wait can lift -- more CPUs,
  memory, time or nodes per task than the partition or the QOS/association allows
  (``PartitionConfig``, ``PartitionTimeLimit``, ``QOSMaxWallDurationPerJobLimit``,
  ``AssocMaxCpuPerJobLimit``, any ``...PerJob``/``...PerNode``/``QOSMin...`` limit), an
  account or QOS that may not use the partition (``InvalidAccount``, ``QOSNotAllowed``,
  ...), constraints no node has (``BadConstraints``), a dependency that can never be met or a
  reservation that was deleted. The driver cancels and says which, exit 2.
- **transient**: anything that clears as time passes or other jobs end -- ``Priority``,
  ``Resources``, ``BeginTime``, ``Dependency``, the nodes being reserved for maintenance,
  drained or down (``ReqNodeNotAvail``, ``NodeDown``, "Nodes required for job are DOWN,
  DRAINED or reserved ...", ``PartitionNodeLimit``, which SLURM also gives for drained nodes),
  a partition an administrator set down or inactive, a hold (``JobHeldUser``,
  ``JobHeldAdmin``: someone can release it), aggregate and per-user limits of the account or
  QOS (``AssocGrp...``, ``QOSGrp...``, ``...PerUser...``, ``AssocMaxJobsLimit``, ...). The
  driver waits them out up to a bound the user sets (``--slurm-max-wait``), saying what the
  cluster waits for and, where SLURM says, until when: the end of the reservation holding the
  nodes (``scontrol show reservation``) and SLURM's own expected start (``squeue --start``).

A reason this table does not know counts as transient (bounded by the same wait): cancelling
loses the tasks' place in the queue, waiting costs at most the bound.
"""

from __future__ import annotations

import datetime as _dt
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: reasons no wait can clear, with what they mean
IMPOSSIBLE = {
    "PartitionConfig": "the request (CPUs, memory, time or nodes per task) exceeds what the "
                       "partition's nodes offer",
    "PartitionTimeLimit": "a time limit above the partition's maximum",
    "BadConstraints": "constraints no node satisfies",
    "InvalidAccount": "an invalid account",
    "InvalidQOS": "an invalid QOS",
    "AccountNotAllowed": "the account may not use this partition",
    "QOSNotAllowed": "the QOS may not be used by this account or partition",
    "DependencyNeverSatisfied": "a dependency that can never be satisfied",
    "ReservationDeleted": "the reservation it asks for no longer exists",
    "MaxMemPerLimit": "more memory per CPU or per node than allowed",
    "DeadLine": "it cannot meet its deadline",
    "JobHoldMaxRequeue": "requeued too many times; held",
    "JobLaunchFailure": "SLURM could not launch it (a file system or program problem)",
}
#: per-task limits of an association or QOS: the request alone is above them
_PER_TASK_LIMIT = re.compile(r"^(Assoc|QOS)Max\w*Per(Job|Node)|^QOSMin\w+")

#: what the cluster waits for, by reason (prefixes end in ``*``)
TRANSIENT = {
    "Priority": "jobs of higher priority go first",
    "Resources": "the CPUs or memory it asks for are in use by other jobs",
    "BeginTime": "its earliest start time has not come",
    "Dependency": "a job it depends on has not finished",
    "JobArrayTaskLimit": "the array's own limit on tasks running at once",
    "None": "the scheduler has not looked at it yet",
    "Reservation": "its advance reservation has not started",
    "ReqNodeNotAvail": "its nodes are reserved (maintenance), drained or down",
    "NodeDown": "a node it needs is down",
    "Nodes required for job are DOWN": "its nodes are reserved (maintenance), drained or down",
    "PartitionNodeLimit": "its nodes are drained or down, or the partition's node limits "
                          "changed",
    "PartitionDown": "an administrator set the partition down",
    "PartitionInactive": "an administrator set the partition inactive",
    "JobHeldUser": "it is held (scontrol release <job id> lets it go)",
    "JobHeldAdmin": "an administrator holds it",
    "Licenses": "a license it needs is in use",
    "Prolog": "its prolog is still running",
    "Cleaning": "its previous run is still being cleaned up",
    "Constraints": "no node with its constraints is free at this time",
    "BurstBuffer*": "burst buffer resources",
    "FedJobLock": "the federation's clusters to agree",
    "SchedDefer": "the scheduler defers immediate allocations",
    "AssocGrp*": "an aggregate limit of your account is reached (clears as its other jobs "
                 "end, or as used minutes decay)",
    "QOSGrp*": "an aggregate limit of the QOS is reached (clears as its other jobs end)",
    "Max*PerAccount": "a per-account limit of the QOS is reached (clears as the account's "
                      "other jobs end)",
    "AssocMaxJobsLimit": "your limit on running jobs is reached (clears as your jobs end)",
    "AssocMaxSubmitJobLimit": "your limit on queued jobs is reached (clears as your jobs end)",
    "QOSMax*PerUser*": "your per-user limit of the QOS is reached (clears as your jobs end)",
    "QOSJobLimit": "the QOS's job count limit is reached",
    "Association*": "a limit of your account is reached",
    "QOS*": "a limit of the QOS is reached",
    "AccountingPolicy": "an accounting limit is reached",
}
#: reasons whose wait ends when a reservation holding the nodes ends
_NODES_HELD = ("ReqNodeNotAvail", "Nodes required for job are DOWN", "NodeDown",
               "PartitionNodeLimit")


def code(reason: str) -> str:
    """The reason's code: what ``squeue %r`` prints before its first comma
    (``ReqNodeNotAvail, Reserved for maintenance`` -> ``ReqNodeNotAvail``)."""
    return reason.split(",")[0].strip()


def impossible(reason: str) -> str | None:
    """What an impossible reason means, or None when waiting may clear it."""
    c = code(reason)
    if c in IMPOSSIBLE:
        return IMPOSSIBLE[c]
    if _PER_TASK_LIMIT.match(c):
        return "a per-task limit of the account or QOS is below the request"
    return None


def waits_for(reason: str) -> str:
    """What the cluster waits for before a task pending with ``reason`` can start."""
    c = code(reason)
    if c in TRANSIENT:
        return TRANSIENT[c]
    for key, what in TRANSIENT.items():
        if "*" in key and re.fullmatch(re.escape(key).replace(r"\*", ".*"), c):
            return what
    return f"SLURM's reason: {reason}"


def nodes_held(reason: str) -> bool:
    """Does ``reason`` mean the nodes are reserved, drained or down?"""
    return code(reason) in _NODES_HELD


# ---------------------------------------------------------------- what SLURM says about time
def ask(cmd: Sequence[str]) -> str | None:
    """stdout of a SLURM command, or None when it fails or takes over 30 s."""
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def parse_time(text: str | None) -> _dt.datetime | None:
    """A SLURM timestamp (``2026-11-28T05:44:50``, the cluster's local time) or None
    (``N/A``, ``Unknown``, empty)."""
    try:
        return _dt.datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class Reservation:
    name: str
    start: _dt.datetime
    end: _dt.datetime
    nodes: frozenset[str]
    partition: str | None
    maintenance: bool


def reservations() -> list[Reservation]:
    """The cluster's advance reservations (``scontrol show reservation -o``)."""
    out = ask(["scontrol", "show", "reservation", "-o"]) or ""
    found = []
    for line in out.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        start, end = parse_time(fields.get("StartTime")), parse_time(fields.get("EndTime"))
        if not fields.get("ReservationName") or start is None or end is None:
            continue
        part = fields.get("PartitionName")
        found.append(Reservation(
            fields["ReservationName"], start, end, frozenset(hostnames(fields.get("Nodes"))),
            None if part in (None, "(null)") else part,
            "MAINT" in fields.get("Flags", "").split(",")))
    return found


def hostnames(expr: str | None) -> list[str]:
    """Node names of a SLURM host list (``node[01-03]``)."""
    if not expr or expr in ("(null)", "None"):
        return []
    out = ask(["scontrol", "show", "hostnames", expr])
    return out.split() if out else [expr]


def partition_nodes(partition: str | None) -> set[str]:
    """Nodes of the partition (the default one when None), from sinfo."""
    out = ask(["sinfo", "-h", "-o", "%P|%N"]) or ""
    nodes: set[str] = set()
    for line in out.splitlines():
        name, _, expr = line.strip().partition("|")
        if (partition is None and name.endswith("*")) or name.rstrip("*") == partition:
            nodes.update(hostnames(expr))
    return nodes


def drained(partition: str | None) -> list[str]:
    """``node: reason`` of the partition's drained or down nodes (``sinfo -R``)."""
    args = ["sinfo", "-R", "-h", "-o", "%n|%E"] + (["-p", partition] if partition else [])
    out = ask(args) or ""
    return [f"{n}: {why}" for n, _, why in (ln.partition("|") for ln in out.splitlines()) if n]


def blocking_reservations(partition: str | None, task_minutes: float,
                          now: _dt.datetime | None = None) -> list[Reservation]:
    """Reservations on the partition's nodes that a task submitted now would run into:
    they end after now and start before a task of ``task_minutes`` would end."""
    now = now or _dt.datetime.now()
    horizon = now + _dt.timedelta(minutes=task_minutes)
    nodes = partition_nodes(partition)
    return [r for r in reservations()
            if r.end > now and r.start < horizon
            and ((nodes and r.nodes & nodes) or (partition and r.partition == partition))]


def expected_starts(array_id: str) -> list[_dt.datetime]:
    """SLURM's expected start of the array's pending tasks (``squeue --start``; the backfill
    scheduler fills it in, usually within a minute)."""
    out = ask(["squeue", "-h", "-r", "-t", "PD", "-j", array_id, "-o", "%S"]) or ""
    return [t for t in (parse_time(x) for x in out.split()) if t is not None]


@dataclass(frozen=True)
class Explanation:
    """What the cluster waits for: ``text`` for the user, the end of the reservations holding
    the nodes and SLURM's expected start of the first pending task (None where unknown)."""

    text: str
    held_until: _dt.datetime | None
    expected_start: _dt.datetime | None


def explain(reasons: Iterable[str], array_id: str, partition: str | None,
            task_minutes: float) -> Explanation:
    """Why the array's tasks pend, for reasons that may clear: each reason's meaning, the
    reservations on the partition's nodes (maintenance windows), its drained or down nodes,
    and SLURM's expected start."""
    reasons = sorted(set(reasons))
    parts = [f"{r}: {waits_for(r)}" for r in reasons]
    held_until = None
    if any(nodes_held(r) for r in reasons):
        held = blocking_reservations(partition, task_minutes)
        if held:
            held_until = max(r.end for r in held)
            parts += [f"{'maintenance ' if r.maintenance else ''}reservation {r.name} holds "
                      f"the nodes {r.start:%Y-%m-%d %H:%M:%S} to {r.end:%Y-%m-%d %H:%M:%S}"
                      for r in held]
        down = drained(partition)
        if down:
            parts.append("drained or down: " + ", ".join(down[:3]))
    starts = expected_starts(array_id)
    first = min(starts) if starts else None
    if first is not None:
        parts.append(f"SLURM expects the first to start at {first:%Y-%m-%d %H:%M:%S}")
    return Explanation("; ".join(parts), held_until, first)
