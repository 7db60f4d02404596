"""What else ran on the machine while a job ran: other processes' busy CPUs and the load.

Fit times are only comparable when nothing else competes for the CPUs. Around a block, the
system-wide busy CPU time (``/proc/stat`` through psutil) minus this process's own CPU time
and its children's -- finished ones and live ones, such as DPHD's persistent Octave -- over the
wall time, is the number of CPUs other processes kept busy; the 1-minute load average at the
start is kept beside it. The kernel counts CPU time in ticks (10 ms), so a single fit of a few
milliseconds reads 0 or several CPUs: judge idleness over many fits, weighted by their time.

Listing the live descendants reads the kernel's list of each process's children (Linux; else
psutil scans every process of the machine, 2-5 ms); a process without children (one system
call says so) skips it, and otherwise a block lists them once, at its end, and the next block
of the same process starts from that list: only the job code spawns children, and it runs
inside the blocks.
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


#: the live descendants seen at the end of this process's last block, by process id (a forked
#: child starts with no list of its own)
_LAST_SEEN: dict[int, list[psutil.Process]] = {}


#: this process as a psutil.Process, by process id (a forked child makes its own)
_THIS: dict[int, psutil.Process] = {}


def this_process() -> psutil.Process:
    """This process (one psutil.Process per process, not one per block)."""
    pid = os.getpid()
    if pid not in _THIS:
        _THIS[pid] = psutil.Process(pid)
    return _THIS[pid]


def has_children() -> bool:
    """Does this process have a child (running, or ended and not yet waited for)? One system
    call, which leaves an ended child to whoever waits for it."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _kernel_lists_children() -> bool:
    """Does the kernel list each thread's children (Linux with CONFIG_PROC_CHILDREN)?"""
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _child_pids(pid: int) -> list[int]:
    """Direct children of ``pid``, from the kernel's list of each of its threads."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # it ended
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(p) for p in fh.read().split())
        except OSError:  # the thread or the process ended meanwhile
            continue
    return out


def live_descendants(proc: psutil.Process) -> list[psutil.Process]:
    """``proc``'s live descendants (``proc`` must be this process); no scan without children.

    Read from the kernel's lists of each process's children (a few small files per
    descendant) where Linux keeps them, instead of psutil's scan of every process of the
    machine (2-5 ms with a persistent Octave child, at every fit)."""
    if not has_children():
        return []
    if not _kernel_lists_children():
        return proc.children(recursive=True)
    found: list[psutil.Process] = []
    todo = [proc.pid]
    while todo:
        for pid in _child_pids(todo.pop()):
            try:
                found.append(psutil.Process(pid))
            except psutil.Error:  # it ended meanwhile
                continue
            todo.append(pid)
    return found


def _own_cpu(proc: psutil.Process, descendants: list[psutil.Process] | None = None) -> float:
    """CPU seconds of this process, its finished children and its live ``descendants``
    (listed now when not given)."""
    # the same clock-tick counts as psutil's /proc/<pid>/stat, in one system call
    t = os.times() if proc.pid == os.getpid() else proc.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in proc.children(recursive=True) if descendants is None else descendants:
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
        self._proc = this_process()
        self.load_1m = float("nan")
        self.other_busy_cpus = float("nan")

    def __enter__(self) -> OtherLoad:
        try:
            self.load_1m = float(os.getloadavg()[0])
        except OSError:
            pass
        self._t0 = time.monotonic()
        self._busy0 = _system_busy()
        known = _LAST_SEEN.get(self._proc.pid)
        self._own0 = _own_cpu(self._proc, known if known is not None or has_children() else [])
        return self

    def __exit__(self, *exc) -> None:
        wall = time.monotonic() - self._t0
        _LAST_SEEN[self._proc.pid] = kids = live_descendants(self._proc)
        busy = _system_busy()  # after the scan: its own CPU time is in both differences
        other = (busy - self._busy0) - (_own_cpu(self._proc, kids) - self._own0)
        if wall > 0:
            self.other_busy_cpus = max(0.0, other / wall)


def other_busy_cpus(seconds: float = 1.0) -> float:
    """CPUs other processes keep busy, measured over ``seconds`` of this process sleeping."""
    with OtherLoad() as load:
        time.sleep(seconds)
    return load.other_busy_cpus
