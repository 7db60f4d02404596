"""``make audit-false-alarms``: how often the gate flags correct code, measured.

A *decision* is one verdict the gate takes on correct code, with a fresh audit seed:

* ``primitive``: one primitive of :mod:`dptaucc.audit.primitives` (its worst-case pair, its
  event chosen on a fifth of the outputs and counted on the rest): alarm when the gate's rule
  (:func:`dptaucc.audit.primitives.violated`) flags it: ε_lower above the ε its ledger charged,
  or a charge below what the privacy map recomputes from the noise drawn. Nominal level: the
  module's α (0.05) per decision (the map's check is exact: it adds no chance of an alarm on
  correct code).
* ``call-site``: one audited call of a method (:func:`dptaucc.audit.experiment.run_all` on the
  quick configuration with the seed replaced): alarm when its record's verdict is a violation.
  Nominal level: the α the record was tested at (its ``alpha``: the job's α split over its
  records, then over its looks inside the record).
* ``end-to-end``: one end-to-end scenario of a method, the same way.
* ``method gate``: a whole method's audit (every record of its jobs): alarm when any record is
  a violation, i.e. ``python -m dptaucc.audit --methods NAME`` would exit 3. Nominal level: the
  sum of its records' α (Bonferroni: the config's α per method, shared by its corrected jobs).

Cost: the method audits run at reduced sizes (``--draws`` redraws per side at a call site,
``--fits`` fits per side end to end, instead of the quick size's 600 000 and 1 200) with the
*same decision rule*: the same scenarios, histories, event selection on a held-out half,
Clopper–Pearson bounds and α split. The level guarantee (P(alarm) ≤ nominal) holds at every
size, so a rate above nominal at a reduced size is a real defect of the rule; at the full size
the rate of a call site whose true loss is at its charge is about the same, and that of a
looser one smaller. Primitives run at the gate's size by default (``--primitive-n``).

Observed rates come with two-sided 95 % Clopper–Pearson intervals; the table
``<results>/audit_false_alarms.parquet`` has one row per decision, and decisions are stored
as they finish (``<results>/audit_false_alarms.jsonl``, keyed by kind, name, seed, size and
tree hash), so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from scipy.stats import beta as beta_dist

__all__ = ["clopper_pearson", "primitive_decisions", "method_decisions", "summarise"]

#: seeds of the false-alarm run start here (the gate's own seed is 0: every decision here
#: uses a seed the committed audits never used)
SEED_BASE = 1_000_000


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval for k successes in n trials.

    >>> lo, hi = clopper_pearson(0, 1000)
    >>> lo, round(hi, 5)
    (0.0, 0.00368)
    >>> [round(x, 4) for x in clopper_pearson(50, 1000)]
    [0.0373, 0.0654]
    """
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta_dist.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta_dist.ppf(1 - a, k + 1, n - k))
    return lo, hi


def primitive_decisions(seed: int, n: int, epsilon: float = 1.0, alpha: float = 0.05,
                        secure: bool = False) -> list[dict]:
    """One decision per primitive of :mod:`dptaucc.audit.primitives` at ``seed``.

    >>> rows = primitive_decisions(SEED_BASE, 100)  # the fewest outputs a primitive takes
    >>> rows[0]["name"], rows[0]["config"], len(rows)
    ('discrete-laplace (seeded)', 'n=100', 10)
    >>> any(r["alarm"] for r in rows)
    False
    """
    from dptaucc.audit.primitives import audit_primitive, primitive_names, violated

    rows = []
    for name in primitive_names(secure):
        r = audit_primitive(name, epsilon, n, seed=None if secure else seed, secure=secure,
                            alpha=alpha)
        rows.append({"kind": "primitive", "name": f"{name} ({r['path']})", "seed": seed,
                     "config": f"n={n}",
                     "size": r["n"], "epsilon_lower": r["epsilon_lower"],
                     "claim": r["epsilon"], "alarm": violated(r),
                     "alpha": alpha, "seconds": r["seconds"], "event": r["event"]})
    return rows


def method_decisions(method: str, seed: int, draws: int, fits: int) -> list[dict]:
    """Every record of a method's quick audit at ``seed`` with reduced sizes, and the method
    gate's decision over them.

    >>> rows = method_decisions("fast_taucc", SEED_BASE, draws=100, fits=8)
    >>> [(r["kind"], r["name"], r["alarm"]) for r in rows]  # non-private: the gate only
    [('method gate', 'fast_taucc', False)]
    """
    from dptaucc.audit.experiment import load_config, plan, run_all, violations

    cfg = load_config("quick")
    scale = fits / float(cfg["n_fits"])
    cfg.update(seed=int(seed), call_site_draws=int(draws), n_fits=int(fits),
               n_fits_per_method={k: max(4, int(round(v * scale)))
                                  for k, v in (cfg.get("n_fits_per_method") or {}).items()})
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        records = run_all(cfg, plan(cfg, [method]), None, n_jobs=1, progress=False)
    config = f"draws={draws},fits={fits}"
    rows = []
    for r in records:
        if r["mode"] != "corrected":
            continue
        where = r["step"] or r["pair"]
        rows.append({"kind": r["scope"], "name": f"{method} {where}", "seed": seed,
                     "config": config,
                     "size": int(r["n_fits"]), "epsilon_lower": float(r["epsilon_lower"]),
                     "claim": float(r["epsilon_claimed"]),
                     "alarm": r["verdict"] == "violation", "alpha": float(r["alpha"]),
                     "seconds": float(r["time_s"]), "event": str(r["event"])})
    rows.append({"kind": "method gate", "name": method, "seed": seed, "config": config,
                 "size": int(draws),
                 "epsilon_lower": math.nan, "claim": math.nan,
                 "alarm": bool(violations(records)),
                 "alpha": float(sum(r["alpha"] for r in rows)),
                 "seconds": time.perf_counter() - start, "event": ""})
    return rows


def summarise(df):
    """Per kind: decisions, alarms, observed rate with its 95 % CI, mean nominal α, and the
    alarms the nominal levels allow in expectation (Σ α).

    >>> import pandas as pd
    >>> decisions = pd.DataFrame({"kind": ["primitive"] * 4, "name": ["a", "a", "b", "b"],
    ...                           "alarm": [False, True, False, False], "alpha": [0.125] * 4})
    >>> row = summarise(decisions).to_dict("records")[0]
    >>> row["decisions"], row["alarms"], row["rate"], row["expected_at_nominal"], row["names"]
    (4, 1, 0.25, 0.5, 2)
    """
    import pandas as pd

    out = []
    for kind, g in df.groupby("kind", sort=False):
        k, n = int(g["alarm"].sum()), len(g)
        lo, hi = clopper_pearson(k, n)
        out.append({"kind": kind, "decisions": n, "alarms": k, "rate": k / n, "ci_low": lo,
                    "ci_high": hi, "nominal_alpha": float(g["alpha"].mean()),
                    "expected_at_nominal": float(g["alpha"].sum()),
                    "names": g["name"].nunique()})
    return pd.DataFrame(out)


def _key(row: dict, tree: str) -> str:
    return f"{row['kind']}|{row['name']}|{row['seed']}|{row['config']}|{tree}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.auditscore.false_alarms",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--primitive-repeats", type=int, default=200,
                    help="seeds of the primitives audit (one decision per primitive each)")
    ap.add_argument("--primitive-n", type=int, default=400_000,
                    help="outputs per side (the gate's size: 400000)")
    ap.add_argument("--methods", default="dp_taucc,dp_kmeans,dpnmf,colored_noise,dpm",
                    help="methods whose decisions are measured (comma-separated; '' for none)")
    ap.add_argument("--method-repeats", type=int, default=10, help="seeds per method")
    ap.add_argument("--draws", type=int, default=10_000, help="redraws per side, call sites")
    ap.add_argument("--fits", type=int, default=120, help="fits per side, end to end")
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("--output", help="table (default <results>/audit_false_alarms.parquet)")
    ap.add_argument("--dry-run", action="store_true",
                    help="time one decision of each kind and print the estimated cost")
    args = ap.parse_args(argv)

    import pandas as pd

    from .scratch import tree_hash

    results = Path(args.results_dir)
    out = Path(args.output) if args.output else results / "audit_false_alarms.parquet"
    store = out.with_suffix(".jsonl")
    tree = tree_hash(Path.cwd())
    methods = [m for m in args.methods.split(",") if m]
    done: dict[str, dict] = {}
    if store.exists():
        for line in store.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[_key(row, row["tree_hash"])] = row

    if args.dry_run:
        t0 = time.perf_counter()
        n_prim = len(primitive_decisions(SEED_BASE, args.primitive_n))
        prim_s = time.perf_counter() - t0
        total = prim_s * args.primitive_repeats
        print(f"primitives: {prim_s:.1f} s per seed ({n_prim} decisions) x "
              f"{args.primitive_repeats} "
              f"= {total / 60:.1f} min")
        for m in methods:
            t0 = time.perf_counter()
            rows = method_decisions(m, SEED_BASE, args.draws, args.fits)
            s = time.perf_counter() - t0
            total += s * args.method_repeats
            print(f"{m}: {s:.0f} s per seed ({len(rows)} decisions) x {args.method_repeats} "
                  f"= {s * args.method_repeats / 60:.1f} min")
        print(f"estimated total: {total / 3600:.2f} h on one core (measured now, under the "
              "current load)")
        return 0

    store.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []

    def record(new: list[dict]) -> None:
        with store.open("a", encoding="utf-8") as f:
            for row in new:
                row["tree_hash"] = tree
                f.write(json.dumps(row) + "\n")
        rows.extend(new)

    for i in range(args.primitive_repeats):
        seed = SEED_BASE + i
        config = f"n={args.primitive_n}"
        probe = {"kind": "primitive", "name": "discrete-laplace (seeded)", "seed": seed,
                 "config": config}
        if _key(probe, tree) in done:
            rows += [r for r in done.values() if r["kind"] == "primitive" and
                     r["seed"] == seed and r["config"] == config and r["tree_hash"] == tree]
            continue
        record(primitive_decisions(seed, args.primitive_n))
        if (i + 1) % 20 == 0:
            print(f"primitives: {i + 1}/{args.primitive_repeats} seeds", flush=True)
    for m in methods:
        for i in range(args.method_repeats):
            seed = SEED_BASE + i
            config = f"draws={args.draws},fits={args.fits}"
            probe = {"kind": "method gate", "name": m, "seed": seed, "config": config}
            if _key(probe, tree) in done:
                rows += [r for r in done.values() if r["name"].split(" ")[0] == m and
                         r["seed"] == seed and r["tree_hash"] == tree and
                         r["config"] == config and r["kind"] != "primitive"]
                continue
            record(method_decisions(m, seed, args.draws, args.fits))
            print(f"{m}: {i + 1}/{args.method_repeats} seeds", flush=True)

    df = pd.DataFrame(rows)
    df["tree_hash"] = tree
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out, index=False)
    summary = summarise(df)
    print(summary.to_string(index=False))
    alarms = df[df["alarm"]]
    for _, r in alarms.iterrows():
        print(f"ALARM {r['kind']} {r['name']} seed {r['seed']}: ε_lower {r['epsilon_lower']:.3f}"
              f" > {r['claim']:.3g} ({r['event']})")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
