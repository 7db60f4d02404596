"""What the call sites' exact pair cost sees alone, with no draw: the catalogue, measured.

For every method with call-site setups and every catalogue bug of that method (and the
correct code), every audited call of every setup is opened on D and on D' under the setup's
history (recorded on D with the gate's first pilot seed, then crafted), exactly as the
call-site audit opens it, and its pair's exact cost (:mod:`dptaucc.audit.pair_cost`) compared
with its charge. A bug is *seen* when some call's exact cost exceeds its charge beyond the
float tolerance: the call-site audit then reports a violation whatever its draws show. No
sampling is involved, so the table is the same on every run and every machine up to float
rounding; it measures the exact layer only (the sampled bounds, the ledger check and the end to
end layer see other bugs, docs/audit.md).

``python -m dptaucc.auditscore.exact_power`` writes ``<results>/audit_exact_power.parquet``
(one row per method and bug: calls opened, the largest exact cost over charge and where).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bug_rows", "main"]

def _opened_ratios(job, units, bug: str | None):
    """(ratio, where) of every audited call's exact pair cost over its charge."""
    from dptaucc.audit.callsite import history_seeds
    from dptaucc.audit.pair_cost import pair_cost
    from dptaucc.audit.runner import fit_seed
    from dptaucc.audit.transcript import HistoryDiverged, open_call, record
    from dptaucc.audit.workers import bug_context

    out = []
    with bug_context(bug):
        for setup, call in units:
            build = job.factory(setup.params)
            k = call.index
            recorded, replayed = history_seeds(k, 0)  # the gate's first candidate history
            history = record(build(fit_seed(0, recorded)), setup.pair.D)
            if len(history) <= k:
                continue
            if setup.craft is not None:
                history = setup.craft(history)
            seed = fit_seed(0, replayed)
            try:
                a, _ = open_call(build(seed), setup.pair.D, history, k)
                b, _ = open_call(build(seed), setup.pair.D_prime, history, k)
            except HistoryDiverged:
                continue
            claim = max(a.epsilon, b.epsilon)
            cost = pair_cost(a.calibration, b.calibration, max(a.delta, b.delta)).epsilon
            ratio = cost / claim if claim > 0 else math.inf
            out.append((ratio, f"{setup.pair.name} #{k} {call.step}"))
    return out


def bug_rows(method: str, size: str = "quick") -> list[dict]:
    """One row for the correct code (``bug`` "") and one per catalogue bug of ``method``; none
    for a method without call sites.

    >>> bug_rows("fast_taucc")  # not private: no mechanism call to open
    []
    """
    from dptaucc.audit.catalogue import CATALOGUE
    from dptaucc.audit.experiment import _n_units, load_config, plan
    from dptaucc.audit.pair_cost import PAIR_TOLERANCE

    jobs = [j for j in plan(load_config(size), [method]) if j.scope == "call-site"]
    if not jobs:
        return []
    job = jobs[0]
    rows = []
    for name in ["", *sorted(n for n, b in CATALOGUE.items() if b.method == method)]:
        t0 = time.perf_counter()
        bug = name or None
        ratios = _opened_ratios(job, _n_units(job, bug), bug)
        known = [(r, w) for r, w in ratios if not math.isnan(r)]
        top, where = max(known, default=(math.nan, ""))
        rows.append({"method": method, "bug": name,
                     "kind": CATALOGUE[name].kind if name else "correct code",
                     "calls": len(ratios), "no_exact_cost": len(ratios) - len(known),
                     "max_ratio": top, "where": where,
                     "seen": bool(top > 1.0 + PAIR_TOLERANCE),
                     "seconds": time.perf_counter() - t0})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Write the table (module docstring) and print each row and the count seen.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     main(["--methods", "fast_taucc", "--results-dir", d])
    no method with call sites among fast_taucc: nothing written
    0
    """
    import pandas as pd

    from dptaucc.audit.experiment import load_config

    ap = argparse.ArgumentParser(prog="python -m dptaucc.auditscore.exact_power",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", help="comma-separated (default: every audited method)")
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--output", help="parquet (default <results>/audit_exact_power.parquet)")
    args = ap.parse_args(argv)
    methods = args.methods.split(",") if args.methods else list(load_config("quick")["methods"])
    rows = []
    for method in methods:
        for row in bug_rows(method):
            rows.append(row)
            print(f"{row['method']:14s} {row['bug'] or '(correct code)':48s} "
                  f"{row['calls']:3d} calls  max exact/charge {row['max_ratio']:.3f}"
                  f"{'  SEEN' if row['seen'] else ''}  {row['where']}", flush=True)
    if not rows:
        print(f"no method with call sites among {','.join(methods)}: nothing written")
        return 0
    out = Path(args.output or Path(args.results_dir) / "audit_exact_power.parquet")
    out.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    df.to_parquet(out, index=False)
    bugs, correct = df[df["bug"] != ""], df[df["bug"] == ""]
    print(f"{out}: {int(bugs['seen'].sum())} of {len(bugs)} catalogue bugs seen by the exact "
          f"pair cost alone; correct code: {int(correct['seen'].sum())} of {len(correct)} "
          "methods flagged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
