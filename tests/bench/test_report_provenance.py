"""REPORT's provenance section: commits with their -dirty flag, libraries, machine, idleness."""

from __future__ import annotations

import json
import time

import pandas as pd

from dptaucc.bench.report import provenance_section


def _frame(n, sha, busy=None, algorithm="dp_taucc", fit=0.2):
    blas = json.dumps([{"user_api": "blas", "internal_api": "openblas", "version": "0.3.30",
                        "threading_layer": "pthreads", "num_threads": 1}])
    versions = json.dumps({"dptaucc-bench": "0.1.0", "numpy": "2.4.6", "scipy": "1.17.1",
                           "scikit-learn": "1.8.0"})
    df = pd.DataFrame({"git_sha": [sha] * n, "versions": [versions] * n, "blas": [blas] * n,
                       "python": ["CPython 3.11.7"] * n, "os": ["Linux-6.1"] * n,
                       "cpu": ["EPYC (2 logical CPUs)"] * n, "octave": [None] * n,
                       "status": ["ok"] * n, "load_1m": [1.0] * n,
                       "other_busy_cpus": busy if busy is not None else [0.0] * n,
                       "algorithm": [algorithm] * n, "fit_time_s": [fit] * n})
    return df


def test_provenance_section_keeps_dirty_and_judges_idleness():
    sha = "0123456789abcdef0123456789abcdef01234567"
    frames = {"fig2_real": _frame(3, sha + "-dirty"),
              "supp_runtime": _frame(2, sha, busy=[0.01, 0.02])}
    text = "\n".join(provenance_section(frames))
    assert "`0123456789ab-dirty` (3 records); `0123456789ab` (2 records)" in text
    assert "| BLAS | openblas 0.3.30 (pthreads) |" in text
    assert "| Python | CPython 3.11.7 |" in text and "| GNU Octave (DPHD) | not recorded |" \
        in text
    assert "ran on an otherwise idle machine" in text and "max 0.02" in text
    busy = {"supp_runtime": _frame(4, sha, busy=[0.0, 0.1, 1.5, 2.0])}
    text = "\n".join(provenance_section(busy))
    assert "NOT on an idle machine (other processes kept 0.90 CPUs busy on average" in text


def test_idleness_is_weighted_by_fit_time_and_keeps_octave_apart():
    """A 2 ms fit that saw one 10 ms tick of another process reads 5 CPUs: weighted by time it
    barely counts. DPHD's Octave child is not other load."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    fits = pd.concat([_frame(99, sha, busy=[0.0] * 99, fit=0.2),
                      _frame(1, sha, busy=[5.0], fit=0.002),
                      _frame(10, sha, busy=[0.9] * 10, algorithm="dphd", fit=0.5)])
    text = "\n".join(provenance_section({"supp_runtime": fits}))
    assert "ran on an otherwise idle machine" in text and "weighted by fit time: 0.00" in text
    assert "DPHD (computing in its Octave child process) reads 0.90" in text
    loaded = pd.concat([_frame(10, sha, busy=[0.5] * 10), _frame(10, sha, busy=[0.0] * 10)])
    assert "kept 0.25 CPUs" not in "\n".join(provenance_section({"supp_runtime": loaded}))
    loaded = pd.concat([_frame(10, sha, busy=[0.6] * 10), _frame(10, sha, busy=[0.0] * 10)])
    assert "NOT on an idle machine (other processes kept 0.30 CPUs busy" in "\n".join(
        provenance_section({"supp_runtime": loaded}))


def test_the_meter_counts_a_live_child_process_as_own_work():
    """DPHD's persistent Octave is a live child: its CPU time is this job's, not other load."""
    import subprocess
    import sys

    import psutil

    from dptaucc.bench.contention import _own_cpu

    me = psutil.Process()
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.4: pass\n"
                              "time.sleep(30)"])
    try:
        before = _own_cpu(me)
        deadline = time.monotonic() + 20  # the child's busy loop: 0.4 s of user + system CPU
        while time.monotonic() < deadline:
            spent = psutil.Process(child.pid).cpu_times()
            if spent.user + spent.system >= 0.4:
                break
            time.sleep(0.05)
        assert _own_cpu(me) - before >= 0.3  # the child's busy loop, while it still runs
    finally:
        child.kill()
        child.wait()


def test_descendants_are_listed_only_when_the_process_has_children():
    """The meter skips the /proc scan in a process without children, and only then."""
    import subprocess
    import sys

    import psutil

    from dptaucc.bench import contention

    alone = subprocess.run([sys.executable, "-c", "from dptaucc.bench.contention import "
                            "has_children; print(has_children())"], capture_output=True,
                           text=True, timeout=60, check=True)
    assert alone.stdout.strip() == "False"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert contention.has_children()
        assert child.pid in [p.pid for p in contention.live_descendants(psutil.Process())]
    finally:
        child.kill()
        child.wait()


def test_descendants_from_the_kernel_lists_are_psutils_scan():
    """Children and grandchildren, from the kernel's per-thread lists, are the processes
    psutil's scan of the whole machine finds."""
    import subprocess
    import sys

    import psutil

    from dptaucc.bench import contention

    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(30)']); print('up', flush=True); time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        me, ours = psutil.Process(), psutil.Process(child.pid)
        deadline = time.monotonic() + 20  # the grandchild appears after the child's print
        while not ours.children() and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchildren = {p.pid for p in ours.children()}
        assert len(grandchildren) == 1, "the grandchild did not start within 20 s"
        scanned = {p.pid for p in me.children(recursive=True)}  # earlier tests' children too
        assert {child.pid} | grandchildren <= scanned
        assert {p.pid for p in contention.live_descendants(me)} == scanned
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()
