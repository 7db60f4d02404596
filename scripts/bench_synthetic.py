#!/usr/bin/env python
"""Fit and evaluation time of the five supp_synthetic algorithms on the dense synthetic matrices.

The supplement's experiment (``conf/experiment/supp_synthetic.yaml``, paper mode) fits DP-τCC,
Fast-τCC, DP-KMeans, DPHD and DPNMF on the 1000 × m biclusters of
``datasets.synthetic.make_paper_biclusters`` (every cell non-zero). This script runs those jobs
as the engine does (the matrix validated once per size, the same for every seed, then for each
algorithm and ε a fit and the evaluation of ``dptaucc.bench.run.evaluate``) in a fresh Python
process, and
prints the seconds per algorithm and size (after an untimed warm-up on a small matrix:
compiled kernels and Octave's start are paid once per sweep worker). ``--baseline REV`` also
runs git revision REV (checked out in a temporary worktree) in the same way, one process after
the other, and compares the results job by job: labels (evaluation, released, column),
metrics and centres (a revision from before one matrix per size drew the fill constant from
its seed argument, so its matrices differ).

    python scripts/bench_synthetic.py                                 # 5 sizes, 4 ε, seed 0
    python scripts/bench_synthetic.py --sizes 3000 10000 --baseline main
    python scripts/bench_synthetic.py --paper-sizes --epsilons 0.5    # all 32 sizes

Each worker runs with one BLAS thread (``OPENBLAS_NUM_THREADS=1``, as a sweep worker on a
2-core machine; Octave inherits it), so the times are comparable with the sweep's.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from _baseline import REPO, baseline_tree

ALGORITHMS = ["dp_taucc", "fast_taucc", "dp_kmeans", "dphd", "dpnmf"]
DEFAULT_SIZES = [10, 100, 1000, 3000, 10000]
PAPER_SIZES = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900,
               1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 6000, 7000, 8000, 9000,
               10000]
DEFAULT_EPSILONS = [0.1, 0.5, 0.99999, 3.0]
#: DPNMF runs only for ε < 1 (the authors' harness), Fast-τCC once per seed
DPNMF_MAX_EPSILON = 1.0


def _estimator(name: str, epsilon: float, seed: int):
    """The estimator of ``conf/algorithm/<name>.yaml`` in paper mode, k = 3 classes."""
    from dptaucc import DPTauCC, FastTauCC

    if name == "dp_taucc":
        return DPTauCC(3, 3, epsilon=epsilon, n_iterations=4, h=0.9, mode="paper",
                       random_state=seed)
    if name == "fast_taucc":
        return FastTauCC(3, 3, random_state=seed)
    if name == "dp_kmeans":
        from dptaucc.baselines.dp_kmeans import DPKMeans

        return DPKMeans(n_clusters=3, epsilon=epsilon, mode="paper", random_state=seed)
    if name == "dphd":
        from dptaucc.baselines.dphd import DPHD

        return DPHD(n_clusters=3, epsilon=epsilon, n_rounds=4, mode="paper", random_state=seed)
    if name == "dpnmf":
        from dptaucc.baselines.nmf_dp import DPNMF

        return DPNMF(n_clusters=3, epsilon=epsilon, n_epochs=4, mode="paper", random_state=seed)
    raise ValueError(f"unknown algorithm {name!r}")


def _digest(values) -> str | None:
    import numpy as np

    if values is None:
        return None
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
    return hashlib.sha256(arr.tobytes()).hexdigest()[:16]


def _jobs(algorithms, epsilons):
    for name in algorithms:
        if name == "fast_taucc":
            yield name, float("nan")
            continue
        for eps in epsilons:
            if name == "dpnmf" and eps >= DPNMF_MAX_EPSILON:
                continue
            yield name, eps


def worker(root: str | None, size: int, seed: int, algorithms, epsilons) -> None:
    """Runs in a fresh process: one JSON record per job on stdout."""
    if root:  # the baseline's code: its dptaucc and its top-level baselines/, datasets/
        sys.path.insert(0, root)
        import dptaucc

        dptaucc.__path__.append(root)
    import warnings

    import numpy as np
    from dptaucc.datasets.synthetic import make_paper_biclusters

    from dptaucc.bench.run import evaluate
    from dptaucc.validation import check_count_matrix

    warnings.simplefilter("ignore")
    # warm-up on a small matrix (compiled kernels, Octave's start): paid once per sweep worker
    small = make_paper_biclusters(10)
    for name, eps in _jobs(algorithms, epsilons[:1]):
        est = _estimator(name, 1.0 if np.isnan(eps) else eps, 0).fit(small.X)
        evaluate(est, small.X, small)
    t0 = time.perf_counter()
    dataset = make_paper_biclusters(size)
    dataset = dataclasses.replace(dataset, X=check_count_matrix(dataset.X, integer=False))
    load_s = time.perf_counter() - t0
    first = True
    for name, eps in _jobs(algorithms, epsilons):
        job_seed = 1_000_003 * seed + 7919 * size + 101 * ALGORITHMS.index(name) + int(
            1000 * (0 if np.isnan(eps) else eps))
        est = _estimator(name, 1.0 if np.isnan(eps) else eps, job_seed % 2**31)
        t0 = time.perf_counter()
        est.fit(dataset.X)
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rec = evaluate(est, dataset.X, dataset)
        eval_s = time.perf_counter() - t0
        paper = est.evaluation_row_labels(dataset.X) if hasattr(
            est, "evaluation_row_labels") else None
        centers = getattr(est, "cluster_centers_", getattr(est, "components_", None))
        out = {
            "root": root or str(REPO), "size": size, "seed": seed, "algorithm": name,
            "epsilon": None if np.isnan(eps) else eps, "fit_s": fit_s, "eval_s": eval_s,
            "load_s": load_s if first else 0.0,
            "eval_labels": _digest(paper), "row_labels": _digest(getattr(est, "row_labels_",
                                                                           None)),
            "column_labels": _digest(getattr(est, "column_labels_", None)),
            "centers_sum": None if centers is None else float(np.sum(centers)),
            **{k: rec[k] for k in ("nmi_rows", "ari_rows", "nmi_cols", "ari_cols", "tau_rc")},
        }
        first = False
        print(json.dumps(out), flush=True)


def _run(root: str | None, size: int, seed: int, args) -> list[dict]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(size), str(seed),
           "--algorithms", *args.algorithms, "--epsilons", *map(str, args.epsilons)]
    if root:
        cmd += ["--root", root]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"worker failed ({root or 'this tree'}, m={size}):\n{proc.stderr}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _key(rec: dict) -> tuple:
    return rec["algorithm"], rec["size"], rec["seed"], rec["epsilon"]


def _compare(new: list[dict], old: list[dict]) -> list[str]:
    """One line per algorithm: jobs whose labels differ, largest metric and centre change."""
    by_key = {_key(r): r for r in old}
    stats: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "labels": 0, "metric": 0.0,
                                                  "centers": 0.0})
    for rec in new:
        ref = by_key.get(_key(rec))
        if ref is None:
            continue
        s = stats[rec["algorithm"]]
        s["jobs"] += 1
        if any(rec[f] != ref[f] for f in ("eval_labels", "row_labels", "column_labels")):
            s["labels"] += 1
        for f in ("nmi_rows", "ari_rows", "nmi_cols", "ari_cols", "tau_rc"):
            a, b = rec[f], ref[f]
            if a is not None and b is not None and a == a and b == b:
                s["metric"] = max(s["metric"], abs(a - b))
        a, b = rec["centers_sum"], ref["centers_sum"]
        if a is not None and b is not None:
            s["centers"] = max(s["centers"], abs(a - b) / max(abs(b), 1e-300))
    return [f"  {alg:10s} {s['jobs']:4d} jobs: labels differ in {s['labels']}, largest metric "
            f"change {s['metric']:.3g}, largest relative change of the centres' sum "
            f"{s['centers']:.3g}" for alg, s in stats.items()]


def _table(recs: list[dict], old: list[dict] | None) -> None:
    def totals(rows):
        out: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for r in rows:
            for key in ((r["algorithm"], r["size"]), (r["algorithm"], "all")):
                out[key][0] += r["fit_s"]
                out[key][1] += r["eval_s"]
                out[key][2] += 1
        return out

    new_t = totals(recs)
    old_t = totals(old) if old else {}
    print(f"{'algorithm':10s} {'m':>6s} {'jobs':>4s} {'fit s':>8s} {'eval s':>8s} "
          f"{'total s':>8s}" + ("   baseline: total s, speed-up" if old else ""))
    for key in sorted(new_t, key=lambda k: (ALGORITHMS.index(k[0]), k[1] == "all",
                                            0 if k[1] == "all" else k[1])):
        fit, ev, n = new_t[key]
        line = f"{key[0]:10s} {key[1]!s:>6s} {n:4d} {fit:8.3f} {ev:8.3f} {fit + ev:8.3f}"
        if key in old_t:
            base = old_t[key][0] + old_t[key][1]
            line += f"   {base:8.3f}  {base / max(fit + ev, 1e-12):5.2f}x"
        print(line)
    load = sum(r["load_s"] for r in recs)
    print(f"matrices built and validated: {load:.2f} s"
          + (f" (baseline {sum(r['load_s'] for r in old):.2f} s)" if old else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=DEFAULT_SIZES,
                    help="columns m of the 1000 × m matrices")
    ap.add_argument("--paper-sizes", action="store_true", help="the supplement's 32 sizes")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--epsilons", nargs="+", type=float, default=DEFAULT_EPSILONS)
    ap.add_argument("--algorithms", nargs="+", default=ALGORITHMS, choices=ALGORITHMS)
    ap.add_argument("--baseline", default=None, help="git revision to run and compare with")
    ap.add_argument("--json", default=None, help="write every record to this JSON-lines file")
    ap.add_argument("--worker", nargs=2, type=int, metavar=("SIZE", "SEED"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.root, *args.worker, args.algorithms, args.epsilons)
        return 0
    sizes = PAPER_SIZES if args.paper_sizes else args.sizes
    new, old = [], []
    with baseline_tree(args.baseline) as base:
        for size in sizes:
            for seed in args.seeds:
                if base:
                    old += _run(base, size, seed, args)
                new += _run(None, size, seed, args)
                print(f"m = {size}, seed {seed} done", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            for rec in old + new:
                fh.write(json.dumps(rec) + "\n")
    _table(new, old if base else None)
    if base:
        print(f"results against {args.baseline}:")
        print("\n".join(_compare(new, old)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
