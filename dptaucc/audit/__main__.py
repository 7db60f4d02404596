"""``python -m dptaucc.audit``: audit every method of the suite (``make audit``, ``audit-quick``).

Writes ``<results>/audit.parquet`` (``--size quick``: ``<results>/quick/audit.parquet``, never the
full-size file), then the figure and the report section (:mod:`dptaucc.audit.report`).
``--dry-run`` times three pairs of fits of every audit and prints the estimated wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .experiment import default_output, estimate, load_config, plan, run_all


def _workers(jobs: int | None) -> int:
    return (os.cpu_count() or 1) if jobs in (None, -1) else int(jobs)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.audit", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("full", "quick"), default="full")
    ap.add_argument("--methods", help="comma-separated algorithm names (default: the config's)")
    ap.add_argument("--jobs", type=int, default=None, help="joblib workers (default: all cores)")
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("--output", help="parquet path (default: from conf/audit/audit.yaml)")
    ap.add_argument("--dry-run", action="store_true",
                    help="time a few fits of every audit and print the estimated wall time")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    cfg = load_config(args.size)
    methods = [m for m in args.methods.split(",") if m] if args.methods else None
    jobs = plan(cfg, methods)
    workers = _workers(args.jobs)
    if args.dry_run:
        rows = estimate(jobs, workers)
        for r in rows:
            print(f"{r['audit']:34s} {r['fits_per_side']:5d} fits/side  "
                  f"{r['ms_per_fit']:8.1f} ms/fit  ~{r['estimated_s']:6.0f} s")
        total = sum(r["estimated_s"] for r in rows)
        print(f"estimated total: {total / 60:.1f} min on {workers} worker(s) "
              f"({len(jobs)} audits, {args.size} size; fit times measured now, in this process)")
        return 0

    out = Path(args.output) if args.output else default_output(cfg, args.results_dir)
    full = default_output(load_config("full"), args.results_dir)
    if args.size == "quick" and out.resolve() == full.resolve():
        ap.error(f"a quick run never overwrites the full-size table {full}")
    t0 = time.perf_counter()
    run_all(cfg, jobs, out, n_jobs=workers, progress=not args.no_progress)
    print(f"{out} ({len(jobs)} audits, {(time.perf_counter() - t0) / 60:.1f} min)")

    from .report import audit_section, draw_figure

    print("\n".join(audit_section(out.parent, table=out)))
    for path in draw_figure(out, out.parent / "figures"):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
