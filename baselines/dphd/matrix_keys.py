"""The names under which Octave keeps DPHD's matrices, and what a fit reads of a matrix's
content only, remembered for the matrices fitted last.

A sweep fits the same matrix many times (every ε, seed and mode); hashing it at every fit
cost more than some fits (SHA-256 of a dense 1000 × 10000 matrix: ~45 ms). :class:`MatrixFacts`
keeps copies of the last few matrices' arrays and recognises a matrix by comparing its bits
with them (~5 ms there), so each content is hashed once. A matrix frozen by
:func:`dptaucc.validation.freeze_count_matrix` (the benchmark's datasets) cannot change: its
facts are kept on it (:func:`dptaucc.validation.matrix_fact`), with no copy and no comparison.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptaucc.validation import is_frozen, matrix_fact

__all__ = ["content_key", "MatrixFacts", "Facts"]


def _content(X: sp.csr_matrix) -> tuple[tuple, tuple[np.ndarray, ...]]:
    """What identifies a CSR matrix's content: a small signature (shape, how it is stored, the
    dtypes) and the arrays that hold the rest. A matrix that stores every cell has the
    pointers and indices of its shape: only its values count."""
    full = X.nnz == X.shape[0] * X.shape[1] and X.has_canonical_format
    structure = ("every cell",) if full else (X.indptr.dtype.str, X.indices.dtype.str)
    arrays = (X.data,) if full else (X.indptr, X.indices, X.data)
    return (X.shape, *structure, X.data.dtype.str), arrays


def content_key(X: sp.csr_matrix, *context) -> str:
    """SHA-256 of a canonical CSR matrix's content (shape, pointers, indices, values) and of
    ``context``: the name under which Octave keeps the matrix between fits.

    >>> import scipy.sparse as sp
    >>> X = sp.csr_matrix([[1.0, 0.0], [2.0, 3.0]])
    >>> content_key(X, "paper") == content_key(X.copy(), "paper") != content_key(X, "other")
    True
    """
    signature, arrays = _content(X)
    h = hashlib.sha256(repr((*signature, context)).encode())
    for arr in arrays:
        h.update(memoryview(np.ascontiguousarray(arr)).cast("B"))
    return h.hexdigest()


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Do two arrays hold the same bytes (same dtype and length; NaN and -0.0 compared as
    bits)?"""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.itemsize not in (1, 2, 4, 8):
        return bytes(np.ascontiguousarray(a)) == bytes(np.ascontiguousarray(b))
    as_int = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(as_int), b.view(as_int)))


class MatrixFacts:
    """Facts that depend only on a CSR matrix's content (its content key in a context, its
    largest value), computed once per content for the ``size`` matrices used last.

    A matrix counts as known when its signature and arrays equal, bit for bit, the copies kept
    of a known one, so a fact is never reused for a matrix changed in place.

    >>> import scipy.sparse as sp
    >>> facts, calls = MatrixFacts(size=1), []
    >>> def biggest(X):
    ...     calls.append(1)
    ...     return float(X.max())
    >>> X = sp.csr_matrix([[1.0, 0.0], [2.0, 3.0]])
    >>> facts.get(X, "max", biggest), facts.get(X.copy(), "max", biggest), len(calls)
    (3.0, 3.0, 1)
    >>> X.data[0] = 7.0  # changed in place: not the matrix remembered
    >>> facts.get(X, "max", biggest), len(calls)
    (7.0, 2)
    """

    def __init__(self, size: int):
        self.size = size
        self._known: list[tuple[tuple, tuple[np.ndarray, ...], dict]] = []
        self._lock = threading.Lock()

    def _facts_of(self, X: sp.csr_matrix) -> dict:
        if is_frozen(X):  # values that cannot change: the facts live on the matrix
            return matrix_fact(X, "dphd matrix facts", dict)
        signature, arrays = _content(X)
        for at, (sig, saved, _) in enumerate(self._known):
            if sig == signature and all(map(_same_bits, arrays, saved)):
                known = self._known.pop(at)
                break
        else:
            known = (signature, tuple(np.array(a, copy=True) for a in arrays), {})
        self._known.insert(0, known)
        del self._known[self.size:]
        return known[2]

    def of(self, X: sp.csr_matrix) -> Facts:
        """The facts of ``X``'s content (those remembered for a bit-equal matrix seen before),
        found with one comparison however many of them a fit reads."""
        with self._lock:
            return Facts(X, self._facts_of(X), self._lock)

    def get(self, X: sp.csr_matrix, name: Hashable, compute: Callable[[sp.csr_matrix], Any]):
        """``compute(X)``, or its value for a bit-equal matrix seen before under ``name``."""
        return self.of(X).get(name, compute)

    def key(self, X: sp.csr_matrix, *context) -> str:
        """:func:`content_key` of ``X`` in ``context``, remembered."""
        return self.of(X).key(*context)


class Facts:
    """The remembered facts of one matrix's content (from :meth:`MatrixFacts.of`).

    >>> import scipy.sparse as sp
    >>> X = sp.csr_matrix([[1.0, 0.0], [2.0, 3.0]])
    >>> facts = MatrixFacts(size=1).of(X)
    >>> facts.get("max", lambda M: float(M.max())), facts.key("paper") == content_key(X, "paper")
    (3.0, True)
    """

    def __init__(self, X: sp.csr_matrix, facts: dict, lock: threading.Lock):
        self._X, self._facts, self._lock = X, facts, lock

    def get(self, name: Hashable, compute: Callable[[sp.csr_matrix], Any]):
        """``compute(X)``, computed once per content."""
        with self._lock:
            if name not in self._facts:
                self._facts[name] = compute(self._X)
            return self._facts[name]

    def key(self, *context) -> str:
        """:func:`content_key` of the matrix in ``context``."""
        return self.get(("content key", *context), lambda M: content_key(M, *context))
