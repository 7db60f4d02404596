"""What a sweep did, job by job, and the summary it ends with.

Each job ends as one :class:`Outcome`: ``ran`` (a new record, ok or failed), ``skipped``
(already done), ``excluded`` (outside its algorithm's protocol range, nothing stored),
``invalid`` (refused by validation, nothing stored), ``lost`` (its worker or cluster task
died before it stored anything) or ``notrun`` (a cluster task returned it unstarted, e.g. at
its time limit; the driver submits it again, so it ends a sweep only when it was never
submitted again). A sweep with failed, invalid or lost jobs ends non-zero
with :func:`failure_summary`: how many, of which kind, and one record holding a traceback.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outcome:
    outcome: str  # ran | skipped | excluded | invalid | lost | notrun
    status: str | None = None  # the record's status (ok | error) when there is one
    run_id: str | None = None
    error: str | None = None  # first line of the error message
    record: str | None = None  # path of the stored record
    algorithm: str | None = None  # the record's algorithm
    fit_seconds: float | None = None  # the record's fit_time_s and eval_time_s
    eval_seconds: float | None = None
    seconds: float | None = None  # the job in its worker: load, fit, evaluation, store

    @property
    def failed(self) -> bool:
        return self.outcome in ("invalid", "lost", "notrun") or (
            self.outcome in ("ran", "skipped") and self.status not in (None, "ok"))

    @property
    def kind(self) -> str:
        """The exception type of a failure (``ValueError``), or the outcome."""
        head = (self.error or "").split(":", 1)[0].strip()
        return head if head.isidentifier() else self.outcome

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        return cls(**json.loads(text))


def from_record(outcome: str, record: Mapping | None, record_path: str | Path | None = None,
                ) -> Outcome:
    """The outcome of :func:`run.run_job` given its ``(outcome, record)``."""
    if record is None:
        return Outcome(outcome)
    err = str(record.get("error") or "").splitlines()
    return Outcome(outcome, record.get("status"), record.get("run_id"),
                   err[0] if err else None, None if record_path is None else str(record_path),
                   record.get("algorithm"), _seconds(record.get("fit_time_s")),
                   _seconds(record.get("eval_time_s")))


def _seconds(value) -> float | None:
    return None if value is None else float(value)


def count(outcomes: Iterable[Outcome]) -> Counter:
    """Jobs per outcome, with ``ran`` split into ``ok`` and ``error``."""
    out: Counter = Counter()
    for o in outcomes:
        out[o.status if o.outcome == "ran" and o.status else o.outcome] += 1
    return out


def failure_summary(outcomes: Iterable[Outcome], rerun_hint: str = "") -> str | None:
    """``None`` when nothing failed; else how many failed, of which kind, and one example."""
    failed = [o for o in outcomes if o.failed]
    if not failed:
        return None
    kinds = Counter(o.kind for o in failed)
    lines = [f"{len(failed)} job(s) failed: "
             + ", ".join(f"{n} {k}" for k, n in kinds.most_common())]
    example = next((o for o in failed if o.record), failed[0])
    if example.record:
        lines.append(f"  e.g. {example.record} (its 'error' field holds the traceback): "
                     f"{example.error}")
    elif example.error:
        lines.append(f"  e.g. {example.error}")
    lines.append("  A rerun retries failed jobs" + (f": {rerun_hint}" if rerun_hint else ".")
                 + " (--no-retry / bench.retry_failed=false skips them).")
    return "\n".join(lines)
