"""DPM (Liebenow et al., CCS 2024): DP clustering by recursive separation. See :mod:`.estimator`."""

from .estimator import DPM

__all__ = ["DPM"]
