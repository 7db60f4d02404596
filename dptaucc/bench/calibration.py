"""The paper's Fig. 2 values (row NMI, paper mode) for the report's tables and the paper-mode
figure: the paper's own panels of the packaged published values (:mod:`published`)."""

from __future__ import annotations

import pandas as pd

from dptaucc.bench.published import published_values

__all__ = ["calibration"]


def calibration() -> pd.DataFrame:
    """The paper's Fig. 2 means, digitised from the paper's figure: dataset, algorithm, eps
    (NaN for the non-private Fast-τCC, pooled), nmi.

    >>> df = calibration()
    >>> list(df.columns), sorted(set(df["dataset"]))[:3]
    (['dataset', 'algorithm', 'eps', 'nmi'], ['classic3', 'cstr', 'hitech'])
    >>> bool(df.loc[df["algorithm"] == "fast_taucc", "eps"].isna().all())  # non-private
    True
    """
    pub = published_values()
    fig2 = pub[(pub["figure"] == "fig2") & (pub["source"] == "paper") & pub["value"].notna()]
    return (fig2.rename(columns={"epsilon": "eps", "value": "nmi"})
            [["dataset", "algorithm", "eps", "nmi"]].reset_index(drop=True))
