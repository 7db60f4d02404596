#!/usr/bin/env python
"""Fit time and peak memory of DPTauCC (I = 4) and FastTauCC on the bundled CLUTO matrices.

``dp_taucc_secure`` times the exact unseeded path, ``DPTauCC(secure=True)`` (OpenDP's samplers
with the operating system's randomness; needs the ``secure`` extra), beside the seeded one.

Each (dataset, algorithm) runs in a fresh Python process that loads the matrix, fits
``--repeats`` times and reports the median fit wall time and the process's peak RSS
(``resource.getrusage``, so the figure includes the interpreter, imports and the data).
K = L = number of classes, as in the paper. Data: ``dptaucc.datasets.load`` from the
directory ``$DPTAUCC_MIRROR``; if that package is unavailable the mirror files are parsed
directly (triplet ``.txt`` or MATLAB ``.mat``). ``--baseline REV`` also times git revision
REV (checked out in a temporary worktree) in the same run, for a side-by-side ratio.

    python scripts/bench_fit.py                       # every available dataset
    python scripts/bench_fit.py --datasets reviews --repeats 7 --baseline a8b29bf
    python scripts/bench_fit.py --datasets classic3 reviews --algorithms dp_taucc dp_taucc_secure
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _baseline import REPO, baseline_tree

DATASETS = ["cstr", "tr11", "tr41", "classic3", "hitech", "k1b", "reviews", "sports"]
ALGORITHMS = ["dp_taucc", "fast_taucc"]
CHOICES = [*ALGORITHMS, "dp_taucc_secure"]
# Targets for reviews on a 2-core machine (s, MB); bench_vs_authors.py times the authors' code.
TARGETS = {("reviews", "dp_taucc"): (0.2, 300.0), ("reviews", "fast_taucc"): (2.0, None)}


def _mirror() -> Path:
    mirror = os.environ.get("DPTAUCC_MIRROR")
    if not mirror:
        raise SystemExit("set DPTAUCC_MIRROR to the directory holding the CLUTO files "
                         "(make bench does)")
    return Path(mirror)


def _load_direct(name: str):
    """Parse the mirror's files with numpy/scipy only (fallback when ``datasets`` is absent)."""
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    root = _mirror()
    labels = np.loadtxt(root / f"{name}_target.txt", dtype=np.int64)
    if (root / f"{name}.mat").exists():
        X = sp.csr_matrix(scipy.io.loadmat(root / f"{name}.mat")["dtm"], dtype=np.float64)
    else:
        import pandas as pd

        df = pd.read_csv(root / f"{name}.txt")
        doc, word = df["doc"].to_numpy(), df["word"].to_numpy()
        X = sp.csr_matrix((df["cluster"].to_numpy(dtype=np.float64), (doc, word)),
                          shape=(doc.max() + 1, word.max() + 1))
    X.eliminate_zeros()
    return X, labels


def _load(name: str):
    try:
        from dptaucc.datasets import load
    except ImportError:
        return _load_direct(name)
    ds = load(name, seed=0, mirror=str(_mirror()), progress=False)
    return ds.X, ds.row_labels


def _available(name: str) -> bool:
    root = _mirror()
    return (root / f"{name}_target.txt").exists() and (
        (root / f"{name}.txt").exists() or (root / f"{name}.mat").exists())


def worker(name: str, algorithm: str, repeats: int, n_iterations: int, epsilon: float) -> dict:
    """Runs inside the fresh process: load, fit ``repeats`` times, report."""
    import resource

    import numpy as np

    from dptaucc import DPTauCC, FastTauCC

    t0 = time.perf_counter()
    X, labels = _load(name)
    load_s = time.perf_counter() - t0
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    k = int(np.unique(labels).size)
    times, found = [], []
    for seed in range(repeats):
        if algorithm == "dp_taucc":
            model = DPTauCC(k, k, epsilon=epsilon, n_iterations=n_iterations, random_state=seed)
        elif algorithm == "dp_taucc_secure":
            model = DPTauCC(k, k, epsilon=epsilon, n_iterations=n_iterations, secure=True)
        else:
            model = FastTauCC(k, k, random_state=seed)
        t = time.perf_counter()
        model.fit(X)
        times.append(time.perf_counter() - t)
        found.append(int(model.n_row_clusters_))
    return {
        "dataset": name, "algorithm": algorithm, "n_rows": X.shape[0], "n_cols": X.shape[1],
        "nnz": int(X.nnz), "k": k, "repeats": repeats,
        "fit_median_s": statistics.median(times), "fit_min_s": min(times),
        "fit_max_s": max(times), "load_s": load_s, "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "k_found": found,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=None, help="default: all available")
    parser.add_argument("--algorithms", nargs="+", default=ALGORITHMS, choices=CHOICES)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-iterations", type=int, default=4)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--json", action="store_true", help="print one JSON record per line")
    parser.add_argument("--baseline", default=None, help="git revision to time side by side")
    parser.add_argument("--worker", nargs=2, metavar=("DATASET", "ALGORITHM"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        rec = worker(*args.worker, args.repeats, args.n_iterations, args.epsilon)
        print(json.dumps(rec))
        return 0

    names = args.datasets or [d for d in DATASETS if _available(d)]
    with baseline_tree(args.baseline) as base:
        return _table(names, args, base)


def _time(name: str, algorithm: str, args, pythonpath: str) -> dict | str:
    env = dict(os.environ, DPTAUCC_MIRROR=str(_mirror()))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, algorithm,
           "--repeats", str(args.repeats), "--n-iterations", str(args.n_iterations),
           "--epsilon", str(args.epsilon)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return f"FAILED: {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _table(names: list[str], args, base: str | None) -> int:
    if not args.json:
        print(f"{'dataset':9} {'algorithm':10} {'n x m':>13} {'nnz':>9} {'fit median s':>12} "
              f"{'min s':>7} {'peak RSS MB':>11} {'RSS loaded':>10}  target"
              + (f"  | {args.baseline}: median s, ratio" if base else ""))
    status = 0
    for name in names:
        for algorithm in args.algorithms:
            rec = _time(name, algorithm, args, str(REPO))
            if isinstance(rec, str):
                print(f"{name:9} {algorithm:10} {rec}")
                status = 1
                continue
            old = _time(name, algorithm, args, base) if base else None
            if args.json:
                print(json.dumps(rec | ({"baseline": old} if old else {})))
                continue
            target = TARGETS.get((name, algorithm))
            note = ""
            if target:
                t_ok = rec["fit_median_s"] <= target[0]
                m_ok = target[1] is None or rec["peak_rss_mb"] <= target[1]
                note = (f"<= {target[0]} s" + (f", <= {target[1]:.0f} MB" if target[1] else "")
                        + (": met" if t_ok and m_ok else ": MISSED"))
            if isinstance(old, dict):
                note += (f"  | {old['fit_median_s']:.4f} s, "
                         f"{rec['fit_median_s'] / old['fit_median_s']:.2f}x")
            elif old:
                note += f"  | {old}"
            shape = f"{rec['n_rows']}x{rec['n_cols']}"
            print(f"{name:9} {algorithm:10} {shape:>13} {rec['nnz']:>9} "
                  f"{rec['fit_median_s']:>12.4f} {rec['fit_min_s']:>7.4f} "
                  f"{rec['peak_rss_mb']:>11.1f} {rec['rss_after_load_mb']:>10.1f}  {note}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
