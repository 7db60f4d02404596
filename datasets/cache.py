"""The parsed-matrix cache: one ``.npz`` per dataset (CSR arrays, labels, source hashes).

Written atomically (temporary file in the same folder, then ``os.replace``), keyed by the
SHA-256 of the source files and a format version: a cache made from other bytes, by an
older parser, or truncated, is ignored and rebuilt.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["CACHE_VERSION", "write_parsed", "read_parsed"]

CACHE_VERSION = 1


def write_parsed(path: Path, X: sp.csr_matrix, row_labels: np.ndarray, sources: dict) -> None:
    """Store a parsed dataset at ``path`` (atomic: readers see the old file or the new one).

    >>> import pathlib, tempfile
    >>> import numpy as np, scipy.sparse as sp
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.npz"
    >>> X = sp.csr_matrix(np.array([[0, 3], [1, 0]], dtype=np.int64))
    >>> write_parsed(path, X, np.array([0, 1]), {"toy.txt": "ab12"})
    >>> sorted(p.name for p in path.parent.iterdir())  # no temporary file left behind
    ['toy.npz']
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({"version": CACHE_VERSION, "sources": sources}, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, data=X.data, indices=X.indices, indptr=X.indptr,
                     shape=np.asarray(X.shape, dtype=np.int64), row_labels=row_labels,
                     header=np.asarray(header))
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a shared cache must be readable
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_parsed(path: Path, sources: dict) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """The cached ``(X, row_labels)`` if ``path`` holds a valid cache of ``sources``, else None.

    >>> import pathlib, tempfile
    >>> import numpy as np, scipy.sparse as sp
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.npz"
    >>> X = sp.csr_matrix(np.array([[0, 3], [1, 0]], dtype=np.int64))
    >>> write_parsed(path, X, np.array([0, 1]), {"toy.txt": "ab12"})
    >>> Y, labels = read_parsed(path, {"toy.txt": "ab12"})
    >>> Y.toarray().tolist(), labels.tolist()
    ([[0, 3], [1, 0]], [0, 1])
    >>> read_parsed(path, {"toy.txt": "other hash"}) is None  # a stale cache is not used
    True
    """
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(str(npz["header"]))
            if header.get("version") != CACHE_VERSION or header.get("sources") != sources:
                return None
            shape = tuple(int(v) for v in npz["shape"])
            X = sp.csr_matrix((npz["data"], npz["indices"], npz["indptr"]), shape=shape)
            row_labels = npz["row_labels"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if X.dtype != np.int64 or row_labels.shape != (shape[0],):
        return None
    X.has_sorted_indices = True
    return X, row_labels
