"""Non-private initialisation of DPNMF: rank-K randomized SVD and an NNDSVD split (spec §7.2).

NNDSVD (Boutsidis & Gallopoulos 2008): ``w_1 = √S₁|u₁|``, ``h_1 = √S₁|v₁|``; for j ≥ 2 keep the
positive or the negative parts of (u_j, v_j), whichever has the larger product of norms σ,
normalise them and scale by ``√(S_j σ)``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.extmath import randomized_svd

__all__ = ["nndsvd_init", "project_columns"]


def project_columns(A: np.ndarray) -> np.ndarray:
    """Π_col: scale every column to L2 norm ≤ 1 (columns already inside are kept)."""
    norms = np.sqrt(np.einsum("ij,ij->j", A, A))
    return A / np.maximum(norms, 1.0)[None, :]


def nndsvd_init(V, n_components: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """W (m×K), H (K×n) ≥ 0 from the randomized SVD of V (m×n, sparse or dense). NON-PRIVATE."""
    seed = int(rng.integers(0, 2**31 - 1))
    U, S, Vt = randomized_svd(V, n_components, random_state=seed)
    W = np.zeros_like(U)
    H = np.zeros_like(Vt)
    W[:, 0] = np.sqrt(S[0]) * np.abs(U[:, 0])
    H[0, :] = np.sqrt(S[0]) * np.abs(Vt[0, :])
    for j in range(1, n_components):
        x, y = U[:, j], Vt[j, :]
        xp, yp = np.maximum(x, 0), np.maximum(y, 0)
        xn, yn = np.maximum(-x, 0), np.maximum(-y, 0)
        xpn, ypn = np.linalg.norm(xp), np.linalg.norm(yp)
        xnn, ynn = np.linalg.norm(xn), np.linalg.norm(yn)
        mp, mn = xpn * ypn, xnn * ynn
        if mp > mn:
            u, v, sigma = xp / xpn, yp / ypn, mp
        elif mn > 0:
            u, v, sigma = xn / xnn, yn / ynn, mn
        else:  # both parts vanish (degenerate singular pair): leave the component at zero
            continue
        lbd = np.sqrt(S[j] * sigma)
        W[:, j] = lbd * u
        H[j, :] = lbd * v
    return np.maximum(W, 0.0), np.maximum(H, 0.0)
