"""``python -m dptaucc.audit``: audit the methods of the suite; exit code 3 on a violation.

Writes ``<results>/audit.parquet`` (``--size quick``: ``<results>/quick/audit.parquet``, never the
full-size file), then the figure and the report section (:mod:`dptaucc.audit.report`).

Exit codes: 0 no violation; 3 some corrected-mode method's ε_lower exceeds the ε it claims (the
fit's ε end to end, the charged ε at a call site); 2 an audit error (an event that raised, a
bad argument). Paper-mode methods are expected to violate: reported, never a failure.

Every private scenario and call-site setup also gets a ledger record (scope "ledger"): each
mechanism call's charge against what its noise costs by an independent privacy map, and the
fit's totals against the ε (δ) it was given (:mod:`dptaucc.audit.ledger_check`); a violation
there exits 3 too. So does the refit check (scope "refit", once per private method): one
estimator fitted on D' (same settings, other options, paper mode), refitted on D, must hold
exactly what a fresh fit on D with the same seed holds (:mod:`dptaucc.audit.refit_check`).
So does the neighbour sweep (scope "sweep", once per private method): on random neighbouring
pairs, every call's exact cost against its charge and its input against its declaration, the
path and the fitted attributes under equal releases (:mod:`dptaucc.audit.neighbour_sweep`).
``--ledger-only`` runs just those three checks (seconds to a minute or two a method; DPHD's
320-pair sweep about three minutes on 2 busy cores).

``--secure`` audits the secure path instead (``<results>/quick/audit_secure.parquet`` or
``<results>/audit_secure.parquet``): each method's call sites and ledgers with every mechanism
draw on the secure samplers (:mod:`dptaucc.audit.secure`), and every primitive drawn from fresh
secure samplers (a sampler state a seed reproduces exits 3).

``--methods NAME`` may name your own method (its config in ``$DPTAUCC_CONFIG_PATH``, its
scenarios beside it: docs/audit.md); ``primitives`` names the seeded primitives job, which a
run without ``--methods`` starts with (every primitive on its worst-case pair, about 30 s).
``--bug NAME`` plants a bug a method declares
(:mod:`dptaucc.audit.bugs`) in every worker;
``--power`` audits the correct code and every catalogue bug of the selected methods (quick
size) and writes the power table ``audit_power.parquet``. ``--dry-run`` estimates wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dptaucc._cli import plain

from .events import AuditEventError
from .experiment import default_output, estimate, load_config, plan, run_all, violations
from .pair_cost import exceeds

VIOLATION = 3
AUDIT_ERROR = 2


def _workers(jobs: int | None) -> int:
    return (os.cpu_count() or 1) if jobs in (None, -1) else int(jobs)


def _print_violations(found: list[dict]) -> None:
    for r in found:
        if r["scope"] in ("ledger", "refit", "sampler", "sweep"):
            print(f"VIOLATION {r['method']}/{r['mode']} {r['scope']} {r['pair']} {r['step']}: "
                  f"{r['event']}")
            continue
        where = r["step"] or r["pair"]
        exact = r.get("epsilon_pair")
        if exact is not None and exceeds(exact, r["epsilon_claimed"]):
            print(f"VIOLATION {r['method']}/{r['mode']} {r['scope']} {where}: the pair's exact "
                  f"cost {exact:.3f} > claimed {r['epsilon_claimed']:.3g} ({r['pair_how']})")
            continue
        lower, claimed = r["epsilon_lower"], r["epsilon_claimed"]
        if not lower > claimed * (1 + 1e-9):  # an exact check of the call: its event says which
            print(f"VIOLATION {r['method']}/{r['mode']} {r['scope']} {where}: {r['event']}")
            continue
        print(f"VIOLATION {r['method']}/{r['mode']} {r['scope']} {where}: ε_lower = "
              f"{lower:.3f} > claimed {claimed:.3g} ({r['event']})")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.audit", description=plain(__doc__),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("full", "quick"), default="full")
    ap.add_argument("--methods", help="comma-separated algorithm names, 'primitives' for the "
                    "seeded primitives job (default: the primitives and the config's methods)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("--output", help="parquet path (default: from conf/audit/audit.yaml)")
    ap.add_argument("--bug", help="plant this bug (<method>.<bug>, declared beside its "
                                  "method) in every worker")
    ap.add_argument("--power", action="store_true",
                    help="quick audit of the correct code and of every catalogue bug of the "
                         "selected methods: the power table audit_power.parquet")
    ap.add_argument("--dry-run", action="store_true",
                    help="time a few fits of every audit and print the estimated wall time")
    ap.add_argument("--stop-at-violation", action="store_true",
                    help="stop at the first corrected-mode violation (the exit code is the same: "
                         "3; the mutation run uses it, `python -m dptaucc.auditscore.mutants`)")
    ap.add_argument("--secure", action="store_true",
                    help="audit the secure samplers: call sites and ledgers of every private "
                         "method on them, and fresh secure samplers per primitive")
    ap.add_argument("--ledger-only", action="store_true",
                    help="only the ledger checks (every charge against its noise's cost, "
                         "totals against the ε given), the refit check and the neighbour "
                         "sweep: seconds per method (DPHD under a minute)")
    ap.add_argument("--seed", type=int, default=None,
                    help="the audit's seed (default: the config's, 0): every fit seed, history "
                         "and split of the fits derives from it; another seed is an independent "
                         "audit of the same size (the mutation run confirms a violation so)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.dry_run and args.power:
        ap.error("--dry-run estimates one audit's time; it does not apply to --power (which "
                 "would run every catalogue bug): estimate without --power")

    cfg = load_config("quick" if args.power else args.size)
    if args.seed is not None:
        cfg = {**cfg, "seed": args.seed}
    methods = [m for m in args.methods.split(",") if m] if args.methods else None
    workers = _workers(args.jobs)
    if args.bug:
        from .catalogue import find_bug

        try:
            bug = find_bug(args.bug)
        except ValueError as error:
            ap.error(str(error))
        methods = methods or [bug.method]
    try:
        if args.power:
            from .power import measure_power, power_output

            out = Path(args.output) if args.output else power_output(args.results_dir)
            df = measure_power(cfg, methods, n_jobs=workers, out=out,
                               progress=not args.no_progress)
            from .power import draw_power_figure

            print(df.to_string(index=False))
            print(out)
            for path in draw_power_figure(out, out.parent / "figures"):
                print(path)
            return 0
        jobs = plan(cfg, methods, secure=args.secure)
        if args.dry_run:
            rows = estimate(jobs, workers)
            for r in rows:
                print(f"{r['audit']:34s} {r['fits_per_side']:5d} fits/side  "
                      f"{r['ms_per_fit']:9.4f} ms/fit  ~{r['estimated_s']:6.0f} s")
            total = sum(r["estimated_s"] for r in rows)
            print(f"estimated total: {total / 60:.1f} min on {workers} worker(s) "
                  f"({len(jobs)} audits, {args.size} size; fit times measured now)")
            return 0
        out = Path(args.output) if args.output else default_output(cfg, args.results_dir)
        full = default_output(load_config("full"), args.results_dir)
        if args.secure and not args.output:
            out, full = (p.with_name(p.stem + "_secure" + p.suffix) for p in (out, full))
        if args.ledger_only and not args.output:
            out = out.with_name(out.stem + "_ledger" + out.suffix)
        if args.size == "quick" and out.resolve() == full.resolve():
            ap.error(f"a quick run never overwrites the full-size table {full}")
        t0 = time.perf_counter()
        records = run_all(cfg, jobs, out, n_jobs=workers, progress=not args.no_progress,
                          bug=args.bug,
                          stop_at_violation=args.bug is not None or args.stop_at_violation,
                          ledger_only=args.ledger_only)
    except AuditEventError as error:
        print(f"audit error: {error}", file=sys.stderr)
        return AUDIT_ERROR
    print(f"{out} ({len(jobs)} audits, {(time.perf_counter() - t0) / 60:.1f} min)")
    if args.bug is None and not (args.secure or args.ledger_only):
        from .report import audit_section, draw_figure

        print("\n".join(audit_section(out.parent, table=out)))
        for path in draw_figure(out, out.parent / "figures"):
            print(path)
    paper = [r for r in records if r["mode"] == "paper" and r["verdict"] == "violation"]
    if paper:
        print(f"paper mode (expected, not a failure): {len(paper)} violation(s) in "
              f"{sorted({r['method'] for r in paper})}")
    found = violations(records)
    _print_violations(found)
    return VIOLATION if found else 0


if __name__ == "__main__":
    sys.exit(main())
