"""Logit matrices for the choice kernels' exactness tests: every kind of row the kernels
treat apart (spread scales, ties, all equal, -inf, +inf/-inf/NaN, near ties with underflow)."""

from __future__ import annotations

import numpy as np

KINDS = ["spread", "ties", "equal", "minus-inf", "huge", "near"]


def logits(rng: np.random.Generator, kind: str, n: int, k: int,
           irregular_per_row: bool = False) -> np.ndarray:
    """An n×k logit matrix of ``kind``; for "huge", about 5 % +inf, 2 % NaN and 3 % -inf entries
    (with ``irregular_per_row``, the +inf and NaN shares are per row, not per entry, so that
    long rows keep regular ones)."""
    if kind == "spread":
        return rng.normal(size=(n, k)) * rng.choice([1e-3, 1.0, 30.0, 1e3, 1e6])
    if kind == "ties":
        return rng.integers(-3, 3, size=(n, k)).astype(float)
    if kind == "equal":
        return np.zeros((n, k))
    if kind == "minus-inf":
        L = rng.normal(size=(n, k)) * 800
        L[rng.random((n, k)) < 0.2] = -np.inf
        return L
    if kind == "huge":
        L = rng.normal(size=(n, k)) * 1e300
        u = rng.random((n, k))
        per = k if irregular_per_row else 1
        L[u < 0.05 / per], L[u > 0.97] = np.inf, -np.inf
        L[(u > 0.5) & (u < 0.5 + 0.02 / per)] = np.nan
        return L
    L = np.repeat(rng.normal(size=(n, 1)), k, axis=1)  # near ties, underflowing weights
    L[:, 0] -= 1e-12
    L[: n // 2, -1] = -745.2
    return L
