"""Input checks shared by every estimator of the suite (ours and the baselines)."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = ["check_count_matrix", "make_generator", "check_n_clusters", "check_fraction"]


def make_generator(random_state) -> np.random.Generator:
    """The one ``numpy.random.Generator`` a fit draws all its randomness from.

    Accepts None, an int, a ``SeedSequence``, a ``Generator`` (used as is) or a legacy
    ``RandomState`` (a seed is drawn from it, so sklearn-style callers stay deterministic).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


def check_count_matrix(X, *, integer: bool = True, name: str = "X") -> sp.csr_matrix:
    """Validate a non-negative count matrix and return it as CSR float64 (explicit zeros removed).

    Dense arrays, numpy matrices and any scipy.sparse format are accepted. Rejects, with a
    ``ValueError`` naming the problem: non-2-D input, an empty matrix, NaN or infinite
    entries, negative entries, a matrix of all zeros and (``integer=True``) fractional counts.
    """
    if X is None:
        raise TypeError(f"{name} must be a 2-D array or sparse matrix, got None")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        data = X.data
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
        if arr.dtype.kind not in "biuf":
            if arr.dtype.kind == "O":
                try:
                    arr = arr.astype(np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{name} must hold numbers: {exc}") from exc
            else:
                raise ValueError(f"{name} must hold numbers, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {arr.ndim}-D input of shape {arr.shape}")
        arr = arr.astype(np.float64, copy=False)
        data = arr
        X = None
    shape = X.shape if X is not None else arr.shape
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {shape}")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if data.size and data.min() < 0:
        raise ValueError(f"{name} contains negative entries; counts must be >= 0")
    if integer and data.size and np.any(data != np.round(data)):
        raise ValueError(f"{name} contains fractional entries; counts must be whole numbers")
    if X is None:
        X = sp.csr_matrix(arr)
    X.eliminate_zeros()
    if X.nnz == 0:
        raise ValueError(f"{name} is all zeros")
    X.sort_indices()
    return X


def check_n_clusters(value, upper: int, name: str, axis: str) -> int:
    """An integer number of clusters in [1, upper]; ``axis`` is 'rows' or 'columns'."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    if value > upper:
        raise ValueError(f"{name}={value} is larger than the number of {axis} ({upper})")
    return value


def check_fraction(value, name: str) -> float:
    """A real number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in (0, 1), got {type(value).__name__}")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value}")
    return value
