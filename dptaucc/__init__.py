"""DP-τCC: differentially private associative co-clustering (Battaglia & Pensa, SDM 2025)."""

from dptaucc.privacy import LedgerEntry, PrivacyLedger

__all__ = ["LedgerEntry", "PrivacyLedger"]
__version__ = "0.1.0"
