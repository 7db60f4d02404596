"""DP-τCC: differentially private associative co-clustering (Battaglia & Pensa, SDM 2025)."""

from dptaucc.dp_taucc import DPTauCC
from dptaucc.fast_taucc import FastTauCC
from dptaucc.privacy import LedgerEntry, PrivacyLedger

__all__ = ["DPTauCC", "FastTauCC", "LedgerEntry", "PrivacyLedger"]
__version__ = "0.1.0"
