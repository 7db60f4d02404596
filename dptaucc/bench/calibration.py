"""The paper's published Fig. 2 values, packaged with the configs, for figures and REPORT."""

from __future__ import annotations

import pandas as pd

from dptaucc.bench.configs import config_dir

__all__ = ["calibration"]


def calibration() -> pd.DataFrame:
    """The paper's Fig. 2 values (read by eye) kept in the repo, with ε as float (NaN = '-').

    >>> df = calibration()
    >>> list(df.columns), df["eps"].dtype.kind, bool(df["nmi"].between(0, 1).all())
    (['dataset', 'algorithm', 'eps', 'nmi'], 'f', True)
    >>> bool(df.loc[df["algorithm"] == "fast_taucc", "eps"].isna().all())  # non-private: '-'
    True
    """
    df = pd.read_csv(config_dir() / "calibration" / "fig2_paper_values.tsv", sep="\t",
                     comment="#", dtype=str)
    df["eps"] = pd.to_numeric(df["eps"].replace("-", None))
    df["nmi"] = pd.to_numeric(df["nmi"])
    return df
