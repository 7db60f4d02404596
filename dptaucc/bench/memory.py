"""Peak resident memory of this process (and its working children, e.g. Octave) during a block."""

from __future__ import annotations

import threading
from pathlib import Path

import psutil

from dptaucc.bench.contention import live_descendants

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM) of this process; False if unsupported."""
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def _hwm_bytes() -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakRSS:
    """Context manager: ``peak_mb`` after exit = peak RSS of this process during the block
    (the kernel's VmHWM, reset on entry, where Linux allows it; else sampled) plus the largest
    sampled RSS of the child processes that worked during the block (sampled every
    ``child_interval`` s, as listing children scans /proc; a process without children skips
    the scan): children started in the block, or
    alive before it and using CPU since (a persistent Octave). Children idle throughout, such
    as a process pool's waiting workers, are not the block's memory and are left out. The
    peak includes what the process already held (the loaded dataset).

    >>> with PeakRSS() as mem:
    ...     block = bytearray(50 * 2**20)
    >>> mem.peak_mb > 50
    True
    """

    def __init__(self, interval: float = 0.02, child_interval: float = 0.25):
        self.interval = interval
        self.child_interval = child_interval
        self.peak_mb = float("nan")
        self._proc = psutil.Process()
        self._stop = threading.Event()

    def _children_cpu(self) -> dict[int, float]:
        """CPU seconds used so far by each child process, by pid."""
        used = {}
        for child in live_descendants(self._proc):
            try:
                times = child.cpu_times()
                used[child.pid] = times.user + times.system
            except psutil.Error:
                pass
        return used

    def _children_rss(self) -> int:
        """Summed RSS of the children that are new or used CPU since the block began."""
        total = 0
        for child in live_descendants(self._proc):
            try:
                before = self._idle_children.get(child.pid)
                if before is not None:
                    times = child.cpu_times()
                    if times.user + times.system <= before:
                        continue
                total += child.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _loop(self) -> None:
        every = max(1, round(self.child_interval / self.interval))
        tick = 0
        while not self._stop.wait(self.interval):
            if not self._kernel:
                self._self_peak = max(self._self_peak, self._proc.memory_info().rss)
            tick += 1
            if tick % every == 0:
                self._child_peak = max(self._child_peak, self._children_rss())

    def __enter__(self) -> PeakRSS:
        self._kernel = _reset_hwm() and _hwm_bytes() is not None
        self._self_peak = self._proc.memory_info().rss
        self._idle_children = self._children_cpu()
        self._child_peak = 0
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        own = _hwm_bytes() if self._kernel else None
        own = max(self._self_peak, own or 0, self._proc.memory_info().rss)
        self._child_peak = max(self._child_peak, self._children_rss())
        self.peak_mb = (own + self._child_peak) / 2**20
