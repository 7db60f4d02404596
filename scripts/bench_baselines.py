"""Fit time of the DP baselines (DP-KMeans, DPNMF, DPHD) per call, both modes, on CLUTO matrices.

This times our estimators only. To time the authors' published code beside them, measured in
the same run with the same settings, use ``scripts/bench_vs_authors.py`` (``make
bench-authors``). DPHD (``dptaucc.baselines.dphd``) is included when it imports; otherwise it
is skipped with a message.

Data: ``dptaucc.datasets.load`` when the package imports, else the CLUTO mirror named by
``$DPTAUCC_MIRROR`` parsed directly (``make bench`` sets it).

    python scripts/bench_baselines.py [--datasets cstr classic3 reviews] [--repeats 3]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.nmf_dp import DPNMF
from sklearn.metrics import normalized_mutual_info_score


def _mirror() -> Path:
    env = os.environ.get("DPTAUCC_MIRROR")
    if not env:
        raise SystemExit("set DPTAUCC_MIRROR to the directory holding the CLUTO files "
                         "(make bench does)")
    return Path(env)


def _parse_mirror(name: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """Fallback loader: MANIFEST.tsv → triplets CSV (doc,word,cluster) or .mat (dtm, classid)."""
    root = _mirror()
    with open(root / "MANIFEST.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["dataset"] == name]
    files = {r["role"]: r for r in rows}
    labels = np.loadtxt(root / files["labels"]["file"], dtype=np.int64)
    entry = files["matrix"]
    if entry["format"] == "triplets":
        import pandas as pd

        df = pd.read_csv(root / entry["file"])
        X = sp.coo_matrix((df["cluster"].to_numpy(float), (df["doc"], df["word"]))).tocsr()
    else:
        from scipy.io import loadmat

        mat = loadmat(root / entry["file"])
        X = sp.csr_matrix(mat["dtm"], dtype=float)
        if X.shape != (int(entry["rows"]), int(entry["cols"])):
            X = X.T.tocsr()
    X.eliminate_zeros()
    return X, labels


def load_data(name: str) -> tuple[sp.csr_matrix, np.ndarray]:
    try:
        from dptaucc.datasets import load
    except ImportError:
        print(f"(datasets package not importable: parsing {name} from the mirror)")
        return _parse_mirror(name)
    ds = load(name, seed=0, progress=False)
    return ds.X, ds.row_labels


def make(method: str, k: int, eps: float, mode: str, seed: int):
    if method == "dpkmeans":
        return DPKMeans(n_clusters=k, epsilon=eps, mode=mode, random_state=seed)
    if method == "dpnmf":
        return DPNMF(n_clusters=k, epsilon=eps, mode=mode, random_state=seed)
    from dptaucc.baselines.dphd import DPHD

    return DPHD(n_clusters=k, epsilon=eps, n_rounds=4, mode=mode, random_state=seed)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cstr", "classic3", "reviews"])
    ap.add_argument("--methods", nargs="+", default=["dpkmeans", "dpnmf", "dphd"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=0.5, help="DPNMF was run only for ε < 1")
    args = ap.parse_args(argv)
    methods = list(args.methods)
    if "dphd" in methods:
        try:
            from dptaucc.baselines.dphd import DPHD  # noqa: F401
        except Exception as exc:  # ImportError, or Octave missing at import time
            print(f"DPHD skipped: baselines.dphd not importable ({exc})")
            methods.remove("dphd")
    print(f"ε = {args.epsilon}, {args.repeats} repeat(s); 'NMI' uses evaluation_row_labels")
    print(f"{'dataset':9s} {'n x d':>12s} {'method':9s} {'mode':9s} {'median s':>9s} "
          f"{'min s':>7s} {'NMI':>6s} {'k':>3s} {'ε spent':>8s}")
    for name in args.datasets:
        X, y = load_data(name)
        k = len(np.unique(y))
        shape = f"{X.shape[0]}x{X.shape[1]}"
        for method in methods:
            for mode in ("paper", "corrected"):
                times, model = [], None
                try:
                    for rep in range(args.repeats):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            t0 = time.perf_counter()
                            model = make(method, k, args.epsilon, mode, rep).fit(X)
                            times.append(time.perf_counter() - t0)
                except Exception as exc:  # report and go on with the other methods
                    print(f"{name:9s} {shape:>12s} {method:9s} {mode:9s} failed: {exc}")
                    continue
                labels = model.evaluation_row_labels(X)
                score = normalized_mutual_info_score(y, labels)
                print(f"{name:9s} {shape:>12s} {method:9s} {mode:9s} "
                      f"{statistics.median(times):9.2f} {min(times):7.2f} {score:6.3f} "
                      f"{len(np.unique(labels)):3d} {model.epsilon_spent_:8.3g}",
                      flush=True)


if __name__ == "__main__":
    main()
