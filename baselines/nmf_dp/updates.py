"""DPNMF's optimisation steps (Saha & Imtiaz 2024), sparse-friendly.

V is m×n (words × documents), W m×K (topics), H K×n (document coefficients), N = n.
The Frobenius loss uses the Gram trick:
``‖V − WH‖² = ‖V‖² − 2⟨WᵀV, H⟩ + ⟨WᵀW, HHᵀ⟩``, O(nnz·K + (m+n)K²), never an m×n residual.

* :func:`h_steps` — the authors' global H-steps (paper mode): one gradient step on the whole
  of H, repeated until the relative change of the *total* loss drops below η.
* :func:`local_coefficients` — corrected mode and ``transform``: a fixed number of projected
  gradient steps per document, column i depending on document i and W only.
* :func:`w_steps` — projected gradient on W from the released statistics (Ā, B̄).
"""

from __future__ import annotations

import numpy as np

from .init import project_columns

__all__ = ["half_sq_loss", "h_steps", "local_coefficients", "w_steps", "surrogate_loss",
           "paper_stop", "relative_improvement_stop", "lipschitz"]

#: Smallest curvature used for a 1/L step (an all-zero W or Ā would give L = 0).
MIN_LIPSCHITZ = 1e-12


def half_sq_loss(v_sq: float, WtV: np.ndarray, WtW: np.ndarray, H: np.ndarray) -> float:
    """½‖V − WH‖²_F from ‖V‖², WᵀV (K×n) and WᵀW (K×K).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V, W, H = rng.random((5, 4)), rng.random((5, 2)), rng.random((2, 4))
    >>> direct = 0.5 * np.linalg.norm(V - W @ H) ** 2
    >>> bool(np.isclose(half_sq_loss(float((V**2).sum()), W.T @ V, W.T @ W, H), direct))
    True
    """
    HHt = H @ H.T
    return 0.5 * (v_sq - 2.0 * float(np.einsum("kn,kn->", WtV, H))
                  + float(np.einsum("kl,kl->", WtW, HHt)))


def paper_stop(prev: float, cur: float, eta: float) -> bool:
    """The authors' early stop: (cur − prev)/prev < η. With a positive loss any decrease
    stops; with a negative one it means "continue while improving by more than η|prev|".

    >>> paper_stop(10.0, 9.0, 1e-3), paper_stop(-10.0, -11.0, 1e-3)  # any decrease stops
    (True, False)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return bool(np.float64(cur - prev) / np.float64(prev) < eta)


def relative_improvement_stop(prev: float, cur: float, eta: float) -> bool:
    """Stop once a step improves the loss by no more than η·|prev| (whatever its sign).

    >>> relative_improvement_stop(10.0, 9.0, 1e-3), relative_improvement_stop(10.0, 9.9999, 1e-3)
    (False, True)
    >>> relative_improvement_stop(-10.0, -11.0, 1e-3)  # the sign of the loss does not matter
    False
    """
    return not (prev - cur > eta * abs(prev))


def lipschitz(M: np.ndarray) -> float:
    """Spectral norm of a small square matrix (the curvature of x ↦ ½ xᵀMx), at least
    :data:`MIN_LIPSCHITZ`.

    >>> import numpy as np
    >>> round(lipschitz(np.array([[2.0, 1.0], [1.0, 2.0]])), 12)  # the largest eigenvalue
    3.0
    >>> lipschitz(np.zeros((2, 2))) == MIN_LIPSCHITZ
    True
    """
    return max(float(np.linalg.norm(M, 2)), MIN_LIPSCHITZ)


def h_steps(H: np.ndarray, WtV: np.ndarray, WtW: np.ndarray, v_sq: float, n: int,
            alpha: float, eta: float, max_steps: int) -> tuple[np.ndarray, int]:
    """Projected gradient on H: ``H ← Π_col(max(0, H − α(WᵀWH − WᵀV)/N))`` until the relative
    loss change drops below η or ``max_steps + 1`` steps (reference loop rule). NON-PRIVATE:
    the stopping rule reads the loss of every document.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V, W, H = rng.random((6, 5)), rng.random((6, 2)), rng.random((2, 5)) / 4
    >>> v_sq = float((V**2).sum())
    >>> H2, steps = h_steps(H, W.T @ V, W.T @ W, v_sq, 5, 1.0, 1e-9, 3)
    >>> def loss(H):
    ...     return half_sq_loss(v_sq, W.T @ V, W.T @ W, H)
    >>> steps, bool(loss(H2) < loss(H))  # a positive loss that decreased: the rule stops
    (1, True)
    >>> bool(H2.min() >= 0), bool(np.linalg.norm(H2, axis=0).max() <= 1 + 1e-12)
    (True, True)
    """
    steps = 0
    cur = half_sq_loss(v_sq, WtV, WtW, H) / n
    while True:
        steps += 1
        prev = cur  # the loss of the current H (the reference recomputes the same value)
        H = project_columns(np.maximum(H - alpha * (WtW @ H - WtV) / n, 0.0))
        cur = half_sq_loss(v_sq, WtV, WtW, H) / n
        if paper_stop(prev, cur, eta) or steps > max_steps:
            return H, steps


def local_coefficients(WtV: np.ndarray, WtW: np.ndarray, H: np.ndarray,
                       n_steps: int) -> np.ndarray:
    """``n_steps`` projected-gradient steps of every document's own problem
    ``min ½‖v_i − W h‖²`` over ``{h ≥ 0, ‖h‖₂ ≤ 1}``, with step 1/‖WᵀW‖₂.

    The projection (clip at 0, then scale into the unit ball) is exact for that set, the
    step size comes from W alone and the number of steps is fixed, so column i of the result
    is a function of (v_i, h_i, W): changing one document changes one column.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V, W, H = rng.random((6, 4)), rng.random((6, 2)), np.zeros((2, 4))
    >>> V2 = V.copy()
    >>> V2[:, 3] = 5.0  # another document 3
    >>> a = local_coefficients(W.T @ V, W.T @ W, H, 10)
    >>> b = local_coefficients(W.T @ V2, W.T @ W, H, 10)
    >>> np.flatnonzero((a != b).any(axis=0)).tolist(), bool(np.linalg.norm(b, axis=0).max() <= 1)
    ([3], True)
    """
    step = 1.0 / lipschitz(WtW)
    for _ in range(n_steps):
        H = project_columns(np.maximum(H - step * (WtW @ H - WtV), 0.0))
    return H


def surrogate_loss(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """½ tr(WᵀW Ā) − tr(WᵀB̄).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V, W, H = rng.random((5, 4)), rng.random((5, 2)), rng.random((2, 4))
    >>> # with the exact statistics it is (½‖V − WH‖² − ½‖V‖²)/N
    >>> exact = (0.5 * np.linalg.norm(V - W @ H) ** 2 - 0.5 * (V**2).sum()) / 4
    >>> bool(np.isclose(surrogate_loss(W, H @ H.T / 4, V @ H.T / 4), exact))
    True
    """
    return 0.5 * float(np.einsum("kl,lk->", W.T @ W, A)) - float(np.einsum("mk,mk->", W, B))


def w_steps(W: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: float, eta: float,
            max_steps: int, stop=paper_stop) -> tuple[np.ndarray, int]:
    """``W ← Π_col(max(0, W − α(WĀ − B̄)))`` on the released Ā, B̄ (post-processing), until
    ``stop(prev, cur, η)`` on the surrogate loss or ``max_steps + 1`` steps.

    Runs on Wᵀ (K×m, rows contiguous) and reuses WĀ between the step and the loss
    ``⟨W, ½WĀ − B̄⟩ = ½tr(WᵀWĀ) − tr(WᵀB̄)``: one small product per step.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B, W = np.eye(2), rng.random((5, 2)), rng.random((5, 2))
    >>> W2, steps = w_steps(W, A, B, 0.5, 1e-9, 20, stop=relative_improvement_stop)
    >>> bool(surrogate_loss(W2, A, B) < surrogate_loss(W, A, B)), bool(W2.min() >= 0)
    (True, True)
    >>> bool(np.linalg.norm(W2, axis=0).max() <= 1 + 1e-12), steps <= 21
    (True, True)
    """
    Wt = np.array(W.T, order="C")                       # a copy: the loop reuses its buffer
    Bt, At = np.ascontiguousarray(B.T), np.ascontiguousarray(A.T)
    G = At @ Wt                                          # (WĀ)ᵀ
    cur = 0.5 * float(np.vdot(Wt, G)) - float(np.vdot(Wt, Bt))
    D = np.empty_like(Wt)
    zeros = np.zeros_like(Wt)  # max(·, 0) against an array: the same values, faster than a scalar
    steps = 0
    while True:
        steps += 1
        prev = cur
        np.subtract(G, Bt, out=D)                        # gradient WĀ − B̄ (transposed)
        D *= -alpha
        D += Wt
        np.maximum(D, zeros, out=D)
        D /= np.maximum(np.sqrt(np.einsum("km,km->k", D, D)), 1.0)[:, None]  # Π_col
        Wt, D = D, Wt
        np.matmul(At, Wt, out=G)
        cur = 0.5 * float(np.vdot(Wt, G)) - float(np.vdot(Wt, Bt))
        if stop(prev, cur, eta) or steps > max_steps:
            return np.ascontiguousarray(Wt.T), steps
