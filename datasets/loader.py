"""``load(name, seed)``: fetch (verified), parse once into the ``.npz`` cache, permute by seed."""

from __future__ import annotations

import os
import warnings

import numpy as np
import scipy.sparse as sp

from .cache import read_parsed, write_parsed
from .dataset import Dataset, _check_seed, describe, permute
from .download import cache_dir as _resolve_cache_dir
from .download import fetch_file, recorded_sha256
from .parsers import parse_labels, parse_matlab_dtm, parse_triplets, relabel
from .registry import DatasetEntry, get_entry

__all__ = ["load", "parse_dataset"]


def parse_dataset(entry: DatasetEntry, matrix_path, labels_path) -> tuple[sp.csr_matrix,
                                                                          np.ndarray]:
    """Parse the two files of ``entry`` into (CSR int64 counts, labels 0..k-1), checked.

    >>> import pathlib, tempfile
    >>> from dptaucc.datasets.registry import DatasetEntry, FileEntry
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "m.csv").write_text("doc,word,cluster\\n0,0,2\\n1,1,3\\n2,0,1\\n")
    >>> _ = (folder / "l.txt").write_text("4\\n7\\n4\\n")
    >>> entry = DatasetEntry("toy", FileEntry("toy", "matrix", "m.csv", "", "0" * 64, "triplets"),
    ...                      FileEntry("toy", "labels", "l.txt", "", "0" * 64, "labels-txt"),
    ...                      n_rows=3, n_cols=2, n_classes=2)
    >>> X, labels = parse_dataset(entry, folder / "m.csv", folder / "l.txt")
    >>> X.toarray().tolist(), labels.tolist()
    ([[2, 0], [0, 3], [1, 0]], [0, 1, 0])
    >>> _ = (folder / "l.txt").write_text("4\\n7\\n")
    >>> parse_dataset(entry, folder / "m.csv", folder / "l.txt")
    Traceback (most recent call last):
    ...
    ValueError: l.txt has 2 labels but m.csv has 3 rows
    """
    raw_labels = parse_labels(labels_path)
    if entry.matrix.format == "triplets":
        X = parse_triplets(matrix_path)
    else:
        X, classid = parse_matlab_dtm(matrix_path, entry.n_rows, entry.n_cols)
        if classid.size == raw_labels.size and not _same_partition(classid, raw_labels):
            raise ValueError(
                f"{entry.matrix.file}: 'classid' does not agree with {entry.labels.file} "
                "(rows in another order?)"
            )
    if raw_labels.size != X.shape[0]:
        raise ValueError(
            f"{entry.labels.file} has {raw_labels.size} labels but {entry.matrix.file} has "
            f"{X.shape[0]} rows"
        )
    if X.shape != (entry.n_rows, entry.n_cols):
        msg = (f"{entry.matrix.file}: parsed shape {X.shape} differs from the registry's "
               f"({entry.n_rows}, {entry.n_cols})")
        if entry.matrix.verified:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)
    labels = relabel(raw_labels)
    return X, labels


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True when labelings ``a`` and ``b`` are equal up to renaming (a bijection of labels)."""
    pairs = np.unique(np.stack([a, b]), axis=1)
    return (np.unique(pairs[0]).size == pairs.shape[1]
            and np.unique(pairs[1]).size == pairs.shape[1])


def load(name: str, seed: int | None = None, *, cache_dir: str | os.PathLike | None = None,
         mirror: str | os.PathLike | None = None, allow_unverified: bool = False,
         progress: bool = True) -> Dataset:
    """Load a dataset of the paper's Table 1 as a ``Dataset``.

    Files are fetched into ``cache_dir`` (default ``$DPTAUCC_DATA_DIR``, else the user cache)
    from ``mirror`` (default ``$DPTAUCC_MIRROR``; a directory or base URL) or the public URL,
    SHA-256 verified; the parsed matrix is cached as ``.npz`` so later loads skip parsing.
    With ``seed``, rows and columns are permuted by that seed only (labels follow).
    ``allow_unverified`` opts into downloading files with no known checksum (sports).

    Examples
    --------
    The files come from the network or a mirror, so this example is not run by the tests:

    >>> from dptaucc.datasets import load
    >>> ds = load("cstr", seed=0)  # doctest: +SKIP
    >>> ds.shape, ds.meta["n_classes"], ds.X.dtype  # doctest: +SKIP
    ((475, 1000), 4, dtype('int64'))
    """
    entry = get_entry(name)
    if seed is not None:
        seed = _check_seed(seed)
    root = _resolve_cache_dir(cache_dir)
    npz = root / "parsed" / f"{name}.npz"
    sources = _known_sources(entry, root)
    cached = read_parsed(npz, sources) if sources is not None else None
    if cached is None:
        kw = dict(cache=root, mirror=mirror, allow_unverified=allow_unverified,
                  progress=progress)
        matrix_path = fetch_file(entry.matrix, **kw)
        labels_path = fetch_file(entry.labels, **kw)
        sources = {entry.matrix.file: recorded_sha256(entry.matrix, matrix_path),
                   entry.labels.file: recorded_sha256(entry.labels, labels_path)}
        X, labels = parse_dataset(entry, matrix_path, labels_path)
        write_parsed(npz, X, labels, sources)
    else:
        X, labels = cached
    if seed is not None:
        X, labels, _ = permute(X, labels, None, seed)
    meta = describe(X, labels, seed)
    meta.update(
        paper_shape=[entry.n_rows, entry.n_cols],
        sources=sources,
        verified=entry.matrix.verified and entry.labels.verified,
        format=entry.matrix.format,
    )
    return Dataset(X=X, row_labels=labels, col_labels=None, name=name, meta=meta)


def _known_sources(entry: DatasetEntry, root) -> dict | None:
    """The source hashes an up-to-date cache must carry, or None if a file's hash is unknown.

    For a file without a registry hash (sports) the hash recorded at its first download is
    used, so the cache of a re-downloaded, different file is not trusted.
    """
    out = {}
    for f in (entry.matrix, entry.labels):
        if f.sha256 is not None:
            out[f.file] = f.sha256
            continue
        side = root / "raw" / (f.file + ".sha256")
        if not side.is_file():
            return None
        out[f.file] = side.read_text().strip()
    return out
