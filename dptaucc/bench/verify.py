"""``python -m dptaucc.bench.verify`` (``make verify``): do the committed results hold here?

Re-runs a stratified sample of the committed paper-scale records (``results/<experiment>
.parquet``) on this machine, with the engine's own execution (:mod:`execution`, into a
temporary store: the committed results are never written), and compares every re-run record
with the committed one field by field (:mod:`travel`):

* **identical**: every compared field bit for bit the same;
* **within tolerance**: some float (ε spent, a metric, a ledger number) differs, within the
  float tolerance of :mod:`dptaucc.testing`;
* **float path**: a method and mode whose labels the last bits of CPU-chosen floats can decide
  (``MethodInfo.float_path``, measured in docs/records.md) came out otherwise: only what the
  fit found (scores, cluster counts) differs, each value inside the committed values of its
  cell (same method, mode, dataset, ε and parameters, every seed): their mean ±
  :data:`CELL_SIGMAS` standard deviations. Two or more such records making up more than
  :data:`FLOAT_PATH_MAX_SHARE` of a stratum's are no longer a rare flip: they count as
  different;
* **different**: anything else beyond the tolerance. The command then exits 1.

The sample: every experiment × method × mode stratum of the committed tables, ``--per-stratum``
records from each (spread over its datasets first), chosen by ``--sample-seed``. Machine fields
(times, memory, load, provenance) are not compared. Progress: one bar over the jobs; jobs not
started within ``--max-minutes`` are reported as not checked (and the command exits 1).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dptaucc.bench.configs import (
    EXPERIMENTS,
    GROUPS,
    Composer,
    _same,
    expand_grid,
    experiment_grid,
    run_id,
    to_plain,
)
from dptaucc.bench.execution import run_jobs
from dptaucc.bench.execution import work as run_one
from dptaucc.bench.outcomes import Outcome
from dptaucc.bench.scales import paper_results_dir
from dptaucc.bench.store import RunStore
from dptaucc.bench.travel import OUTCOME_FIELDS, FieldDifference, compare_records

#: records per experiment × method × mode stratum by default (130 jobs in all: about two
#: CPU-minutes, measured; a bound of 5 minutes on 2 idle cores)
DEFAULT_PER_STRATUM = 5
#: a float-path value passes when within the committed cell's mean ± this many deviations
CELL_SIGMAS = 4.0
#: two or more float-path records and more than this share of a stratum's checked ones:
#: different
FLOAT_PATH_MAX_SHARE = 0.5
#: jobs not started after this many minutes are not checked (a bound, not an expected time)
DEFAULT_MAX_MINUTES = 30.0

VERDICTS = ("identical", "within tolerance", "float path", "different", "not checked")

#: the record column that holds each grid axis's value
_AXIS_COLUMNS = {"dataset": "dataset", "algorithm": "algorithm", "mode": "mode",
                 "epsilon": "epsilon", "seed": "seed", "dataset.n_cols": "p_n_cols"}


class VerifyError(RuntimeError):
    """The committed results cannot be checked here (missing tables, a job that no longer
    exists in the experiment's grid): one line for the user, exit 2."""


@dataclass
class Verdict:
    """How one committed record came out when re-run here."""

    experiment: str
    row: Mapping
    verdict: str = "not checked"
    differences: list[FieldDifference] = field(default_factory=list)
    note: str = ""

    @property
    def stratum(self) -> tuple[str, str, str]:
        mode = self.row.get("mode")
        return self.experiment, str(self.row["algorithm"]), "-" if pd.isna(mode) else str(mode)


# ---------------------------------------------------------------- the sample
def committed_tables(results_dir: Path, experiments: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The committed paper-scale tables, successful records only."""
    tables = {}
    for exp in experiments:
        path = results_dir / f"{exp}.parquet"
        if not path.exists():
            raise VerifyError(f"no committed table {path}: nothing to verify for {exp}")
        df = pd.read_parquet(path)
        tables[exp] = df[df["status"] == "ok"].reset_index(drop=True)
    return tables


def _order(run_ids: pd.Series, sample_seed: int) -> pd.Series:
    return run_ids.map(lambda r: hashlib.sha256(f"{sample_seed}:{r}".encode()).hexdigest())


def stratified_sample(tables: Mapping[str, pd.DataFrame], per_stratum: int,
                      sample_seed: int = 0) -> list[Verdict]:
    """``per_stratum`` records of every experiment × algorithm × mode, spread over the
    stratum's datasets (one per dataset before a second from any), in an order fixed by
    ``sample_seed``."""
    out = []
    for exp, df in tables.items():
        if df.empty:
            continue
        df = df.assign(_order=_order(df["run_id"], sample_seed),
                       _mode=df["mode"].astype("string").fillna("-"))
        for _, stratum in df.groupby(["algorithm", "_mode"], sort=True):
            stratum = stratum.sort_values("_order")
            stratum = stratum.assign(_rank=stratum.groupby("dataset").cumcount())
            picked = stratum.sort_values(["_rank", "_order"]).head(per_stratum)
            out += [Verdict(exp, row.drop(["_order", "_mode", "_rank"]).to_dict())
                    for _, row in picked.iterrows()]
    return out


def _axis_value(axis: str, values: list, row: Mapping):
    """The grid value of ``axis`` that the committed ``row`` ran with."""
    column = _AXIS_COLUMNS.get(axis)
    if column is None and axis.startswith("algorithm.params."):
        column = "p_" + axis.rsplit(".", 1)[1]
    if column is None:
        raise VerifyError(f"cannot tell the value of grid axis {axis!r} from a record")
    value = row.get(column)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return values[0]  # a non-private method: ε and mode are not part of its job
    for v in values:
        if _same(v, value):
            return v
    raise VerifyError(f"{row['run_id']}: {axis}={value!r} is no longer in the grid")


def jobs_for(verdicts: Sequence[Verdict], work_dir: Path) -> list[dict]:
    """The job of every sampled record, rebuilt from its experiment's paper grid with
    ``paths.results_dir`` = ``work_dir``; its run id must be the record's.

    Records that share an algorithm and a dataset are expanded together (one composition of
    the config for all of them): the grid of their own values, from which their jobs are
    picked by run id."""
    overrides = (f"paths.results_dir={work_dir}",)
    jobs: dict[str, dict] = {}
    with Composer() as composer:
        for exp in dict.fromkeys(v.experiment for v in verdicts):
            grid = experiment_grid(composer, exp, "paper", overrides)
            groups: dict[tuple, list[dict]] = {}
            for v in verdicts:
                if v.experiment == exp:
                    point = {axis: _axis_value(axis, values, v.row)
                             for axis, values in grid.items()}
                    key = tuple(str(point[a]) for a in grid if a in GROUPS)
                    groups.setdefault(key, []).append(point)
            for points in groups.values():
                sub = {axis: list({str(p[axis]): p[axis] for p in points}.values())
                       for axis in grid}
                for job in expand_grid(composer, (f"experiment={exp}", *overrides), sub):
                    jobs.setdefault(run_id(job), job)
    out = []
    for v in verdicts:
        job = jobs.get(v.row["run_id"])
        if job is None:
            raise VerifyError(
                f"{v.experiment} record {v.row['run_id']} is not a job the code builds from "
                f"its grid values: the committed results are from other code; rerun `make "
                f"reproduce` to remake them")
        out.append(to_plain(job))
    return out


# ---------------------------------------------------------------- running
_OTHER_KERNELS: list = []


def _work(job: dict, deadline: float, other_kernels: int | None) -> Outcome:
    """One job in a worker, unless the time budget is spent (then a ``not checked`` outcome)."""
    if time.time() > deadline:
        return Outcome("not checked", None, run_id(job), "not started within --max-minutes")
    if other_kernels is not None and not _OTHER_KERNELS:
        from dptaucc.testing import other_float_kernels

        _OTHER_KERNELS.append(other_float_kernels(other_kernels))
    return run_one(job)


def rerun(jobs: Sequence[dict], n_jobs: int, max_minutes: float,
          other_kernels: int | None = None) -> dict[str, dict]:
    """Run ``jobs`` with the engine's execution; the stored record of each by run id (a job
    whose worker died has its failed record; a job not started has none)."""
    deadline = time.time() + 60.0 * max_minutes
    work = functools.partial(_work, deadline=deadline, other_kernels=other_kernels)
    run_jobs(list(jobs), n_jobs, desc="verify", work=work)
    out = {}
    for job in jobs:
        rid = run_id(job)
        rec = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"]).get(rid)
        if rec is not None:
            out[rid] = rec
    return out


# ---------------------------------------------------------------- judging
def _cell(table: pd.DataFrame, row: Mapping) -> pd.DataFrame:
    """The committed records of ``row``'s cell: same algorithm, mode, dataset, ε and
    parameters, every seed."""
    keys = ["algorithm", "mode", "dataset", "epsilon", *sorted(c for c in table.columns
                                                              if c.startswith("p_"))]
    mask = np.ones(len(table), dtype=bool)
    for k in keys:
        col, value = table[k], row.get(k)
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            mask &= col.isna().to_numpy()
        else:
            mask &= (col == value).fillna(False).to_numpy(dtype=bool)
    return table[mask]


def _in_cell(diff: FieldDifference, cell: pd.DataFrame) -> tuple[bool, str]:
    values = pd.to_numeric(cell[diff.field], errors="coerce").dropna()
    if len(values) < 3 or diff.here is None:
        return False, f"{diff.field}: too few committed values in its cell to judge"
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    ok = abs(float(diff.here) - mean) <= CELL_SIGMAS * sd
    return ok, (f"{diff.field} {diff.committed:.4g} -> {diff.here:.4g}: "
                f"{'inside' if ok else 'OUTSIDE'} the cell's {mean:.4g} ± {CELL_SIGMAS:g}·"
                f"{sd:.2g} ({len(values)} seeds)")


def judge(verdicts: Sequence[Verdict], reruns: Mapping[str, dict],
          tables: Mapping[str, pd.DataFrame], float_path: Mapping[str, tuple[str, ...]]
          ) -> None:
    """Fill in each verdict (see the module docstring)."""
    for v in verdicts:
        rec = reruns.get(v.row["run_id"])
        if rec is None:
            v.verdict, v.note = "not checked", "not run (time budget)"
            continue
        v.differences = compare_records(v.row, rec)
        beyond = [d for d in v.differences if not d.within_tolerance]
        if not v.differences:
            v.verdict = "identical"
        elif not beyond:
            v.verdict = "within tolerance"
        elif (v.stratum[2] in float_path.get(v.stratum[1], ())
              and all(d.field in OUTCOME_FIELDS for d in beyond)):
            cell = _cell(tables[v.experiment], v.row)
            checks = [_in_cell(d, cell) for d in beyond]
            v.verdict = "float path" if all(ok for ok, _ in checks) else "different"
            v.note = "; ".join(text for _, text in checks)
        else:
            v.verdict = "different"
        if rec.get("status") != "ok":
            v.note = str(rec.get("error") or "").splitlines()[0] if rec.get("error") else ""
    by_stratum: dict[tuple, list[Verdict]] = {}
    for v in verdicts:
        by_stratum.setdefault(v.stratum, []).append(v)
    for group in by_stratum.values():
        flips = [v for v in group if v.verdict == "float path"]
        checked = [v for v in group if v.verdict != "not checked"]
        if len(flips) > 1 and len(flips) > FLOAT_PATH_MAX_SHARE * len(checked):
            for v in flips:
                v.verdict = "different"
                v.note += (f" ({len(flips)} of {len(checked)} records of this stratum: more "
                           f"than a rare float-path flip)")


# ---------------------------------------------------------------- the table
def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(v: Verdict) -> str:
    r = v.row
    eps = r.get("epsilon")
    eps = "" if eps is None or pd.isna(eps) else f" ε={eps:g}"
    head = (f"{v.experiment} {v.stratum[1]}/{v.stratum[2]} {r['dataset']}{eps} "
            f"seed {r['seed']} ({r['run_id']})")
    if v.verdict == "not checked":
        return f"{head}: {v.note}"
    parts = []
    for d in sorted(v.differences, key=lambda d: (d.within_tolerance, d.field)):
        size = ("not comparable" if not np.isfinite(d.size)
                else f"|Δ| {d.size:.2g}, relative {d.relative:.2g}")
        if d.field == "ledger":
            parts.append(f"ledger numbers ({size})")
        else:
            parts.append(f"{d.field} {_fmt(d.committed)} -> {_fmt(d.here)} ({size})")
    return f"{head}: " + "; ".join(parts) + (f" [{v.note}]" if v.note else "")


def _machine(rows: Sequence[Mapping]) -> str:
    def common(key):
        values = Counter(str(r.get(key)) for r in rows if r.get(key) is not None)
        return values.most_common(1)[0][0] if values else "?"

    blas = common("blas")
    try:
        arch = sorted({lib.get("architecture") for lib in json.loads(blas)
                       if lib.get("architecture")})
    except (ValueError, TypeError, AttributeError):
        arch = []
    versions = common("versions")
    try:
        versions = ", ".join(f"{k} {v}" for k, v in json.loads(versions).items()
                             if k in ("numpy", "scipy", "scikit-learn", "diffprivlib"))
    except (ValueError, TypeError, AttributeError):
        pass
    return f"{common('cpu')}; BLAS {'/'.join(arch) or '?'}; {versions}"


def report(verdicts: Sequence[Verdict], reruns: Mapping[str, dict], seconds: float,
           details: int, out=None) -> int:
    """Print the table and the records that are not identical; the exit code (1 when any
    record is different or not checked)."""
    out = out or sys.stdout
    counts = Counter(v.verdict for v in verdicts)
    print(f"\nverify: {len(verdicts)} committed records, {len(reruns)} re-run here in "
          f"{seconds:.0f} s", file=out)
    print(f"  committed on: {_machine([v.row for v in verdicts])}", file=out)
    if reruns:
        print(f"  here:         {_machine(list(reruns.values()))}", file=out)
    strata: dict[tuple, Counter] = {}
    for v in verdicts:
        strata.setdefault(v.stratum, Counter())[v.verdict] += 1
    heads = ("experiment", "method/mode", *VERDICTS)
    rows = [(e, f"{a}/{m}", *(str(c[k]) for k in VERDICTS))
            for (e, a, m), c in sorted(strata.items())]
    rows.append(("all", "", *(str(counts[k]) for k in VERDICTS)))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    for r in (heads, *rows):
        print("  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))),
              file=out)
    shown = 0
    for kind in ("different", "not checked", "float path", "within tolerance"):
        group = [v for v in verdicts if v.verdict == kind]
        if not group:
            continue
        print(f"\n{kind} ({len(group)}):", file=out)
        limit = len(group) if kind in ("different", "not checked", "float path") \
            else max(0, details - shown)
        for v in group[:limit]:
            print("  " + _describe(v), file=out)
        if len(group) > limit:
            print(f"  ... and {len(group) - limit} more (--details N shows more)", file=out)
        shown += min(limit, len(group))
    bad = counts["different"] + counts["not checked"]
    if bad:
        print(f"\nFAILED: {counts['different']} record(s) differ beyond the float tolerance"
              + (f", {counts['not checked']} not checked" if counts["not checked"] else "")
              + " (docs/records.md says what each field promises)", file=out)
        return 1
    print(f"\nOK: every checked record is identical ({counts['identical']}), within the float "
          f"tolerance ({counts['within tolerance']}) or a documented float-path draw "
          f"({counts['float path']}); docs/records.md says what each means", file=out)
    return 0


# ---------------------------------------------------------------- command line
def float_path_methods() -> dict[str, tuple[str, ...]]:
    """Built-in method -> its modes whose DP outputs pass through a CPU-dependent float path."""
    from dptaucc.methods import methods

    return {m.name: m.float_path for m in methods() if m.float_path}


def _check_work_dir(work: Path, results_dir: Path) -> None:
    """Refuse a work folder at or inside the committed results (or the paper-scale folder)."""
    where = work.resolve()
    for committed in {results_dir.resolve(), paper_results_dir().resolve()}:
        if where == committed or committed in where.parents:
            raise VerifyError(f"--work-dir {work}: the re-run records go into a folder of "
                              f"their own, never into the committed results ({committed})")


def verify(results_dir: Path, experiments: Sequence[str], per_stratum: int, sample_seed: int,
           n_jobs: int, max_minutes: float, work_dir: Path | None = None,
           other_kernels: int | None = None, details: int = 20) -> int:
    """Sample, re-run, judge and print; the exit code."""
    t0 = time.perf_counter()
    tables = committed_tables(results_dir, experiments)
    verdicts = stratified_sample(tables, per_stratum, sample_seed)
    own_dir = work_dir is None
    if not own_dir:
        _check_work_dir(work_dir, results_dir)
    work = Path(tempfile.mkdtemp(prefix="dptaucc-verify-")) if own_dir else work_dir
    try:
        print(f"[verify] {len(verdicts)} records ({per_stratum} per experiment × method × "
              f"mode, sample seed {sample_seed}) from {results_dir}; re-running them in "
              f"{work} on {n_jobs} worker(s)", file=sys.stderr, flush=True)
        jobs = jobs_for(verdicts, work)
        reruns = rerun(jobs, n_jobs, max_minutes, other_kernels)
        judge(verdicts, reruns, tables, float_path_methods())
        return report(verdicts, reruns, time.perf_counter() - t0, details)
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.verify", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-stratum", type=int, default=DEFAULT_PER_STRATUM,
                    help=f"records per experiment × method × mode (default "
                         f"{DEFAULT_PER_STRATUM})")
    ap.add_argument("--sample-seed", type=int, default=0,
                    help="which records are sampled (default 0)")
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS),
                    help="comma-separated subset of " + ",".join(EXPERIMENTS))
    ap.add_argument("--results-dir", type=Path, default=None,
                    help="the committed tables (default: results/, or $DPTAUCC_RESULTS_DIR)")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="where the re-run records go (default: a temporary folder, removed "
                         "afterwards); never the committed results folder")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: all "
                    "cores)")
    ap.add_argument("--max-minutes", type=float, default=DEFAULT_MAX_MINUTES,
                    help=f"start no job after this many minutes (default "
                         f"{DEFAULT_MAX_MINUTES:g}); jobs left are reported as not checked")
    ap.add_argument("--details", type=int, default=20,
                    help="records within tolerance listed (default 20; every other one is)")
    ap.add_argument("--other-float-kernels", type=int, default=None, metavar="SEED",
                    help="re-run as a CPU whose numpy kernels round differently might "
                         "(dptaucc.testing.other_float_kernels with this seed)")
    args = ap.parse_args(argv)
    if args.per_stratum < 1:
        ap.error("--per-stratum must be at least 1")

    exps = [e for e in args.experiments.split(",") if e]
    unknown = sorted(set(exps) - set(EXPERIMENTS))
    if unknown:
        ap.error(f"unknown experiment(s) {', '.join(unknown)}; known: {', '.join(EXPERIMENTS)}")
    try:
        return verify(args.results_dir or paper_results_dir(), exps, args.per_stratum,
                      args.sample_seed, args.jobs or os.cpu_count() or 1, args.max_minutes,
                      args.work_dir, args.other_float_kernels, args.details)
    except VerifyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: nothing was written to the committed results", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
