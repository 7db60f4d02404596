"""Command line: ``python -m dptaucc.datasets list | fetch NAME... | fetch --all | time``, and
``check FILE`` for your own matrix."""

from __future__ import annotations

import argparse
import sys
import time

from dptaucc._cli import plain

from .download import DatasetError, cache_dir
from .loader import load
from .registry import KNOWN_DATASETS, get_entry
from .user import MATRIX_FORMATS, load_matrix


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dptaucc.datasets", description=plain(__doc__))
    parser.add_argument("--cache-dir", default=None,
                        help="data cache (default: $DPTAUCC_DATA_DIR, else the user cache)")
    parser.add_argument("--mirror", default=None,
                        help="directory or base URL to fetch from (default: $DPTAUCC_MIRROR)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the known datasets, their Table 1 shape and cache state")
    fetch = sub.add_parser("fetch", help="download, verify and parse datasets into the cache")
    fetch.add_argument("names", nargs="*", metavar="NAME", help=f"any of {KNOWN_DATASETS}")
    fetch.add_argument("--all", action="store_true", help="every dataset that can be fetched")
    fetch.add_argument("--allow-unverified", action="store_true",
                       help="also download files without a known checksum (sports)")
    fetch.add_argument("--no-progress", action="store_true", help="no progress bar")
    timing = sub.add_parser("time", help="time a first load (hash + parse + .npz write) and a "
                            "cache hit of each dataset, in a throw-away cache")
    timing.add_argument("names", nargs="*", metavar="NAME",
                        help="datasets to time (default: every one available)")
    check = sub.add_parser("check", help="read your own count matrix (and labels) with the checks "
                           "the engine applies, and describe it")
    check.add_argument("path", help="a .npz (scipy.sparse.save_npz), .mtx or triplet .csv file")
    check.add_argument("--labels", help="row classes, one per line")
    check.add_argument("--col-labels", help="column classes, one per line")
    check.add_argument("--format", choices=MATRIX_FORMATS, help="default: from the file name")
    check.add_argument("--sha256", help="expected SHA-256 of the matrix file")
    check.add_argument("--shape", type=int, nargs=2, metavar=("N_ROWS", "N_COLS"),
                       help="triplet files: the matrix shape (rows/columns without a cell kept)")
    check.add_argument("--index-base", type=int, choices=(0, 1), default=0,
                       help="triplet files: the id of the first row and column (default 0)")
    return parser


def _describe(name: str, m: dict) -> str:
    classes = "no labels" if m["n_classes"] is None else f"{m['n_classes']} classes"
    return (f"{name}: {m['n_rows']} x {m['n_cols']}, nnz {m['nnz']}, "
            f"density {m['density']:.3f}%, {classes}")


def _check(args) -> int:
    try:
        ds = load_matrix(args.path, args.labels, col_labels=args.col_labels, format=args.format,
                         sha256=args.sha256, shape=args.shape, index_base=args.index_base)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    m = ds.meta
    print(_describe(args.path, m) + f", total count {m['total_count']}, max {m['max_count']}")
    if m["class_sizes"] is not None:
        print(f"class sizes: {m['class_sizes']}")
    return 0


def _list(args) -> int:
    root = cache_dir(args.cache_dir)
    print(f"cache: {root}")
    print(f"{'name':<9} {'rows':>6} {'cols':>6} {'classes':>7}  {'checksum':<9} parsed")
    for name in KNOWN_DATASETS:
        e = get_entry(name)
        checked = "yes" if e.matrix.verified else "unknown"
        parsed = "yes" if (root / "parsed" / f"{name}.npz").is_file() else "no"
        print(f"{name:<9} {e.n_rows:>6} {e.n_cols:>6} {e.n_classes:>7}  {checked:<9} {parsed}")
    return 0


def _fetch(args) -> int:
    if args.all and args.names:
        print("error: give dataset names or --all, not both", file=sys.stderr)
        return 2
    names = list(KNOWN_DATASETS) if args.all else args.names
    if not names:
        print("error: name at least one dataset, or --all", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        try:
            get_entry(name)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        skip_unverified = args.all and not args.allow_unverified
        if skip_unverified and not get_entry(name).matrix.verified:
            print(f"{name}: skipped (no known checksum; fetch it with "
                  f"'python -m dptaucc.datasets fetch {name} --allow-unverified')")
            continue
        start = time.perf_counter()
        try:
            ds = load(name, cache_dir=args.cache_dir, mirror=args.mirror,
                      allow_unverified=args.allow_unverified, progress=not args.no_progress)
        except (DatasetError, ValueError) as exc:
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            failed.append(name)
            continue
        print(f"{_describe(name, ds.meta)} ({time.perf_counter() - start:.2f} s)")
    return 1 if failed else 0


def _time(args) -> int:
    """First load from local files vs. .npz cache hit; the raw files come from the data cache
    (``fetch`` them first) or a mirror directory, so no network is needed."""
    import shutil
    import tempfile
    from pathlib import Path

    source_raw = cache_dir(args.cache_dir) / "raw"
    names = args.names or list(KNOWN_DATASETS)
    print(f"{'name':<9} {'first load s':>12} {'npz hit s':>10} {'npz+seed s':>11}")
    with tempfile.TemporaryDirectory(prefix="dptaucc-time-") as tmp:
        for name in names:
            entry = get_entry(name)
            raw = Path(tmp) / name / "raw"
            raw.mkdir(parents=True)
            for f in (entry.matrix, entry.labels):
                for suffix in ("", ".sha256"):
                    if (source_raw / (f.file + suffix)).is_file():
                        shutil.copy(source_raw / (f.file + suffix), raw / (f.file + suffix))
            kw = dict(cache_dir=raw.parent, mirror=args.mirror, progress=False)
            try:
                start = time.perf_counter()
                load(name, **kw)
                first = time.perf_counter() - start
            except (DatasetError, ValueError) as exc:
                print(f"{name:<9} unavailable ({str(exc).split('. ')[0]})")
                continue
            start = time.perf_counter()
            load(name, **kw)
            hit = time.perf_counter() - start
            start = time.perf_counter()
            load(name, seed=0, **kw)
            seeded = time.perf_counter() - start
            print(f"{name:<9} {first:>12.3f} {hit:>10.3f} {seeded:>11.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"list": _list, "fetch": _fetch, "time": _time, "check": _check}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
