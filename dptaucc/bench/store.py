"""The working store: one JSON record per finished job under ``<runs_dir>/<experiment>/``.

Writes are atomic (temporary file in the same directory, then ``os.replace``), so a crash or
Ctrl-C never leaves a half-written record. They are not flushed to the disk one by one (an
``fsync`` per record cost more than many fits): a power loss may lose the last records or
leave some unreadable, which the store reports, skips and runs again. A job is *done* when its
record says ``status="ok"``: reruns skip those and retry failed ones (unless told not to).
Records are created with the usual file mode (0666 minus the umask, e.g. 0644), readable by the
group of a shared cluster store, not with the 0600 of a temporary file.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path


def _clean(value):
    """JSON cannot hold NaN/inf portably: store them as null / "inf"."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


@lru_cache(maxsize=1)
def _umask() -> int:
    """The process umask (read once: reading it means setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class RunStore:
    """Records of one experiment directory."""

    def __init__(self, runs_dir: str | os.PathLike, experiment: str):
        if not experiment or "/" in experiment or experiment.startswith("."):
            raise ValueError(f"invalid experiment name {experiment!r}")
        self.dir = Path(runs_dir) / experiment

    def path(self, run_id: str) -> Path:
        return self.dir / f"{run_id}.json"

    def get(self, run_id: str) -> dict | None:
        try:
            with open(self.path(run_id), encoding="utf-8") as fh:
                return json.load(fh)
        except FileNotFoundError:
            return None

    def is_done(self, run_id: str, retry_failed: bool = True) -> bool:
        """The job has a successful record (any record when ``retry_failed`` is False)."""
        if not retry_failed:
            return self.path(run_id).exists()
        try:
            rec = self.get(run_id)
        except ValueError:
            return False
        return rec is not None and rec.get("status") == "ok"

    def done_ids(self, retry_failed: bool = True) -> set[str]:
        """Run ids of the done jobs (see :meth:`is_done`)."""
        if not self.dir.exists():
            return set()
        if not retry_failed:
            return {p.stem for p in self.dir.glob("*.json")}
        return {r["run_id"] for r in self.records() if r.get("status") == "ok"}

    def write(self, record: dict) -> Path:
        """Atomically write ``record`` (must hold ``run_id``) and return its path."""
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.path(record["run_id"])
        fd, tmp = tempfile.mkstemp(prefix=f".{record['run_id']}.", suffix=".tmp", dir=self.dir)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "w", encoding="utf-8") as fh:  # one write (json.dump: hundreds)
                fh.write(json.dumps({k: _clean(v) for k, v in record.items()}, sort_keys=True))
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return target

    def records(self) -> Iterator[dict]:
        """Every stored record (temporary files of interrupted writes are ignored; an
        unreadable record, e.g. after a power loss, is reported and skipped)."""
        if not self.dir.exists():
            return
        for p in sorted(self.dir.glob("*.json")):
            try:
                with open(p, encoding="utf-8") as fh:
                    yield json.load(fh)
            except (OSError, ValueError) as exc:
                warnings.warn(f"skipping unreadable record {p}: {exc}", stacklevel=2)

    def __len__(self) -> int:
        return len(list(self.dir.glob("*.json"))) if self.dir.exists() else 0
