"""``python -m dptaucc.bench.outputs collect|figures|report|all --scale quick|paper``.

Tables, figures and REPORT.md of one results folder, with the rule that protects the
committed paper-scale outputs (:mod:`scales`): ``--scale quick`` (the default) works on
``results/quick/``; ``--scale paper`` on ``results/``, where an experiment's table is only
rewritten when its store holds a successful record for every job of the paper grid --
otherwise the committed table stays and the command says how far the store is
(``--allow-partial`` overrides). Figures and the report read only the tables.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from dptaucc._cli import plain
from dptaucc.bench.configs import EXPERIMENTS
from dptaucc.bench.scales import SCALES, is_paper_dir, results_dir_for

STEPS = ("collect", "figures", "report")


def paper_progress(results_dir: str | Path, experiment: str,
                   grid: Collection[str] | None = None,
                   records: Iterable[dict] | None = None) -> tuple[int, int]:
    """(jobs of the paper grid with a successful record, jobs in the paper grid).

    ``grid``: the run ids of the paper grid when the caller has them (else enumerated);
    ``records``: the store's records when the caller has read them (else read)."""
    from dptaucc.bench.configs import Composer, enumerate_jobs, run_id
    from dptaucc.bench.store import RunStore

    if grid is None:
        with Composer() as composer:
            grid = {run_id(j) for j in enumerate_jobs(composer, experiment, "paper",
                                                      [f"paths.results_dir={results_dir}"])}
    if records is None:
        done = RunStore(Path(results_dir) / "runs", experiment).done_ids()
    else:
        done = {r["run_id"] for r in records if r.get("status") == "ok"}
    return sum(rid in done for rid in grid), len(grid)


def collect_guarded(results_dir: str | Path, experiments: Sequence[str] | None = None,
                    allow_partial: bool = False, replace: bool = False,
                    grids: Mapping[str, Collection[str]] | None = None) -> dict[str, str]:
    """Collect each experiment's records into its table; in the paper-scale folder only
    experiments whose paper grid is complete. ``replace``: rebuild each table from the store
    alone instead of merging into it; ``grids``: the run ids of an experiment's paper grid,
    when the caller has them. Returns ``{experiment: what happened}``."""
    from dptaucc.bench import collect
    from dptaucc.bench.store import RunStore

    experiments = list(experiments or collect.stored_experiments(results_dir))
    out = {}
    for exp in experiments:
        records = list(RunStore(Path(results_dir) / "runs", exp).records())  # read once
        if is_paper_dir(results_dir) and not allow_partial and exp in EXPERIMENTS:
            done, total = paper_progress(results_dir, exp, (grids or {}).get(exp), records)
            if done < total:
                out[exp] = (f"kept the existing table: the store holds {done} of the {total} "
                            f"paper-scale jobs with a successful record")
                continue
        df = collect.collect_experiment(results_dir, exp, replace=replace, records=records)
        out[exp] = "no records" if df is None else f"{len(df)} records"
    return out


def publish(results_dir: str | Path, experiments: Sequence[str] | None = None,
            steps: Sequence[str] = STEPS, allow_partial: bool = False,
            replace: bool = False, n_jobs: int = 1,
            grids: Mapping[str, Collection[str]] | None = None) -> dict:
    """Run ``steps`` (collect, figures, report) on ``results_dir``; returns what each did
    (``replace``, ``grids``: see :func:`collect_guarded`; ``n_jobs``: processes drawing the
    figures)."""
    done: dict = {}
    if "collect" in steps:
        done["collect"] = collect_guarded(results_dir, experiments, allow_partial, replace,
                                          grids)
        for exp, what in done["collect"].items():
            print(f"[outputs] {exp}: {what}", file=sys.stderr)
        if not done["collect"]:
            print(f"[outputs] no records under {Path(results_dir) / 'runs'}: nothing collected "
                  f"(existing tables stay)", file=sys.stderr)
    if "figures" in steps:
        from dptaucc.bench import figures

        done["figures"] = len(figures.make_figures(results_dir, n_jobs=n_jobs))
    if "report" in steps:
        from dptaucc.bench import report

        done["report"] = str(report.write_report(results_dir))
    return done


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.outputs", description=plain(__doc__),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=(*STEPS, "all"))
    ap.add_argument("--scale", choices=SCALES, default="quick",
                    help="quick: results/quick/ (default); paper: results/")
    ap.add_argument("--results-dir", default=None, help="instead of the scale's folder")
    ap.add_argument("--allow-partial", action="store_true",
                    help="collect into the paper-scale folder even from an incomplete store")
    ap.add_argument("--jobs", type=int, default=None,
                    help="processes drawing the figures (default: all cores)")
    ap.add_argument("experiments", nargs="*", help="default: every experiment in the store")
    args = ap.parse_args(argv)
    results_dir = Path(args.results_dir or results_dir_for(args.scale))
    steps = STEPS if args.step == "all" else (args.step,)
    if "collect" not in steps and not any(results_dir.glob("*.parquet")):
        print(f"[outputs] no tables in {results_dir}: run the experiments (make "
              f"reproduce-quick) or `make collect` first", file=sys.stderr)
    done = publish(results_dir, args.experiments or None, steps, args.allow_partial,
                   n_jobs=args.jobs or os.cpu_count() or 1)
    if "report" in done:
        print(done["report"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
