"""Whose study a results folder holds: the paper's sweep, or one with your own methods,
datasets or experiments (the report then speaks about yours, with no paper verdict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from dptaucc.bench.aggregate import LABELS

__all__ = ["PAPER_DATASETS", "PAPER_EXPERIMENTS", "SUITE_EXPERIMENTS", "Study", "study"]

#: the datasets of the paper's experiments (the CLUTO matrices and the synthetic biclusters)
PAPER_DATASETS = ("classic3", "cstr", "hitech", "k1b", "reviews", "sports", "tr11", "tr41",
                  "biclusters")
#: the paper's experiments
PAPER_EXPERIMENTS = ("fig2_real", "fig3_iterations", "supp_h", "supp_synthetic", "supp_runtime")
#: every experiment the suite ships: the paper's and the crossover under one row replaced
#: (``dptaucc.bench.configs.EXPERIMENTS``, a test checks both agree)
SUITE_EXPERIMENTS = (*PAPER_EXPERIMENTS, "row_crossover")


@dataclass(frozen=True)
class Study:
    """The parts of a sweep that are not the paper's (each sorted by name).

    >>> Study().is_paper, Study(experiments=("my_experiment",)).is_paper
    (True, False)
    """

    methods: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    experiments: tuple[str, ...] = ()

    @property
    def is_paper(self) -> bool:
        """Only the paper's experiments, datasets and the suite's own methods."""
        return not (self.methods or self.datasets or self.experiments)


def study(frames: Mapping[str, pd.DataFrame]) -> Study:
    """The user's methods (not built into the suite), datasets (not the paper's) and
    experiments found in the tables.

    >>> mine = pd.DataFrame({"algorithm": ["dp_taucc", "random_rows"],
    ...                      "dataset": ["cstr", "mydata"]})
    >>> s = study({"fig2_real": mine})
    >>> s.methods, s.datasets, s.is_paper
    (('random_rows',), ('mydata',), False)
    >>> study({"fig2_real": mine.iloc[:1]}).is_paper
    True
    >>> study({"row_crossover": mine.iloc[:1]}).is_paper  # the suite's own experiment
    True
    """
    algs = {a for df in frames.values() for a in df["algorithm"].dropna()}
    dsets = {d for df in frames.values() for d in df["dataset"].dropna()}
    return Study(tuple(sorted(algs - set(LABELS))), tuple(sorted(dsets - set(PAPER_DATASETS))),
                 tuple(sorted(set(frames) - set(SUITE_EXPERIMENTS))))
