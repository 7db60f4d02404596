"""Fit time of DPHD (Octave port) per call, both modes, on the CLUTO matrices.

Each call includes Octave's start-up, writing the sparse input .mat and reading the results,
like the authors' per-call figure (whole Octave subprocess): cstr 3.1 s, classic3 24.7 s
(reference-experiments.md §6.6, same 2-core machine).

    python scripts/bench_dphd.py [--datasets cstr classic3 reviews] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from dptaucc.baselines.dphd import DPHD
from dptaucc.baselines.dphd.octave import find_octave
from dptaucc.datasets import load
from sklearn.metrics import normalized_mutual_info_score

AUTHORS_S = {"cstr": 3.1, "classic3": 24.7}


def octave_startup(repeats: int) -> float:
    """Median wall time of an empty octave-cli run."""
    exe = find_octave()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([exe, "--norc", "--quiet", "--no-history", "--eval", "1;"], check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cstr", "classic3", "reviews"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    print(f"octave-cli start-up: {octave_startup(args.repeats):.2f} s (median)")
    print(f"{'dataset':10s} {'n x d':>14s} {'nnz':>8s} {'mode':10s} {'median s':>9s} "
          f"{'min s':>7s} {'NMI':>6s} {'k found':>7s} {'authors s':>9s}")
    for name in args.datasets:
        ds = load(name, seed=0, progress=False)
        k = len(set(ds.row_labels.tolist()))
        for mode in ("paper", "corrected"):
            times, model = [], None
            for rep in range(args.repeats):
                t0 = time.perf_counter()
                model = DPHD(n_clusters=k, epsilon=args.epsilon, mode=mode,
                             random_state=rep).fit(ds.X)
                times.append(time.perf_counter() - t0)
            score = normalized_mutual_info_score(ds.row_labels, model.row_labels_)
            ref = AUTHORS_S.get(name)
            print(f"{name:10s} {f'{ds.X.shape[0]}x{ds.X.shape[1]}':>14s} {ds.X.nnz:8d} "
                  f"{mode:10s} {statistics.median(times):9.2f} {min(times):7.2f} {score:6.3f} "
                  f"{model.n_row_clusters_:7d} {ref if ref is not None else '-':>9}")


if __name__ == "__main__":
    main()
