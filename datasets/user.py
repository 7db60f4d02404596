"""Your own data as a ``Dataset``: count-matrix files (``load_matrix``) or a function
(``load_callable``).

Matrix formats: a scipy sparse ``.npz`` (``scipy.sparse.save_npz``), a MatrixMarket ``.mtx``
(optionally ``.mtx.gz``), or a triplet CSV like the CLUTO files (header ``doc,word,cluster`` or
``row,col,count``, one non-zero cell per line). Labels files hold one class per line (integers
or names) in row order. Every check runs before any fit, and every error names the file and the
problem. Like the paper's datasets, rows and columns are permuted by ``seed`` (the same for every
algorithm), so repeated runs differ only by the seed.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .dataset import Dataset, _check_seed, describe, permute
from .download import ChecksumError, sha256_of
from .parsers import _canonical, parse_triplets, relabel

__all__ = ["MATRIX_FORMATS", "read_matrix", "read_labels", "load_matrix", "load_callable",
           "as_dataset"]

#: format name -> file-name endings recognised when ``format`` is not given
MATRIX_FORMATS = {"npz": (".npz",), "mtx": (".mtx", ".mtx.gz"),
                  "triplets": (".csv", ".txt", ".tsv")}


def _existing_file(path: str | os.PathLike, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        got = repr(path) if isinstance(path, str) else type(path).__name__
        raise TypeError(f"{what} must be a file path, got {got}")
    p = Path(path).expanduser()
    if not p.is_file():
        state = "is a directory" if p.is_dir() else "does not exist"
        raise ValueError(f"{what} {p} {state} (relative paths are read from the working "
                         f"directory {Path.cwd()})")
    return p


def _check_sha256(path: Path, expected: str | None) -> str | None:
    """Compare the file's SHA-256 with ``expected`` (if given); return the digest seen."""
    if expected is None:
        return None
    want = str(expected).strip().lower()
    if want.startswith("sha256:"):
        want = want[len("sha256:"):]
    if len(want) != 64 or any(c not in "0123456789abcdef" for c in want):
        raise ValueError(f"the SHA-256 given for {path} is not 64 hex digits: {expected!r}")
    got = sha256_of(path)
    if got != want:
        raise ChecksumError(f"checksum mismatch for {path}: expected SHA-256 {want}, got {got} "
                            "(wrong or changed file?)")
    return got


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in MATRIX_FORMATS:
            raise ValueError(f"unknown matrix format {fmt!r} for {path}; "
                             f"expected one of {', '.join(MATRIX_FORMATS)}")
        return fmt
    name = path.name.lower()
    for key, endings in MATRIX_FORMATS.items():
        if name.endswith(endings):
            return key
    raise ValueError(f"cannot tell the format of {path} from its name; pass format= one of "
                     f"{', '.join(MATRIX_FORMATS)} (.npz, .mtx, or a .csv of triplets)")


def counts_matrix(X: Any, source: str) -> sp.csr_matrix:
    """``X`` checked as every estimator checks it (:func:`dptaucc.base.check_fit_input`: whole,
    finite, non-negative counts in a 2-D matrix; an all-zero matrix is kept with an
    ``AllZeroCountsWarning``), as CSR int64. Errors start with ``source``."""
    from dptaucc.base import check_fit_input

    try:
        checked = check_fit_input(X, whole_counts=True,
                                  outcome="results that do not depend on the data")
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{source}: {exc}") from None
    return _canonical(checked)


def read_matrix(path: str | os.PathLike, format: str | None = None, *,
                shape: tuple[int, int] | None = None, index_base: int = 0) -> sp.csr_matrix:
    """Read a count matrix (``npz``, ``mtx`` or ``triplets``; by default from the file name).

    Triplet files: ``shape=(n_rows, n_cols)`` keeps rows and columns without any cell (without
    it the matrix is #distinct row ids × #distinct column ids, with a warning once the file
    has been read: trailing empty rows or columns cannot be seen); ids start at
    ``index_base`` (0 or 1). For the other formats, a given ``shape`` must be the file's.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dptaucc.datasets.user import read_matrix
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "counts.csv"
    >>> _ = path.write_text("row,col,count\\n0,0,3\\n1,2,1\\n")
    >>> read_matrix(path, shape=(3, 4)).shape
    (3, 4)
    """
    p = _existing_file(path, "matrix file")
    X = _read_matrix(p, _format_of(p, format), shape, index_base)
    if _format_of(p, format) == "triplets" and shape is None:
        _warn_no_shape(p, X.shape, "rows or columns", stacklevel=3)
    return X


def _warn_no_shape(p: Path, shape: tuple[int, int], what: str, stacklevel: int) -> None:
    """The warning of a triplet file read without ``shape=`` whose ``what`` no labels file
    confirms."""
    warnings.warn(f"{p}: no shape= given, so the matrix is #distinct row ids x #distinct column "
                  f"ids = {shape}; {what} without any cell after the last id are not seen: "
                  "pass shape=(n_rows, n_cols) to keep them", UserWarning, stacklevel=stacklevel)


def _confirm_shape(p: Path, shape: tuple[int, int], labels: dict[int, Path]) -> None:
    """A triplet file read without ``shape=``: a labels file with more lines than the file has
    rows (columns) means rows (columns) without any cell after the last id, which the file
    cannot show: refused, naming the matrix file and the ``shape=`` that keeps them (a labels
    file with fewer lines is that file's error, :func:`read_labels`)."""
    for axis, path in labels.items():
        n = _count_labels(path)
        if n > shape[axis]:
            side, other = ("rows", "row") if axis == 0 else ("columns", "column")
            want = (n, shape[1]) if axis == 0 else (shape[0], n)
            raise ValueError(
                f"{p}: its {other} ids give {shape[axis]} {side}, but {path.name} has {n} "
                f"labels: {side} after the last {other} id that holds a cell cannot be seen in "
                f"a triplet file; pass shape={want} (dataset.params.shape=[{want[0]}, "
                f"{want[1]}]) to keep them, or fix {path.name}")


def _count_labels(path: Path) -> int:
    """Lines of a labels file up to its last non-blank one (what :func:`read_labels` counts)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return 0  # read_labels names the problem
    while lines and not lines[-1].strip():
        lines.pop()
    return len(lines)


def _read_matrix(p: Path, fmt: str, shape: tuple[int, int] | None,
                 index_base: int) -> sp.csr_matrix:
    if fmt == "triplets":
        return counts_matrix(parse_triplets(p, shape=shape, index_base=index_base), str(p))
    if index_base != 0:
        raise ValueError(f"{p}: index_base is for triplet files; {fmt} files index from 0")
    try:
        if fmt == "npz":
            X = sp.load_npz(p)
        else:
            from scipy.io import mmread

            X = mmread(p)
    except Exception as exc:  # scipy raises many types on a foreign file
        hint = ("written by scipy.sparse.save_npz" if fmt == "npz"
                else "a MatrixMarket file ('%%MatrixMarket' header)")
        raise ValueError(f"{p}: not a readable {fmt} matrix (expected {hint}): {exc}") from exc
    if shape is not None and tuple(shape) != X.shape:
        raise ValueError(f"{p}: the matrix has shape {X.shape}, not the shape={tuple(shape)} given")
    return counts_matrix(X, str(p))


def read_labels(path: str | os.PathLike, n_rows: int, what: str = "labels") -> np.ndarray:
    """One class per line (integers or names), ``n_rows`` of them; returned as 0..k-1.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "classes.txt"
    >>> _ = path.write_text("sports\\nnews\\nsports\\n")
    >>> read_labels(path, 3).tolist()  # names sorted: news -> 0, sports -> 1
    [1, 0, 1]
    >>> read_labels(path, 4)
    Traceback (most recent call last):
    ...
    ValueError: ...classes.txt: 3 labels for a matrix with 4 rows
    """
    p = _existing_file(path, f"{what} file")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not a text file of {what} ({exc})") from exc
    while lines and not lines[-1].strip():
        lines.pop()
    tokens = [line.strip() for line in lines]
    blank = [i + 1 for i, t in enumerate(tokens) if not t]
    if blank:
        raise ValueError(f"{p}: line {blank[0]} is empty (one class per line expected)")
    several = [i + 1 for i, t in enumerate(tokens) if len(t.split()) > 1]
    if several:
        raise ValueError(f"{p}: line {several[0]} holds several values ({tokens[several[0] - 1]!r}"
                         "); one class per line expected")
    if len(tokens) != n_rows:
        raise ValueError(f"{p}: {len(tokens)} {what} for a matrix with {n_rows} "
                         f"{'rows' if what == 'labels' else 'columns'}")
    try:
        values = np.array([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        values = np.array(tokens)
    return relabel(values)


def load_matrix(path: str | os.PathLike, labels: str | os.PathLike | None = None, *,
                col_labels: str | os.PathLike | None = None, format: str | None = None,
                sha256: str | None = None, labels_sha256: str | None = None,
                col_labels_sha256: str | None = None, name: str | None = None,
                seed: int | None = None, shape: tuple[int, int] | None = None,
                index_base: int = 0) -> Dataset:
    """Your count matrix file (and optional row/column class files) as a ``Dataset``.

    ``sha256`` / ``labels_sha256`` / ``col_labels_sha256``: if given, the file must have this
    SHA-256 (``ChecksumError`` otherwise). Without ``labels`` the row metrics are left empty
    (NaN) and the number of clusters must be given explicitly. With ``seed``, rows and
    columns are permuted by that seed only (labels follow). ``shape`` and ``index_base``: see
    :func:`read_matrix`. Data already in memory goes through :func:`as_dataset`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.datasets import load_matrix
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "counts.npz"
    >>> sp.save_npz(path, sp.csr_matrix(np.array([[1, 0], [2, 3]])))
    >>> load_matrix(path).X.toarray().tolist()
    [[1, 0], [2, 3]]
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_matrix reads a file, got a {type(path).__name__}: for counts "
                        "in memory use dptaucc.datasets.as_dataset(X, row_labels)")
    if seed is not None:
        seed = _check_seed(seed)
    p = _existing_file(path, "matrix file")
    sources = {p.name: _check_sha256(p, sha256)}
    fmt = _format_of(p, format)
    lp = None if labels is None else _existing_file(labels, "labels file")
    cp = None if col_labels is None else _existing_file(col_labels, "column labels file")
    for f, digest in ((lp, labels_sha256), (cp, col_labels_sha256)):
        if f is not None:
            sources[f.name] = _check_sha256(f, digest)
    X = _read_matrix(p, fmt, shape, index_base)
    if fmt == "triplets" and shape is None:
        _confirm_shape(p, X.shape, {a: f for a, f in ((0, lp), (1, cp)) if f is not None})
        if lp is None:  # nothing confirms the rows: the user may lose some without knowing
            _warn_no_shape(p, X.shape, "rows (and columns)" if cp is None else "rows",
                           stacklevel=3)
    row = col = None
    if lp is not None:
        row = read_labels(lp, X.shape[0])
    if cp is not None:
        col = read_labels(cp, X.shape[1], "column labels")
    meta = {"format": fmt, "path": str(p),
            "sources": {k: v for k, v in sources.items() if v is not None}}
    return _finish(X, row, col, name or p.name.split(".")[0], seed, meta)


def _import_target(target: str):
    if not isinstance(target, str) or "." not in target:
        raise ValueError(f"dataset target must be 'package.module.function', got {target!r}")
    module, _, attr = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import dataset target {target!r}: {exc} (is its package "
                         "installed or on PYTHONPATH?)") from exc
    if not callable(obj):
        raise TypeError(f"dataset target {target!r} is not callable")
    return obj


def load_callable(target: str, params: Mapping[str, Any] | None = None, *,
                  name: str | None = None, seed: int | None = None) -> Dataset:
    """Call ``target(**params)`` (``'mypkg.load_my_data'``), which must return a ``Dataset``;
    its matrix and labels are checked like a file's, then permuted by ``seed``.

    Examples
    --------
    >>> from dptaucc.datasets import load_callable
    >>> ds = load_callable("dptaucc.datasets.synthetic.make_paper_biclusters",
    ...                    {"n_cols": 20, "n_rows": 30}, name="blocks", seed=0)
    >>> ds.name, ds.shape, ds.meta["n_classes"], ds.col_labels is not None
    ('blocks', (30, 20), 3, True)
    """
    if seed is not None:
        seed = _check_seed(seed)
    fn = _import_target(target)
    out = fn(**dict(params or {}))
    if not isinstance(out, Dataset):
        raise TypeError(f"dataset target {target!r} returned {type(out).__name__}, expected a "
                        "dptaucc.datasets.Dataset (see dptaucc.datasets.as_dataset)")
    meta = {k: v for k, v in out.meta.items() if k not in _DESCRIBED}
    meta["target"] = target
    return _finish(counts_matrix(out.X, target), _labels(out.row_labels, out.X.shape[0], target),
                   _labels(out.col_labels, out.X.shape[1], target, "column labels"),
                   name or out.name, seed, meta)


def as_dataset(X: Any, row_labels: Any = None, col_labels: Any = None, *, name: str = "data",
               meta: Mapping[str, Any] | None = None) -> Dataset:
    """Build a checked ``Dataset`` from in-memory counts (dense or scipy.sparse) and labels.

    Examples
    --------
    >>> from dptaucc.datasets import as_dataset
    >>> ds = as_dataset([[1, 0, 2], [0, 3, 0]], row_labels=['a', 'b'], name='mine')
    >>> ds.name, ds.X.shape, ds.row_labels.tolist(), ds.meta['n_classes']
    ('mine', (2, 3), [0, 1], 2)
    """
    Xc = counts_matrix(X, name)
    return _finish(Xc, _labels(row_labels, Xc.shape[0], name),
                   _labels(col_labels, Xc.shape[1], name, "column labels"), name, None,
                   dict(meta or {}))


def _labels(values: Any, n: int, source: str, what: str = "labels") -> np.ndarray | None:
    if values is None:
        return None
    arr = np.asarray(values).ravel()
    if arr.size != n:
        side = "rows" if what == "labels" else "columns"
        raise ValueError(f"{source}: {arr.size} {what} for a matrix with {n} {side}")
    return relabel(arr)


_DESCRIBED = ("n_rows", "n_cols", "nnz", "density", "n_classes", "class_sizes", "total_count",
              "max_count", "seed")


def _finish(X: sp.csr_matrix, row: np.ndarray | None, col: np.ndarray | None, name: str,
            seed: int | None, extra: dict) -> Dataset:
    if seed is not None:
        X, row, col = permute(X, row, col, seed)
    meta = describe(X, row, seed)
    meta.update(extra)
    meta["labelled"] = row is not None
    return Dataset(X=X, row_labels=row, col_labels=col, name=name, meta=meta)
