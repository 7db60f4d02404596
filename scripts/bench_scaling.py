#!/usr/bin/env python
"""DP-τCC and Fast-τCC scaling with nnz: pass-equivalents, time per non-zero, memory.

For each size a synthetic count matrix is built in a fresh process (about 100 non-zeros per
row, so n·m grows ~100x faster than nnz: any cost in n·m would show), then

* ``matvec``: the median time of a bare CSR matrix-vector product ``X @ v`` (one pass);
* ``fit``: the median fit time; ``passes`` = fit / matvec, the fit's cost in passes over
  the matrix (DP-τCC needs 7 aggregations + 1 initial product at I = 4);
* ``ns/nnz``: fit time per non-zero; linear scaling keeps it flat across sizes;
* ``mem/X``: the fit's peak resident memory above what the process held before the fit,
  divided by the CSR input's bytes (data + indices + indptr).

``--breakdown`` adds, for DP-τCC, the passes of each stage of the median fit (the input
check, the blind initialisation, the label sums, the utilities, the choices, the tables),
timed by wrapping the functions the fit calls.

BLAS runs on ``--blas-threads`` threads (default 1, as the engine's workers run it; the
matrix-vector product is single-threaded either way).

``--baseline REV`` runs the same measurements with the package of git revision REV (checked
out in a temporary worktree) next to the working tree, so both columns come from one run on
one machine. Measure on an idle machine.

    python scripts/bench_scaling.py                          # 1e5 .. 1e7 non-zeros
    python scripts/bench_scaling.py --sizes 1e5 1e6 1e7 1e8 --baseline a8b29bf
    python scripts/bench_scaling.py --sizes 1e7 --row-nnz 20 --cols 20000 --clusters 10 \
        --algorithms dp_taucc --breakdown
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

from _baseline import baseline_tree

ROW_NNZ = 100
K = 5


def _matrix(nnz: int, seed: int = 0, row_nnz: int = ROW_NNZ, n_cols: int | None = None):
    """A canonical CSR float64 count matrix with ~row_nnz sorted distinct columns per row
    (n = nnz/row_nnz rows; n_cols columns, by default 10·√nnz)."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = max(10, nnz // row_nnz)
    m = n_cols or max(200, int(10 * np.sqrt(nnz)))
    per_row = rng.binomial(2 * row_nnz, 0.5, size=n).clip(1, m)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    total = int(indptr[-1])
    # distinct sorted columns per row: random positive gaps, cumulated within each row
    gaps = rng.integers(1, max(2, 2 * m // row_nnz), size=total).astype(np.int32)
    starts = indptr[:-1]
    cols = np.cumsum(gaps, dtype=np.int64)
    cols -= np.repeat(cols[starts] - gaps[starts], per_row)
    keep_ok = cols < m
    if not keep_ok.all():  # rows that ran past m: wrap them to the end (still distinct)
        cols = np.where(keep_ok, cols, m - 1 - (cols % m))
    data = rng.geometric(0.4, size=total).astype(np.float64)
    X = sp.csr_matrix((data, cols.astype(np.int32), indptr.astype(np.int32)), shape=(n, m))
    X.sum_duplicates()
    return X


#: DP-τCC's stages: (label, module, function); the exponential mechanism's own time less the
#: choice's is the utilities (the profiles times the weights, the finiteness check)
STAGES = [
    ("input check", "dptaucc.dp_taucc", "DPTauCC._check_fit"),
    ("blind init", "dptaucc.dp_taucc", "blind_block_init"),
    ("A C label sums", "dptaucc.dp_taucc", "aggregate_columns"),
    ("A C label sums", "dptaucc.dp_taucc", "aggregate_columns_and_table"),
    ("R^T A label sums", "dptaucc.dp_taucc", "aggregate_rows"),
    ("weights", "dptaucc.dp_taucc", "column_weights"),
    ("weights", "dptaucc.dp_taucc", "row_weights"),
    ("exp. mechanism", "dptaucc.dp_taucc", "linear_exponential_mechanism"),
    ("exp. mechanism", "dptaucc.dp_taucc", "exponential_mechanism"),
    ("choice", "dptaucc.privacy.samplers", "choose_by_inversion"),
    ("choice", "dptaucc.privacy.samplers", "choose_wide_rows"),
    ("tables", "dptaucc.dp_taucc", "group_sum"),
    ("tables", "dptaucc.dp_taucc", "_noisy_table"),
    ("forced diversity", "dptaucc.dp_taucc", "force_diversity"),
]


@contextlib.contextmanager
def stage_seconds():
    """Time the stages of :data:`STAGES` while the block runs: yields {label: seconds}
    (the exponential mechanism's entry excludes the choice's)."""
    import importlib
    import time

    seconds: dict[str, float] = {}
    restore = []
    for label, module_name, name in STAGES:
        owner = importlib.import_module(module_name)
        *outer, attr = name.split(".")
        for part in outer:
            owner = getattr(owner, part)
        original = getattr(owner, attr, None)
        if original is None:  # a function this revision does not have
            continue

        def timed(*args, _f=original, _label=label, **kwargs):
            t = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                seconds[_label] = seconds.get(_label, 0.0) + time.perf_counter() - t
        setattr(owner, attr, functools.wraps(original)(timed))
        restore.append((owner, attr, original))
    try:
        yield seconds
    finally:
        for owner, attr, original in reversed(restore):
            setattr(owner, attr, original)
        if "exp. mechanism" in seconds:
            seconds["exp. mechanism"] -= seconds.get("choice", 0.0)


def worker(nnz: int, algorithm: str, repeats: int, row_nnz: int = ROW_NNZ,
           n_cols: int | None = None, clusters: int = K, breakdown: bool = False,
           blas_threads: int = 1) -> dict:
    import statistics
    import time

    import numpy as np
    import psutil
    from threadpoolctl import threadpool_limits

    threadpool_limits(blas_threads, user_api="blas")

    from dptaucc import DPTauCC, FastTauCC
    from dptaucc.bench.memory import PeakRSS

    X = _matrix(nnz, row_nnz=row_nnz, n_cols=n_cols)
    v = np.ones(X.shape[1])
    X @ v
    mv = []
    for _ in range(7):
        t = time.perf_counter()
        X @ v
        mv.append(time.perf_counter() - t)
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes

    def make(seed):
        return (DPTauCC(clusters, clusters, epsilon=1.0, random_state=seed)
                if algorithm == "dp_taucc"
                else FastTauCC(clusters, clusters, random_state=seed, max_iter=4))

    make(0).fit(_matrix(1000, seed=1))  # warm up: compiled kernels, lazy imports
    times, peaks = [], []
    for seed in range(repeats):
        model = make(seed)
        before = psutil.Process().memory_info().rss
        with PeakRSS() as mem:
            t = time.perf_counter()
            model.fit(X)
            times.append(time.perf_counter() - t)
        peaks.append(mem.peak_mb * 2**20 - before)
    fit, matvec = statistics.median(times), statistics.median(mv)
    out = {"nnz": int(X.nnz), "n": X.shape[0], "m": X.shape[1], "algorithm": algorithm,
           "matvec_s": matvec, "fit_s": fit, "passes": fit / matvec,
           "ns_per_nnz": fit / X.nnz * 1e9, "mem_over_x": max(peaks) / x_bytes,
           "x_mb": x_bytes / 2**20}
    if breakdown and algorithm == "dp_taucc":  # separate fits: the wrappers cost a little
        runs = []
        for seed in range(repeats):
            with stage_seconds() as seconds:
                t = time.perf_counter()
                make(seed).fit(X)
                total = time.perf_counter() - t
            runs.append((total, dict(seconds)))
        total, seconds = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
        seconds["other"] = total - sum(seconds.values())
        out["stage_passes"] = {k: v / matvec for k, v in seconds.items()}
    return out


def _run(nnz: int, algorithm: str, args, pythonpath: str | None) -> dict | None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(nnz), algorithm,
           "--repeats", str(args.repeats), "--row-nnz", str(args.row_nnz),
           "--clusters", str(args.clusters), "--blas-threads", str(args.blas_threads)]
    cmd += ["--cols", str(args.cols)] if args.cols else []
    cmd += ["--breakdown"] if args.breakdown else []
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"  failed ({algorithm}, {nnz:.0e}): {proc.stderr.strip().splitlines()[-1:]}",
              file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument("--algorithms", nargs="+", default=["dp_taucc", "fast_taucc"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--row-nnz", type=int, default=ROW_NNZ, help="mean non-zeros per row")
    ap.add_argument("--cols", type=int, default=None, help="columns (default 10·√nnz)")
    ap.add_argument("--clusters", type=int, default=K, help="K = L")
    ap.add_argument("--baseline", default=None, help="git revision to measure side by side")
    ap.add_argument("--breakdown", action="store_true",
                    help="DP-τCC: also the passes of each stage of the fit")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS threads of the fit (default 1, as the engine's workers)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(int(float(args.worker[0])), args.worker[1], args.repeats,
                                args.row_nnz, args.cols, args.clusters, args.breakdown,
                                args.blas_threads)))
        return 0

    with baseline_tree(args.baseline) as base:
        print(f"BLAS threads: {args.blas_threads}")
        print(f"{'algorithm':10} {'nnz':>9} {'n x m':>15} {'fit s':>8} {'passes':>7} "
              f"{'ns/nnz':>7} {'mem/X':>6}" + (f" | baseline {args.baseline}: "
                                               "fit s, passes, ns/nnz, mem/X" if base else ""))
        for algorithm in args.algorithms:
            for size in args.sizes:
                rec = _run(int(size), algorithm, args, None)
                if rec is None:
                    continue
                line = (f"{algorithm:10} {rec['nnz']:>9.2e} {rec['n']:>7}x{rec['m']:<7} "
                        f"{rec['fit_s']:>8.3f} {rec['passes']:>7.1f} "
                        f"{rec['ns_per_nnz']:>7.1f} {rec['mem_over_x']:>6.2f}")
                if base:
                    old = _run(int(size), algorithm, args, base)
                    line += (" | " + (f"{old['fit_s']:.3f}, {old['passes']:.1f}, "
                                      f"{old['ns_per_nnz']:.1f}, {old['mem_over_x']:.2f}"
                                      if old else "failed"))
                print(line, flush=True)
                for stage, passes in sorted(rec.get("stage_passes", {}).items(),
                                            key=lambda item: -item[1]):
                    print(f"{'':10} {stage:>24} {passes:>7.1f} passes", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
