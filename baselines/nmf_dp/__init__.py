"""DPNMF (Saha & Imtiaz 2024): differentially private NMF topic clustering, our implementation.

Behaviour as the reference experiments ran it (spec §7) in ``mode="paper"``, and a
privacy-correct variant in ``mode="corrected"``; see :class:`DPNMF`.
"""

from .gaussian import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_epsilon
from .model import DPNMF

__all__ = ["DPNMF", "analytic_gaussian_sigma", "classical_gaussian_sigma", "gaussian_epsilon"]
