"""The registry of the paper's Table 1 datasets, read from the bundled ``registry.tsv``.

``registry.tsv`` is a byte-identical copy of the ``MANIFEST.tsv`` of the offline mirror
(``$DPTAUCC_MIRROR``); a test keeps the two in sync. One line per file: dataset, role
(``matrix`` | ``labels``), file name, public URL, SHA-256 (``-`` when unknown), format
(``triplets`` | ``matlab-dtm`` | ``labels-txt``), rows, columns and classes of Table 1.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = ["FileEntry", "DatasetEntry", "registry", "get_entry", "KNOWN_DATASETS"]

_COLUMNS = ("dataset", "role", "file", "url", "sha256", "format", "rows", "cols", "classes")
_FORMATS = {"matrix": ("triplets", "matlab-dtm"), "labels": ("labels-txt",)}


@dataclass(frozen=True)
class FileEntry:
    """One file of a dataset: where it lives upstream and how to check and parse it.

    >>> entry = get_entry("cstr").matrix
    >>> entry.file, entry.format, entry.verified, len(entry.sha256)
    ('cstr.txt', 'triplets', True, 64)
    """

    dataset: str
    role: str
    file: str
    url: str
    sha256: str | None
    format: str

    @property
    def verified(self) -> bool:
        """True when a SHA-256 is known, so a download can be checked."""
        return self.sha256 is not None


@dataclass(frozen=True)
class DatasetEntry:
    """A dataset of Table 1: its matrix file, its label file, and the shape the paper reports.

    >>> entry = get_entry("cstr")
    >>> (entry.n_rows, entry.n_cols, entry.n_classes), entry.labels.role
    ((475, 1000, 4), 'labels')
    """

    name: str
    matrix: FileEntry
    labels: FileEntry
    n_rows: int
    n_cols: int
    n_classes: int


def _parse_int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise ValueError(f"registry.tsv: {what} must be an integer, got {value!r}") from exc


def parse_registry(text: str) -> dict[str, DatasetEntry]:
    """Parse the text of a manifest (``registry.tsv`` or the mirror's ``MANIFEST.tsv``)."""
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise ValueError(f"registry.tsv: expected columns {_COLUMNS}, got {reader.fieldnames}")
    files: dict[str, dict[str, FileEntry]] = {}
    shapes: dict[str, tuple[int, int, int]] = {}
    for row in reader:
        role, fmt = row["role"], row["format"]
        if role not in _FORMATS or fmt not in _FORMATS[role]:
            raise ValueError(f"registry.tsv: bad role/format {role!r}/{fmt!r} for {row['file']}")
        sha = row["sha256"].strip().lower()
        if sha != "-" and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
            raise ValueError(f"registry.tsv: bad SHA-256 {sha!r} for {row['file']}")
        entry = FileEntry(row["dataset"], role, row["file"], row["url"],
                          None if sha == "-" else sha, fmt)
        files.setdefault(entry.dataset, {})[role] = entry
        if role == "matrix":
            shapes[entry.dataset] = (_parse_int(row["rows"], "rows"),
                                     _parse_int(row["cols"], "cols"),
                                     _parse_int(row["classes"], "classes"))
    out = {}
    for name, roles in files.items():
        if set(roles) != {"matrix", "labels"}:
            raise ValueError(f"registry.tsv: dataset {name!r} needs one matrix and one labels file")
        out[name] = DatasetEntry(name, roles["matrix"], roles["labels"], *shapes[name])
    return out


@lru_cache(maxsize=1)
def registry() -> dict[str, DatasetEntry]:
    """Every known dataset, by name, in the manifest's order."""
    text = resources.files(__package__).joinpath("registry.tsv").read_text(encoding="utf-8")
    return parse_registry(text)


KNOWN_DATASETS: tuple[str, ...] = (
    "classic3", "cstr", "tr11", "tr41", "hitech", "k1b", "reviews", "sports",
)


def get_entry(name: str) -> DatasetEntry:
    """The registry entry of ``name``; ``ValueError`` listing the known names otherwise.

    Examples
    --------
    >>> from dptaucc.datasets.registry import get_entry
    >>> entry = get_entry('classic3')
    >>> entry.n_rows, entry.n_cols, entry.n_classes
    (3891, 4303, 3)
    """
    if not isinstance(name, str) or name not in registry():
        raise ValueError(
            f"unknown dataset {name!r}; known datasets: {', '.join(KNOWN_DATASETS)}"
        )
    return registry()[name]
