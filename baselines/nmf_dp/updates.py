"""DPNMF's optimisation steps (Saha & Imtiaz 2024; spec §7.3), sparse-friendly.

V is m×n (words × documents), W m×K (topics), H K×n (document coefficients), N = n.
The Frobenius loss uses the Gram trick (spec §7.7):
``‖V − WH‖² = ‖V‖² − 2⟨WᵀV, H⟩ + ⟨WᵀW, HHᵀ⟩``, O(nnz·K + (m+n)K²), never an m×n residual.
"""

from __future__ import annotations

import numpy as np

from .init import project_columns

__all__ = ["half_sq_loss", "h_steps", "w_steps", "surrogate_loss"]


def half_sq_loss(v_sq: float, WtV: np.ndarray, WtW: np.ndarray, H: np.ndarray) -> float:
    """½‖V − WH‖²_F from ‖V‖², WᵀV (K×n) and WᵀW (K×K)."""
    HHt = H @ H.T
    return 0.5 * (v_sq - 2.0 * float(np.einsum("kn,kn->", WtV, H))
                  + float(np.einsum("kl,kl->", WtW, HHt)))


def _stop(prev: float, cur: float, eta: float) -> bool:
    """The reference's early stop: relative change (cur − prev)/prev below η."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return bool(np.float64(cur - prev) / np.float64(prev) < eta)


def h_steps(H: np.ndarray, WtV: np.ndarray, WtW: np.ndarray, v_sq: float, n: int,
            alpha: float, eta: float, max_steps: int) -> tuple[np.ndarray, int]:
    """Projected gradient on H: ``H ← Π_col(max(0, H − α(WᵀWH − WᵀV)/N))`` until the relative
    loss change drops below η or ``max_steps + 1`` steps (reference loop rule). NON-PRIVATE."""
    steps = 0
    cur = half_sq_loss(v_sq, WtV, WtW, H) / n
    while True:
        steps += 1
        prev = cur  # the loss of the current H (the reference recomputes the same value)
        H = project_columns(np.maximum(H - alpha * (WtW @ H - WtV) / n, 0.0))
        cur = half_sq_loss(v_sq, WtV, WtW, H) / n
        if _stop(prev, cur, eta) or steps > max_steps:
            return H, steps


def surrogate_loss(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """½ tr(WᵀW Ā) − tr(WᵀB̄)."""
    return 0.5 * float(np.einsum("kl,lk->", W.T @ W, A)) - float(np.einsum("mk,mk->", W, B))


def w_steps(W: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: float, eta: float,
            max_steps: int) -> tuple[np.ndarray, int]:
    """``W ← Π_col(max(0, W − α(WĀ − B̄)))`` on the released Ā, B̄ (post-processing), same
    loop rule as :func:`h_steps`."""
    steps = 0
    cur = surrogate_loss(W, A, B)
    while True:
        steps += 1
        prev = cur
        W = project_columns(np.maximum(W - alpha * (W @ A - B), 0.0))
        cur = surrogate_loss(W, A, B)
        if _stop(prev, cur, eta) or steps > max_steps:
            return W, steps
