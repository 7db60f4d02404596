"""DPNMF's initialisations: the paper's non-private NNDSVD and the corrected data-independent one.

NNDSVD (Boutsidis & Gallopoulos 2008), as the authors run it: ``w_1 = √S₁|u₁|``,
``h_1 = √S₁|v₁|``; for j ≥ 2 keep the positive or the negative parts of (u_j, v_j), whichever
has the larger product of norms σ, normalise them and scale by ``√(S_j σ)``. It reads the data.

The corrected initialisation draws W and H from the fit's generator only (their shapes are
public), so it reveals nothing about the documents.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.extmath import randomized_svd

__all__ = ["nndsvd_init", "random_init", "project_columns"]


def project_columns(A: np.ndarray) -> np.ndarray:
    """Π_col: scale every column to L2 norm ≤ 1 (columns already inside are kept).

    >>> import numpy as np
    >>> project_columns(np.array([[3.0, 0.3], [4.0, 0.4]])).tolist()
    [[0.6, 0.3], [0.8, 0.4]]
    """
    norms = np.sqrt(np.einsum("ij,ij->j", A, A))
    return A / np.maximum(norms, 1.0)[None, :]


def random_init(n_words: int, n_documents: int, n_components: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Data-independent W (m×K) and H (K×n): uniform entries, every column scaled to unit
    norm. Only the shapes (public) and ``rng`` enter.

    >>> import numpy as np
    >>> W, H = random_init(5, 4, 2, np.random.default_rng(0))
    >>> W.shape, H.shape, np.round(np.linalg.norm(W, axis=0), 12).tolist()
    ((5, 2), (2, 4), [1.0, 1.0])
    >>> bool((random_init(5, 4, 2, np.random.default_rng(0))[1] == H).all())  # seed only
    True
    """
    W = rng.random((n_words, n_components))
    H = rng.random((n_components, n_documents))
    return W / np.linalg.norm(W, axis=0), H / np.linalg.norm(H, axis=0)


def nndsvd_init(V, n_components: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """W (m×K), H (K×n) ≥ 0 from the randomized SVD of V (m×n, sparse or dense). NON-PRIVATE.

    The SVD is scikit-learn's ``randomized_svd`` with its defaults, as the authors call it (its
    power iterations decide the result: an exact SVD moves the singular vectors by up to ~1e-3
    on the CLUTO matrices, so it is kept). The seed comes from ``rng``.

    >>> import numpy as np
    >>> V = np.array([[3.0, 3.0, 0.0, 0.0], [3.0, 3.0, 0.0, 0.0], [0.0, 0.0, 2.0, 2.0]])
    >>> W, H = nndsvd_init(V, 2, np.random.default_rng(0))
    >>> W.shape, H.shape, bool(W.min() >= 0 and H.min() >= 0)
    ((3, 2), (2, 4), True)
    >>> bool(np.allclose(W @ H, V))  # two blocks: rank 2 is exact
    True
    """
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
