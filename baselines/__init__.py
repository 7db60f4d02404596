"""Differentially private competitors of DP-τCC, behind the same estimator contract."""
