#!/usr/bin/env python
"""What a user waits for on a fresh install: import, first fit, peak memory of one process.

The package is copied into a temporary folder (tracked and new files of the working tree with
the compiled kernels its install built, as a wheel carries them; or git revision
``--baseline REV``, source only), byte-compiled as ``pip install`` does, and never run before:
no just-in-time cache exists. Then ``--runs`` new processes each import the library, load
a CLUTO matrix (``$DPTAUCC_MIRROR``), fit DPTauCC (K = L = classes, I = 4, ε = 1, seed 0)
twice and report

* ``import``: ``from dptaucc import DPTauCC`` plus its first use (the lazy imports);
* ``first fit``: the first fit of the process; in run 1 this includes any just-in-time
  compilation of a fresh install, in later runs whatever a cache written by run 1 saves;
* ``next fit``: the second fit (steady state); ``first - next`` is the one-time cost;
* ``peak RSS``: the process's peak resident memory (``getrusage``), interpreter, imports and
  data included; ``modules``: heavy libraries present in ``sys.modules`` after the fits.

With ``--baseline`` the two trees alternate run by run (old, new, old, new, ...) so both see
the same machine load; medians are over the runs after the first.

    python scripts/bench_first_fit.py --dataset reviews --runs 5 --baseline HEAD~3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _baseline import REPO

#: the folders the wheel installs (baselines, datasets and conf go inside dptaucc)
PACKAGE_DIRS = ("dptaucc", "baselines", "datasets", "conf")
HEAVY = ("numba", "llvmlite", "sklearn", "pandas", "pyarrow", "matplotlib", "hydra", "opendp")

PROBE = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from dptaucc import DPTauCC
DPTauCC  # resolves the lazy import
import dptaucc.dp_taucc
t_import = time.perf_counter() - t0
import numpy as np
from dptaucc.datasets import load
ds = load(%(name)r, seed=0, mirror=%(mirror)r, progress=False)
k = int(np.unique(ds.row_labels).size)
fits = []
for _ in range(2):
    t = time.perf_counter()
    DPTauCC(k, k, epsilon=1.0, n_iterations=4, random_state=0).fit(ds.X)
    fits.append(time.perf_counter() - t)
print(json.dumps({"import_s": t_import, "first_fit_s": fits[0], "next_fit_s": fits[1],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "modules": [m for m in %(heavy)r if m in sys.modules]}))
"""


def _copy_working_tree(dest: Path) -> None:
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard",
                            "--", *PACKAGE_DIRS],
                           check=True, capture_output=True, text=True).stdout.split()
    # the compiled kernels a wheel carries: the editable install's build of the same source
    built = [str(p.relative_to(REPO)) for p in (REPO / "dptaucc").glob("_native*")
             if p.suffix in (".so", ".pyd")]
    for rel in files + built:
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _copy_revision(rev: str, dest: Path) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "--", *PACKAGE_DIRS],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def _fresh_install(dest: Path, rev: str | None) -> Path:
    dest.mkdir(parents=True)
    if rev:
        _copy_revision(rev, dest)
    else:
        _copy_working_tree(dest)
    # the layout the wheel installs: dptaucc with baselines/datasets/conf inside it
    for sub in PACKAGE_DIRS[1:]:
        if (dest / sub).is_dir():
            shutil.move(str(dest / sub), str(dest / "dptaucc" / sub))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "dptaucc")],
                   check=True, capture_output=True)
    return dest


def _run(tree: Path, name: str, mirror: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = PROBE % {"name": name, "mirror": mirror, "heavy": HEAVY}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tempfile.gettempdir(), timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"probe failed in {tree}:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(label: str, runs: list[dict]) -> str:
    later = runs[1:] or runs

    def med(key):
        return statistics.median(r[key] for r in later)
    return (f"{label:10} fresh: import {runs[0]['import_s']:.2f} s, first fit "
            f"{runs[0]['first_fit_s']:.2f} s, next fit {runs[0]['next_fit_s']:.3f} s | "
            f"cached (median of {len(later)}): import {med('import_s'):.2f} s, first fit "
            f"{med('first_fit_s'):.3f} s, next fit {med('next_fit_s'):.3f} s, peak RSS "
            f"{med('peak_rss_mb'):.0f} MB | loaded: {', '.join(runs[-1]['modules']) or '-'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="reviews")
    ap.add_argument("--runs", type=int, default=5, help="new processes per tree (>= 1)")
    ap.add_argument("--baseline", default=None, help="git revision to measure side by side")
    ap.add_argument("--json", action="store_true", help="print every run as JSON")
    args = ap.parse_args(argv)
    mirror = os.environ.get("DPTAUCC_MIRROR")
    if not mirror:
        raise SystemExit("set DPTAUCC_MIRROR to the directory holding the CLUTO files")
    with tempfile.TemporaryDirectory(prefix="bench-first-fit-") as tmp:
        trees = {"working": _fresh_install(Path(tmp) / "new", None)}
        if args.baseline:
            trees = {args.baseline: _fresh_install(Path(tmp) / "old", args.baseline), **trees}
        runs: dict[str, list[dict]] = {label: [] for label in trees}
        for _ in range(max(1, args.runs)):
            for label, tree in trees.items():
                runs[label].append(_run(tree, args.dataset, mirror))
        print(f"{args.dataset}, {args.runs} processes per tree, load average "
              f"{os.getloadavg()[0]:.2f}")
        for label, rec in runs.items():
            print(_summary(label, rec))
            if args.json:
                print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
