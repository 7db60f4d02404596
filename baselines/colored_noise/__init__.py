"""Colored-noise mechanism for DP k-means (Ravi et al. 2021). See :mod:`.estimator`."""

from .estimator import ColoredNoiseKMeans

__all__ = ["ColoredNoiseKMeans"]
