"""Parsers of the mirror's three formats into CSR int64 counts and integer label vectors.

All vectorised (``numpy.loadtxt`` on the columns named in the header, ``scipy.sparse``
constructors); nothing is ever densified. Every malformed input raises a ``ValueError``
that names the file and the problem.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["parse_triplets", "parse_labels", "parse_matlab_dtm", "relabel"]

#: accepted headers: the CLUTO files' names (``cluster`` is the count) and plain names
_TRIPLET_HEADERS = (("doc", "word", "cluster"), ("row", "col", "count"))


def _read_header(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            first = fh.readline()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name}: not a text file of triplets ({exc})") from exc
    if not first.strip():
        raise ValueError(f"{path.name}: empty file, expected a header 'doc,word,cluster'")
    return [c.strip().strip('"') for c in first.rstrip("\r\n").split(",")]


def _triplet_columns(path: Path, header: list[str]) -> list[int]:
    """Positions of the (row id, column id, count) columns, found by header name."""
    best = max(_TRIPLET_HEADERS, key=lambda names: sum(c in header for c in names))
    missing = [c for c in best if c not in header]
    if missing:
        raise ValueError(f"{path.name}: header {header} lacks column(s) {missing}; "
                         f"expected {', '.join(_TRIPLET_HEADERS[0])} "
                         f"(or {', '.join(_TRIPLET_HEADERS[1])})")
    return [header.index(c) for c in best]


#: largest id or count read exactly from a triplet file (floats hold every integer up to 2^53)
_MAX_EXACT = 2**53


def _file_line(path: Path, row: int) -> int:
    """The line number in the file (the header is line 1) of data row ``row`` (0-based) of
    ``numpy.loadtxt``, which skips blank and comment-only lines."""
    seen = -1
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if number > 1 and line.split("#", 1)[0].strip():
                seen += 1
                if seen == row:
                    return number
    return number


def _offender(path: Path, values: np.ndarray, bad: np.ndarray) -> str:
    """"<value> on line <n>" of the first entry of a column where ``bad`` holds."""
    k = int(np.argmax(bad))
    value = float(values[k])
    text = f"{value:g}" if value == int(value) and abs(value) < 1e15 else repr(value)
    return f"{text} on line {_file_line(path, k)}"


def _whole_column(path: Path, values: np.ndarray, what: str) -> np.ndarray:
    """A column of the triplet table as int64: whole numbers only (``8`` or ``8.0``)."""
    bad = ~np.isfinite(values) | (values != np.floor(values)) | (np.abs(values) > _MAX_EXACT)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{path.name}: {what} must be whole numbers, found "
                         f"{float(values[k])!r} on line {_file_line(path, k)}")
    return values.astype(np.int64)


def _check_shape(shape) -> tuple[int, int]:
    """(n_rows, n_cols) from any sequence of two integers >= 1 (a config's list too)."""
    values = tuple(shape) if not isinstance(shape, (str, bytes)) and hasattr(shape, "__iter__") \
        else ()
    ok = len(values) == 2 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                  and v >= 1 for v in values)
    if not ok:
        raise ValueError(f"shape must be (n_rows, n_cols), two integers >= 1, got {shape!r}")
    return int(values[0]), int(values[1])


def parse_triplets(path: str | os.PathLike, *, shape: tuple[int, int] | None = None,
                   index_base: int = 0) -> sp.csr_matrix:
    """Parse a ``doc,word,cluster`` CSV (``cluster`` is the count a_ij) into CSR int64.

    Columns are found by header name (``row,col,count`` is accepted too), so the extra unnamed
    index column of tr11/tr41 is skipped. Ids and counts are whole numbers (``8`` or ``8.0``);
    ids start at ``index_base`` (0 or 1). With ``shape=(n_rows, n_cols)`` the matrix has that
    shape: rows and columns without any cell are kept, ids beyond it are errors. Without it the
    shape follows the authors' loader: #distinct row ids × #distinct column ids, which must be
    contiguous. Duplicate pairs and negative counts are errors; stored zero counts (cstr) are
    dropped.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dptaucc.datasets.parsers import parse_triplets
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "counts.csv"
    >>> _ = path.write_text("row,col,count\\n1,1,2\\n2,3,8.0\\n")
    >>> parse_triplets(path, shape=(3, 4), index_base=1).toarray().tolist()
    [[2, 0, 0, 0], [0, 0, 8, 0], [0, 0, 0, 0]]
    """
    path = Path(path)
    if index_base not in (0, 1) or isinstance(index_base, bool):
        raise ValueError(f"index_base must be 0 or 1 (the id of the first row and column), "
                         f"got {index_base!r}")
    if shape is not None:
        shape = _check_shape(shape)
    usecols = _triplet_columns(path, _read_header(path))
    try:
        with warnings.catch_warnings():  # an empty body is reported below, not as a warning
            warnings.simplefilter("ignore", UserWarning)
            table = np.loadtxt(path, delimiter=",", skiprows=1, usecols=usecols,
                               dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path.name}: malformed triplet file ({exc})") from exc
    if table.shape[0] == 0:
        raise ValueError(f"{path.name}: no triplets after the header")
    doc = _whole_column(path, table[:, 0], "row ids") - index_base
    word = _whole_column(path, table[:, 1], "column ids") - index_base
    count = _whole_column(path, table[:, 2], "counts")
    for ids, what in ((doc, "row"), (word, "column")):
        if ids.min() < 0:
            raise ValueError(
                f"{path.name}: {what} id {_offender(path, ids + index_base, ids < 0)} is below "
                f"{index_base} (ids start at {index_base}"
                + ("; pass index_base=0 if yours start at 0)" if index_base else ")"))
    if count.min() < 0:
        raise ValueError(f"{path.name}: negative count {_offender(path, count, count < 0)}")
    if shape is not None:
        n_rows, n_cols = shape
        outside = (doc >= n_rows) | (word >= n_cols)
        if outside.any():
            k = int(np.argmax(outside))
            raise ValueError(f"{path.name}: a cell lies outside shape={shape}: row id "
                             f"{doc[k] + index_base}, column id {word[k] + index_base} on line "
                             f"{_file_line(path, k)}; largest row id {doc.max() + index_base}, "
                             f"largest column id {word.max() + index_base} (ids start at "
                             f"{index_base})")
    else:
        n_rows, n_cols = _n_distinct(doc), _n_distinct(word)
        if doc.max() >= n_rows or word.max() >= n_cols:
            raise ValueError(
                f"{path.name}: ids are not contiguous: max doc id {doc.max() + index_base} with "
                f"{n_rows} distinct docs, max word id {word.max() + index_base} with {n_cols} "
                f"distinct words. Ids start at {index_base}"
                + ("" if index_base else " (pass index_base=1 if yours start at 1)")
                + "; if some rows or columns have no cell, pass shape=(n_rows, n_cols)"
            )
    X = sp.coo_matrix((count, (doc, word)), shape=(n_rows, n_cols), dtype=np.int64).tocsr()
    if X.nnz != count.size:  # tocsr summed some (doc, word) pairs
        raise ValueError(f"{path.name}: duplicate (doc, word) pairs: "
                         f"{_duplicate(path, doc, word, index_base)}")
    return _canonical(X)


def _duplicate(path: Path, doc: np.ndarray, word: np.ndarray, index_base: int) -> str:
    """"(row, column) on lines a and b" of the first pair that occurs twice (in file order of
    its second occurrence)."""
    key = doc.astype(np.int64) * (int(word.max()) + 1) + word
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    second = order[same + 1]
    k = int(same[np.argmin(second)])
    first, again = int(order[k]), int(order[k + 1])
    return (f"({doc[first] + index_base}, {word[first] + index_base}) on lines "
            f"{_file_line(path, first)} and "
            f"{_file_line(path, again)}")


def _n_distinct(ids: np.ndarray) -> int:
    """Number of distinct non-negative ids (bincount; ids > len cannot be contiguous anyway)."""
    if ids.max() >= ids.size:
        return np.unique(ids).size
    return int(np.count_nonzero(np.bincount(ids)))


def _canonical(X: sp.spmatrix) -> sp.csr_matrix:
    """CSR int64 with explicit zeros removed and sorted indices."""
    X = sp.csr_matrix(X, dtype=np.int64)
    X.eliminate_zeros()
    X.sort_indices()
    X.has_canonical_format = True
    return X


def parse_labels(path: str | os.PathLike) -> np.ndarray:
    """Parse a label file, one integer per line (row order of the matrix), as int64.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.txt"
    >>> _ = path.write_text("3\\n1\\n3\\n")
    >>> parse_labels(path).tolist()  # as written: relabel() maps them to 0..k-1
    [3, 1, 3]
    >>> _ = path.write_text("3\\nsports\\n")
    >>> parse_labels(path)
    Traceback (most recent call last):
    ...
    ValueError: labels.txt: malformed label file (...)
    """
    path = Path(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            labels = np.loadtxt(path, dtype=np.int64, ndmin=1)
    except ValueError as exc:
        raise ValueError(f"{path.name}: malformed label file ({exc})") from exc
    if labels.ndim != 1:
        raise ValueError(f"{path.name}: expected one label per line, got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError(f"{path.name}: empty label file")
    return labels


def relabel(labels: np.ndarray) -> np.ndarray:
    """Map arbitrary integer labels to 0..k-1, keeping their sorted order (cstr: 1..4 -> 0..3).

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.datasets.parsers import relabel
    >>> relabel(np.array([3, 1, 3, 4])).tolist()
    [1, 0, 1, 2]
    """
    _, inverse = np.unique(np.asarray(labels), return_inverse=True)
    return inverse.astype(np.int64).ravel()


def parse_matlab_dtm(path: str | os.PathLike, n_rows: int, n_cols: int
                     ) -> tuple[sp.csr_matrix, np.ndarray]:
    """Read ``dtm`` (documents × words counts) and ``classid`` from a MATLAB v5 file.

    ``n_rows``/``n_cols`` are the registry's shape: a transposed ``dtm`` is turned around,
    any other shape is an error. Returns the CSR int64 matrix and ``classid`` as int64.

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from scipy.io import savemat
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.mat"
    >>> words_by_docs = np.array([[1, 0, 2], [0, 4, 0]], dtype=np.int32)
    >>> savemat(path, {"dtm": words_by_docs, "classid": np.array([[1], [2], [1]])})
    >>> X, classid = parse_matlab_dtm(path, n_rows=3, n_cols=2)  # stored transposed
    >>> X.toarray().tolist(), X.dtype, classid.tolist()
    ([[1, 0], [0, 4], [2, 0]], dtype('int64'), [1, 2, 1])
    >>> parse_matlab_dtm(path, n_rows=4, n_cols=2)
    Traceback (most recent call last):
    ...
    ValueError: toy.mat: 'dtm' has shape (2, 3), expected (4, 2)
    """
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError

    path = Path(path)
    try:
        content = loadmat(path, variable_names=("dtm", "classid"))
    except (MatReadError, ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path.name}: not a readable MATLAB file ({exc})") from exc
    for var in ("dtm", "classid"):
        if var not in content:
            raise ValueError(f"{path.name}: variable {var!r} missing")
    dtm = content["dtm"]
    if not (sp.issparse(dtm) or isinstance(dtm, np.ndarray)) or dtm.ndim != 2:
        raise ValueError(f"{path.name}: 'dtm' is not a 2-D matrix")
    if dtm.shape == (n_cols, n_rows) and n_rows != n_cols:
        dtm = dtm.T
    if dtm.shape != (n_rows, n_cols):
        raise ValueError(f"{path.name}: 'dtm' has shape {dtm.shape}, expected ({n_rows}, {n_cols})")
    if dtm.dtype.kind not in "iub":
        raise ValueError(f"{path.name}: 'dtm' must hold integer counts, got {dtm.dtype}")
    X = _canonical(sp.csr_matrix(dtm))
    if X.nnz and X.data.min() < 0:
        raise ValueError(f"{path.name}: negative counts in 'dtm'")
    classid = np.asarray(content["classid"]).ravel().astype(np.int64)
    if classid.size != n_rows:
        raise ValueError(f"{path.name}: 'classid' has {classid.size} entries for {n_rows} rows")
    return X, classid
