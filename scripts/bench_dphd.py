"""Fit time of DPHD (Octave port) per call, both modes, on CLUTO matrices and the dense
synthetic matrices of the supplement.

A Python process keeps one Octave and sends each matrix once, so the script prints two
numbers per case: the *cold* fit (a fresh Octave: start-up and sending the matrix included,
what every fit cost before the persistent process) and the median *warm* fit (what a sweep
pays per job). The authors' code runs one whole Octave subprocess per call; to time it beside
these fits in the same run use ``bench_vs_authors.py --methods dphd``. For the dense
synthetic matrices the warm fit is also timed on the sparse path, to show the dense path.

    python scripts/bench_dphd.py [--datasets cstr classic3 reviews] [--synthetic 10000]
                                 [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dptaucc.baselines.dphd import DPHD, estimator, octave
from dptaucc.datasets import load
from dptaucc.datasets.synthetic import make_paper_biclusters


def _fit(X, k, mode, eps, seed) -> float:
    t0 = time.perf_counter()
    DPHD(n_clusters=k, epsilon=eps, mode=mode, random_state=seed).fit(X)
    return time.perf_counter() - t0


def time_case(X, k, mode, eps, repeats) -> tuple[float, float]:
    """(cold fit s, median warm fit s): the cold fit starts a fresh Octave."""
    octave.shutdown()
    cold = _fit(X, k, mode, eps, 0)
    warm = statistics.median(_fit(X, k, mode, eps, 1 + r) for r in range(repeats))
    return cold, warm


def octave_startup(repeats: int) -> float:
    """Median seconds to start an Octave and have it answer one request."""
    times = []
    for _ in range(repeats):
        octave.shutdown()
        t0 = time.perf_counter()
        octave.call("plus", 1.0, 1.0)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cstr", "classic3", "reviews"])
    ap.add_argument("--synthetic", nargs="*", type=int, default=[1000, 10000],
                    help="columns of the 1000 x m synthetic matrices (paper mode, as swept)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    print(f"Octave start-up and first answer: {octave_startup(args.repeats):.2f} s (median)")
    print(f"{'matrix':16s} {'n x d':>12s} {'nnz':>9s} {'mode':10s} {'cold s':>7s} "
          f"{'warm s':>7s}")

    def row(name, X, mode, cold, warm):
        print(f"{name:16s} {f'{X.shape[0]}x{X.shape[1]}':>12s} {X.nnz:9d} {mode:10s} "
              f"{cold:7.2f} {warm:7.2f}")

    for name in args.datasets:
        ds = load(name, seed=0, progress=False)
        k = len(set(ds.row_labels.tolist()))
        for mode in ("paper", "corrected"):
            row(name, ds.X, mode, *time_case(ds.X, k, mode, args.epsilon, args.repeats))
    for m in args.synthetic:
        X = make_paper_biclusters(m).X
        for mode in ("paper", "corrected"):
            cold, warm = time_case(X, 3, mode, args.epsilon, args.repeats)
            row(f"synthetic m={m}", X, mode, cold, warm)
            saved = estimator.DENSE_MIN_DENSITY
            estimator.DENSE_MIN_DENSITY = 2.0  # force the sparse path
            try:
                _, sparse_warm = time_case(X, 3, mode, args.epsilon, args.repeats)
            finally:
                estimator.DENSE_MIN_DENSITY = saved
            print(f"{'  sparse path':16s} {'':12s} {'':9s} {mode:10s} {'':7s} "
                  f"{sparse_warm:7.2f}")
    octave.shutdown()


if __name__ == "__main__":
    main()
