"""Peak resident memory of this process (and its children, e.g. Octave) during a block."""

from __future__ import annotations

import threading

import psutil


class PeakRSS:
    """Context manager sampling RSS every ``interval`` s; ``peak_mb`` after exit.

    The peak includes whatever the process already held (the loaded dataset), as RSS does.
    """

    def __init__(self, interval: float = 0.01):
        self.interval = interval
        self.peak_mb = float("nan")
        self._proc = psutil.Process()
        self._stop = threading.Event()

    def _rss(self) -> int:
        total = self._proc.memory_info().rss
        for child in self._proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, self._rss())

    def __enter__(self) -> PeakRSS:
        self._peak = self._rss()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._rss())
        self.peak_mb = self._peak / 2**20
