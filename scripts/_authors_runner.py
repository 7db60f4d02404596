"""Time one method of the authors' public code (github.com/rupensa/dptaucc) on one matrix.

Run by ``bench_vs_authors.py`` with the authors' own interpreter, inside a scratch copy of
their ``src`` folder (their code writes files next to it), never imported by this project.
It reads the matrix this project loaded (``--matrix``, a scipy ``.npz``), turns it into the
dense integer array their drivers build, calls the method as their drivers do, and prints one
JSON line: the wall time of each fit call, and for DPHD also of the whole Octave call.
``--method load`` times their drivers' data step instead (reading their data file).

    python _authors_runner.py --src SCRATCH/src --method dp_taucc --matrix X.npz \
        --labels y.npy --k 3 --epsilon 0.5 --iterations 4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: Octave script written beside the authors' DPHD files: the steps of their ``expe.m`` (same
#: packages, globals and outputs) with ``clustering`` alone timed by tic/toc.
DPHD_TIMED_M = """pkg load miscellaneous
pkg load statistics
global range;
global side_length;
arg_list = argv();
load(arg_list{1});
k = double(file_k); d = double(file_d); n = double(file_n);
max_val = double(file_maxval);
range = max_val*sqrt(d);
side_length = max_val*2;
t_fit = tic;
[z_centers, clusters, u_centers, c_candidates, L_loss] = clustering(file_data, n, d, k, ...
    double(file_eps), 0.1, file_n_iter);
printf("DPHD_FIT_SECONDS %.6f\\n", toc(t_fit));
save -mat ../../out_labels.mat clusters;
save -mat ../../out_loss.mat L_loss;
"""
DPHD_SCRIPT = "bench_timed_expe.m"
OCTAVE_TIMEOUT_S = 3600


def _check_home(module, src: Path) -> None:
    """Fail if a module of the authors' package name resolved outside their source folder."""
    where = Path(module.__file__).resolve()
    if src.resolve() not in where.parents:
        raise SystemExit(f"{module.__name__} was imported from {where}, not from the authors' "
                         f"code in {src}: run this with an interpreter that does not have this "
                         "project installed (a separate venv)")


def _fit_python(method: str, T: np.ndarray, args, src: Path):
    """Build the authors' estimator as their drivers do; return (fit callable, labels getter)."""
    k = args.k
    if method == "dp_taucc":
        import dptaucc.dptaucc as mod

        _check_home(mod, src)
        model = mod.CoClust(eps=args.epsilon, n_iterations=args.iterations, h=0.9, k=k, l=k)
        return (lambda: model.fit(T)), (lambda: model._row_assignment)
    if method == "taucc":
        import taucc.taucc as mod

        _check_home(mod, src)
        model = mod.CoClust(k=k, l=k)
        return (lambda: model.fit(T)), (lambda: model._row_assignment)
    if method == "dpkmeans":
        import dpkmeans.k_means as mod

        _check_home(mod, src)
        model = mod.KMeans(n_clusters=k, epsilon=args.epsilon, random_state=None)
        return (lambda: model.fit(T)), (lambda: model.labels_)
    if method == "dpnmf":
        import dpnmf.dpnmf as mod

        _check_home(mod, src)
        out = {}

        def fit():   # the second labels (farthest topic) are the ones their figures plot
            out["labels"] = mod.run_DPNMF(T, k, args.epsilon, n_iter=args.iterations)[1]

        return fit, (lambda: out["labels"])
    raise SystemExit(f"unknown method {method!r}")


def _time_loading(args) -> dict:
    """Their drivers' data step: read ``data/NAME.txt`` (doc,word,count triplets) with pandas
    and fill a dense integer array row by row with ``iterrows``, as they do once per dataset."""
    import pandas as pd

    triplets = args.data_dir / f"{args.name}.txt"
    if not triplets.is_file():
        return {"fit_s": [], "skipped": f"{triplets.name} is not in the authors' checkout"}
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        frame = pd.read_csv(triplets)
        T = np.zeros((frame.doc.nunique(), frame.word.nunique()), dtype=int)
        for _, entry in frame.iterrows():
            T[entry.doc, entry.word] = entry.cluster
        times.append(time.perf_counter() - t0)
    return {"fit_s": times}


def _run_dphd(T: np.ndarray, args, src: Path) -> dict:
    """Write the authors' .mat input and run Octave ``repeats`` times in their DPHD folder."""
    from scipy.io import loadmat, savemat

    data = src.parent / "data"
    data.mkdir(exist_ok=True)
    mat = data / f"{args.name}.mat"
    savemat(mat, {"file_data": T.T.astype(float), "file_k": args.k, "file_n": T.shape[0],
                  "file_d": T.shape[1], "file_eps": args.epsilon,
                  "file_n_iter": args.iterations, "file_maxval": float(np.max(T)),
                  "file_outname": args.name})
    folder = src / "dphd"
    (folder / DPHD_SCRIPT).write_text(DPHD_TIMED_M)
    fits, calls = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        done = subprocess.run([args.octave, f"./{DPHD_SCRIPT}", f"../../data/{mat.name}"],
                              cwd=folder, capture_output=True, text=True,
                              timeout=OCTAVE_TIMEOUT_S)
        calls.append(time.perf_counter() - t0)
        found = re.search(r"DPHD_FIT_SECONDS ([0-9.]+)", done.stdout)
        if done.returncode != 0 or not found:
            raise SystemExit(f"Octave failed (exit {done.returncode}): {done.stderr[-2000:]}")
        fits.append(float(found.group(1)))
    clusters = loadmat(src.parent / "out_labels.mat")["clusters"]
    labels = np.zeros(T.shape[0], dtype=int)
    for j in range(clusters.shape[0]):
        labels[np.asarray(clusters[j][0], dtype=int).ravel() - 1] = j
    return {"fit_s": fits, "call_s": calls, "labels": labels.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="scratch copy of the authors' src/")
    ap.add_argument("--method", required=True)
    ap.add_argument("--name", default="matrix", help="dataset name (DPHD's file names)")
    ap.add_argument("--matrix", type=Path, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--octave", default="octave")
    ap.add_argument("--data-dir", type=Path, default=None, help="the authors' data/ (load)")
    args = ap.parse_args()
    if args.method == "load":
        print("AUTHORS_RESULT " + json.dumps(_time_loading(args)))
        return
    import scipy.sparse as sp

    T = sp.load_npz(args.matrix).toarray().astype(int)   # the dense int array of their drivers
    src = args.src.resolve()
    sys.path.insert(0, str(src))
    os.chdir(src.parent)
    if args.method == "dphd":
        result = _run_dphd(T, args, src)
    else:
        fit, labels = _fit_python(args.method, T, args, src)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fit()
            times.append(time.perf_counter() - t0)
        result = {"fit_s": times, "labels": np.asarray(labels()).astype(int).tolist()}
    print("AUTHORS_RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
