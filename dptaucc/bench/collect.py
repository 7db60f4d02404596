"""``python -m dptaucc.bench.collect``: per-job records -> results/<experiment>.parquet and .csv.

The local records are merged into the existing table: a run_id present in both keeps the newer
record (later ``started_at``; the local one on a tie), every other row is kept. So a user adds a
method or a dataset to the committed comparison by running only its jobs; ``--replace`` rebuilds a
table from the local records alone. The parquet table holds every column (ledger included); the
CSV leaves out the bulky ``ledger`` and ``versions`` columns so that it stays readable.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from dptaucc._cli import plain
from dptaucc.bench.run import COLUMNS
from dptaucc.bench.store import RunStore

NUMERIC = ["epsilon", "delta", "epsilon_spent", "epsilon_mechanisms", "delta_spent",
           "nmi_rows", "ari_rows",
           "nmi_rows_private", "ari_rows_private", "nmi_rows_released", "ari_rows_released",
           "nmi_cols", "ari_cols", "tau_rc", "tau_cr", "tau_hat_rc", "tau_hat_cr", "k_found",
           "l_found", "fit_time_s",
           "eval_time_s", "peak_rss_mb", "n_rows", "n_cols", "nnz", "n_classes", "seed",
           "blas_threads", "workers", "random_state"]
CSV_DROP = ("ledger", "versions")


def records_frame(records: Sequence[dict]) -> pd.DataFrame:
    """Records -> one typed DataFrame: the record columns first (``run.COLUMNS``), then the
    ``p_*`` parameters, then anything else."""
    return typed(pd.DataFrame.from_records(list(records)))


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """Column order and dtypes of a results table, sorted by algorithm, mode, dataset, ε, seed."""
    df = df.copy()
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


def merge(existing: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """Union of two tables, one row per run_id: the later ``started_at`` wins (``new`` on a tie
    or when a time is missing on both sides)."""
    if existing is None or existing.empty:
        return typed(new)
    both = pd.concat([existing.assign(_new=0), new.assign(_new=1)], ignore_index=True)
    both["_t"] = pd.to_datetime(both["started_at"], utc=True, errors="coerce", format="ISO8601")
    both = both.sort_values(["_t", "_new"], na_position="first", kind="stable")
    both = both.drop_duplicates("run_id", keep="last").drop(columns=["_t", "_new"])
    return typed(both)


def collect_experiment(results_dir: str | os.PathLike, experiment: str,
                       replace: bool = False,
                       records: Sequence[dict] | None = None) -> pd.DataFrame | None:
    """Write ``<results_dir>/<experiment>.parquet`` and ``.csv`` from the local records merged
    into the existing table (``replace``: the local records only); None if there is nothing.
    ``records``: the store's records when the caller has read them."""
    results_dir = Path(results_dir)
    if records is None:
        records = list(RunStore(results_dir / "runs", experiment).records())
    existing = None if replace else load_table(results_dir, experiment)
    if not records:
        return existing
    df = merge(existing, records_frame(records))
    results_dir.mkdir(parents=True, exist_ok=True)
    df.to_parquet(results_dir / f"{experiment}.parquet", index=False)
    df.drop(columns=list(CSV_DROP)).to_csv(results_dir / f"{experiment}.csv", index=False)
    return df


def stored_experiments(results_dir: str | os.PathLike) -> list[str]:
    runs = Path(results_dir) / "runs"
    return sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.exists() else []


def collect(results_dir: str | os.PathLike = "results",
            experiments: Sequence[str] | None = None, replace: bool = False) -> dict[str, int]:
    """Collect every (or the named) experiment; returns ``{experiment: rows in its table}``."""
    out = {}
    for exp in experiments or stored_experiments(results_dir):
        df = collect_experiment(results_dir, exp, replace=replace)
        out[exp] = 0 if df is None else len(df)
    return out


#: co-clusterers whose records before the τ/τ̂ split stored τ̂ (eq. 3.2) under ``tau_rc``
_TAU_HAT_UNDER_OLD_NAME = ("dp_taucc", "fccm")


def load_table(results_dir: str | os.PathLike, experiment: str) -> pd.DataFrame | None:
    path = Path(results_dir) / f"{experiment}.parquet"
    return upgrade_tau_columns(pd.read_parquet(path)) if path.exists() else None


def table_folders() -> list[Path]:
    """Where :func:`read_table` looks, in order: ``$DPTAUCC_RESULTS_DIR``; ``results/`` of the
    working directory; the committed ``results/`` of the checkout this package runs from (an
    editable install of a clone), so the tables are found from any directory."""
    folders = [Path(os.environ["DPTAUCC_RESULTS_DIR"])] if os.environ.get(
        "DPTAUCC_RESULTS_DIR") else []
    checkout = Path(__file__).resolve().parents[2]
    folders += [Path("results")]
    if (checkout / "pyproject.toml").is_file():
        folders.append(checkout / "results")
    return folders


def read_table(experiment: str, results_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The results table of ``experiment`` (every column), from ``results_dir`` or else the
    first of :func:`table_folders` that holds it; ``FileNotFoundError`` naming the folders
    tried.

    >>> import tempfile
    >>> read_table("fig2_real", tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: no fig2_real.parquet in ...: run `make reproduce` (or ...
    """
    folders = [Path(results_dir)] if results_dir is not None else table_folders()
    for folder in folders:
        table = load_table(folder, experiment)
        if table is not None:
            return table
    raise FileNotFoundError(
        f"no {experiment}.parquet in {', '.join(str(f) for f in folders)}: run `make reproduce` "
        "(or `make reproduce-quick` and pass results_dir='results/quick'), or set "
        "DPTAUCC_RESULTS_DIR to the folder that holds your tables")


def upgrade_tau_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Give a table written before ``tau_hat_rc``/``tau_hat_cr`` existed one meaning per name.

    Such tables stored τ̂ (eq. 3.2) under ``tau_rc``/``tau_cr`` for DP-τCC and FCCM but the
    normalised τ for Fast-τCC: the DP-τCC/FCCM values move to ``tau_hat_*`` and their
    ``tau_*`` become NaN (the normalised τ was not recorded).
    """
    if "tau_rc" not in df.columns or "tau_hat_rc" in df.columns:
        return df
    df = df.copy()
    old = df["algorithm"].isin(_TAU_HAT_UNDER_OLD_NAME)
    for side in ("rc", "cr"):
        df[f"tau_hat_{side}"] = df[f"tau_{side}"].where(old)
        df.loc[old, f"tau_{side}"] = float("nan")
    return df


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.collect", description=plain(__doc__))
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("--replace", action="store_true",
                    help="rebuild each table from the local records only (default: merge them "
                         "into the existing table, the newer record winning per run_id)")
    ap.add_argument("experiments", nargs="*", help="default: every experiment in runs/")
    args = ap.parse_args(argv)
    for exp, n in collect(args.results_dir, args.experiments or None, args.replace).items():
        print(f"{exp}: {n} records -> {Path(args.results_dir) / (exp + '.parquet')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
