#!/usr/bin/env python
"""Fit time of the authors' public code and of this library, measured side by side in one run.

For each method (DP-τCC, τCC/Fast-τCC, DP-KMeans, DPNMF, DPHD) and dataset, the authors' code
(github.com/rupensa/dptaucc) runs in a subprocess with its own interpreter (``--authors-python``,
a venv holding their requirements) inside a scratch copy of their ``src`` folder, so nothing of
theirs is imported here and the files their code writes stay out of their checkout. This
library's estimators then fit the same matrix with the same settings (K = L = number of classes,
ε, iterations) in paper mode and in corrected mode. Both sides time the fit call alone with
``time.perf_counter`` and report the median of ``--repeats`` calls; for DPHD the authors'
timer also covers the whole Octave call (interpreter start, packages, reading the matrix),
which is what their experiments record and what a user waits for, so that is reported too.

The authors' side gets the dense integer array their drivers build from the matrix; this
library gets the sparse CSR matrix. Rows and columns keep the file's order (their drivers
shuffle both first; that does not change the work done). The NMI of each side's last fit
against the classes is printed as a sanity check (one seed at one ε: not a quality comparison).

Without ``--authors`` the authors' repository is cloned once into a cache folder (the only
step that needs the network). The output names both commits, the machine's cores and load
average before and after, and the library versions of both interpreters.

    python scripts/bench_vs_authors.py --authors-python ../authors-venv/bin/python \
        [--authors CHECKOUT] [--datasets cstr classic3] [--methods dp_taucc dpkmeans] \
        [--repeats 3] [--epsilon 0.5] [--iterations 4] [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

AUTHORS_URL = "https://github.com/rupensa/dptaucc"
METHODS = ["dp_taucc", "taucc", "dpkmeans", "dpnmf", "dphd"]
LOAD = "load"   # the data step, timed with --loading
#: methods with a privacy mode (τCC is not private: Fast-τCC has one mode)
PRIVATE = {"dp_taucc", "dpkmeans", "dpnmf", "dphd"}
RUNNER = Path(__file__).resolve().parent / "_authors_runner.py"
REPO = Path(__file__).resolve().parent.parent
VERSIONS_CODE = ("import importlib.metadata as m, json, sys\n"
                 "out = {'python': sys.version.split()[0]}\n"
                 "for d in ('numpy', 'scipy', 'scikit-learn', 'diffprivlib', 'pandas'):\n"
                 "    try: out[d] = m.version(d)\n"
                 "    except m.PackageNotFoundError: out[d] = None\n"
                 "print(json.dumps(out))")


@dataclass
class Row:
    """One timed (dataset, method, side) cell: fit seconds per call, whole-call seconds."""

    dataset: str
    method: str
    side: str                     # "authors", "ours paper", "ours corrected", "ours"
    fit_s: list[float]
    call_s: list[float] = field(default_factory=list)
    nmi: float = float("nan")
    error: str = ""

    @property
    def fit_median(self) -> float:
        return statistics.median(self.fit_s) if self.fit_s else float("nan")

    @property
    def call_median(self) -> float:
        return statistics.median(self.call_s) if self.call_s else float("nan")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors", type=Path, default=None,
                    help=f"a checkout of {AUTHORS_URL} (default: clone it into --cache-dir)")
    ap.add_argument("--authors-python", default=sys.executable,
                    help="interpreter with the authors' requirements (a separate venv)")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="where the clone goes (default: $XDG_CACHE_HOME or ~/.cache, "
                         "dptaucc-bench/authors-dptaucc)")
    ap.add_argument("--datasets", nargs="+", default=["cstr", "classic3"])
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=0.5,
                    help="the authors ran DPNMF only for ε < 1, so the default is 0.5")
    ap.add_argument("--iterations", type=int, default=4,
                    help="DP-τCC iterations, DP-KMeans/DPNMF epochs, DPHD rounds")
    ap.add_argument("--octave", default="octave", help="Octave executable for the authors' DPHD")
    ap.add_argument("--loading", action="store_true",
                    help="also time the data step: their drivers' reading of data/NAME.txt "
                         "into a dense array, and this library's first load of NAME")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for bench_vs_authors.{csv,md,json} (default: print only)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    if not args.epsilon > 0:
        ap.error("--epsilon must be positive")
    if args.iterations < 1:
        ap.error("--iterations must be at least 1")
    return args


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dptaucc-bench" / "authors-dptaucc"


def authors_checkout(path: Path | None, cache_dir: Path | None) -> Path:
    """The authors' checkout: ``path`` if given, else a clone of their repository (cached)."""
    if path is not None:
        if not (path / "src" / "dptaucc" / "dptaucc.py").is_file():
            raise SystemExit(f"{path} does not look like a checkout of {AUTHORS_URL} "
                             "(no src/dptaucc/dptaucc.py)")
        return path
    where = cache_dir or default_cache_dir()
    if not (where / "src" / "dptaucc" / "dptaucc.py").is_file():
        if where.exists():
            raise SystemExit(f"{where} exists but holds no checkout of {AUTHORS_URL} (an "
                             "interrupted clone?): remove it or pass --authors")
        print(f"no --authors given: cloning {AUTHORS_URL} into {where} (needs the network; "
              "done once, later runs reuse it)", flush=True)
        where.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", AUTHORS_URL, str(where)], check=True)
    return where


def git_commit(path: Path, *only: str) -> str:
    """HEAD of the checkout at ``path``, marked when tracked files (under ``only``) changed."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return "unknown (not a git checkout)"
    dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain",
                            "--untracked-files=no", "--", *only],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + ("+local changes" if dirty else "")


def runner_command(args: argparse.Namespace, src: Path, method: str, name: str, matrix: Path,
                   k: int, data_dir: Path | None = None) -> list[str]:
    """The command that times one authors' method (or their data step) in a subprocess."""
    cmd = [args.authors_python, str(RUNNER), "--src", str(src), "--method", method,
           "--name", name, "--matrix", str(matrix), "--k", str(k),
           "--epsilon", repr(args.epsilon), "--iterations", str(args.iterations),
           "--repeats", str(args.repeats), "--octave", args.octave]
    return cmd + (["--data-dir", str(data_dir)] if data_dir is not None else [])


def parse_runner_output(stdout: str) -> dict:
    """The JSON of the runner's ``AUTHORS_RESULT`` line (their code prints other lines too)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("AUTHORS_RESULT "):
            return json.loads(line[len("AUTHORS_RESULT "):])
    raise ValueError("the authors' runner printed no AUTHORS_RESULT line")


def time_authors(args, src: Path, method: str, name: str, matrix: Path, k: int, y,
                 data_dir: Path | None = None) -> Row:
    from sklearn.metrics import normalized_mutual_info_score

    done = subprocess.run(runner_command(args, src, method, name, matrix, k, data_dir),
                          capture_output=True, text=True)
    try:
        result = parse_runner_output(done.stdout)
    except ValueError:
        tail = (done.stderr or done.stdout)[-1500:]
        return Row(name, method, "authors", [], error=f"exit {done.returncode}: {tail}")
    if "skipped" in result:
        return Row(name, method, "authors", [], error=f"skipped: {result['skipped']}")
    score = (normalized_mutual_info_score(y, result["labels"]) if "labels" in result
             else float("nan"))
    return Row(name, method, "authors", result["fit_s"], result.get("call_s", []), score)


def time_our_loading(args, name: str) -> Row:
    """This library's first load of ``name`` (fetch from the mirror or URL, verify, parse)."""
    from dptaucc.datasets import load

    times = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-vs-authors-cache-") as cache:
            t0 = time.perf_counter()
            load(name, cache_dir=cache, progress=False)
            times.append(time.perf_counter() - t0)
    return Row(name, LOAD, "ours", times)


def our_estimator(method: str, k: int, args, mode: str | None, seed: int):
    if method == "dp_taucc":
        from dptaucc import DPTauCC

        return DPTauCC(k, k, epsilon=args.epsilon, n_iterations=args.iterations, h=0.9,
                       mode=mode, random_state=seed)
    if method == "taucc":
        from dptaucc import FastTauCC

        return FastTauCC(k, k, random_state=seed)
    if method == "dpkmeans":
        from dptaucc.baselines.dp_kmeans import DPKMeans

        return DPKMeans(n_clusters=k, epsilon=args.epsilon, mode=mode, random_state=seed)
    if method == "dpnmf":
        from dptaucc.baselines.nmf_dp import DPNMF

        return DPNMF(n_clusters=k, epsilon=args.epsilon, n_epochs=args.iterations, mode=mode,
                     random_state=seed)
    from dptaucc.baselines.dphd import DPHD

    return DPHD(n_clusters=k, epsilon=args.epsilon, n_rounds=args.iterations, mode=mode,
                random_state=seed)


def time_ours(args, method: str, name: str, X, y, k: int) -> list[Row]:
    from sklearn.metrics import normalized_mutual_info_score

    rows = []
    for mode in (("paper", "corrected") if method in PRIVATE else (None,)):
        side = f"ours {mode}" if mode else "ours"
        times, model = [], None
        try:
            for seed in range(args.repeats):
                model = our_estimator(method, k, args, mode, seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model.fit(X)
                    times.append(time.perf_counter() - t0)
        except Exception as exc:  # report it in the table and go on with the others
            rows.append(Row(name, method, side, times, error=f"{type(exc).__name__}: {exc}"))
            continue
        score = normalized_mutual_info_score(y, model.evaluation_row_labels(X))
        rows.append(Row(name, method, side, times, nmi=score))
    return rows


def _s(value: float) -> str:
    if value != value:   # NaN
        return "-"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _fit(row: Row | None) -> float:
    return row.fit_median if row is not None and not row.error else float("nan")


def _ratio(authors: Row | None, ours: Row | None) -> str:
    a, b = _fit(authors), _fit(ours)
    return "-" if a != a or b != b or b == 0 else f"{a / b:.1f}x"


def _nmi(row: Row | None) -> str:
    return "-" if row is None or row.error or row.nmi != row.nmi else f"{row.nmi:.2f}"


def _cell(row: Row | None) -> str:
    if row is not None and row.error:
        return "n/a" if row.error.startswith("skipped") else "failed"
    return _s(_fit(row))


def markdown_table(rows: list[Row]) -> str:
    """One line per (dataset, method): the authors' fit beside ours, and their ratio."""
    head = ("| dataset | method | authors fit s | authors whole call s | ours paper s | "
            "ours corrected s | authors ÷ ours paper | authors ÷ ours corrected | NMI authors "
            "/ paper / corrected |")
    lines = [head, "|" + "---|" * 9]
    cells: dict[tuple[str, str], dict[str, Row]] = {}
    for row in rows:
        cells.setdefault((row.dataset, row.method), {})[row.side] = row
    for (dataset, method), by_side in cells.items():
        authors = by_side.get("authors")
        paper = by_side.get("ours paper") or by_side.get("ours")
        corrected = by_side.get("ours corrected") or by_side.get("ours")
        call = authors.call_median if authors is not None and not authors.error else float("nan")
        lines.append(f"| {dataset} | {method} | {_cell(authors)} | {_s(call)} | {_cell(paper)} | "
                     f"{_cell(corrected)} | {_ratio(authors, paper)} | "
                     f"{_ratio(authors, corrected)} | "
                     f"{_nmi(authors)} / {_nmi(paper)} / {_nmi(corrected)} |")
    return "\n".join(lines)


def csv_lines(rows: list[Row]) -> list[str]:
    out = ["dataset,method,side,repeats,fit_median_s,fit_min_s,call_median_s,nmi,error"]
    for r in rows:
        low = min(r.fit_s) if r.fit_s else float("nan")
        err = r.error.replace(",", ";").replace("\n", " ")[:300]
        out.append(f"{r.dataset},{r.method},{r.side},{len(r.fit_s)},{r.fit_median:.6g},"
                   f"{low:.6g},{r.call_median:.6g},{r.nmi:.4f},{err}")
    return out


def interpreter_versions(python: str) -> dict:
    done = subprocess.run([python, "-c", VERSIONS_CODE], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-300:]}


def octave_version(octave: str) -> str:
    try:
        done = subprocess.run([octave, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    return done.stdout.splitlines()[0] if done.stdout else "unknown"


def load_dataset(name: str):
    from dptaucc.datasets import load

    ds = load(name, progress=False)
    return ds.X.tocsr(), ds.row_labels


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import numpy as np
    import scipy.sparse as sp

    checkout = authors_checkout(args.authors, args.cache_dir)
    facts = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "cores": os.cpu_count(), "machine": platform.platform(),
        "load_before": [round(v, 2) for v in os.getloadavg()],
        "ours_commit": git_commit(REPO),
        "authors_commit": git_commit(checkout, "src"),   # only their src/ runs
        "ours_versions": interpreter_versions(sys.executable),
        "authors_versions": interpreter_versions(args.authors_python),
        "octave": octave_version(args.octave) if "dphd" in args.methods else None,
        "epsilon": args.epsilon, "iterations": args.iterations, "repeats": args.repeats,
    }
    print(json.dumps(facts, indent=1), flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-vs-authors-") as tmp:
        scratch = Path(tmp) / "authors"
        shutil.copytree(checkout / "src", scratch / "src")
        for name in args.datasets:
            X, y = load_dataset(name)
            k = len(np.unique(y))
            matrix = Path(tmp) / f"{name}.npz"
            sp.save_npz(matrix, X)
            print(f"{name}: {X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros, K = L = {k}",
                  flush=True)
            if args.loading:
                found = [time_authors(args, scratch / "src", LOAD, name, matrix, k, y,
                                      checkout / "data"), time_our_loading(args, name)]
                for r in found:
                    what = r.error[-300:] if r.error else f"{_s(r.fit_median)} s"
                    print(f"  {LOAD:9s} {r.side:15s} {what}", flush=True)
                rows += found
            for method in args.methods:
                found = [time_authors(args, scratch / "src", method, name, matrix, k, y)]
                found += time_ours(args, method, name, X, y, k)
                for r in found:
                    what = r.error[-300:] if r.error else (
                        f"fit {_s(r.fit_median)} s" + (f", whole call {_s(r.call_median)} s"
                                                       if r.call_s else "")
                        + f", NMI {r.nmi:.2f}")
                    print(f"  {method:9s} {r.side:15s} {what}", flush=True)
                rows += found
    facts["load_after"] = [round(v, 2) for v in os.getloadavg()]
    table = markdown_table(rows)
    print(f"\nload average (1, 5, 15 min) before {facts['load_before']}, after "
          f"{facts['load_after']}; {facts['cores']} cores\n\n{table}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_vs_authors.csv").write_text("\n".join(csv_lines(rows)) + "\n")
        (args.out / "bench_vs_authors.md").write_text(table + "\n")
        (args.out / "bench_vs_authors.json").write_text(json.dumps(facts, indent=1) + "\n")
        print(f"wrote {args.out}/bench_vs_authors.{{csv,md,json}}")


if __name__ == "__main__":
    main()
