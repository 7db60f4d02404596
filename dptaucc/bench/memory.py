"""Peak resident memory of this process (and its working children, e.g. Octave) during a block.

The samples are taken by one thread per process that serves block after block: starting a
thread for every block made each job wait for the new thread to be scheduled (0.2 ms and
more on a busy machine, tens of thousands of times in a sweep). A block that begins while
another one of the same process is measured gets a sampling thread of its own.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import psutil

from dptaucc.bench.contention import live_descendants, this_process

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


#: whether this process's kernel reports VmHWM, by process id (asked at the first block)
_HWM_READABLE: dict[int, bool] = {}


def _kernel_peak() -> bool:
    """Reset VmHWM for a new block; True when the kernel both resets and reports it."""
    if not _reset_hwm():
        return False
    pid = os.getpid()
    if pid not in _HWM_READABLE:
        _HWM_READABLE[pid] = _hwm_bytes() is not None
    return _HWM_READABLE[pid]


class _Sampler:
    """A sampling thread: takes the samples of one block at a time, at the block's own times.

    The thread is told when a block begins only if it is idle; when a block ends it is not
    woken (it finds out at its next sample time and sleeps until the next block's), so that a
    sweep of short jobs costs it a few wake-ups a second, not two per job."""

    def __init__(self):
        self._cond = threading.Condition()
        self._block: PeakRSS | None = None
        self._idle = False  # waiting for a block, not for a sample time
        self._closed = False
        threading.Thread(target=self._serve, daemon=True, name="PeakRSS sampler").start()

    def take(self, block: PeakRSS) -> bool:
        """Sample ``block`` from now until :meth:`release`; False when another block is
        being sampled."""
        with self._cond:
            if self._block is not None:
                return False
            self._block = block
            if self._idle:
                self._cond.notify()
        return True

    def release(self) -> None:
        """Stop sampling the block taken (a sample being taken ends first)."""
        with self._cond:
            self._block = None

    def close(self) -> None:
        """End the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _serve(self) -> None:
        with self._cond:
            while not self._closed:
                block = self._block
                if block is None:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                    continue
                delay = block._next_sample - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                else:
                    block._sample()


#: the shared sampler of this process, by process id (a forked child starts its own)
_SAMPLERS: dict[int, _Sampler] = {}


def _shared_sampler() -> _Sampler:
    pid = os.getpid()
    if pid not in _SAMPLERS:
        _SAMPLERS[pid] = _Sampler()
    return _SAMPLERS[pid]


class PeakRSS:
    """Context manager: ``peak_mb`` after exit = peak RSS of this process during the block
    (the kernel's VmHWM, reset on entry, where Linux allows it; else sampled every
    ``interval`` s) plus the largest sampled RSS of the child processes that worked during
    the block (sampled every ``child_interval`` s, as listing children scans /proc; a process
    without children skips the scan): children started in the block, or
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
        self._proc = this_process()

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

    def _sample(self) -> None:
        """One sample time: this process's RSS (without the kernel's counter) and, every
        ``child_interval``, the children's."""
        self._next_sample += self._step
        self._tick += 1
        if not self._kernel:
            self._self_peak = max(self._self_peak, self._proc.memory_info().rss)
        if self._tick % self._child_every == 0:
            self._child_peak = max(self._child_peak, self._children_rss())

    def __enter__(self) -> PeakRSS:
        self._kernel = _kernel_peak()
        # a reset VmHWM starts from the current RSS: no sample needed
        self._self_peak = 0 if self._kernel else self._proc.memory_info().rss
        self._idle_children = self._children_cpu()
        self._child_peak = 0
        every = max(1, round(self.child_interval / self.interval))
        # with the kernel's counter only the children are sampled: sample times for them only
        self._step, self._child_every = ((every * self.interval, 1) if self._kernel
                                         else (self.interval, every))
        self._tick = 0
        self._next_sample = time.monotonic() + self._step
        self._sampler = _shared_sampler()
        self._own_sampler = not self._sampler.take(self)
        if self._own_sampler:  # a block inside a block, or in another thread at the same time
            self._sampler = _Sampler()
            self._sampler.take(self)
        return self

    def __exit__(self, *exc) -> None:
        self._sampler.release()
        if self._own_sampler:
            self._sampler.close()
        own = max(self._self_peak, (_hwm_bytes() if self._kernel else None) or 0,
                  self._proc.memory_info().rss)
        self._child_peak = max(self._child_peak, self._children_rss())
        self.peak_mb = (own + self._child_peak) / 2**20
