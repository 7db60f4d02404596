"""DP-τCC: differentially private associative co-clustering (Battaglia & Pensa, SDM 2025).

The estimators are imported when first used, so ``import dptaucc`` loads neither
scikit-learn nor the benchmark's pandas, pyarrow, matplotlib or Hydra.

Examples
--------
>>> import numpy as np
>>> import dptaucc
>>> X = np.kron(np.eye(2, dtype=int), np.full((4, 3), 5))
>>> model = dptaucc.DPTauCC(2, 2, epsilon=20.0, random_state=0).fit(X)
>>> model.row_labels_.shape, model.epsilon_spent_
((8,), 20.0)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dptaucc.dp_taucc import DPTauCC
    from dptaucc.dp_taucc_row import DPTauCCRow
    from dptaucc.fast_taucc import FastTauCC
    from dptaucc.privacy.ledger import LedgerEntry, PrivacyLedger

__all__ = ["DPTauCC", "DPTauCCRow", "FastTauCC", "LedgerEntry", "PrivacyLedger"]
__version__ = "0.1.0"

#: public name -> module that defines it (imported on first use)
_HOMES = {"DPTauCC": "dptaucc.dp_taucc", "DPTauCCRow": "dptaucc.dp_taucc_row",
          "FastTauCC": "dptaucc.fast_taucc",
          "LedgerEntry": "dptaucc.privacy.ledger", "PrivacyLedger": "dptaucc.privacy.ledger"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'dptaucc' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
