"""Input checks shared by every estimator of the suite (ours and the baselines)."""

from __future__ import annotations

import numbers
import secrets
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array

from dptaucc.kernels import value_summary

__all__ = [
    "DENSE_MIN_DENSITY", "check_count_matrix", "check_n_clusters", "dense_counts",
    "freeze_count_matrix", "is_frozen", "make_generator", "matrix_fact", "matrix_token",
]

T = TypeVar("T")


def make_generator(random_state) -> np.random.Generator:
    """The one ``numpy.random.Generator`` a fit draws all its randomness from.

    Accepts None, an int, a ``SeedSequence``, a ``Generator`` (used as is) or a legacy
    ``RandomState`` (a seed is drawn from it, so sklearn-style callers stay deterministic).

    Examples
    --------
    >>> from dptaucc.validation import make_generator
    >>> int(make_generator(0).integers(10)) == int(make_generator(0).integers(10))
    True
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

    Dense arrays, numpy matrices, array-likes and any scipy.sparse format are accepted; sparse
    input is never densified and never modified in place. Generic problems are caught first by
    scikit-learn's ``check_array`` with its own messages (non-2-D input, empty matrix, complex
    data, NaN/inf, non-numeric object entries -> ``TypeError``). Then the count checks, each a
    ``ValueError`` naming the problem: negative entries ("Negative values in data passed to X")
    and fractional counts (``integer=True``). A matrix of all zeros is a valid count matrix: a
    DP estimator must accept it (refusing it would itself reveal that every count is zero);
    :func:`dptaucc.base.check_fit_input` adds a warning saying what the fit gives.

    Cost: a canonical CSR float64 input is returned as is (one pass over its values to check
    them); other CSR input costs one conversion of its values, sharing the index arrays.

    Examples
    --------
    >>> from dptaucc.validation import check_count_matrix
    >>> check_count_matrix([[1, 0], [0, 2]]).toarray().tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    >>> check_count_matrix([[1, -1]])
    Traceback (most recent call last):
    ...
    ValueError: Negative values in data passed to X: X[0, 1] = -1; counts must be >= 0
    >>> check_count_matrix([[1, 0], [0, 2.5]])
    Traceback (most recent call last):
    ...
    ValueError: X contains fractional entries: X[1, 1] = 2.5; counts must be whole numbers

    Examples
    --------
    >>> from dptaucc.validation import check_count_matrix, dense_counts
    >>> dense_counts(check_count_matrix([[1, 2], [3, 0]])).tolist()
    [[1.0, 2.0], [3.0, 0.0]]
    >>> dense_counts(check_count_matrix([[1, 0], [0, 0]])) is None
    True
    """
    if X is None:
        raise TypeError(f"{name} must be a 2-D array or sparse matrix, got None")
    whole_frozen = _frozen_whole(X)
    if whole_frozen is not None:  # checked when frozen, and unchangeable since
        if integer and not whole_frozen:
            raise ValueError(_fractional_message(X, name))
        return X
    summary = None
    if isinstance(X, np.matrix):  # check_array refuses np.matrix; its data is a plain 2-D array
        X = np.asarray(X)
    if not sp.issparse(X):
        X = check_array(X, dtype=np.float64, ensure_all_finite=True, ensure_2d=True,
                        allow_nd=False, ensure_min_samples=1, ensure_min_features=1,
                        input_name=name)
        X = sp.csr_matrix(X)
    else:
        # structure and dtype checks with sklearn's messages; values are checked below
        X = check_array(X, accept_sparse=["csr", "csc", "coo"], dtype=None, copy=False,
                        ensure_all_finite=False, ensure_2d=True, allow_nd=False,
                        ensure_min_samples=1, ensure_min_features=1, input_name=name)
        if X.format == "csr" and X.dtype.kind in "iu" and X.has_canonical_format:
            # whole counts already: summarised before the conversion, which keeps every value
            # (as the nearest double) and its sign
            summary = value_summary(X.data)
            X = sp.csr_matrix((X.data.astype(np.float64), X.indices, X.indptr), shape=X.shape)
            X.has_canonical_format = True
        else:
            X = _as_canonical_csr(X)
    if summary is None:
        summary = value_summary(X.data)
    lowest, whole, finite, zeros = summary
    if not finite:
        what = "NaN" if np.isnan(X.data).any() else "infinity or a value too large for " \
            "dtype('float64')"
        raise ValueError(f"Input {name} contains {what}.")
    if lowest < 0:
        i, j, v = _first_entry(X, X.data < 0)
        raise ValueError(f"Negative values in data passed to {name}: {name}[{i}, {j}] = "
                         f"{_number(v)}; counts must be >= 0")
    if integer and not whole:
        raise ValueError(_fractional_message(X, name))
    if zeros:
        X = X.copy()
        X.eliminate_zeros()
    return X


def _number(value: float) -> str:
    """A value as written, shortest round-trip form (``-3``, ``0.5``, ``2.0000001``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _first_entry(X: sp.csr_matrix, bad: np.ndarray) -> tuple[int, int, float]:
    """(row, column, value) of the first stored entry of CSR ``X`` where ``bad`` holds (in
    row-major order): the offender an error message names."""
    k = int(np.argmax(bad))
    row = int(np.searchsorted(X.indptr, k, side="right")) - 1
    return row, int(X.indices[k]), float(X.data[k])


def _fractional_message(X: sp.csr_matrix, name: str) -> str:
    i, j, v = _first_entry(X, X.data != np.floor(X.data))
    return (f"{name} contains fractional entries: {name}[{i}, {j}] = {_number(v)}; counts must "
            "be whole numbers")


class _Frozen(NamedTuple):
    """What :func:`freeze_count_matrix` saw: the matrix's arrays and whether its values are
    whole; and the facts computed from them since (:func:`matrix_fact`)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]
    whole: bool
    facts: dict


#: the attribute of a frozen matrix that holds its :class:`_Frozen`
_FROZEN = "_dptaucc_frozen_counts"


def _immutable(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` backed by a bytes object: read-only for good (numpy refuses to make
    such an array writeable again)."""
    return np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=a.dtype)


def freeze_count_matrix(X) -> sp.csr_matrix:
    """:func:`check_count_matrix` (fractional counts allowed), with the result's arrays
    copied into immutable memory: no code can change its values afterwards, so
    :func:`check_count_matrix` returns a frozen matrix as it is, without another pass over
    its values (a sweep that fits thousands of models on one matrix checks it once).
    Whether its counts are whole is remembered, for ``integer=True``.

    Examples
    --------
    >>> from dptaucc.validation import check_count_matrix, freeze_count_matrix
    >>> X = freeze_count_matrix([[1, 0], [0, 2]])
    >>> check_count_matrix(X) is X, X.data.flags.writeable
    (True, False)
    >>> check_count_matrix(freeze_count_matrix([[0.5, 1.0]]))
    Traceback (most recent call last):
    ...
    ValueError: X contains fractional entries: X[0, 0] = 0.5; counts must be whole numbers
    """
    X = check_count_matrix(X, integer=False)
    whole = value_summary(X.data)[1]
    X = sp.csr_matrix((_immutable(X.data), _immutable(X.indices), _immutable(X.indptr)),
                      shape=X.shape, copy=False)
    X.has_canonical_format = True
    setattr(X, _FROZEN, _Frozen(X.data, X.indices, X.indptr, X.shape, whole, {}))
    return X


def _in_immutable_memory(a: np.ndarray) -> bool:
    """Does ``a`` view memory of a bytes object (through read-only views only)?"""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return isinstance(a, bytes)


def _frozen(X) -> _Frozen | None:
    """What :func:`freeze_count_matrix` recorded of X, when X still holds the immutable arrays
    it was frozen with; else None."""
    frozen = getattr(X, _FROZEN, None) if type(X) is sp.csr_matrix else None
    if not isinstance(frozen, _Frozen):
        return None
    arrays = ((X.data, frozen.data), (X.indices, frozen.indices), (X.indptr, frozen.indptr))
    if X.shape != frozen.shape or any(a is not b or not _in_immutable_memory(a)
                                      for a, b in arrays):
        return None
    return frozen


def _frozen_whole(X) -> bool | None:
    """For a frozen matrix (:func:`_frozen`): whether its counts are whole; else None."""
    frozen = _frozen(X)
    return None if frozen is None else frozen.whole


def is_frozen(X) -> bool:
    """Is X a matrix frozen by :func:`freeze_count_matrix`, still holding its immutable
    arrays (so that its values cannot have changed since)?

    >>> import numpy as np
    >>> is_frozen(freeze_count_matrix([[1, 0]])), is_frozen(check_count_matrix(np.ones((1, 2))))
    (True, False)
    """
    return _frozen(X) is not None


def matrix_fact(X, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, a fact of X's values: remembered under ``name`` on a matrix frozen by
    :func:`freeze_count_matrix` (whose values cannot change), so that the fits and
    evaluations of a sweep on one matrix compute it once; computed at every call for any
    other X. The arrays of a remembered fact are made read-only.

    >>> import numpy as np
    >>> X = freeze_count_matrix([[1, 2], [3, 0]])
    >>> first = matrix_fact(X, "row sums", lambda: np.asarray(X.sum(axis=1)).ravel())
    >>> matrix_fact(X, "row sums", lambda: None) is first, first.flags.writeable
    (True, False)
    """
    frozen = _frozen(X)
    if frozen is None:
        return compute()
    if name not in frozen.facts:
        value = compute()
        for part in value if isinstance(value, tuple) else (value,):
            if isinstance(part, np.ndarray):
                part.flags.writeable = False
        frozen.facts[name] = value
    return frozen.facts[name]


def matrix_token(X) -> str | None:
    """A random name of a frozen matrix (:func:`freeze_count_matrix`), the same for its whole
    life and no other matrix's; None for any other X. A model that kept the token of the
    matrix it was fitted on knows, from the token alone, that a matrix is that one, values
    included (its own values, none derived from them: the name is random).

    >>> import numpy as np
    >>> X = freeze_count_matrix([[1, 0], [0, 2]])
    >>> matrix_token(X) == matrix_token(X) != matrix_token(freeze_count_matrix([[1, 0], [0, 2]]))
    True
    >>> matrix_token(np.ones((2, 2))) is None
    True
    """
    frozen = _frozen(X)
    if frozen is None:
        return None
    return frozen.facts.setdefault("token", secrets.token_hex(16))


#: :func:`dense_counts` gives a dense array for a matrix with at least this share of non-zero
#: cells: 8 bytes a cell is then at most the 12-16 bytes a non-zero takes in CSR, so the dense
#: form costs no more memory than the input, and products with it run on BLAS.
DENSE_MIN_DENSITY = 0.5


def dense_counts(X: sp.csr_matrix, min_density: float = DENSE_MIN_DENSITY) -> np.ndarray | None:
    """A validated CSR matrix (:func:`check_count_matrix`) as a read-only dense float64 array
    when at least ``min_density`` of its cells are non-zero; None for a sparser one.

    A matrix that stores every cell (``nnz == n·m``, the supplement's filled synthetic
    matrices) is a row-major array already: its values are returned as an n×m view, with no
    copy and no pass over them. Otherwise the dense array is a new one (one pass). The caller
    gets the same numbers either way; a sparse matrix is never densified.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = check_count_matrix(np.array([[1, 2], [0, 3]]))
    >>> dense = dense_counts(X)  # 3 of 4 cells are non-zero: dense
    >>> dense.tolist(), dense.flags.writeable
    ([[1.0, 2.0], [0.0, 3.0]], False)
    >>> dense_counts(check_count_matrix(sp.eye(4, format="csr"))) is None  # 1 in 4: stays sparse
    True
    """
    n, m = X.shape
    if X.nnz < min_density * n * m:
        return None
    if X.nnz == n * m and X.has_canonical_format:
        # canonical: each row's column indices are distinct and sorted, so with m per row they
        # are 0..m-1 in order and ``data`` holds the cells row by row
        out = np.asarray(X.data, dtype=np.float64).reshape(n, m)
    else:
        out = X.toarray().astype(np.float64, copy=False)
    out.flags.writeable = False
    return out


def _as_canonical_csr(X) -> sp.csr_matrix:
    """CSR float64 with sorted, summed indices; the input's arrays are reused when they can be
    (never modified)."""
    if X.format != "csr":
        X = sp.csr_matrix(X)  # a conversion: a new matrix
    elif not isinstance(X, sp.csr_matrix):
        X = sp.csr_matrix(X)  # csr_array -> csr_matrix shares the arrays
    if X.dtype != np.float64:
        X = sp.csr_matrix((X.data.astype(np.float64), X.indices, X.indptr), shape=X.shape)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # canonical CSR: duplicates summed, indices sorted
    return X


def check_n_clusters(value, upper: int, name: str, axis: str) -> int:
    """An integer number of clusters in [1, upper]; ``axis`` is 'rows' or 'columns'.

    Examples
    --------
    >>> from dptaucc.validation import check_n_clusters
    >>> check_n_clusters(3, 10, "n_clusters", "rows")
    3
    >>> check_n_clusters(11, 10, "n_clusters", "rows")
    Traceback (most recent call last):
    ...
    ValueError: n_clusters=11 is larger than the number of rows (n_samples=10)
    >>> check_n_clusters(2.0, 10, "n_col_clusters", "columns")
    Traceback (most recent call last):
    ...
    TypeError: n_col_clusters must be an int, got float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    if value > upper:
        size = {"rows": "n_samples", "columns": "n_features"}.get(axis)
        count = f"{size}={upper}" if size else str(upper)  # sklearn's n_samples/n_features words
        raise ValueError(f"{name}={value} is larger than the number of {axis} ({count})")
    return value
