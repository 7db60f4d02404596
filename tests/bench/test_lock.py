"""One sweep per store: the lock names its holder; stale locks of dead processes are replaced."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dptaucc.bench.lock import StoreLock, StoreLockedError

REPO = Path(__file__).resolve().parents[2]
HOLD = ("import sys, time; from dptaucc.bench.lock import StoreLock; "
        "l = StoreLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)")


def test_second_sweep_is_refused_with_the_holders_name(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "--tag=holder"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLockedError) as err:
            StoreLock(tmp_path).acquire()
        msg = str(err.value)
        assert f"pid {holder.pid} on {socket.gethostname()}" in msg
        assert "--tag=holder" in msg and "started 20" in msg
        assert "another sweep is running" in msg
    finally:
        holder.kill()
        holder.wait()
    # its process is gone: the lock is stale, detected and replaced
    with StoreLock(tmp_path) as lock:
        info = json.loads(lock.path.read_text())
        assert info["pid"] == os.getpid()
    assert not (tmp_path / ".lock").exists()


def test_reused_pid_and_other_hosts(tmp_path):
    lock = StoreLock(tmp_path)
    # our own pid but another process start time: a reused pid, hence stale
    lock.path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "command": "old", "started_at": "x",
                                     "create_time": time.time() - 1e6}))
    lock.acquire().release()
    lock.path.write_text(json.dumps({"pid": 1, "host": "node-17", "command": "python -m x",
                                     "started_at": "2026-01-01T00:00:00+00:00"}))
    with pytest.raises(StoreLockedError, match=r"another host \(pid 1 on node-17.*delete"):
        lock.acquire()
    lock.path.write_text("")  # unreadable (a writer died mid-write): stale
    lock.acquire().release()


def test_reproduce_refuses_a_locked_store(tmp_path):
    results = tmp_path / "results" / "quick"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(results / "runs")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = subprocess.run(
            [sys.executable, "-m", "dptaucc.bench.reproduce", "--scale", "quick",
             "--experiments", "supp_h", "--results-dir", str(results), "--no-outputs",
             "--sweep", "seed=range(1)", "--sweep", "dataset=cstr", "--sweep", "epsilon=1",
             "--sweep", "algorithm.params.h=0.5"],
            cwd=REPO, capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode == 2
    assert f"pid {holder.pid}" in out.stderr and "another sweep is running" in out.stderr
    assert not list(results.rglob("*.json"))
