"""The peak memory of a block counts its own allocations and the children that worked in it,
not a pool's idle workers that happened to be alive."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from dptaucc.bench.memory import PeakRSS

#: a child that holds ~200 MB (touched pages) and waits; with an argument it then computes
_HOLDER = ("import sys, time\nblock = bytearray(200 * 2**20)\n"
           "block[::4096] = b'x' * len(block[::4096])\n"
           "print('ready', flush=True)\nsys.stdin.readline()\n"
           "if len(sys.argv) > 1:\n    t = time.process_time()\n"
           "    while time.process_time() - t < 0.6:\n        pass\n")


def _own_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _holder(*args: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def _finish(child: subprocess.Popen) -> None:
    child.stdin.write("go\n")
    child.stdin.flush()
    child.wait(timeout=30)


def test_idle_children_alive_before_the_block_are_not_counted():
    idle = _holder()
    try:
        own = _own_mb()
        with PeakRSS(child_interval=0.05) as mem:
            time.sleep(0.3)
        assert mem.peak_mb - own < 100, (mem.peak_mb, own)
    finally:
        _finish(idle)


def test_children_working_in_the_block_are_counted():
    worker = _holder("work")
    try:
        own = _own_mb()
        with PeakRSS(child_interval=0.05) as mem:
            worker.stdin.write("go\n")
            worker.stdin.flush()
            time.sleep(0.4)
        assert mem.peak_mb - own > 190, (mem.peak_mb, own)
    finally:
        worker.wait(timeout=30)


def test_children_that_end_inside_the_block_are_sampled_in_every_block():
    """Only the samples taken while the child ran can see it (it is reaped before the block
    ends), in each of consecutive blocks: the process's sampling thread serves them all."""
    for _ in range(2):
        worker = _holder("work")
        own = _own_mb()
        with PeakRSS(child_interval=0.05) as mem:
            _finish(worker)
        assert mem.peak_mb - own > 190, (mem.peak_mb, own)


def test_a_block_inside_another_block_is_measured_too():
    with PeakRSS(child_interval=0.05) as outer:
        worker = _holder("work")
        with PeakRSS(child_interval=0.05) as inner:
            _finish(worker)
    assert inner.peak_mb - _own_mb() > 190, inner.peak_mb
    assert outer.peak_mb - _own_mb() > 190, outer.peak_mb
