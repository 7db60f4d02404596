"""Public per-record row transforms and a data-independent random projection.

DPM and the colored-noise mechanism need rows in a public bounded domain. Only per-record
transforms are allowed (no corpus statistics such as IDF, which would read every row): each
document-term row is scaled to unit L2 (``"l2"``) or L1 (``"l1"``) norm, so ``‖x‖₂ ≤ 1``. An
optional Gaussian projection ``G ∈ ℝ^{d×p}`` (entries N(0, 1/p), drawn from the fit's
Generator, hence independent of the data) maps each row to ``ℝ^p``; the projected row is
renormalised to unit L2 norm (again per record), so the public bound ``‖y‖₂ ≤ 1`` holds exactly.

Cost: one pass over X. Sparse input stays sparse until the projection, whose output is a dense
n×p array with small p; a matrix at least half full (e.g. the synthetic biclusters) takes a
dense float path instead (one BLAS product, no n·m term beyond its own non-zeros).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dptaucc.validation import matrix_fact

__all__ = ["TRANSFORMS", "DENSE_FILL", "normalise_rows", "RowEmbedding", "make_embedding"]

TRANSFORMS = ("l2", "l1")
#: a matrix with at least this fraction of non-zeros is processed as a dense array
DENSE_FILL = 0.5


def _inverse_norms(X, transform: str) -> np.ndarray:
    """1/‖row‖ (L2 or L1) per row, 0 for all-zero rows; X dense or sparse, non-negative."""
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if sp.issparse(X):
        norms = (np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()) if transform == "l2"
                 else np.asarray(abs(X).sum(axis=1)).ravel())
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X)) if transform == "l2" \
            else np.abs(X).sum(axis=1)
    return np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)


def normalise_rows(X, transform: str):
    """Scale every row to unit L2 or L1 norm (all-zero rows stay zero); a per-record transform.

    CSR in, CSR out (a copy); a dense array in, a dense float array out.

    >>> import numpy as np, scipy.sparse as sp
    >>> X = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 1.0]])
    >>> normalise_rows(X, "l2")[:2].round(12).tolist(), normalise_rows(X, "l1")[2].tolist()
    ([[0.6, 0.8], [0.0, 0.0]], [0.5, 0.5])
    >>> out = normalise_rows(sp.csr_matrix(X), "l2")
    >>> out.format, bool(np.allclose(out.toarray(), normalise_rows(X, "l2")))
    ('csr', True)
    """
    scale = _inverse_norms(X, transform)
    if not sp.issparse(X):
        return np.asarray(X, dtype=np.float64) * scale[:, None]
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.data *= np.repeat(scale, np.diff(X.indptr))
    return X


def _normalised(X: sp.csr_matrix, transform: str) -> sp.csr_matrix:
    """:func:`normalise_rows` of a CSR matrix, read-only, computed once per matrix frozen by
    :func:`dptaucc.validation.freeze_count_matrix` (a sweep's fits and evaluations on one
    matrix share it)."""
    def compute() -> sp.csr_matrix:
        Xn = normalise_rows(X, transform)
        for array in (Xn.data, Xn.indices, Xn.indptr):
            array.flags.writeable = False
        return Xn
    return matrix_fact(X, f"rows normalised to unit {transform} norm", compute)


def _unit_rows(Y: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(Y, axis=1)
    return Y * np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)[:, None]


def is_dense_enough(X) -> bool:
    """True when X is a dense array or a sparse matrix at least :data:`DENSE_FILL` full."""
    if not sp.issparse(X):
        return True
    n, d = X.shape
    return X.nnz >= DENSE_FILL * n * d


@dataclass(frozen=True)
class RowEmbedding:
    """The public map row → bounded vector used by a fit (kept for evaluation).

    >>> import numpy as np
    >>> embedding = make_embedding(5, 3, "l1", np.random.default_rng(0))
    >>> Y = embedding.apply(np.array([[1.0, 0.0, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0]]))
    >>> Y.shape, np.round(np.linalg.norm(Y, axis=1), 12).tolist()  # unit rows, zero stays zero
    ((2, 3), [1.0, 0.0])
    """

    transform: str
    projection: np.ndarray | None  # d × p, or None (identity)

    def apply(self, X) -> sp.csr_matrix | np.ndarray:
        """Rows of X mapped into the unit L2 ball in one pass.

        With a projection: dense n×p. Without: CSR for sparse X, a dense array for a dense or
        at-least-half-full X.
        """
        if self.projection is not None and X.shape[1] != self.projection.shape[0]:
            raise ValueError(f"X has {X.shape[1]} columns, the fit had {self.projection.shape[0]}")
        if self.projection is not None and sp.issparse(X) and not is_dense_enough(X):
            Xn = _normalised(X, self.transform)  # a frozen matrix's, computed once
            return _unit_rows(np.asarray(Xn @ self.projection))
        if is_dense_enough(X):
            X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        Xn = normalise_rows(X, self.transform)
        if self.projection is None:
            return Xn
        return _unit_rows(np.asarray(Xn @ self.projection))


def make_embedding(n_features: int, n_components: int | None, transform: str,
                   rng: np.random.Generator) -> RowEmbedding:
    """Draw the public projection (or none) for a fit; data-independent by construction.

    >>> import numpy as np
    >>> make_embedding(50, None, "l2", np.random.default_rng(0)).projection is None
    True
    >>> make_embedding(50, 4, "l2", np.random.default_rng(0)).projection.shape
    (50, 4)
    >>> make_embedding(50, 0, "l2", np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    ValueError: n_components must be None or an int >= 1, got 0
    """
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if n_components is None:
        return RowEmbedding(transform, None)
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) \
            or n_components < 1:
        raise ValueError(f"n_components must be None or an int >= 1, got {n_components!r}")
    p = int(n_components)
    G = rng.normal(0.0, 1.0 / np.sqrt(p), size=(n_features, p))
    return RowEmbedding(transform, G)
