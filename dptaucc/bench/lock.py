"""One sweep at a time on a store: a lock file ``<runs_dir>/.lock`` naming its holder.

Two sweeps writing the same records would race, and their fits would share the CPUs (timings
of the runtime experiment become meaningless). The lock file is created atomically
(``O_CREAT | O_EXCL``) and holds the holder's pid, host, command line and start time; a
second sweep is refused with a message naming them. A lock left by a process that no longer
runs on this host (killed, crashed, rebooted) is stale: it is detected and replaced. A lock
held from another host cannot be checked from here; the message says how to remove it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import psutil

from dptaucc.bench import provenance

LOCK_NAME = ".lock"


class StoreLockedError(RuntimeError):
    """Another live sweep holds the store's lock; the message names it."""


def _holder() -> dict:
    proc = psutil.Process()
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "command": " ".join(sys.argv) or sys.executable,
            "started_at": provenance.utc_now(), "create_time": proc.create_time()}


def holder_alive(info: dict) -> bool | None:
    """Is the process that wrote ``info`` still running? None when it ran on another host."""
    if info.get("host") != socket.gethostname():
        return None
    try:
        proc = psutil.Process(int(info["pid"]))
        created = proc.create_time()
    except (psutil.NoSuchProcess, KeyError, TypeError, ValueError):
        return False
    except psutil.Error:
        return True  # exists but not ours to inspect
    recorded = info.get("create_time")
    # the same pid reused by a later process is not the holder
    return recorded is None or abs(created - float(recorded)) < 1.0


class StoreLock:
    """Context manager holding ``<runs_dir>/.lock`` for the duration of a sweep."""

    def __init__(self, runs_dir: str | os.PathLike):
        self.path = Path(runs_dir) / LOCK_NAME
        self._held = False

    def read(self) -> dict | None:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}

    def acquire(self) -> StoreLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        info = _holder()
        settle = time.monotonic() + 1.0  # a lock file may be seen before its holder wrote it
        for _attempt in range(100):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                other = self.read()
                if other is None:
                    continue  # released meanwhile
                if not other and time.monotonic() < settle:
                    time.sleep(0.05)
                    continue
                alive = holder_alive(other) if other else False
                if other and other.get("pid") == info["pid"] and alive:
                    raise StoreLockedError(f"{self.path} is already held by this process") from None
                if alive is False:
                    self._remove_stale(other)
                    continue
                raise StoreLockedError(self._message(other, alive)) from None
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(info, fh, indent=1)
            self._held = True
            return self
        raise StoreLockedError(f"could not take the lock {self.path}")

    def _remove_stale(self, other: dict) -> None:
        what = (f"of pid {other.get('pid')} on {other.get('host')} (started "
                f"{other.get('started_at')}; that process is gone)" if other else
                "that its holder never finished writing")
        print(f"[lock] removing a stale lock {what}: {self.path}", file=sys.stderr)
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def _message(self, other: dict, alive: bool | None) -> str:
        who = (f"pid {other.get('pid')} on {other.get('host')}, started "
               f"{other.get('started_at')}: {other.get('command')}")
        if alive is None:
            return (f"the results store {self.path.parent} is locked by a sweep on another "
                    f"host ({who}). Wait for it to finish, or, if it is gone, delete "
                    f"{self.path}.")
        return (f"another sweep is running on the results store {self.path.parent} ({who}). "
                f"Wait for it to finish (or stop it), or write to another results folder "
                f"(paths.results_dir=... / --results-dir ...).")

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        info = self.read()
        if info and info.get("pid") == os.getpid():
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
