"""What else ran on the machine while a job ran: other processes' busy CPUs and the load.

Fit times are only comparable when nothing else competes for the CPUs. Around a block, the
system-wide busy CPU time (``/proc/stat`` through psutil) minus this process's own CPU time
and its children's -- finished ones and live ones, such as DPHD's persistent Octave -- over the
wall time, is the number of CPUs other processes kept busy; the 1-minute load average at the
start is kept beside it. The kernel counts CPU time in ticks (10 ms), so a single fit of a few
milliseconds reads 0 or several CPUs: judge idleness over many fits, weighted by their time.
"""

from __future__ import annotations

import os
import time

import psutil

#: fields of psutil.cpu_times() that are not work (guest time is already inside user time)
_NOT_BUSY = ("idle", "iowait", "guest", "guest_nice")


def _system_busy() -> float:
    t = psutil.cpu_times()
    return sum(v for k, v in t._asdict().items() if k not in _NOT_BUSY)


def _own_cpu(proc: psutil.Process) -> float:
    """CPU seconds of this process, its finished children and its live descendants."""
    t = proc.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in proc.children(recursive=True):
        try:
            c = child.cpu_times()
        except psutil.Error:  # it ended meanwhile (then its time is in children_* once waited)
            continue
        total += c.user + c.system
    return total


class OtherLoad:
    """Context manager: after exit, ``other_busy_cpus`` = CPUs kept busy by other processes
    during the block (≈ 0 on an otherwise idle machine) and ``load_1m`` = the 1-minute load
    average when it started (it includes this process)."""

    def __init__(self):
        self._proc = psutil.Process()
        self.load_1m = float("nan")
        self.other_busy_cpus = float("nan")

    def __enter__(self) -> OtherLoad:
        try:
            self.load_1m = float(os.getloadavg()[0])
        except OSError:
            pass
        self._t0 = time.monotonic()
        self._busy0 = _system_busy()
        self._own0 = _own_cpu(self._proc)
        return self

    def __exit__(self, *exc) -> None:
        wall = time.monotonic() - self._t0
        other = (_system_busy() - self._busy0) - (_own_cpu(self._proc) - self._own0)
        if wall > 0:
            self.other_busy_cpus = max(0.0, other / wall)


def other_busy_cpus(seconds: float = 1.0) -> float:
    """CPUs other processes keep busy, measured over ``seconds`` of this process sleeping."""
    with OtherLoad() as load:
        time.sleep(seconds)
    return load.other_busy_cpus
