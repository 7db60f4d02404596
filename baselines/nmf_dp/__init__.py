"""DPNMF (Saha & Imtiaz 2024): differentially private NMF topic clustering, our implementation.

``mode="corrected"`` (default) is (ε, δ)-DP end to end for what the fitted model holds;
``mode="paper"`` reproduces the authors' runs and is not DP. See :mod:`.model`.
"""

from .gaussian import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_epsilon
from .model import DPNMF

__all__ = ["DPNMF", "analytic_gaussian_sigma", "classical_gaussian_sigma", "gaussian_epsilon"]
