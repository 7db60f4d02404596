"""Parameter checks and the shape-based default fuzzifiers shared by the FCCM estimators."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from dptaucc.validation import check_n_clusters

__all__ = ["check_lambda", "default_lambdas", "normalize_rows", "check_co_clusters",
           "check_positive_int", "NORMALIZATIONS"]

NORMALIZATIONS = (None, "l1")

#: default λ_u = LAMBDA_U_PER_ITEM / m and λ_w = LAMBDA_W_PER_OBJECT · n / m, tuned on
#: L1-row-normalised CLUTO text (cstr). They depend on the matrix shape only.
LAMBDA_U_PER_ITEM = 0.01
LAMBDA_W_PER_OBJECT = 6.0


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_lambda(value, name: str) -> float:
    """A finite fuzzifier > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__}")
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def default_lambdas(n: int, m: int) -> tuple[float, float]:
    """Shape-based (λ_u, λ_w) for an n × m L1-row-normalised block (data-independent)."""
    return LAMBDA_U_PER_ITEM / m, LAMBDA_W_PER_OBJECT * n / m


def check_co_clusters(n_row_clusters, n_col_clusters, n: int, m: int) -> int:
    """FCCM has C co-clusters: ``n_col_clusters`` must be None or equal ``n_row_clusters``."""
    C = check_n_clusters(n_row_clusters, n, "n_row_clusters", "rows")
    if n_col_clusters is not None:
        L = check_n_clusters(n_col_clusters, m, "n_col_clusters", "columns")
        if L != C:
            raise ValueError(f"FCCM estimates C co-clusters (one item typicality vector per "
                             f"object cluster): n_col_clusters must be None or equal "
                             f"n_row_clusters={C}, got {L}")
    elif C > m:
        raise ValueError(f"n_row_clusters={C} is larger than the number of columns "
                         f"(n_features={m})")
    return C


def check_normalize(normalize) -> None:
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")


def normalize_rows(X: sp.csr_matrix, normalize) -> sp.csr_matrix:
    """Per-record transform: divide each row by its total (``"l1"``) or leave it (None)."""
    check_normalize(normalize)
    if normalize is None:
        return X
    totals = np.asarray(X.sum(axis=1)).ravel()
    return sp.csr_matrix(sp.diags(1.0 / np.where(totals > 0, totals, 1.0)) @ X)
