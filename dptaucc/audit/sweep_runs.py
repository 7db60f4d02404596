"""The neighbour sweep of the correct code, run at many audit seeds: ``audit_sweep.parquet``.

``python -m dptaucc.audit.sweep_runs --seeds 0-9`` (``make audit-sweep``) runs
:func:`dptaucc.audit.neighbour_sweep.sweep_record` for every private method at each seed and
writes one row per method and seed; REPORT's sweep table
(:func:`~dptaucc.audit.neighbour_sweep.sweep_section`) reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dptaucc.audit.sweep_runs --seeds 0-9``: the sweep of every private
    method's correct code at each audit seed, one row per method and seed, written to
    ``<results>/audit_sweep.parquet`` (how often correct code is flagged: it must be never).
    Exit 3 if any row is a violation.

    >>> import contextlib, io, tempfile
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     code = main(["--seeds", "0", "--methods", "dp_taucc", "--pairs", "2",
    ...                  "--results-dir", tempfile.mkdtemp()])
    >>> code
    0
    """
    import argparse
    from pathlib import Path

    import pandas as pd

    from .experiment import AuditJob
    from .methods import is_private
    from .neighbour_sweep import N_PAIRS, sweep_record

    parser = argparse.ArgumentParser(prog="python -m dptaucc.audit.sweep_runs",
                                     description=main.__doc__)
    parser.add_argument("--seeds", default="0-9", help="first-last audit seeds")
    parser.add_argument("--methods", default="dp_taucc,dp_taucc_row,dp_kmeans,dphd,dpnmf,dpm,"
                                             "colored_noise")
    parser.add_argument("--pairs", type=int, default=N_PAIRS)
    parser.add_argument("--results-dir", default="results")
    args = parser.parse_args(argv)
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    rows = []
    for method in args.methods.split(","):
        if not is_private(method):
            raise ValueError(f"{method!r} is not a private method: nothing to sweep")
        job = AuditJob(method, "corrected", 1.0, 10)
        for seed in seeds:
            rec = sweep_record(job.factory, method, seed=seed, n_pairs=args.pairs)
            rows.append({"method": method, "seed": seed, **rec})
            print(f"{method} seed {seed}: {rec['verdict']} ({rec['step']}, "
                  f"{rec['time_s']:.1f} s) {rec['event'][:160]}", flush=True)
    out = Path(args.results_dir) / "audit_sweep.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out, index=False)
    bad = sum(r["verdict"] == "violation" for r in rows)
    print(f"{out}: {len(rows)} sweeps, {bad} violations")
    return 3 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
