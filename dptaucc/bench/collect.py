"""``python -m dptaucc.bench.collect``: per-job records -> results/<experiment>.parquet and .csv.

The parquet table holds every column (ledger included); the CSV leaves out the bulky ``ledger``
and ``versions`` columns so that it stays readable.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from dptaucc.bench.run import COLUMNS
from dptaucc.bench.store import RunStore

NUMERIC = ["epsilon", "delta", "epsilon_spent", "epsilon_mechanisms", "delta_spent",
           "nmi_rows", "ari_rows",
           "nmi_rows_private", "ari_rows_private", "nmi_rows_released", "ari_rows_released",
           "nmi_cols", "ari_cols", "tau_rc", "tau_cr", "k_found", "l_found", "fit_time_s",
           "eval_time_s", "peak_rss_mb", "n_rows", "n_cols", "nnz", "n_classes", "seed",
           "blas_threads", "random_state"]
CSV_DROP = ("ledger", "versions")


def records_frame(records: Sequence[dict]) -> pd.DataFrame:
    """Records -> one typed DataFrame: DESIGN §4 columns first, then the ``p_*`` parameters."""
    df = pd.DataFrame.from_records(list(records))
    for col in COLUMNS:
        if col not in df:
            df[col] = None
    params = sorted(c for c in df.columns if c.startswith("p_"))
    extra = sorted(c for c in df.columns if c not in COLUMNS and c not in params)
    df = df[COLUMNS + params + extra]
    for col in NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce")  # "inf" -> inf, None -> NaN
    for col in params:
        if df[col].map(lambda v: isinstance(v, str)).any():
            df[col] = df[col].astype("string")
        else:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    for col in ("run_id", "experiment", "algorithm", "mode", "dataset", "status", "error",
                "git_sha", "versions", "started_at", "ledger", "non_private_steps",
                "warnings"):
        df[col] = df[col].astype("string")
    for col in ("private", "end_to_end_dp", "row_labels_private"):
        df[col] = df[col].astype("boolean")
    return df.sort_values(["algorithm", "mode", "dataset", "epsilon", "seed"],
                          na_position="first", kind="stable").reset_index(drop=True)


def collect_experiment(results_dir: str | os.PathLike, experiment: str) -> pd.DataFrame | None:
    """Write ``<results_dir>/<experiment>.parquet`` and ``.csv``; None if nothing is stored."""
    results_dir = Path(results_dir)
    store = RunStore(results_dir / "runs", experiment)
    records = list(store.records())
    if not records:
        return None
    df = records_frame(records)
    df.to_parquet(results_dir / f"{experiment}.parquet", index=False)
    df.drop(columns=list(CSV_DROP)).to_csv(results_dir / f"{experiment}.csv", index=False)
    return df


def stored_experiments(results_dir: str | os.PathLike) -> list[str]:
    runs = Path(results_dir) / "runs"
    return sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.exists() else []


def collect(results_dir: str | os.PathLike = "results",
            experiments: Sequence[str] | None = None) -> dict[str, int]:
    """Collect every (or the named) experiment; returns ``{experiment: n_records}``."""
    out = {}
    for exp in experiments or stored_experiments(results_dir):
        df = collect_experiment(results_dir, exp)
        out[exp] = 0 if df is None else len(df)
    return out


def load_table(results_dir: str | os.PathLike, experiment: str) -> pd.DataFrame | None:
    path = Path(results_dir) / f"{experiment}.parquet"
    return pd.read_parquet(path) if path.exists() else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.collect", description=__doc__)
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("experiments", nargs="*", help="default: every experiment in runs/")
    args = ap.parse_args(argv)
    for exp, n in collect(args.results_dir, args.experiments or None).items():
        print(f"{exp}: {n} records -> {Path(args.results_dir) / (exp + '.parquet')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
