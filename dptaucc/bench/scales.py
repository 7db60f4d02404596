"""Where results go: the paper-scale folder and the quick folder, and the rule between them.

``results/`` (or ``$DPTAUCC_RESULTS_DIR``) holds the committed paper-scale outputs: the tables,
figures and REPORT.md of a complete ``make reproduce``. Everything else -- the quick scale,
a paper-scale driver run with a modified grid (``--sweep``), every Hydra run -- goes to
``results/quick/`` (git-ignored). The paper-scale folder's tables are only rewritten from a
store that holds every job of the paper grid with a successful record.
"""

from __future__ import annotations

import os
from pathlib import Path

SCALES = ("paper", "quick")
QUICK_SUBDIR = "quick"


class ScaleError(RuntimeError):
    """A write that would put quick or partial results into the paper-scale folder."""


def paper_results_dir() -> Path:
    """The paper-scale results folder: ``$DPTAUCC_RESULTS_DIR`` or ``results``."""
    return Path(os.environ.get("DPTAUCC_RESULTS_DIR") or "results")


def results_dir_for(scale: str) -> Path:
    """The default results folder of a scale (``paper`` -> results/, else results/quick/)."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    root = paper_results_dir()
    return root if scale == "paper" else root / QUICK_SUBDIR


def is_paper_dir(path: str | os.PathLike) -> bool:
    return Path(path).resolve() == paper_results_dir().resolve()


def check_not_paper_dir(path: str | os.PathLike, what: str) -> None:
    """Refuse to write ``what`` (quick or partial results) into the paper-scale folder."""
    if is_paper_dir(path):
        raise ScaleError(
            f"refusing to write {what} into {path}: that folder holds the paper-scale results "
            f"(complete `make reproduce` only). Use the quick folder "
            f"{paper_results_dir() / QUICK_SUBDIR} (the default) or another --results-dir.")
