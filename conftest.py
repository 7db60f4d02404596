"""pytest setup for the whole suite: import the project only through its one import root.

``python -m pytest`` puts the repository root on ``sys.path``, where the folders ``datasets/``
and ``baselines/`` would import as top-level packages. They are installed as
``dptaucc.datasets`` and ``dptaucc.baselines`` only, so the root is taken off the path: a
stray ``import datasets`` in the suite then fails here as it would for a user.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent


def _is_repo_root(entry: str) -> bool:
    try:
        return Path(entry or os.getcwd()).resolve() == REPO
    except OSError:
        return False


sys.path[:] = [p for p in sys.path if not _is_repo_root(p)]
